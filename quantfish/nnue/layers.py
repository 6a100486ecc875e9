"""Integer forward pass from accumulators to (psqt, positional), compiled (docs/nnue-sf15.1.md sections 4-5).

transform: clamp both halves of each perspective's accumulator to [0, 127], multiply pairwise, >> 7; the
side to move's half comes first. For Stockfish 17.1 nets (``net.params[P_FT_SHIFT] = 1``, nnue-sf17.1.md
section 4) the accumulator is first doubled with int16 wrapping (Stockfish doubles the FT at load), then
clamped to [0, 254] and the product shifted by 9: one formula, ``clamp(int16(acc << s), 0, 127 << s)`` and
``>> 7 + 2s``. fc_0 runs sparsely over the non-zero bytes of the transformed input (same sum as the dense
layer), then SqrClippedReLU and ClippedReLU of fc_0 outputs 0..14 feed fc_1, ClippedReLU, fc_2, and fc_0
output 15 is forwarded as ``fc0[15] * 9600 / 8128``. Every width, shift and scale is a constant of
``quantfish.nnue.architecture`` (compile-time constants here). A Quantfish-format net (``params[P_SCHEME]``) takes
``forward_scheme`` instead: the same layers with the requantisations and clamps of its scheme record
(``forward_any`` and ``forward_all`` choose by the net).

No function here allocates: the caller passes a scratch tuple from ``make_scratch``.
"""

import numpy as np

from quantfish.nnue.architecture import (
    ACT_MAX, FC0_OUT, FC1_IN_PADDED, FC1_OUT, FT_ACT_MAX, FT_PRODUCT_SHIFT, N_HIDDEN, PIECES_PER_STACK, SKIP_DIV,
    SKIP_MUL, SQR_SHIFT, WEIGHT_SCALE_BITS, padded,
)
from quantfish.nnue.intmath import tdiv, wrap32
from quantfish.runtime.jit import njit
from quantfish.nnue.net import P_FT_SHIFT, P_SCHEME
from quantfish.nnue.requant import head_scheme, psqt_scheme, transform_half_scheme

# The int32 work buffer of the scratch: fc_0's outputs, fc_1's (padded) inputs, fc_1's outputs. The refresh
# cache (quantfish.nnue.kernel.loader) reuses it for two lists of up to 64 feature indices, so it has at least 128 entries.
W_FC0 = 0
W_L1IN = W_FC0 + FC0_OUT
W_CR1 = W_L1IN + FC1_IN_PADDED
WORK_SIZE = max(padded(W_CR1 + FC1_OUT), 2 * 64)


def make_scratch(l1: int):
    """Buffers for one thread's forward passes (opaque to callers):
    (x uint8[L1], non-zero input indices int32[L1], work int32[WORK_SIZE])."""
    return (np.zeros(l1, np.uint8), np.zeros(l1, np.int32), np.zeros(WORK_SIZE, np.int32))


@njit(cache=True, nogil=True)
def transform_half(acc, dst, ft_shift=0):
    """dst[j] = clamp(a[j]) * clamp(a[j + L1/2]) >> (7 + 2s) for one perspective, with a = int16(acc << s),
    clamp to [0, 127 << s] and s = ``ft_shift`` (0: 15.1, 1: 17.1). dst is a view (the loop vectorises)."""
    half = acc.shape[0] // 2
    if ft_shift == 0:
        for j in range(half):
            a = min(max(np.int32(acc[j]), 0), FT_ACT_MAX)
            b = min(max(np.int32(acc[j + half]), 0), FT_ACT_MAX)
            dst[j] = (a * b) >> FT_PRODUCT_SHIFT
    else:
        hi = FT_ACT_MAX << ft_shift
        sh = FT_PRODUCT_SHIFT + 2 * ft_shift
        for j in range(half):
            a = min(max(np.int32(np.int16(np.int32(acc[j]) << ft_shift)), 0), hi)
            b = min(max(np.int32(np.int16(np.int32(acc[j + half]) << ft_shift)), 0), hi)
            dst[j] = (a * b) >> sh


