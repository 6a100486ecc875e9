"""The position as three small arrays, and copy-make.

A position is ``bb`` (uint64[16], index colour*8+type, type 0 = all pieces of that colour),
``board`` (int8[64] mailbox of piece codes) and ``st`` (int64[ST_SIZE] scalar fields below).
The search keeps one row of each per ply and makes a move by copying the parent row and
changing it, so there is no unmake to get wrong.
"""
import numpy as np

from quantfish.core.bitops import U0, bit
from quantfish.core.tables import OFF_ZCASTLE, OFF_ZEP, OFF_ZPIECE, OFF_ZSIDE
from quantfish.core.attacks import pawn_attacks
from quantfish.runtime.jit import njit
from quantfish.core.types import COLOUR_STRIDE, KING, NO_SQUARE, PAWN, SQUARE_MASK, TYPE_MASK, file_of, type_of

ST_SIDE = 0
ST_CASTLE = 1        # rights mask: 1 white king side, 2 white queen side, 4 black king side, 8 black queen side
ST_EP = 2            # en passant square, NO_SQUARE if none (set only when a pawn could capture there)
ST_RULE50 = 3
ST_FULLMOVE = 4
ST_KEY = 5           # Zobrist key, stored as int64 bits
ST_KSQ = 6           # + colour: king squares
ST_CAPTURED = 8      # piece captured by the move that led here
ST_ROOKSQ = 9        # + right index 0..3: starting square of the castling rook for that right
ST_CHESS960 = 13
ST_PLY_FROM_NULL = 14
ST_SIZE = 16

# Move encoding (int32): from | to << 6 | promotion type << 12 | kind.
# Castling is stored as king-takes-own-rook, as Stockfish does, so Chess960 needs no special case.
MOVE_NONE = 0
MOVE_NULL = 65
MOVE_EP = 1 << 15
MOVE_CASTLE = 1 << 16

KING_SIDE_FILE_KING = 6
KING_SIDE_FILE_ROOK = 5
QUEEN_SIDE_FILE_KING = 2
QUEEN_SIDE_FILE_ROOK = 3


MOVE_TO_SHIFT = 6
MOVE_PROMO_SHIFT = 12


@njit(cache=True, nogil=True, inline="always")
def move_from(m):
    return m & SQUARE_MASK


@njit(cache=True, nogil=True, inline="always")
def move_to(m):
    return (m >> MOVE_TO_SHIFT) & SQUARE_MASK


@njit(cache=True, nogil=True, inline="always")
def move_promo(m):
    """The promotion piece type, 0 for none."""
    return (m >> MOVE_PROMO_SHIFT) & TYPE_MASK


@njit(cache=True, nogil=True, inline="always")
def encode_move(frm, to, promo, kind):
    return frm | (to << MOVE_TO_SHIFT) | (promo << MOVE_PROMO_SHIFT) | kind


@njit(cache=True, nogil=True, inline="always")
def castle_targets(king_from, rook_from):
    """King and rook destination squares of a castling move."""
    base = king_from & 56
    if rook_from > king_from:
        return base + KING_SIDE_FILE_KING, base + KING_SIDE_FILE_ROOK
    return base + QUEEN_SIDE_FILE_KING, base + QUEEN_SIDE_FILE_ROOK


@njit(cache=True, nogil=True, inline="always")
def _put(T, bb, board, pc, sq, key):
    b = bit(sq)
    board[sq] = pc
    bb[pc] |= b
    bb[pc & 8] |= b
    return key ^ T[OFF_ZPIECE + pc * 64 + sq]


@njit(cache=True, nogil=True, inline="always")
def _remove(T, bb, board, pc, sq, key):
    b = ~bit(sq)
    board[sq] = 0
    bb[pc] &= b
    bb[pc & 8] &= b
    return key ^ T[OFF_ZPIECE + pc * 64 + sq]


@njit(cache=True, nogil=True)
def compute_key(T, board, st):
    key = U0
    for sq in range(64):
        pc = board[sq]
        if pc != 0:
            key ^= T[OFF_ZPIECE + pc * 64 + sq]
    if st[ST_SIDE] == 1:
        key ^= T[OFF_ZSIDE]
    key ^= T[OFF_ZCASTLE + st[ST_CASTLE]]
    if st[ST_EP] != NO_SQUARE:
        key ^= T[OFF_ZEP + file_of(st[ST_EP])]
    return key


@njit(cache=True, nogil=True, inline="always")
def _copy_position(sbb, sboard, sst, dbb, dboard, dst):
    # Element loops rather than slice assignment, so callers compiled without NRT can inline this.
    for i in range(sbb.shape[0]):
        dbb[i] = sbb[i]
    for i in range(sboard.shape[0]):
        dboard[i] = sboard[i]
    for i in range(sst.shape[0]):
        dst[i] = sst[i]


