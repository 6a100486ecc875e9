"""Feature-transformer accumulators: full refresh, incremental update, and the search-stack interface.

Arithmetic (docs/nnue-sf15.1.md section 4): ``acc[P] = int16(bias + sum of W[f])`` with int16 wrapping,
``psqt[P] = int32(sum of PSQ[f])``. Wrapping sums are associative, so an incremental update always equals a
refresh.

Search-stack interface
----------------------
The search owns these arrays (``make_stack`` allocates them):

* ``acc[MAX_PLY, 2, L1]`` int16 and ``psqt[MAX_PLY, 2, 8]`` int32: the accumulator of each ply for each
  perspective (0 = White, 1 = Black);
* ``computed[MAX_PLY, 2]`` uint8: 1 when ``acc[p, P]``/``psqt[p, P]`` are valid;
* ``dirty[MAX_PLY, 3, 3]`` int32 and ``ndirty[MAX_PLY]`` int32: the pieces changed by the move that led
  to ply p, as rows ``(piece code, from square, to square)``, at most 3. ``from = 64`` for a piece that
  appears (the promoted piece), ``to = 64`` for a piece that disappears (a captured piece, the pawn that
  promotes). Castling is a king move plus a rook move. A null move has ``ndirty = 0``.
  Examples: e2e4 -> ``[(1, 12, 28)]``; exd5 capturing a black pawn -> ``[(1, 28, 35), (9, 35, 64)]``;
  e7e8=Q -> ``[(1, 52, 64), (5, 64, 60)]``; O-O for White -> ``[(6, 4, 6), (4, 7, 5)]``.

Protocol: when the engine makes a move to ply p it fills ``dirty[p]``/``ndirty[p]`` and sets
``computed[p, :] = 0``; the root ply is simply left uncomputed (or refreshed with ``quantfish.nnue.stack.refresh_ply``).
Before evaluating at ply p it calls ``quantfish.nnue.stack.ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p,
board, king_sq_white, king_sq_black)`` with the mailbox and king squares of the position *at ply p*. For each
perspective this walks back to the nearest computed ancestor and applies the deltas forward ply by ply,
marking each ply computed, so sibling nodes reuse the work (Stockfish's lazy update). If that perspective's
own king moved on the way, the ply it moved into is refreshed first (from ``board`` with the later deltas
undone); if no ancestor is computed, ply p is refreshed from ``board``.
``net`` is ``Net.arrays()`` (a ``netfile.NetArrays``).

Two nets (Stockfish 17.1's big and small): ``make_pair_stacks`` gives one stack per net with ``dirty`` and
``ndirty`` shared, so a move is recorded once; the engine clears ``computed[p]`` of both stacks. Each net's
accumulators are then brought up to date only when that net is evaluated (``evaluate.evaluate_pair``).
"""

from typing import NamedTuple

import numpy as np

# The move record (``dirty`` rows, see above) is stated in quantfish.nnue.architecture, which the C kernel shares too.
from quantfish.nnue.architecture import MAX_DIRTY, NO_SQ# noqa: F401  (ckernel and pychess_bridge import them here)
from quantfish.nnue.features import feature_index, king_bucket_offset, orient, piece_plane
from quantfish.runtime.jit import njit


class AccumulatorStack(NamedTuple):
    """One net's accumulators along the search path, a row per ply, and the moves' feature changes."""
    acc: np.ndarray          # int16[ply, 2, L1]
    psqt: np.ndarray         # int32[ply, 2, buckets]
    computed: np.ndarray     # uint8[ply, 2]: the row of that perspective is up to date
    dirty: np.ndarray        # int32[ply, MAX_DIRTY, 3]: (piece, from, to) of each piece the move to the ply changed
    ndirty: np.ndarray       # int32[ply]: how many


def make_stack(l1: int, max_ply: int, psqt_buckets: int = 8) -> AccumulatorStack:
    """An ``AccumulatorStack`` for a search of up to ``max_ply`` plies."""
    return AccumulatorStack(np.zeros((max_ply, 2, l1), np.int16), np.zeros((max_ply, 2, psqt_buckets), np.int32),
                            np.zeros((max_ply, 2), np.uint8), np.zeros((max_ply, MAX_DIRTY, 3), np.int32),
                            np.zeros(max_ply, np.int32))


def make_pair_stacks(big_l1: int, small_l1: int, max_ply: int, psqt_buckets: int = 8):
    """(big stack, small stack), sharing the moves' feature changes (``dirty``/``ndirty``)."""
    big = make_stack(big_l1, max_ply, psqt_buckets)
    small = make_stack(small_l1, max_ply, psqt_buckets)
    return big, small._replace(dirty=big.dirty, ndirty=big.ndirty)