@njit(cache=True, nogil=True)
def find_nnz(x, nzb):
    """Indices of the non-zero inputs of ``x`` into ``nzb``; returns their number.

    Branch-free: about 17% of the inputs are non-zero, scattered, so a branch would mispredict often.
    (Measured faster than a two-level scan over 4-byte groups.)
    """
    n = 0
    for i in range(x.shape[0]):
        nzb[n] = i
        n += x[i] != 0
    return n


@njit(cache=True, nogil=True)
def fc0_sparse(w0t, b0, x, nzb, n, out):
    """out[o] = b0[o] + sum_i w0[o][i] * x[i] over the n listed non-zero inputs; w0t is [input][16].

    The output count is read from ``out`` (not a constant) so LLVM vectorises the row loop instead of
    unrolling it into scalar code.
    """
    m = out.shape[0]
    for o in range(m):
        out[o] = b0[o]
    t = 0
    while t + 1 < n:
        i = nzb[t]
        j = nzb[t + 1]
        xi = np.int32(x[i])
        xj = np.int32(x[j])
        ri = w0t[i]
        rj = w0t[j]
        for o in range(m):
            out[o] += np.int32(ri[o]) * xi + np.int32(rj[o]) * xj
        t += 2
    if t < n:
        i = nzb[t]
        xi = np.int32(x[i])
        ri = w0t[i]
        for o in range(m):
            out[o] += np.int32(ri[o]) * xi


@njit(cache=True, nogil=True)
def fc0_dense(w0, b0, x, out):
    """Reference dense fc_0 (w0 is [16][L1]); used by tests to check the sparse path."""
    for o in range(FC0_OUT):
        s = np.int64(b0[o])
        for i in range(x.shape[0]):
            s += np.int32(w0[o, i]) * np.int32(x[i])
        out[o] = s


@njit(cache=True, nogil=True)
def head(fc0, b1, w1, b2, w2, l1in, cr1):
    """Layers after fc_0 for one bucket: activations, fc_1, ClippedReLU, fc_2 plus the skip; returns positional."""
    for o in range(N_HIDDEN):
        v = np.int64(fc0[o])
        l1in[o] = min((v * v) >> SQR_SHIFT, ACT_MAX)                       # SqrClippedReLU of the signed value
        l1in[N_HIDDEN + o] = min(max(v >> WEIGHT_SCALE_BITS, 0), ACT_MAX)  # ClippedReLU
    for i in range(2 * N_HIDDEN, w1.shape[1]):
        l1in[i] = 0                                       # padding inputs are always zero
    n_in = w1.shape[1]
    for o in range(FC1_OUT):
        s = np.int32(b1[o])
        for i in range(n_in):
            s += np.int32(w1[o, i]) * l1in[i]
        cr1[o] = min(max(s >> WEIGHT_SCALE_BITS, 0), ACT_MAX)
    out = np.int64(b2)
    for i in range(FC1_OUT):
        out += np.int32(w2[i]) * cr1[i]
    fwd = tdiv(wrap32(np.int64(fc0[FC0_OUT - 1]) * SKIP_MUL), SKIP_DIV)
    return out + fwd


@njit(cache=True, nogil=True)
def transform(acc, ply, side, x, nzb, ft_shift=0):
    """Transformed input for the side to move ``side`` at ``ply``; returns the number of non-zero inputs."""
    half = acc.shape[2] // 2
    transform_half(acc[ply, side], x[:half], ft_shift)
    transform_half(acc[ply, 1 - side], x[half:], ft_shift)
    return find_nnz(x, nzb)


@njit(cache=True, nogil=True)
def psqt_value(psqt, ply, side, bucket):
    """PSQT output of ``bucket``: (stm - other) / 2, truncated."""
    return tdiv(np.int64(psqt[ply, side, bucket]) - np.int64(psqt[ply, 1 - side, bucket]), 2)


