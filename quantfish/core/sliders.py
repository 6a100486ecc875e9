"""Slider rays walked square by square: the slow reference from which ``tables`` builds the magic tables.

Used at start-up by ``quantfish.core.tables`` and offline by ``tools.magic_search``; too slow for the search.
"""
import numpy as np

from quantfish.core.bitops import U0, U1, popcount
from quantfish.runtime.jit import njit

ROOK_DIRS = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.int64)
BISHOP_DIRS = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=np.int64)


@njit(cache=True, nogil=True)
def slide_attacks(sq, occ, dirs):
    """Attacks of a slider on ``sq`` by walking rays: slow, used to build and check tables."""
    att = U0
    r0, f0 = sq // 8, sq % 8
    for d in range(dirs.shape[0]):
        dr, df = dirs[d, 0], dirs[d, 1]
        r, f = r0 + dr, f0 + df
        while 0 <= r < 8 and 0 <= f < 8:
            b = U1 << np.uint64(r * 8 + f)
            att |= b
            if occ & b:
                break
            r += dr
            f += df
    return att


@njit(cache=True, nogil=True)
def relevant_mask(sq, dirs):
    """Squares whose occupancy matters for a slider on ``sq`` (rays without their last square)."""
    m = U0
    r0, f0 = sq // 8, sq % 8
    for d in range(dirs.shape[0]):
        dr, df = dirs[d, 0], dirs[d, 1]
        r, f = r0 + dr, f0 + df
        while 0 <= r + dr < 8 and 0 <= f + df < 8:
            m |= U1 << np.uint64(r * 8 + f)
            r += dr
            f += df
    return m


@njit(cache=True, nogil=True)
def subsets(mask):
    """Every subset of ``mask`` (the occupancies a slider's table must answer), the empty set first."""
    n = popcount(mask)
    out = np.empty(1 << n, dtype=np.uint64)
    sub = U0
    i = 0
    while True:
        out[i] = sub
        i += 1
        sub = (sub - mask) & mask
        if sub == U0:
            break
    return out
