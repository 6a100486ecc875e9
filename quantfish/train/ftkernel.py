"""The feature transformer (sparse sum, bias, clamp, pairwise product, PSQT) as one differentiable function.

``feature_transform(idx_us, idx_them, weight, bias, l1, padding_row, virtual)`` returns the transformed input
x [n, L1] (the side to move's half first) and the PSQT difference (us - them) / 2 for all 8 buckets [n, 8].
``weight`` is the shared table of L1 FT columns and 8 PSQT columns, index -1 is padding. With the factoriser
(``virtual``: the first of its ``PS_NB`` rows), each real feature f also activates row ``virtual + f % PS_NB``.

On the CPU this is two Numba kernels (forward, backward) behind a PyTorch autograd function. Written with
PyTorch operations, the same thing spends most of a training step outside arithmetic: ``embedding_bag``'s
backward sorts every index, and each slice, clamp and product of the [n, L1] tensors allocates and zero-fills
its gradient (measured: 60% of a step at L1 = 256). The kernels make one pass over each position's rows in
each direction, on every thread (the positions split between them forward; backward, each thread
scatter-adds into its own interleaved share of the gradient table's rows). With the factoriser the kernels
never touch a virtual row per feature: the forward pass sums rows of the folded table (each real row plus its
virtual row, made once a step), and the backward pass scatters into the real rows only, each virtual row's
gradient then being the sum of its 32 real rows' (the same function and gradients, with half the row
operations: the scatter dominated a factorised step). Elsewhere (CUDA) the PyTorch formulation runs
(``reference_transform``), which is also what the kernels are tested against.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import numba
from numba import prange

from quantfish.runtime.jit import njit
from quantfish.nnue.architecture import PS_NB
from quantfish.nnue.scales import PAIRWISE_FACTOR


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _forward(idx_us, idx_them, weight, bias, l1, acc, x, psqt):
    """acc[p, i] = bias (FT columns) + rows of weight; x = clamp products; psqt = (us - them) / 2.
    Positions are independent: split across threads."""
    n, k = idx_us.shape
    d = weight.shape[1]
    half = l1 // 2
    for i in prange(n):
        for p in range(2):
            a = acc[p, i]
            for j in range(l1):
                a[j] = bias[j]
            for j in range(l1, d):
                a[j] = 0.0
            for t in range(k):
                f = idx_us[i, t] if p == 0 else idx_them[i, t]
                if f >= 0:
                    w = weight[f]
                    for j in range(d):
                        a[j] += w[j]
            for j in range(half):
                u = min(max(a[j], 0.0), 1.0)
                v = min(max(a[j + half], 0.0), 1.0)
                x[i, p * half + j] = u * v * PAIRWISE_FACTOR
        for j in range(d - l1):
            psqt[i, j] = (acc[0, i, l1 + j] - acc[1, i, l1 + j]) * 0.5


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _row_gradients(acc, l1, grad_x, grad_psqt, grad_bias_parts):
    """The gradient of each position's accumulator rows, from those of x and psqt, written over ``acc``
    (which the backward pass needs no more), and the bias gradient's partial sums, one row per thread."""
    n = acc.shape[1]
    d = acc.shape[2]
    half = l1 // 2
    parts = grad_bias_parts.shape[0]
    for t in prange(parts):
        gb = grad_bias_parts[t]
        for i in range(n * t // parts, n * (t + 1) // parts):
            for p in range(2):
                a = acc[p, i]
                gx = grad_x[i, p * half:(p + 1) * half]
                for j in range(half):
                    ra = a[j]
                    rb = a[j + half]
                    u = min(max(ra, 0.0), 1.0)
                    v = min(max(rb, 0.0), 1.0)
                    gj = gx[j] * PAIRWISE_FACTOR
                    # Clamp passes the gradient on [0, 1] inclusive, as torch.clamp does.
                    a[j] = gj * v if 0.0 <= ra <= 1.0 else 0.0
                    a[j + half] = gj * u if 0.0 <= rb <= 1.0 else 0.0
                sign = 0.5 if p == 0 else -0.5
                for j in range(d - l1):
                    a[l1 + j] = grad_psqt[i, j] * sign
                for j in range(l1):
                    gb[j] += a[j]


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _scatter(idx_us, idx_them, g, grad_weight, parts):
    """grad_weight = the sum of g[p, i] over the positions and perspectives where feature f is active, on
    ``parts`` threads, each owning the rows ``f % parts == thread`` of the one table (which it zeroes first):
    no lock, no table per thread to zero and sum, and the rows a thread writes stay in cache (per-thread tables
    of all the rows overflowed it); interleaved rows share the load evenly whatever the king squares."""
    n, k = idx_us.shape
    rows, d = grad_weight.shape
    for t in prange(parts):
        for f in range(t, rows, parts):
            grad_weight[f, :] = 0.0
        for i in range(n):
            for p in range(2):
                gi = g[p, i]
                for s in range(k):
                    f = idx_us[i, s] if p == 0 else idx_them[i, s]
                    if f >= 0 and f % parts == t:
                        gw = grad_weight[f]
                        for j in range(d):
                            gw[j] += gi[j]


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _fold(weight, virtual, folded):
    """folded[f] = weight[f] + weight[virtual + f % PS_NB] for the real rows; the padding row (``virtual - 1``)
    copied."""
    n_real = virtual - 1
    for f in prange(n_real):
        w = weight[f]
        v = weight[virtual + f % PS_NB]
        out = folded[f]
        for j in range(weight.shape[1]):
            out[j] = w[j] + v[j]
    folded[n_real, :] = weight[n_real, :]


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _virtual_gradients(grad_weight, virtual):
    """Each virtual row's gradient: the sum of the gradients of the real rows it is added to."""
    n_real = virtual - 1
    d = grad_weight.shape[1]
    for ps in prange(PS_NB):
        g = grad_weight[virtual + ps]
        for j in range(d):
            g[j] = 0.0
        for f in range(ps, n_real, PS_NB):
            r = grad_weight[f]
            for j in range(d):
                g[j] += r[j]


def _backward(idx_us, idx_them, acc, l1, grad_x, grad_psqt, grad_weight, grad_bias, parts):
    """The gradient of weight (written over ``grad_weight``: a scatter-add of whole rows per active feature)
    and of the bias (added to ``grad_bias``) from those of x and psqt, on ``parts`` threads; ``acc`` is
    overwritten."""
    bias_parts = np.zeros((parts, l1), np.float32)
    _row_gradients(acc, l1, grad_x, grad_psqt, bias_parts)
    grad_bias += bias_parts.sum(0)
    _scatter(idx_us, idx_them, acc, grad_weight, parts)


@njit(cache=True, nogil=True, parallel=True)
def _clip_table(weight, l1, ft_lo, ft_hi, ps_lo, ps_hi, pad, virtual):
    """In place: FT columns into [ft_lo, ft_hi], PSQT columns into [ps_lo, ps_hi], the padding row zero; with
    the factoriser (``virtual`` > 0), each real row then moved so that it plus its virtual row is in range.
    The same float32 operations as the PyTorch formulation (no fastmath), so the same weights to the bit."""
    rows, d = weight.shape
    for f in prange(rows):
        w = weight[f]
        for j in range(d):
            lo, hi = (ft_lo, ft_hi) if j < l1 else (ps_lo, ps_hi)
            w[j] = min(max(w[j], lo), hi)
    weight[pad, :] = 0.0
    if virtual:
        for f in prange(virtual - 1):
            w = weight[f]
            v = weight[virtual + f % PS_NB]
            for j in range(d):
                lo, hi = (ft_lo, ft_hi) if j < l1 else (ps_lo, ps_hi)
                w[j] = min(max(w[j] + v[j], lo), hi) - v[j]


def clip_table(weight, l1: int, ft_range, psqt_range, pad: int, virtual: int = 0) -> bool:
    """``_clip_table`` on a CPU float32 table (a parameter, changed in place); False, doing nothing, for any
    other, which the caller clips with PyTorch operations."""
    if weight.device.type != "cpu" or weight.dtype != torch.float32 or not weight.is_contiguous():
        return False
    _clip_table(weight.detach().numpy(), l1, np.float32(ft_range[0]), np.float32(ft_range[1]),
                np.float32(psqt_range[0]), np.float32(psqt_range[1]), pad, virtual)
    return True


def set_threads(threads: int) -> None:
    """Threads of PyTorch and of these kernels (Numba's pool; at most the cores it started with)."""
    torch.set_num_threads(threads)
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


class _FeatureTransform(torch.autograd.Function):
    @staticmethod
    def forward(ctx, idx_us, idx_them, weight, bias, l1: int, virtual: int):
        n, d = idx_us.shape[0], weight.shape[1]
        acc = torch.empty(2, n, d, dtype=torch.float32)
        x = torch.empty(n, l1, dtype=torch.float32)
        psqt = torch.empty(n, d - l1, dtype=torch.float32)
        table = weight.detach().numpy()
        if virtual:
            folded = np.empty((virtual, d), np.float32)
            _fold(table, virtual, folded)
            table = folded
        _forward(idx_us.numpy(), idx_them.numpy(), table, bias.detach().numpy(), l1, acc.numpy(), x.numpy(),
                 psqt.numpy())
        ctx.save_for_backward(idx_us, idx_them, acc)
        ctx.l1 = l1
        ctx.rows = weight.shape[0]
        ctx.virtual = virtual
        ctx.spent = False
        return x, psqt

    @staticmethod
    def backward(ctx, grad_x, grad_psqt):
        idx_us, idx_them, acc = ctx.saved_tensors
        if ctx.spent:
            raise RuntimeError("the feature transform's backward pass reuses its saved accumulators and runs once "
                               "per forward pass (retain_graph is not supported)")
        ctx.spent = True
        n, d = idx_us.shape[0], acc.shape[2]
        grad_x = torch.zeros(n, ctx.l1) if grad_x is None else grad_x.contiguous()
        grad_psqt = torch.zeros(n, d - ctx.l1) if grad_psqt is None else grad_psqt.contiguous()
        grad_weight = torch.empty(ctx.rows, d, dtype=torch.float32)     # every row written below
        grad_bias = torch.zeros(ctx.l1, dtype=torch.float32)
        gw = grad_weight.numpy()
        virtual = ctx.virtual
        _backward(idx_us.numpy(), idx_them.numpy(), acc.numpy(), ctx.l1, grad_x.numpy(), grad_psqt.numpy(),
                  gw[:virtual] if virtual else gw, grad_bias.numpy(), numba.get_num_threads())
        if virtual:
            _virtual_gradients(gw, virtual)
        return None, None, grad_weight, grad_bias, None, None


def virtual_indices(idx, virtual: int):
    """Each row's real features followed by the factoriser's virtual ones (``virtual + f % PS_NB``; -1 stays
    padding)."""
    return torch.cat([idx, torch.where(idx >= 0, virtual + idx % PS_NB, -1)], 1)


def reference_transform(idx_us, idx_them, weight, bias, l1: int, padding_row: int, virtual: int = 0):
    """The same function in PyTorch operations (any device): (x [n, L1], psqt [n, 8])."""
    if virtual:
        idx_us, idx_them = virtual_indices(idx_us, virtual), virtual_indices(idx_them, virtual)
    n = idx_us.shape[0]
    idx = torch.cat([idx_us, idx_them])
    emb = F.embedding_bag(idx.masked_fill(idx < 0, padding_row), weight, mode="sum", padding_idx=padding_row)
    us, them = emb[:n], emb[n:]
    half = l1 // 2
    a_us = torch.clamp(us[:, :l1] + bias, 0.0, 1.0)
    a_them = torch.clamp(them[:, :l1] + bias, 0.0, 1.0)
    x = torch.cat([a_us[:, :half] * a_us[:, half:], a_them[:, :half] * a_them[:, half:]], 1) * PAIRWISE_FACTOR
    return x, (us[:, l1:] - them[:, l1:]) * 0.5


def feature_transform(idx_us, idx_them, weight, bias, l1: int, padding_row: int, virtual: int = 0):
    """(x [n, L1], psqt [n, 8]) of int64 index rows of each perspective; Numba kernels on the CPU. ``virtual``:
    the first of the factoriser's virtual rows (then the padding row is ``virtual - 1``), 0 for none."""
    if weight.device.type == "cpu" and weight.dtype == torch.float32 and bias.dtype == torch.float32:
        if virtual and padding_row != virtual - 1:
            raise ValueError(f"the factoriser's rows must follow the padding row {padding_row}, not start at {virtual}")
        return _FeatureTransform.apply(idx_us.contiguous(), idx_them.contiguous(), weight.contiguous(),
                                       bias.contiguous(), l1, virtual)
    return reference_transform(idx_us, idx_them, weight, bias, l1, padding_row, virtual)