@njit(cache=True, nogil=True)
def positional_value(net, bucket, x, nzb, n, work):
    """Layer-stack output of ``bucket`` for an already transformed input."""
    fc0 = work[W_FC0:W_FC0 + FC0_OUT]
    l1in = work[W_L1IN:W_L1IN + FC1_IN_PADDED]
    cr1 = work[W_CR1:W_CR1 + FC1_OUT]
    fc0_sparse(net.w0t[bucket], net.b0[bucket], x, nzb, n, fc0)
    return head(fc0, net.b1[bucket], net.w1[bucket], net.b2[bucket], net.w2[bucket], l1in, cr1)


@njit(cache=True, nogil=True)
def forward(net, acc, psqt, ply, side, bucket, scratch):
    """Fast search path: (psqt, positional) of one bucket for the accumulators at ``ply``; Stockfish's fixed
    arithmetic only (a Quantfish-format net takes ``forward_scheme``; ``forward_any`` chooses)."""
    x, nzb, work = scratch
    n = transform(acc, ply, side, x, nzb, net.params[P_FT_SHIFT])
    return psqt_value(psqt, ply, side, bucket), positional_value(net, bucket, x, nzb, n, work)


@njit(cache=True, nogil=True)
def forward_all(net, acc, psqt, ply, side, psqt_out, pos_out, scratch):
    """All buckets (for the eval report): fills psqt_out[8] and pos_out[8]."""
    if net.params[P_SCHEME]:
        for b in range(psqt_out.shape[0]):
            psqt_out[b], pos_out[b] = forward_scheme(net, acc, psqt, ply, side, b, scratch)
        return
    x, nzb, work = scratch
    n = transform(acc, ply, side, x, nzb, net.params[P_FT_SHIFT])
    for b in range(psqt_out.shape[0]):
        psqt_out[b] = psqt_value(psqt, ply, side, b)
        pos_out[b] = positional_value(net, b, x, nzb, n, work)


@njit(cache=True, nogil=True)
def forward_any(net, acc, psqt, ply, side, bucket, scratch):
    """``forward`` or ``forward_scheme``, as the net says. Not for the search: a branch to the scheme's
    pass here would make ``forward`` too large to inline, which costs the search about 7% of its speed
    (measured); the search chooses once per evaluation itself (``quantfish.nnue.stack.net_output_scheme``)."""
    if net.params[P_SCHEME]:
        return forward_scheme(net, acc, psqt, ply, side, bucket, scratch)
    return forward(net, acc, psqt, ply, side, bucket, scratch)


@njit(cache=True, nogil=True)
def forward_scheme(net, acc, psqt, ply, side, bucket, scratch):
    """``forward`` of a Quantfish-format net: every requantisation and clamp from its scheme record
    (``quantfish.nnue.requant``; the definition is ``quantfish.quant.simulator``). fc_0 is the same sparse int32 sum."""
    x, nzb, work = scratch
    qs = net.qscheme[bucket]
    half = acc.shape[2] // 2
    transform_half_scheme(acc[ply, side], x[:half], qs)
    transform_half_scheme(acc[ply, 1 - side], x[half:], qs)
    n = find_nnz(x, nzb)
    fc0 = work[W_FC0:W_FC0 + FC0_OUT]
    l1in = work[W_L1IN:W_L1IN + FC1_IN_PADDED]
    cr1 = work[W_CR1:W_CR1 + FC1_OUT]
    fc0_sparse(net.w0t[bucket], net.b0[bucket], x, nzb, n, fc0)
    positional = head_scheme(fc0, net.b1[bucket], net.w1[bucket], net.b2[bucket], net.w2[bucket], l1in, cr1, qs)
    return psqt_scheme(psqt[ply, side, bucket], psqt[ply, 1 - side, bucket], qs), positional


@njit(cache=True, nogil=True)
def bucket_of(pieces):
    """Layer stack used for a position with ``pieces`` pieces (kings included)."""
    return (pieces - 1) // PIECES_PER_STACK