@njit(cache=True, nogil=True)
def make_move(T, sbb, sboard, sst, dbb, dboard, dst, m, dirty):
    """Writes into (dbb, dboard, dst) the position after legal move ``m`` from (sbb, sboard, sst).

    ``dirty`` (int32[3, 3]) receives the changed pieces as (piece, from, to) with 64 for
    "appears" or "disappears", which is what the NNUE accumulators need; returns their count.
    """
    _copy_position(sbb, sboard, sst, dbb, dboard, dst)
    us = sst[ST_SIDE]
    them = 1 - us
    frm = move_from(m)
    to = move_to(m)
    key = np.uint64(sst[ST_KEY]) ^ T[OFF_ZSIDE] ^ T[OFF_ZCASTLE + sst[ST_CASTLE]]
    if sst[ST_EP] != NO_SQUARE:
        key ^= T[OFF_ZEP + file_of(sst[ST_EP])]
    dst[ST_EP] = NO_SQUARE
    dst[ST_RULE50] = sst[ST_RULE50] + 1
    dst[ST_PLY_FROM_NULL] = sst[ST_PLY_FROM_NULL] + 1
    dst[ST_CAPTURED] = 0
    rights = sst[ST_CASTLE]
    pc = sboard[frm]
    nd = 0
    if m & MOVE_CASTLE:
        rook = sboard[to]
        kto, rto = castle_targets(frm, to)
        key = _remove(T, dbb, dboard, pc, frm, key)
        key = _remove(T, dbb, dboard, rook, to, key)
        key = _put(T, dbb, dboard, pc, kto, key)
        key = _put(T, dbb, dboard, rook, rto, key)
        dst[ST_KSQ + us] = kto
        dirty[0, 0] = pc
        dirty[0, 1] = frm
        dirty[0, 2] = kto
        dirty[1, 0] = rook
        dirty[1, 1] = to
        dirty[1, 2] = rto
        nd = 2
        rights &= ~(3 << (2 * us))
    else:
        capsq = to
        if m & MOVE_EP:
            capsq = to - 8 if us == 0 else to + 8
        cap = sboard[capsq]
        if cap != 0:
            key = _remove(T, dbb, dboard, cap, capsq, key)
            dst[ST_RULE50] = 0
            dst[ST_CAPTURED] = cap
            dirty[0, 0] = cap
            dirty[0, 1] = capsq
            dirty[0, 2] = NO_SQUARE
            nd = 1
        key = _remove(T, dbb, dboard, pc, frm, key)
        promo = move_promo(m)
        if promo != 0:
            newpc = us * COLOUR_STRIDE + promo
            key = _put(T, dbb, dboard, newpc, to, key)
            dirty[nd, 0] = pc
            dirty[nd, 1] = frm
            dirty[nd, 2] = NO_SQUARE
            dirty[nd + 1, 0] = newpc
            dirty[nd + 1, 1] = NO_SQUARE
            dirty[nd + 1, 2] = to
            nd += 2
        else:
            key = _put(T, dbb, dboard, pc, to, key)
            dirty[nd, 0] = pc
            dirty[nd, 1] = frm
            dirty[nd, 2] = to
            nd += 1
        ptype = type_of(pc)
        if ptype == PAWN:
            dst[ST_RULE50] = 0
            if to - frm == 16 or frm - to == 16:
                ep = (to + frm) >> 1
                if pawn_attacks(T, us, ep) & sbb[them * COLOUR_STRIDE + PAWN]:
                    dst[ST_EP] = ep
                    key ^= T[OFF_ZEP + file_of(ep)]
        elif ptype == KING:
            dst[ST_KSQ + us] = to
            rights &= ~(3 << (2 * us))
        if rights != 0:
            for r in range(4):
                if rights >> r & 1:
                    rs = sst[ST_ROOKSQ + r]
                    if rs == frm or rs == to:
                        rights &= ~(1 << r)
    dst[ST_CASTLE] = rights
    key ^= T[OFF_ZCASTLE + rights]
    dst[ST_SIDE] = them
    if us == 1:
        dst[ST_FULLMOVE] = sst[ST_FULLMOVE] + 1
    dst[ST_KEY] = np.int64(key)
    return nd


@njit(cache=True, nogil=True)
def make_null_move(T, sbb, sboard, sst, dbb, dboard, dst):
    _copy_position(sbb, sboard, sst, dbb, dboard, dst)
    key = np.uint64(sst[ST_KEY]) ^ T[OFF_ZSIDE]
    if sst[ST_EP] != NO_SQUARE:
        key ^= T[OFF_ZEP + file_of(sst[ST_EP])]
    dst[ST_EP] = NO_SQUARE
    dst[ST_SIDE] = 1 - sst[ST_SIDE]
    dst[ST_RULE50] = sst[ST_RULE50] + 1
    dst[ST_PLY_FROM_NULL] = 0
    dst[ST_CAPTURED] = 0
    dst[ST_KEY] = np.int64(key)
