"""Perft: counts leaf nodes of the legal move tree, the standard check of a move generator.

The last ply is bulk-counted: ``count_legal`` counts the moves without making or writing them. The recursion
works on owner-less views with reference counting off, as the search does (``quantfish.runtime.intrinsics``): an atomic
count change per array per call cost more than the move generation."""
import numpy as np

from quantfish.runtime.intrinsics import borrowed
from quantfish.core.movegen import MAX_MOVES, count_legal, generate_legal
from quantfish.core.position import ST_SIZE, make_move
from quantfish.runtime.jit import njit


@njit(cache=True, nogil=True, _nrt=False)
def _perft(T, bbs, boards, sts, moves, dirty, ply, depth):
    if depth == 1:
        return count_legal(T, bbs[ply], boards[ply], sts[ply])
    n = generate_legal(T, bbs[ply], boards[ply], sts[ply], moves[ply])
    total = 0
    for i in range(n):
        make_move(T, bbs[ply], boards[ply], sts[ply], bbs[ply + 1], boards[ply + 1], sts[ply + 1],
                  moves[ply, i], dirty)
        total += _perft(T, bbs, boards, sts, moves, dirty, ply + 1, depth - 1)
    return total


@njit(cache=True, nogil=True)
def _stack(bb, board, st, depth):
    """Position, move and dirty-piece buffers for a tree of ``depth`` plies, the root in row 0."""
    bbs = np.empty((depth + 1, 16), dtype=np.uint64)
    boards = np.empty((depth + 1, 64), dtype=np.int8)
    sts = np.empty((depth + 1, ST_SIZE), dtype=np.int64)
    bbs[0] = bb
    boards[0] = board
    sts[0] = st
    return bbs, boards, sts, np.empty((depth + 1, MAX_MOVES), dtype=np.int32), np.empty((3, 3), dtype=np.int32)


@njit(cache=True, nogil=True)
def perft_divide(T, bb, board, st, depth, out_moves, out_counts):
    """Per-root-move leaf counts; returns the number of root moves written to the outputs."""
    bbs, boards, sts, moves, dirty = _stack(bb, board, st, depth)
    n = generate_legal(T, bbs[0], boards[0], sts[0], moves[0])
    for i in range(n):
        out_moves[i] = moves[0, i]
        if depth <= 1:
            out_counts[i] = 1
        else:
            make_move(T, bbs[0], boards[0], sts[0], bbs[1], boards[1], sts[1], moves[0, i], dirty)
            out_counts[i] = _perft(borrowed(T), borrowed(bbs), borrowed(boards), borrowed(sts), borrowed(moves),
                                   borrowed(dirty), np.int64(1), np.int64(depth - 1))
    return n


@njit(cache=True, nogil=True)
def perft(T, bb, board, st, depth):
    if depth <= 0:
        return 1
    bbs, boards, sts, moves, dirty = _stack(bb, board, st, depth)
    return _perft(borrowed(T), borrowed(bbs), borrowed(boards), borrowed(sts), borrowed(moves), borrowed(dirty),
                  np.int64(0), np.int64(depth))
