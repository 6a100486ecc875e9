"""Draws by rule inside the search: material that cannot mate, and repetitions."""
from quantfish.core.bitops import U0, pop_lsb
from quantfish.core.position import ST_PLY_FROM_NULL, ST_RULE50
from quantfish.core.types import (B_BISHOP, B_KNIGHT, B_PAWN, B_QUEEN, B_ROOK, W_BISHOP, W_KNIGHT, W_PAWN, W_QUEEN,
                                  W_ROOK)
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
