"""Draws by rule inside the search: material that cannot mate, repetitions, and repetitions one move away."""
import numpy as np

from quantfish.core.bitops import U0, pop_lsb
from quantfish.core.position import ST_KEY, ST_PLY_FROM_NULL, ST_RULE50, ST_SIDE
from quantfish.core.tables import (CUCKOO_TO_SHIFT, OFF_BETWEEN, OFF_CUCKOO_KEY, OFF_CUCKOO_MOVE, cuckoo_first,
                                   cuckoo_second)
from quantfish.core.types import (B_BISHOP, B_KNIGHT, B_PAWN, B_QUEEN, B_ROOK, BLACK_PIECES, EMPTY, SQUARE_MASK,
                                  SQUARE_NB, W_BISHOP, W_KNIGHT, W_PAWN, W_QUEEN, W_ROOK, WHITE_PIECES, colour_of)
from quantfish.runtime.jit import njit


@njit(cache=True, nogil=True)
def insufficient_material(bb):
    """No pawn, rook or queen, and at most one minor piece on the board."""
    if bb[W_PAWN] | bb[B_PAWN] | bb[W_ROOK] | bb[B_ROOK] | bb[W_QUEEN] | bb[B_QUEEN]:
        return False
    minors = bb[W_KNIGHT] | bb[B_KNIGHT] | bb[W_BISHOP] | bb[B_BISHOP]
    return pop_lsb(minors) == U0


@njit(cache=True, nogil=True)
def is_repetition(keys, st, idx, root_idx):
    """A repetition after the root, or a threefold repetition including the game before it."""
    key = keys[idx]
    end = min(st[ST_RULE50], st[ST_PLY_FROM_NULL])
    count = 0
    i = 4
    while i <= end and idx - i >= 0:
        if keys[idx - i] == key:
            if idx - i > root_idx:
                return True
            count += 1
            if count >= 2:
                return True
        i += 2
    return False


@njit(cache=True, nogil=True, inline="always")
def _occurred_before(keys, j, end):
    """Whether the position at ``keys[j]`` stood earlier in the same reversible stretch, which reaches ``end``
    plies back from ``j``."""
    key = keys[j]
    i = 4
    while i <= end and j - i >= 0:
        if keys[j - i] == key:
            return True
        i += 2
    return False


@njit(cache=True, nogil=True)
def upcoming_repetition(T, keys, bb, board, st, idx, ply):
    """Whether the side to move has a move that repeats a position of the path (Stockfish's ``has_game_cycle``):
    an earlier position, an odd number of plies back, differs from this one by one reversible piece move whose
    path is clear. One after the root is a draw the side to move can claim; one at or before the root counts
    only if that position itself was a repetition. ``keys[idx]`` is this position's key."""
    end = min(st[ST_RULE50], st[ST_PLY_FROM_NULL])
    if end < 3:
        return False
    key = np.uint64(st[ST_KEY])
    occupied = bb[WHITE_PIECES] | bb[BLACK_PIECES]
    i = 3
    while i <= end and idx - i >= 0:
        diff = key ^ keys[idx - i]
        slot = cuckoo_first(diff)
        if T[OFF_CUCKOO_KEY + slot] != diff:
            slot = cuckoo_second(diff)
        if T[OFF_CUCKOO_KEY + slot] == diff:
            move = np.int64(T[OFF_CUCKOO_MOVE + slot])
            s1 = move & SQUARE_MASK
            s2 = (move >> CUCKOO_TO_SHIFT) & SQUARE_MASK
            if T[OFF_BETWEEN + s1 * SQUARE_NB + s2] & occupied == U0:
                if ply > i:
                    return True
                # At or before the root: the move must be the side to move's (both directions share a slot),
                # and the position it returns to must have stood twice.
                mover = board[s2] if board[s1] == EMPTY else board[s1]
                if colour_of(mover) == st[ST_SIDE] and _occurred_before(keys, idx - i, end - i):
                    return True
        i += 2
    return False
