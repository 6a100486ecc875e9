"""The 8 layer stacks (fc_0, SqrClippedReLU and ClippedReLU, fc_1, ClippedReLU, fc_2, skip) as one
differentiable function on the CPU.

``layer_stacks(x, bucket, w0, b0, w1, b1, w2, b2)`` returns, for each row of x [n, L1] (the feature
transform's output), the output of its bucket's stack plus the skip connection fc0[15], in float units.
Written with PyTorch operations, each stack is a dozen small operations on its slice of the batch, eight
times over, forward and backward: at L1 = 256 and 16384 positions that was about 15 ms of a 50 ms training
step, mostly per-operation overhead. Here each thread takes a run of rows and computes every layer of a row
at once (about 7 ms on 2 cores). The short dot products run four at a time (a single sum waits on each of its
adds), fc_1's 30 inputs are padded to 32 (whole vectors), and the weight gradients are added four rows of one
stack at a time into per-thread copies (the 8 stacks' fc_0 is 128 KB at L1 = 256), summed at the end.
It computes what ``NnueModel._stack`` computes without activation floors, with the same gradients (clamps
pass theirs on the closed interval, as ``torch.clamp`` does); the model uses it where it applies and
PyTorch elsewhere (a GPU, the floored QAT epochs), and the tests hold the two together.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import prange

from quantfish.nnue.architecture import FC0_OUT, FC1_OUT
from quantfish.nnue.scales import SQR_FACTOR
from quantfish.runtime.jit import njit

N_HIDDEN = FC0_OUT - 1          # fc_0 outputs that feed fc_1; the last one is the skip connection
FC1_IN = 2 * N_HIDDEN           # 15 squared + 15 clipped
FC1_IN_PADDED = 32             # fc_1's inputs padded with zeros to a whole number of vectors
_SQR = np.float32(SQR_FACTOR)   # float32 constants: a float64 one would turn the arithmetic around it to float64
_ZERO, _ONE, _TWO_SQR = np.float32(0.0), np.float32(1.0), np.float32(2.0 * SQR_FACTOR)


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def _dots4(w, i, a, out, bias):
    """out[i .. i + 3] = w[i .. i + 3] . a + bias[i .. i + 3]: four sums at once (one alone waits on its adds)."""
    wa, wb, wc, wd = w[i], w[i + 1], w[i + 2], w[i + 3]
    p = q = u = v = _ZERO
    for k in range(a.shape[0]):
        ak = a[k]
        p += wa[k] * ak
        q += wb[k] * ak
        u += wc[k] * ak
        v += wd[k] * ak
    out[i], out[i + 1], out[i + 2], out[i + 3] = p + bias[i], q + bias[i + 1], u + bias[i + 2], v + bias[i + 3]


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def _outer_add(gw, bucket, g, x, first, last, rows_per_stack):
    """gw[s * rows_per_stack + k] += g[r, k] * x[r] for the rows r in [first, last) (s: row r's stack), four
    rows of one stack at a time where they are: a quarter of the loads and stores of gw."""
    d = x.shape[1]
    r = first
    while r < last:
        s = bucket[r]
        if r + 4 <= last and bucket[r + 1] == s and bucket[r + 2] == s and bucket[r + 3] == s:
            x0, x1, x2, x3 = x[r], x[r + 1], x[r + 2], x[r + 3]
            for k in range(rows_per_stack):
                ga, gb, gc, gd = g[r, k], g[r + 1, k], g[r + 2, k], g[r + 3, k]
                w = gw[s * rows_per_stack + k]
                for j in range(d):
                    w[j] += (ga * x0[j] + gb * x1[j]) + (gc * x2[j] + gd * x3[j])
            r += 4
        else:
            xr = x[r]
            for k in range(rows_per_stack):
                gk = g[r, k]
                w = gw[s * rows_per_stack + k]
                for j in range(d):
                    w[j] += gk * xr[j]
            r += 1


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _forward(x, bucket, w0, b0, w1, b1, w2, b2, fc0, a1, fc1, out, parts):
    """fc0 [n, 16], a1 [n, 32] (fc_1's input, padded with two zeros) and fc1 [n, 32] (before its clamp), kept
    for the backward pass, and out [n]. ``w1``: [8 * 32, 32], fc_1's weights padded with two zero columns."""
    n = x.shape[0]
    for t in prange(parts):
        for r in range(n * t // parts, n * (t + 1) // parts):
            s = bucket[r]
            h = fc0[r]
            for k in range(0, FC0_OUT, 4):
                _dots4(w0[s * FC0_OUT:], k, x[r], h, b0[s * FC0_OUT:])
            a = a1[r]
            for k in range(N_HIDDEN):
                v = h[k]
                a[k] = min(v * v * _SQR, _ONE)
                a[N_HIDDEN + k] = min(max(v, _ZERO), _ONE)
            a[FC1_IN:] = _ZERO
            c = fc1[r]
            for i in range(0, FC1_OUT, 4):
                _dots4(w1[s * FC1_OUT:], i, a, c, b1[s * FC1_OUT:])
            o = b2[s] + h[N_HIDDEN]
            for i in range(FC1_OUT):
                o += w2[s, i] * min(max(c[i], _ZERO), _ONE)
            out[r] = o


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _backward(x, bucket, w0, w1t, w2, fc0, a1, fc1, grad_out, grad_x, g0, g1, gw0, gb0, gw1, gb1, gw2, gb2, parts):
    """grad_x [n, L1] written, with g0 [n, 16] and g1 [n, 32] (the gradients of fc_0's and fc_1's outputs),
    and each thread's weight and bias gradients in row ``t`` of gw0 .. gb2 (added to: zero them first).
    ``w1t``: [8, 32, 32], each stack's padded fc_1 weights transposed (input-major)."""
    n, l1 = x.shape
    for t in prange(parts):
        first, last = n * t // parts, n * (t + 1) // parts
        gin = np.empty(FC1_IN_PADDED, np.float32)
        no_bias = np.zeros(FC1_IN_PADDED, np.float32)
        for r in range(first, last):
            s = bucket[r]
            go = grad_out[r]
            gb2[t, s] += go
            c, gc = fc1[r], g1[r]
            for i in range(FC1_OUT):
                gw2[t, s, i] += go * min(max(c[i], _ZERO), _ONE)
                gc[i] = go * w2[s, i] if _ZERO <= c[i] <= _ONE else _ZERO
                gb1[t, s * FC1_OUT + i] += gc[i]
            for k in range(0, FC1_IN_PADDED, 4):
                _dots4(w1t[s], k, gc, gin, no_bias)
            h, gh = fc0[r], g0[r]
            for k in range(N_HIDDEN):
                v = h[k]
                gsq = gin[k] * (_TWO_SQR * v) if v * v * _SQR <= _ONE else _ZERO
                gcl = gin[N_HIDDEN + k] if _ZERO <= v <= _ONE else _ZERO
                gh[k] = gsq + gcl
            gh[N_HIDDEN] = go
            for k in range(FC0_OUT):
                gb0[t, s * FC0_OUT + k] += gh[k]
            gx = grad_x[r]
            ws = w0[s * FC0_OUT:(s + 1) * FC0_OUT]
            for j in range(l1):
                v = _ZERO
                for k in range(FC0_OUT):
                    v += gh[k] * ws[k, j]
                gx[j] = v
        _outer_add(gw0[t], bucket, g0, x, first, last, FC0_OUT)
        _outer_add(gw1[t], bucket, g1, a1, first, last, FC1_OUT)


def _array(t: torch.Tensor) -> np.ndarray:
    return t.detach().contiguous().numpy()


class _LayerStacks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bucket, w0, b0, w1, b1, w2, b2):
        n = x.shape[0]
        parts = max(1, min(numba.get_num_threads(), n))
        xa, bk = _array(x), np.ascontiguousarray(bucket.numpy(), np.int64)
        w0a, w2a = _array(w0), _array(w2)
        w1p = np.zeros((w1.shape[0], FC1_IN_PADDED), np.float32)      # 30 inputs padded to 32
        w1p[:, :FC1_IN] = _array(w1)
        fc0 = np.empty((n, FC0_OUT), np.float32)
        a1 = np.empty((n, FC1_IN_PADDED), np.float32)
        fc1 = np.empty((n, FC1_OUT), np.float32)
        out = torch.empty(n, dtype=torch.float32)
        _forward(xa, bk, w0a, _array(b0), w1p, _array(b1), w2a, _array(b2), fc0, a1, fc1, out.numpy(), parts)
        ctx.saved = (xa, bk, w0a, w1p, w2a, fc0, a1, fc1, parts)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        xa, bk, w0, w1p, w2, fc0, a1, fc1, parts = ctx.saved
        n = xa.shape[0]
        w1t = np.ascontiguousarray(w1p.reshape(-1, FC1_OUT, FC1_IN_PADDED).transpose(0, 2, 1))
        grad_x = torch.empty(xa.shape, dtype=torch.float32)
        gw0 = np.zeros((parts,) + w0.shape, np.float32)
        gb0 = np.zeros((parts, w0.shape[0]), np.float32)
        gw1 = np.zeros((parts,) + w1p.shape, np.float32)
        gb1 = np.zeros((parts, w1p.shape[0]), np.float32)
        gw2 = np.zeros((parts,) + w2.shape, np.float32)
        gb2 = np.zeros((parts, w2.shape[0]), np.float32)
        _backward(xa, bk, w0, w1t, w2, fc0, a1, fc1, _array(grad_out), grad_x.numpy(),
                  np.empty((n, FC0_OUT), np.float32), np.empty((n, FC1_OUT), np.float32),
                  gw0, gb0, gw1, gb1, gw2, gb2, parts)
        sums = [g.sum(0) for g in (gw0, gb0, gw1, gb1, gw2, gb2)]
        sums[2] = np.ascontiguousarray(sums[2][:, :FC1_IN])
        return (grad_x, None) + tuple(torch.from_numpy(g) for g in sums)


def layer_stacks(x, bucket, w0, b0, w1, b1, w2, b2) -> torch.Tensor:
    """Each row's stack output plus its skip connection [n] (float units). ``bucket``: int [n], the stack of
    each row (in any order; grouped by stack, the threads' weight gradients stay in cache); w0 [8 * 16, L1],
    b0 [8 * 16], w1 [8 * 32, 30], b1 [8 * 32], w2 [8, 32], b2 [8]: the stacks' layers one after another."""
    return _LayerStacks.apply(x, bucket.cpu(), w0, b0, w1, b1, w2, b2)
