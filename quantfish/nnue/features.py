"""HalfKAv2_hm feature indices (docs/nnue-sf15.1.md section 3), compiled.

For perspective P with own king on ``ksq``, a piece on ``sq`` is feature
``(sq ^ orient) + plane + 704 * king_bucket``: the board is flipped vertically for Black and mirrored
horizontally when P's king is on files a-d, so the king always sits on files e-h of its own view.
Piece codes are the mailbox codes of ``quantfish.core.types`` (colour * 8 + type).
"""

from quantfish.nnue.architecture import KING_PLANE, PS_NB
from quantfish.core.types import BLACK, KING, PAWN, SQUARE_NB, colour_of, file_of, rank_of, type_of
from quantfish.runtime.jit import njit

FLIP_FILES = 7      # square ^ 7: a1 <-> h1
FLIP_RANKS = 56     # square ^ 56: a1 <-> a8


@njit(cache=True, nogil=True)
def orient(persp, ksq):
    """XOR mask that maps a square into P's view (vertical flip for Black, mirror for a king on a-d)."""
    mask = FLIP_FILES if file_of(ksq) < 4 else 0
    if persp == BLACK:
        mask ^= FLIP_RANKS
    return mask


@njit(cache=True, nogil=True)
def king_bucket_offset(persp, ksq):
    """704 * bucket: bucket 0..31 from the king's rank (own back rank = 28..31) and mirrored file."""
    r = rank_of(ksq)
    if persp == BLACK:
        r = 7 - r
    f = file_of(ksq)
    if f < 4:
        f = 7 - f
    return ((7 - r) * 4 + (7 - f)) * PS_NB


@njit(cache=True, nogil=True)
def piece_plane(persp, piece):
    """Plane offset of a piece code: own/enemy pawn 0/64, knight 128/192, ..., either king 640."""
    pt = type_of(piece)
    if pt == KING:
        return KING_PLANE
    return 2 * SQUARE_NB * (pt - PAWN) + (0 if colour_of(piece) == persp else SQUARE_NB)


@njit(cache=True, nogil=True)
def feature_index(persp, ksq, sq, piece):
    """Index of the feature for ``piece`` on ``sq`` seen by ``persp`` whose king stands on ``ksq``."""
    return (sq ^ orient(persp, ksq)) + piece_plane(persp, piece) + king_bucket_offset(persp, ksq)


@njit(cache=True, nogil=True)
def active_features(persp, ksq, board, out):
    """Write the features of every piece of mailbox ``board`` (kings included) to ``out``; return the count."""
    o = orient(persp, ksq)
    kb = king_bucket_offset(persp, ksq)
    n = 0
    for sq in range(64):
        pc = board[sq]
        if pc != 0:
            out[n] = (sq ^ o) + piece_plane(persp, pc) + kb
            n += 1
    return n


@njit(cache=True, nogil=True)
def king_square(board, colour):
    """Square of ``colour``'s king in the mailbox, or 64 if there is none."""
    k = colour * 8 + 6
    for sq in range(64):
        if board[sq] == k:
            return sq
    return 64