@njit(cache=True, nogil=True)
def refresh(net, board, persp, ksq, acc_out, psqt_out):
    """Compute one perspective's accumulator from scratch for mailbox ``board`` (no allocation)."""
    bias = net.ft_bias
    w = net.ft_weights
    pw = net.ft_psqt
    o = orient(persp, ksq)
    kb = king_bucket_offset(persp, ksq)
    l1 = acc_out.shape[0]
    nb = psqt_out.shape[0]
    for j in range(l1):
        acc_out[j] = bias[j]
    for k in range(nb):
        psqt_out[k] = 0
    # Features are added two per pass, which halves the loads and stores of the accumulator.
    pending = -1
    for sq in range(64):
        pc = board[sq]
        if pc == 0:
            continue
        f = (sq ^ o) + piece_plane(persp, pc) + kb
        if pending < 0:
            pending = f
            continue
        for j in range(l1):
            acc_out[j] = acc_out[j] + w[pending, j] + w[f, j]
        for k in range(nb):
            psqt_out[k] = psqt_out[k] + pw[pending, k] + pw[f, k]
        pending = -1
    if pending >= 0:
        for j in range(l1):
            acc_out[j] = acc_out[j] + w[pending, j]
        for k in range(nb):
            psqt_out[k] = psqt_out[k] + pw[pending, k]


@njit(cache=True, nogil=True)
def update(net, persp, ksq, dirty_row, nd, acc_src, acc_dst, psqt_src, psqt_dst):
    """``dst = src`` minus the features removed and plus those added by one move's dirty pieces.

    ``ksq`` is ``persp``'s king square, which the move must not have changed.
    """
    w = net.ft_weights
    pw = net.ft_psqt
    r0 = r1 = r2 = a0 = a1 = a2 = 0
    nr = 0
    na = 0
    for i in range(nd):
        pc = dirty_row[i, 0]
        fr = dirty_row[i, 1]
        to = dirty_row[i, 2]
        if fr != NO_SQ:
            f = feature_index(persp, ksq, fr, pc)
            if nr == 0:
                r0 = f
            elif nr == 1:
                r1 = f
            else:
                r2 = f
            nr += 1
        if to != NO_SQ:
            f = feature_index(persp, ksq, to, pc)
            if na == 0:
                a0 = f
            elif na == 1:
                a1 = f
            else:
                a2 = f
            na += 1
    # Specialised single-pass kernels for the common shapes: one read of src, one write of dst, and
    # each loop vectorises to int16 (int32 for PSQT) adds.
    if nr == 1 and na == 1:          # quiet move, promotion without capture
        _add1_sub1(acc_src, acc_dst, w, a0, r0)
        _add1_sub1(psqt_src, psqt_dst, pw, a0, r0)
    elif nr == 2 and na == 1:        # capture, capture-promotion, en passant
        _add1_sub2(acc_src, acc_dst, w, a0, r0, r1)
        _add1_sub2(psqt_src, psqt_dst, pw, a0, r0, r1)
    elif nr == 2 and na == 2:        # castling
        _add2_sub2(acc_src, acc_dst, w, a0, a1, r0, r1)
        _add2_sub2(psqt_src, psqt_dst, pw, a0, a1, r0, r1)
    else:                            # anything else (null move, unusual deltas)
        for j in range(acc_src.shape[0]):      # element loops: the search compiles this without NRT
            acc_dst[j] = acc_src[j]
        for j in range(psqt_src.shape[0]):
            psqt_dst[j] = psqt_src[j]
        for i in range(nr):
            f = r0 if i == 0 else (r1 if i == 1 else r2)
            _add_row(acc_dst, w, f, -1)
            _add_row(psqt_dst, pw, f, -1)
        for i in range(na):
            f = a0 if i == 0 else (a1 if i == 1 else a2)
            _add_row(acc_dst, w, f, 1)
            _add_row(psqt_dst, pw, f, 1)


@njit(cache=True, nogil=True)
def _add1_sub1(src, dst, w, a, r):
    wa = w[a]
    wr = w[r]
    for j in range(dst.shape[0]):
        dst[j] = src[j] + wa[j] - wr[j]


@njit(cache=True, nogil=True)
def _add1_sub2(src, dst, w, a, r, q):
    wa = w[a]
    wr = w[r]
    wq = w[q]
    for j in range(dst.shape[0]):
        dst[j] = src[j] + wa[j] - wr[j] - wq[j]


@njit(cache=True, nogil=True)
def _add2_sub2(src, dst, w, a, b, r, q):
    wa = w[a]
    wb = w[b]
    wr = w[r]
    wq = w[q]
    for j in range(dst.shape[0]):
        dst[j] = src[j] + wa[j] + wb[j] - wr[j] - wq[j]


@njit(cache=True, nogil=True)
def _add_row(dst, w, f, sign):
    wf = w[f]
    if sign > 0:
        for j in range(dst.shape[0]):
            dst[j] = dst[j] + wf[j]
    else:
        for j in range(dst.shape[0]):
            dst[j] = dst[j] - wf[j]
