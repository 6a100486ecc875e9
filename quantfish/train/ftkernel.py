"""The feature transformer (sparse sum, bias, clamp, pairwise product, PSQT) as one differentiable function.

``feature_transform(white, black, stm, rows, weight, bias, l1, padding_row, virtual)`` returns, for the
positions ``rows`` in that order, the transformed input x [m, L1] (the side to move's half first) and the PSQT
difference (us - them) / 2 for all 8 buckets [m, 8]. ``weight`` is the shared table of L1 FT columns and 8
PSQT columns, index -1 is padding. With the factoriser (``virtual``: the first of its ``PS_NB`` rows), each
real feature f also activates row ``virtual + f % PS_NB``.

On the CPU this is Numba kernels behind a PyTorch autograd function. Written with PyTorch operations, the same
thing spends most of a training step outside arithmetic: ``embedding_bag``'s backward sorts every index, and
each slice, clamp and product of the [n, L1] tensors allocates and zero-fills its gradient (measured: 60% of a
step at L1 = 256). The kernels pick each position's two index rows themselves (by the side to move, in the
caller's order: no gathered copies of the index arrays), and work on (position, perspective) pairs grouped by
the perspective's king bucket, all of whose features lie in one block of 704 rows: forward, the threads take
runs of that order; backward, each thread owns whole king buckets and scatter-adds its pairs' gradients into
their rows, which stay in its cache. With the factoriser the kernels never touch a virtual row per feature:
the forward pass sums rows of the folded table (each real row plus its virtual row, made by the clip after
each step), and the backward pass scatters into the real rows only, each virtual row's gradient then being
the sum of its 32 real rows' (the same function and gradients, with half the row operations). Elsewhere
(CUDA) the PyTorch formulation runs (``reference_transform``), which is also what the kernels are tested
against.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

import numba
from numba import prange

from quantfish.runtime.jit import njit
from quantfish.nnue.architecture import KING_BUCKETS, PS_NB
from quantfish.nnue.scales import PAIRWISE_FACTOR


@njit(cache=True, nogil=True, inline="always")
def _perspective(white, black, stm, rows, r, p):
    """The index row of output row ``r``'s perspective ``p`` (0: the side to move's, 1: the other's): the
    position is ``rows[r]``."""
    i = rows[r]
    return white[i] if (stm[i] == 0) == (p == 0) else black[i]


@njit(cache=True, nogil=True)
def _pair_order(white, black, stm, rows, parts):
    """The (output row, perspective) pairs grouped by the king bucket of their first feature, and the buckets
    shared out between ``parts`` threads: (order, start, owner). ``order[q]`` is pair q's 2 * row +
    perspective (a stable counting sort), bucket b's pairs are ``order[start[b]:start[b + 1]]``, and
    ``owner[b]`` is the thread that scatters into its rows (the largest buckets first, each to the thread
    with the least work so far).

    All of one perspective's features lie in its king's block of ``PS_NB`` rows, so a bucket's pairs touch the
    same 704 rows of the table (about 740 KB at L1 = 256, where the table is 24 MB): scattered together, they
    find those rows in the core's own cache."""
    n = rows.shape[0]
    keys = np.empty(2 * n, np.int64)
    start = np.zeros(KING_BUCKETS + 1, np.int64)
    for r in range(n):
        for p in range(2):
            b = 0
            for f in _perspective(white, black, stm, rows, r, p):
                if f >= 0:
                    b = min(f // PS_NB, KING_BUCKETS - 1)
                    break
            keys[2 * r + p] = b
            start[b + 1] += 1
    for b in range(KING_BUCKETS):
        start[b + 1] += start[b]
    order = np.empty(2 * n, np.int64)
    fill = start[:KING_BUCKETS].copy()
    for q in range(2 * n):
        b = keys[q]
        order[fill[b]] = q
        fill[b] += 1
    sizes = start[1:] - start[:KING_BUCKETS]
    load = np.zeros(parts, np.int64)
    owner = np.empty(KING_BUCKETS, np.int64)
    for b in np.argsort(-sizes, kind="mergesort"):
        t = np.argmin(load)
        owner[b] = t
        load[t] += sizes[b]
    return order, start, owner


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _forward(white, black, stm, rows, order, weight, bias, l1, acc, x, psqt_parts, psqt, parts):
    """acc[q] = bias (FT columns) + the rows of pair ``order[q]``'s features; x = clamp products;
    psqt = (us - them) / 2. The pairs are independent: ``order`` is cut into ``parts`` runs, one per thread,
    and the accumulators are written in that order, so that the backward pass reads them in sequence."""
    n = rows.shape[0]
    d = weight.shape[1]
    half = l1 // 2
    for t in prange(parts):
        for q in range(2 * n * t // parts, 2 * n * (t + 1) // parts):
            r = order[q] >> 1
            p = order[q] & 1
            features = _perspective(white, black, stm, rows, r, p)
            k = features.shape[0]
            a = acc[q]
            for j in range(l1):
                a[j] = bias[j]
            for j in range(l1, d):
                a[j] = 0.0
            # Four rows at a time: a quarter of the loads and stores of ``a``, which bound one row at a time.
            s = 0
            while s + 4 <= k and min(min(features[s], features[s + 1]), min(features[s + 2], features[s + 3])) >= 0:
                w0, w1 = weight[features[s]], weight[features[s + 1]]
                w2, w3 = weight[features[s + 2]], weight[features[s + 3]]
                for j in range(d):
                    a[j] += (w0[j] + w1[j]) + (w2[j] + w3[j])
                s += 4
            for s in range(s, k):
                f = features[s]
                if f >= 0:
                    w = weight[f]
                    for j in range(d):
                        a[j] += w[j]
            for j in range(half):
                u = min(max(a[j], 0.0), 1.0)
                v = min(max(a[j + half], 0.0), 1.0)
                x[r, p * half + j] = u * v * PAIRWISE_FACTOR
            for j in range(d - l1):
                psqt_parts[p, r, j] = a[l1 + j]
    for r in prange(n):
        for j in range(d - l1):
            psqt[r, j] = (psqt_parts[0, r, j] - psqt_parts[1, r, j]) * 0.5


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _row_gradients(acc, order, l1, grad_x, grad_psqt, grad_bias_parts):
    """The gradient of each pair's accumulator, from those of x and psqt, written over ``acc`` (which the
    backward pass needs no more), and the bias gradient's partial sums, one row per thread. The rows of x
    are taken in their own order (``slot``: where each pair's accumulator is), as they lie in memory."""
    pairs = acc.shape[0]
    d = acc.shape[1]
    half = l1 // 2
    parts = grad_bias_parts.shape[0]
    slot = np.empty(pairs, np.int64)
    for q in range(pairs):
        slot[order[q]] = q
    for t in prange(parts):
        gb = grad_bias_parts[t]
        for rp in range(pairs * t // parts, pairs * (t + 1) // parts):
            r = rp >> 1
            p = rp & 1
            a = acc[slot[rp]]
            gx = grad_x[r, p * half:(p + 1) * half]
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
                a[l1 + j] = grad_psqt[r, j] * sign
            for j in range(l1):
                gb[j] += a[j]


@njit(cache=True, nogil=True, fastmath=True, parallel=True)
def _scatter(white, black, stm, rows, order, start, owner, g, grad_weight, parts, strays):
    """grad_weight = the sum of g[q] over the pairs q where feature f is active, on ``parts`` threads, each
    owning the king buckets ``owner`` gives it: it zeroes their rows, then adds each of their pairs' gradient
    (read in sequence) into the bucket's rows, which stay in its cache. No lock and no table per thread. Rows
    past the king buckets' (the padding row) are zeroed by thread 0. A feature outside its pair's bucket (no
    HalfKAv2_hm row has one) is skipped and counted: the count is returned, and a second call with
    ``strays`` (one part owning every bucket) adds those features alone, zeroing nothing."""
    n_rows, d = grad_weight.shape
    skipped = np.zeros(parts, np.int64)
    for t in prange(parts):
        if t == 0 and not strays:
            for f in range(KING_BUCKETS * PS_NB, n_rows):
                grad_weight[f, :] = 0.0
        for b in range(KING_BUCKETS):
            if owner[b] != t:
                continue
            if not strays:
                for f in range(b * PS_NB, min(n_rows, (b + 1) * PS_NB)):
                    grad_weight[f, :] = 0.0
            for q in range(start[b], start[b + 1]):
                gq = g[q]
                for f in _perspective(white, black, stm, rows, order[q] >> 1, order[q] & 1):
                    if f >= 0:
                        if (f // PS_NB != b) != strays:
                            skipped[t] += 1
                            continue
                        gw = grad_weight[f]
                        for j in range(d):
                            gw[j] += gq[j]
    return skipped.sum()


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


def _backward(indices, pairs, acc, l1, grad_x, grad_psqt, grad_weight, grad_bias, parts):
    """The gradient of weight (written over ``grad_weight``: a scatter-add of whole rows per active feature)
    and of the bias (added to ``grad_bias``) from those of x and psqt, on ``parts`` threads; ``acc`` is
    overwritten. ``indices``: (white, black, stm, rows); ``pairs``: ``_pair_order``'s result for them."""
    order, start, owner = pairs
    bias_parts = np.zeros((parts, l1), np.float32)
    _row_gradients(acc, order, l1, grad_x, grad_psqt, bias_parts)
    grad_bias += bias_parts.sum(0)
    if _scatter(*indices, order, start, owner, acc, grad_weight, parts, False):
        _scatter(*indices, order, start, np.zeros_like(owner), acc, grad_weight, 1, True)


@njit(cache=True, nogil=True, parallel=True)
def _clip_table(weight, l1, ft_lo, ft_hi, ps_lo, ps_hi, pad, virtual, folded):
    """In place: FT columns into [ft_lo, ft_hi], PSQT columns into [ps_lo, ps_hi], the padding row zero; with
    the factoriser (``virtual`` > 0), each real row then moved so that it plus its virtual row is in range,
    and that sum written to ``folded`` (what ``_fold`` makes of the clipped table, to the bit). The same
    float32 operations as the PyTorch formulation (no fastmath), so the same weights to the bit."""
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
            out = folded[f]
            for j in range(d):
                lo, hi = (ft_lo, ft_hi) if j < l1 else (ps_lo, ps_hi)
                w[j] = min(max(w[j] + v[j], lo), hi) - v[j]
                out[j] = w[j] + v[j]
        folded[virtual - 1, :] = weight[virtual - 1, :]


class FoldedTable(NamedTuple):
    """A factorised table's folded form (each real row plus its virtual row), as its clip leaves it for the
    next forward pass (which would otherwise fold the table again: a pass over 24 MB), and the version counter
    of the table it was made from: any in-place change by PyTorch moves the counter on, and the fold is then
    not used."""
    table: np.ndarray
    version: int


def runs_here(weight) -> bool:
    """Whether the compiled kernels (these and ``stackkernel``) take the tensor ``weight`` (float32, on the CPU)."""
    return weight.device.type == "cpu" and weight.dtype == torch.float32


def clip_table(weight, l1: int, ft_range, psqt_range, pad: int, virtual: int = 0) -> FoldedTable | None:
    """``_clip_table`` on a contiguous table that ``runs_here`` (a parameter, changed in place), and with the factoriser
    the folded form of the clipped table."""
    folded = np.empty((virtual, weight.shape[1]) if virtual else (0, 0), np.float32)
    _clip_table(weight.detach().numpy(), l1, np.float32(ft_range[0]), np.float32(ft_range[1]),
                np.float32(psqt_range[0]), np.float32(psqt_range[1]), pad, virtual, folded)
    return FoldedTable(folded, weight._version) if virtual else None


def _folded_table(weight, virtual: int, folded: FoldedTable | None):
    """The table the forward pass sums rows of: with the factoriser, each real row plus its virtual row
    (``folded`` if it was made from the table as it is now, else made now)."""
    table = weight.detach().numpy()
    if not virtual:
        return table
    if folded is not None and folded.version == weight._version:
        return folded.table
    out = np.empty((virtual, table.shape[1]), np.float32)
    _fold(table, virtual, out)
    return out


def set_threads(threads: int) -> None:
    """Threads of PyTorch and of these kernels (Numba's pool; at most the cores it started with)."""
    torch.set_num_threads(threads)
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


class _FeatureTransform(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight, bias, indices, table, l1: int, virtual: int):
        rows = indices[3]
        n, d = rows.shape[0], weight.shape[1]
        parts = numba.get_num_threads()
        pairs = _pair_order(*indices, parts)
        acc = np.empty((2 * n, d), np.float32)
        x = torch.empty(n, l1, dtype=torch.float32)
        psqt = torch.empty(n, d - l1, dtype=torch.float32)
        _forward(*indices, pairs[0], table, bias.detach().numpy(), l1, acc, x.numpy(),
                 np.empty((2, n, d - l1), np.float32), psqt.numpy(), parts)
        ctx.saved = (indices, pairs, acc, parts)
        ctx.l1 = l1
        ctx.rows = weight.shape[0]
        ctx.virtual = virtual
        return x, psqt

    @staticmethod
    def backward(ctx, grad_x, grad_psqt):
        if ctx.saved is None:
            raise RuntimeError("the feature transform's backward pass reuses its saved accumulators and runs once "
                               "per forward pass (retain_graph is not supported)")
        indices, pairs, acc, parts = ctx.saved
        ctx.saved = None
        n, d = indices[3].shape[0], acc.shape[1]
        grad_x = torch.zeros(n, ctx.l1) if grad_x is None else grad_x.contiguous()
        grad_psqt = torch.zeros(n, d - ctx.l1) if grad_psqt is None else grad_psqt.contiguous()
        grad_weight = torch.empty(ctx.rows, d, dtype=torch.float32)     # every row written below
        grad_bias = torch.zeros(ctx.l1, dtype=torch.float32)
        gw = grad_weight.numpy()
        virtual = ctx.virtual
        _backward(indices, pairs, acc, ctx.l1, grad_x.numpy(), grad_psqt.numpy(), gw[:virtual] if virtual else gw,
                  grad_bias.numpy(), parts)
        if virtual:
            _virtual_gradients(gw, virtual)
        return grad_weight, grad_bias, None, None, None, None


def virtual_indices(idx, virtual: int):
    """Each row's real features followed by the factoriser's virtual ones (``virtual + f % PS_NB``; -1 stays
    padding)."""
    return torch.cat([idx, torch.where(idx >= 0, virtual + idx % PS_NB, -1)], 1)


def as_tensor(a, device, dtype=None) -> torch.Tensor:
    """``a`` (a tensor, or anything NumPy takes) as a tensor on ``device``, of ``dtype`` if given."""
    if isinstance(a, torch.Tensor):
        return a.to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)


def _array(a) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def reference_transform(white, black, stm, rows, weight, bias, l1: int, padding_row: int, virtual: int = 0):
    """The same function in PyTorch operations (any device): (x [m, L1], psqt [m, 8])."""
    dev = weight.device
    rows = as_tensor(rows, dev).long()
    white_to_move = (as_tensor(stm, dev)[rows] == 0).unsqueeze(1)
    wi, bi = as_tensor(white, dev)[rows].long(), as_tensor(black, dev)[rows].long()
    idx_us, idx_them = torch.where(white_to_move, wi, bi), torch.where(white_to_move, bi, wi)
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


def feature_transform(white, black, stm, rows, weight, bias, l1: int, padding_row: int, virtual: int = 0,
                      folded: FoldedTable | None = None):
    """(x [m, L1], psqt [m, 8]) of the positions ``rows`` (int[m], in that order), from the feature index rows
    of each colour's perspective (``white``, ``black``: int[n, 32], -1 padding) and the side to move (``stm``:
    [n], 0 White): row r's first half is its side to move's. Numba kernels on the CPU, which choose and
    reorder the index rows themselves. ``virtual``: the first of the factoriser's virtual rows (then the
    padding row is ``virtual - 1``), 0 for none; ``folded``: what the clip of ``weight`` returned, if any."""
    if runs_here(weight) and bias.dtype == torch.float32:
        if virtual and padding_row != virtual - 1:
            raise ValueError(f"the factoriser's rows must follow the padding row {padding_row}, not start at {virtual}")
        weight, bias = weight.contiguous(), bias.contiguous()
        indices = tuple(np.ascontiguousarray(_array(a)) for a in (white, black, stm))
        indices += (np.ascontiguousarray(_array(rows), np.int64),)
        return _FeatureTransform.apply(weight, bias, indices, _folded_table(weight, virtual, folded), l1, virtual)
    return reference_transform(white, black, stm, rows, weight, bias, l1, padding_row, virtual)
