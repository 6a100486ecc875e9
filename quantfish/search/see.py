"""Static exchange evaluation: does a capture (or a quiet move onto an attacked square) win material, once every
piece that can join the exchange on that square has?"""
from quantfish.core.attacks import attackers_by, bishop_attacks, rook_attacks
from quantfish.core.bitops import U0, bit, lsb
from quantfish.core.position import MOVE_CASTLE, MOVE_EP, move_from, move_to
from quantfish.core.types import (BISHOP, BLACK, BLACK_PIECES, B_BISHOP, B_QUEEN, B_ROOK, COLOUR_STRIDE, KING, KNIGHT, PAWN,
                                  QUEEN, ROOK, WHITE, WHITE_PIECES, W_BISHOP, W_QUEEN, W_ROOK, type_of)
from quantfish.runtime.jit import njit


@njit(cache=True, nogil=True, inline="always")
def see_value(piece_type):
    """A piece type's worth in the exchange (the king's: more than anything it could win)."""
    if piece_type == PAWN:
        return 100
    if piece_type == KNIGHT:
        return 320
    if piece_type == BISHOP:
        return 330
    if piece_type == ROOK:
        return 500
    if piece_type == QUEEN:
        return 950
    if piece_type == KING:
        return 20000
    return 0


@njit(cache=True, nogil=True)
def see_ge(T, bb, board, side, m, threshold):
    """True when the exchange started by ``m`` wins at least ``threshold`` (in SEE units)."""
    if m & MOVE_CASTLE:
        return 0 >= threshold
    frm = move_from(m)
    to = move_to(m)
    victim = PAWN if m & MOVE_EP else type_of(board[to])
    swap = see_value(victim) - threshold
    if swap < 0:
        return False
    swap = see_value(type_of(board[frm])) - swap
    if swap <= 0:
        return True
    occ = (bb[WHITE_PIECES] | bb[BLACK_PIECES]) ^ bit(frm) ^ bit(to)
    if m & MOVE_EP:
        occ ^= bit(to - 8 if side == WHITE else to + 8)
    att = attackers_by(T, bb, to, occ, WHITE) | attackers_by(T, bb, to, occ, BLACK)
    diag = bb[W_BISHOP] | bb[W_QUEEN] | bb[B_BISHOP] | bb[B_QUEEN]
    straight = bb[W_ROOK] | bb[W_QUEEN] | bb[B_ROOK] | bb[B_QUEEN]
    stm = side
    res = 1
    while True:
        stm ^= 1
        att &= occ
        mine = att & bb[stm * COLOUR_STRIDE]
        if mine == U0:
            break
        res ^= 1
        # The least valuable attacker takes; sliders behind it join in (x-rays).
        c = stm * COLOUR_STRIDE
        pt = PAWN
        while pt < KING and (mine & bb[c + pt]) == U0:
            pt += 1
        if pt == KING:
            # The king can only take last: if the other side still attacks, the result flips back.
            if att & ~bb[stm * COLOUR_STRIDE] & occ:
                return res == 0
            return res == 1
        swap = see_value(pt) - swap
        if swap < res:
            break
        occ ^= bit(lsb(mine & bb[c + pt]))
        if pt == PAWN or pt == BISHOP or pt == QUEEN:
            att |= bishop_attacks(T, to, occ) & diag
        if pt == ROOK or pt == QUEEN:
            att |= rook_attacks(T, to, occ) & straight
    return res == 1
