"""Attack lookups over the table array ``T``."""
import numpy as np

from quantfish.core.bitops import U0
from quantfish.core.tables import (OFF_BMAGIC, OFF_BMASK, OFF_BOFF, OFF_BSHIFT, OFF_KING, OFF_KNIGHT, OFF_PAWN,
                           OFF_RMAGIC, OFF_RMASK, OFF_ROFF, OFF_RSHIFT)
from quantfish.runtime.jit import njit
from quantfish.core.types import BISHOP, COLOUR_STRIDE, KING, KNIGHT, PAWN, QUEEN, ROOK


@njit(cache=True, nogil=True, inline="always")
def rook_attacks(T, sq, occ):
    idx = ((occ & T[OFF_RMASK + sq]) * T[OFF_RMAGIC + sq]) >> T[OFF_RSHIFT + sq]
    return T[np.int64(T[OFF_ROFF + sq]) + np.int64(idx)]


@njit(cache=True, nogil=True, inline="always")
def bishop_attacks(T, sq, occ):
    idx = ((occ & T[OFF_BMASK + sq]) * T[OFF_BMAGIC + sq]) >> T[OFF_BSHIFT + sq]
    return T[np.int64(T[OFF_BOFF + sq]) + np.int64(idx)]


@njit(cache=True, nogil=True, inline="always")
def knight_attacks(T, sq):
    return T[OFF_KNIGHT + sq]


@njit(cache=True, nogil=True, inline="always")
def king_attacks(T, sq):
    return T[OFF_KING + sq]


@njit(cache=True, nogil=True, inline="always")
def pawn_attacks(T, colour, sq):
    return T[OFF_PAWN + colour * 64 + sq]


@njit(cache=True, nogil=True, inline="always")
def attackers_by(T, bb, sq, occ, colour):
    """Pieces of ``colour`` attacking ``sq`` given occupancy ``occ`` (``bb`` indexed colour*8+type)."""
    c = colour * COLOUR_STRIDE
    att = pawn_attacks(T, 1 - colour, sq) & bb[c + PAWN]
    att |= knight_attacks(T, sq) & bb[c + KNIGHT]
    att |= king_attacks(T, sq) & bb[c + KING]
    att |= bishop_attacks(T, sq, occ) & (bb[c + BISHOP] | bb[c + QUEEN])
    att |= rook_attacks(T, sq, occ) & (bb[c + ROOK] | bb[c + QUEEN])
    return att


@njit(cache=True, nogil=True, inline="always")
def is_attacked(T, bb, sq, occ, colour):
    return attackers_by(T, bb, sq, occ, colour) != U0
