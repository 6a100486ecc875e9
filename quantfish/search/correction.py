"""Correction histories: what the search has learnt about the net's error in positions that share a part.

The net misjudges some configurations the same way wherever they occur. After each node, the difference between
the score the search found and the node's static evaluation moves entries towards it, one in each of five
tables, per side to move: the pawn structure, the knights and bishops of both sides, each side's pieces other
than pawns, and the last two moves (a continuation). Every later static evaluation adds the entries of its
position, weighted (Stockfish 17.1's correction histories, in its units and constants). Only the static
evaluation the pruning rules read is corrected: the table keeps the net's own output, so a correction learnt
later applies to it as well.

Each configuration is found by hashing its bitboards: the position keeps no keys of its parts, and a dozen
multiplications per node cost less than keys updated at every move.
"""
from typing import NamedTuple

import numpy as np

from quantfish.core.types import (BISHOP, BLACK_PIECES, COLOUR_STRIDE, KING, KNIGHT, PAWN, QUEEN, ROOK,
                                  WHITE_PIECES)
from quantfish.runtime.jit import njit
from quantfish.search.history import gravity
from quantfish.search.movepick import cont_row
from quantfish.search.state import CORRECTION_BITS, MAX_PLY
from quantfish.search.values import MATE_IN_MAX

CORRECTION_MAX = 1024          # each entry's limit
# The correction is the weighted sum of the five entries over WEIGHT_SCALE.
PAWN_WEIGHT = 7685
MINOR_WEIGHT = 7495
NON_PAWN_WEIGHT = 9144         # each side's non-pawn entry
CONTINUATION_WEIGHT = 6469
WEIGHT_SCALE = 131072
# A node's bonus, (score - static evaluation) * depth / 8 within a quarter of the limit, goes to each table
# in these shares of 128.
BONUS_DIVISOR = 8
PAWN_SHARE = 111
MINOR_SHARE = 146
NON_PAWN_SHARE = 162
CONTINUATION_SHARE = 143
SHARE_SCALE = 128
EVAL_LIMIT = MATE_IN_MAX - MAX_PLY - 1   # a corrected evaluation stays below a proven win

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9),
        np.uint64(0xD6E8FEB86659FD93), np.uint64(0xFF51AFD7ED558CCD))
_SHIFT = np.uint64(64 - CORRECTION_BITS)


class Rows(NamedTuple):
    """A node's row in each table; the continuation entry is [earlier_move][last_move], none where either is 0."""
    pawn: int
    minor: int
    white_non_pawn: int
    black_non_pawn: int
    earlier_move: int     # the continuation-history key (piece * 64 + to) of the move two plies back
    last_move: int        # ... and of the move one ply back


@njit(cache=True, nogil=True, inline="always")
def _div_toward_zero(a, b):
    """a / b for b > 0, truncated toward zero as C++ divides (Stockfish's constants were tuned with it)."""
    return a // b if a >= 0 else -((-a) // b)


@njit(cache=True, nogil=True, inline="always")
def _row(h):
    return np.int64(h >> _SHIFT)


@njit(cache=True, nogil=True, inline="always")
def pawn_index(bb):
    """The row of the pawn structure of bitboards ``bb``."""
    return _row((bb[WHITE_PIECES + PAWN] * _MIX[0]) ^ (bb[BLACK_PIECES + PAWN] * _MIX[1]))


@njit(cache=True, nogil=True, inline="always")
def minor_index(bb):
    """The row of the knights and bishops of both sides."""
    return _row((bb[WHITE_PIECES + KNIGHT] * _MIX[0]) ^ (bb[WHITE_PIECES + BISHOP] * _MIX[1])
                ^ (bb[BLACK_PIECES + KNIGHT] * _MIX[2]) ^ (bb[BLACK_PIECES + BISHOP] * _MIX[3]))


@njit(cache=True, nogil=True, inline="always")
def non_pawn_index(bb, colour):
    """The row of ``colour``'s pieces other than pawns, its king included."""
    c = colour * COLOUR_STRIDE
    return _row((bb[c + KNIGHT] * _MIX[0]) ^ (bb[c + BISHOP] * _MIX[1]) ^ (bb[c + ROOK] * _MIX[2])
                ^ (bb[c + QUEEN] * _MIX[3]) ^ (bb[c + KING] * _MIX[4]))


@njit(cache=True, nogil=True, inline="always")
def rows(S, ply, bb):
    """The node's ``Rows``."""
    return Rows(pawn_index(bb), minor_index(bb), non_pawn_index(bb, 0), non_pawn_index(bb, 1),
                cont_row(S, ply, 2), cont_row(S, ply, 1))


@njit(cache=True, nogil=True, inline="always")
def correction(S, side, r):
    """The correction of the side to move ``side`` at rows ``r``, in evaluation units."""
    total = (PAWN_WEIGHT * np.int64(S.corr_pawn[side, r.pawn])
             + MINOR_WEIGHT * np.int64(S.corr_minor[side, r.minor])
             + NON_PAWN_WEIGHT * (np.int64(S.corr_non_pawn[side, r.white_non_pawn])
                                  + np.int64(S.corr_non_pawn[2 + side, r.black_non_pawn])))
    if r.earlier_move != 0 and r.last_move != 0:
        total += CONTINUATION_WEIGHT * np.int64(S.corr_cont[r.earlier_move, r.last_move])
    return _div_toward_zero(total, WEIGHT_SCALE)


@njit(cache=True, nogil=True, inline="always")
def corrected(S, side, r, raw):
    """The static evaluation ``raw`` of the side to move ``side`` with its correction added."""
    return min(max(raw + correction(S, side, r), -EVAL_LIMIT), EVAL_LIMIT)


@njit(cache=True, nogil=True, inline="always")
def update_correction(S, side, r, best, static_eval, depth, best_move_captures, has_best_move, beta):
    """A node searched to ``depth`` scored ``best`` where its static evaluation was ``static_eval``: each entry
    moves towards the difference, weighted by depth. Not when the best move was a capture (the static
    evaluation is not wrong for missing it), nor where the score is only a bound on the same side of the
    evaluation (a fail high no higher than it, or a fail low, with no best move, no lower)."""
    if best_move_captures:
        return
    if best >= beta and best <= static_eval:
        return
    if not has_best_move and best >= static_eval:
        return
    bonus = _div_toward_zero((best - static_eval) * depth, BONUS_DIVISOR)
    bonus = min(max(bonus, -CORRECTION_MAX // 4), CORRECTION_MAX // 4)
    gravity(S.corr_pawn, side, r.pawn, _div_toward_zero(bonus * PAWN_SHARE, SHARE_SCALE), CORRECTION_MAX)
    gravity(S.corr_minor, side, r.minor, _div_toward_zero(bonus * MINOR_SHARE, SHARE_SCALE), CORRECTION_MAX)
    non_pawn = _div_toward_zero(bonus * NON_PAWN_SHARE, SHARE_SCALE)
    gravity(S.corr_non_pawn, side, r.white_non_pawn, non_pawn, CORRECTION_MAX)
    gravity(S.corr_non_pawn, 2 + side, r.black_non_pawn, non_pawn, CORRECTION_MAX)
    if r.earlier_move != 0 and r.last_move != 0:
        gravity(S.corr_cont, r.earlier_move, r.last_move, _div_toward_zero(bonus * CONTINUATION_SHARE, SHARE_SCALE),
                CORRECTION_MAX)
