"""Legal move generation with pins and check masks, so no move needs a trial make."""
import numpy as np

from quantfish.core.attacks import (attackers_by, bishop_attacks, is_attacked, king_attacks, knight_attacks,
                            pawn_attacks, rook_attacks)
from quantfish.core.bitops import U0, U1, bit, lsb, pop_lsb, popcount
from quantfish.core.position import (MOVE_CASTLE, MOVE_EP, ST_CASTLE, ST_EP, ST_KSQ, ST_ROOKSQ, ST_SIDE,
                             castle_targets)
from quantfish.core.tables import OFF_BETWEEN, OFF_LINE
from quantfish.runtime.jit import njit
from quantfish.core.types import BISHOP, BLACK_PIECES, COLOUR_STRIDE, KNIGHT, NO_SQUARE, PAWN, QUEEN, ROOK, WHITE_PIECES, type_of
from quantfish.core.position import move_from, move_promo, move_to

MAX_MOVES = 256


@njit(cache=True, nogil=True, inline="always")
def between(T, a, b):
    return T[OFF_BETWEEN + a * 64 + b]


@njit(cache=True, nogil=True, inline="always")
def line(T, a, b):
    return T[OFF_LINE + a * 64 + b]


@njit(cache=True, nogil=True)
def checkers(T, bb, st):
    us = st[ST_SIDE]
    return attackers_by(T, bb, st[ST_KSQ + us], bb[WHITE_PIECES] | bb[BLACK_PIECES], 1 - us)


@njit(cache=True, nogil=True)
def gives_check(T, bb, board, st, m):
    """True when legal move ``m`` checks the opponent's king, decided without making the move.

    Direct checks by the piece on its target square (the promoted piece for a promotion, the rook for a
    castling move), and discovered checks by our sliders once the moving piece (and an en passant victim or
    the castling rook) has left its square.
    """
    us = st[ST_SIDE]
    c = us * COLOUR_STRIDE
    ksq = st[ST_KSQ + 1 - us]
    kb = bit(ksq)
    frm = move_from(m)
    to = move_to(m)
    occ = bb[WHITE_PIECES] | bb[BLACK_PIECES]
    if m & MOVE_CASTLE:
        kto, rto = castle_targets(frm, to)
        occ = (occ ^ bit(frm) ^ bit(to)) | bit(kto) | bit(rto)
        if rook_attacks(T, rto, occ) & kb:
            return True
        moved = bit(frm) | bit(to)
    else:
        pt = type_of(board[frm])
        promo = move_promo(m)
        if promo != 0:
            pt = promo
        occ = (occ ^ bit(frm)) | bit(to)
        if pt == PAWN:
            if pawn_attacks(T, us, to) & kb:
                return True
        elif pt == KNIGHT:
            if knight_attacks(T, to) & kb:
                return True
        elif pt == BISHOP:
            if bishop_attacks(T, to, occ) & kb:
                return True
        elif pt == ROOK:
            if rook_attacks(T, to, occ) & kb:
                return True
        elif pt == QUEEN:
            if (bishop_attacks(T, to, occ) | rook_attacks(T, to, occ)) & kb:
                return True
        moved = bit(frm)
        if m & MOVE_EP:
            occ ^= bit(to - 8 if us == 0 else to + 8)
        elif line(T, ksq, frm) == U0:
            return False  # leaving a square off every line through the king cannot uncover a check
    diag = (bb[c + BISHOP] | bb[c + QUEEN]) & ~moved
    straight = (bb[c + ROOK] | bb[c + QUEEN]) & ~moved
    return ((bishop_attacks(T, ksq, occ) & diag) | (rook_attacks(T, ksq, occ) & straight)) != U0


@njit(cache=True, nogil=True)
def check_info(T, bb, st):
    """What deciding a check needs of a position, worked out once for all its moves (Stockfish's check
    squares): the squares from which our pawn, knight, bishop and rook would check the opponent's king, and our
    pieces that are the one piece between that king and one of our sliders, whose leaving uncovers a check."""
    us = st[ST_SIDE]
    ksq = st[ST_KSQ + 1 - us]
    occ = bb[WHITE_PIECES] | bb[BLACK_PIECES]
    uncovering = blockers(T, bb, ksq, us, us)
    return (pawn_attacks(T, 1 - us, ksq), knight_attacks(T, ksq), bishop_attacks(T, ksq, occ),
            rook_attacks(T, ksq, occ), uncovering)


@njit(cache=True, nogil=True, inline="always")
def check_squares(info, pt):
    """The squares from which a piece of type ``pt`` would check the opponent's king (``info`` from
    ``check_info``); none for a king."""
    if pt == PAWN:
        return info[0]
    if pt == KNIGHT:
        return info[1]
    if pt == BISHOP:
        return info[2]
    if pt == ROOK:
        return info[3]
    if pt == QUEEN:
        return info[2] | info[3]
    return U0


@njit(cache=True, nogil=True, inline="always")
def gives_check_with(T, bb, board, st, m, info):
    """``gives_check`` from a position's ``check_info``: a direct check when the piece lands on one of its
    check squares, a discovered one when an uncovering piece leaves the line through the king. Castling, en
    passant and promotions change more than one square and take ``gives_check``. A slider never checks along
    the line it leaves: it would have been checking already."""
    if m & (MOVE_CASTLE | MOVE_EP) or move_promo(m):
        return gives_check(T, bb, board, st, m)
    frm = move_from(m)
    to = move_to(m)
    if check_squares(info, type_of(board[frm])) & bit(to):
        return True
    if info[4] & bit(frm):
        return (line(T, st[ST_KSQ + 1 - st[ST_SIDE]], frm) & bit(to)) == U0
    return False


@njit(cache=True, nogil=True)
def blockers(T, bb, ksq, sliders, owner):
    """Pieces of colour ``owner`` that stand alone between the king on ``ksq`` and a slider of colour
    ``sliders``: the king's pinned pieces when the sliders are its enemy's and the owner its own side; the
    pieces whose leaving uncovers a check when sliders and owner are both its enemy's."""
    c = sliders * COLOUR_STRIDE
    occ = bb[WHITE_PIECES] | bb[BLACK_PIECES]
    snipers = ((bishop_attacks(T, ksq, U0) & (bb[c + BISHOP] | bb[c + QUEEN]))
               | (rook_attacks(T, ksq, U0) & (bb[c + ROOK] | bb[c + QUEEN])))
    found = U0
    while snipers:
        s = lsb(snipers)
        snipers = pop_lsb(snipers)
        inside = between(T, ksq, s) & occ
        if inside != U0 and (inside & (inside - U1)) == U0:
            found |= inside & bb[owner * COLOUR_STRIDE]
    return found


@njit(cache=True, nogil=True, inline="always")
def pinned_pieces(T, bb, ksq, us):
    """Own pieces that stand alone between our king and an enemy slider."""
    return blockers(T, bb, ksq, 1 - us, us)


@njit(cache=True, nogil=True, inline="always")
def _add_targets(moves, n, frm, targets):
    while targets:
        to = lsb(targets)
        targets = pop_lsb(targets)
        moves[n] = frm | (to << 6)
        n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _add_promotions(moves, n, frm, to):
    base = frm | (to << 6)
    moves[n] = base | (5 << 12)
    moves[n + 1] = base | (2 << 12)
    moves[n + 2] = base | (4 << 12)
    moves[n + 3] = base | (3 << 12)
    return n + 4


@njit(cache=True, nogil=True, inline="always")
def _safe_king_targets(T, bb, ksq, targets, occ, them):
    """The squares of ``targets`` the king can step to without being attacked (it no longer blocks a ray)."""
    occ_no_king = occ ^ bit(ksq)
    safe = U0
    while targets:
        to = lsb(targets)
        targets = pop_lsb(targets)
        if not is_attacked(T, bb, to, occ_no_king, them):
            safe |= bit(to)
    return safe


@njit(cache=True, nogil=True, inline="always")
def _pin_limited(T, s, t, pinned, ksq):
    """Moves ``t`` of the piece on ``s``, kept to the line through our king when the piece is pinned."""
    if pinned & bit(s):
        t &= line(T, ksq, s)
    return t


@njit(cache=True, nogil=True)
def generate_legal(T, bb, board, st, moves):
    """Fills ``moves`` with every legal move and returns how many."""
    return _generate(T, bb, board, st, moves, True, checkers(T, bb, st))


@njit(cache=True, nogil=True)
def generate_tactical(T, bb, board, st, moves):
    """Legal captures and queen promotions for quiescence search; every evasion when in check."""
    return _generate(T, bb, board, st, moves, False, checkers(T, bb, st))


@njit(cache=True, nogil=True)
def generate_legal_with(T, bb, board, st, moves, chk):
    """``generate_legal`` for a position whose checkers ``chk`` are known (the search finds them first)."""
    return _generate(T, bb, board, st, moves, True, chk)


@njit(cache=True, nogil=True)
def generate_tactical_with(T, bb, board, st, moves, chk):
    """``generate_tactical`` for a position whose checkers ``chk`` are known."""
    return _generate(T, bb, board, st, moves, False, chk)


@njit(cache=True, nogil=True, inline="always")
def _generate(T, bb, board, st, moves, quiets, chk):
    us = st[ST_SIDE]
    them = 1 - us
    own = bb[us * COLOUR_STRIDE]
    enemy = bb[them * COLOUR_STRIDE]
    occ = own | enemy
    ksq = st[ST_KSQ + us]
    n = 0

    if chk != U0:
        quiets = True
    n = _add_targets(moves, n, ksq, _safe_king_targets(T, bb, ksq, king_attacks(T, ksq) & (~own if quiets else enemy),
                                                       occ, them))
    if chk != U0 and pop_lsb(chk) != U0:
        return n

    if chk != U0:
        c = lsb(chk)
        mask = between(T, ksq, c) | chk
    else:
        mask = ~own if quiets else enemy
    pinned = pinned_pieces(T, bb, ksq, us)

    # Knights (a pinned knight never moves).
    pcs = bb[us * COLOUR_STRIDE + KNIGHT] & ~pinned
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        n = _add_targets(moves, n, s, knight_attacks(T, s) & mask)
    # Diagonal and straight sliders.
    pcs = bb[us * COLOUR_STRIDE + BISHOP] | bb[us * COLOUR_STRIDE + QUEEN]
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        n = _add_targets(moves, n, s, _pin_limited(T, s, bishop_attacks(T, s, occ) & mask, pinned, ksq))
    pcs = bb[us * COLOUR_STRIDE + ROOK] | bb[us * COLOUR_STRIDE + QUEEN]
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        n = _add_targets(moves, n, s, _pin_limited(T, s, rook_attacks(T, s, occ) & mask, pinned, ksq))

    # Pawns.
    up = 8 if us == 0 else -8
    last_rank = 7 if us == 0 else 0
    start_rank = 1 if us == 0 else 6
    ep = st[ST_EP]
    pcs = bb[us * COLOUR_STRIDE + PAWN]
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        pmask = mask
        if pinned & bit(s):
            pmask &= line(T, ksq, s)
        to = s + up
        if not quiets:
            if board[to] == 0 and to >> 3 == last_rank and not (pinned & bit(s) and not (line(T, ksq, s) & bit(to))):
                moves[n] = s | (to << 6) | (5 << 12)
                n += 1
        elif board[to] == 0:
            if pmask & bit(to):
                if to >> 3 == last_rank:
                    n = _add_promotions(moves, n, s, to)
                else:
                    moves[n] = s | (to << 6)
                    n += 1
            if s >> 3 == start_rank:
                to2 = to + up
                if board[to2] == 0 and pmask & bit(to2):
                    moves[n] = s | (to2 << 6)
                    n += 1
        caps = pawn_attacks(T, us, s) & enemy & pmask
        while caps:
            to = lsb(caps)
            caps = pop_lsb(caps)
            if to >> 3 == last_rank:
                n = _add_promotions(moves, n, s, to)
            else:
                moves[n] = s | (to << 6)
                n += 1
        if ep != NO_SQUARE and pawn_attacks(T, us, s) & bit(ep):
            capsq = ep - up
            occ2 = (occ ^ bit(s) ^ bit(capsq)) | bit(ep)
            if attackers_by(T, bb, ksq, occ2, them) & ~bit(capsq) & occ2 == U0:
                moves[n] = s | (ep << 6) | MOVE_EP
                n += 1

    # Castling: the king may not be in check, cross an attacked square or land on one.
    rights = (st[ST_CASTLE] >> (2 * us)) & 3
    if quiets and chk == U0 and rights != 0:
        for r in range(2):
            if rights >> r & 1:
                rs = st[ST_ROOKSQ + 2 * us + r]
                if _can_castle(T, bb, us, ksq, rs, occ):
                    moves[n] = ksq | (rs << 6) | MOVE_CASTLE
                    n += 1
    return n


@njit(cache=True, nogil=True)
def _can_castle(T, bb, us, ksq, rs, occ):
    """Castling with the rook on ``rs`` (the right held, the king not in check): the squares the king and rook
    pass over and land on are empty, and none the king crosses or lands on is attacked."""
    kto, rto = castle_targets(ksq, rs)
    span = between(T, ksq, kto) | between(T, rs, rto) | bit(kto) | bit(rto)
    span &= ~(bit(ksq) | bit(rs))
    if span & occ:
        return False
    occ2 = occ ^ bit(ksq) ^ bit(rs)
    path = between(T, ksq, kto) | bit(kto)
    while path:
        if is_attacked(T, bb, lsb(path), occ2, 1 - us):
            return False
        path = pop_lsb(path)
    return True


RANK_3 = np.uint64(0x0000000000FF0000)
RANK_6 = np.uint64(0x0000FF0000000000)
RANK_8 = np.uint64(0xFF00000000000000)
RANK_1 = np.uint64(0x00000000000000FF)
NOT_FILE_A = np.uint64(0xFEFEFEFEFEFEFEFE)
NOT_FILE_H = np.uint64(0x7F7F7F7F7F7F7F7F)
S7 = np.uint64(7)
S8 = np.uint64(8)
S9 = np.uint64(9)


@njit(cache=True, nogil=True, inline="always")
def _count_with_promotions(targets, last_rank):
    """Moves to ``targets``, four for each on the last rank."""
    return popcount(targets & ~last_rank) + 4 * popcount(targets & last_rank)


@njit(cache=True, nogil=True)
def count_legal(T, bb, board, st):
    """How many legal moves ``generate_legal`` would write, counted without writing them (perft's last ply).

    The same pins and check mask; knight, slider and unpinned pawn moves are counted a bitboard at a time,
    pawns by shifting the whole set; pinned pawns, king steps, en passant and castling one by one."""
    us = st[ST_SIDE]
    them = 1 - us
    own = bb[us * COLOUR_STRIDE]
    enemy = bb[them * COLOUR_STRIDE]
    occ = own | enemy
    ksq = st[ST_KSQ + us]
    n = 0

    chk = attackers_by(T, bb, ksq, occ, them)
    n = popcount(_safe_king_targets(T, bb, ksq, king_attacks(T, ksq) & ~own, occ, them))
    if chk != U0 and pop_lsb(chk) != U0:
        return n

    if chk != U0:
        mask = between(T, ksq, lsb(chk)) | chk
    else:
        mask = ~own
    pinned = pinned_pieces(T, bb, ksq, us)

    pcs = bb[us * COLOUR_STRIDE + KNIGHT] & ~pinned
    while pcs:
        n += popcount(knight_attacks(T, lsb(pcs)) & mask)
        pcs = pop_lsb(pcs)
    pcs = bb[us * COLOUR_STRIDE + BISHOP] | bb[us * COLOUR_STRIDE + QUEEN]
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        n += popcount(_pin_limited(T, s, bishop_attacks(T, s, occ) & mask, pinned, ksq))
    pcs = bb[us * COLOUR_STRIDE + ROOK] | bb[us * COLOUR_STRIDE + QUEEN]
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        n += popcount(_pin_limited(T, s, rook_attacks(T, s, occ) & mask, pinned, ksq))

    pawns = bb[us * COLOUR_STRIDE + PAWN]
    empty = ~occ
    free = pawns & ~pinned
    if us == 0:
        last = RANK_8
        single = (free << S8) & empty
        double = ((single & RANK_3) << S8) & empty
        left = ((free & NOT_FILE_A) << S7) & enemy
        right = ((free & NOT_FILE_H) << S9) & enemy
    else:
        last = RANK_1
        single = (free >> S8) & empty
        double = ((single & RANK_6) >> S8) & empty
        left = ((free & NOT_FILE_A) >> S9) & enemy
        right = ((free & NOT_FILE_H) >> S7) & enemy
    n += _count_with_promotions(single & mask, last) + popcount(double & mask)
    n += _count_with_promotions(left & mask, last) + _count_with_promotions(right & mask, last)
    up = 8 if us == 0 else -8
    pcs = pawns & pinned
    while pcs:
        s = lsb(pcs)
        pcs = pop_lsb(pcs)
        pmask = mask & line(T, ksq, s)
        to = s + up
        if board[to] == 0:
            n += _count_with_promotions(bit(to) & pmask, last)
            to2 = to + up
            if (bit(s) & (RANK_1 << S8 if us == 0 else RANK_8 >> S8)) and board[to2] == 0:
                n += popcount(bit(to2) & pmask)
        n += _count_with_promotions(pawn_attacks(T, us, s) & enemy & pmask, last)
    ep = st[ST_EP]
    if ep != NO_SQUARE:
        capsq = ep - up
        pcs = pawn_attacks(T, them, ep) & pawns
        while pcs:
            s = lsb(pcs)
            pcs = pop_lsb(pcs)
            occ2 = (occ ^ bit(s) ^ bit(capsq)) | bit(ep)
            if attackers_by(T, bb, ksq, occ2, them) & ~bit(capsq) & occ2 == U0:
                n += 1

    rights = (st[ST_CASTLE] >> (2 * us)) & 3
    if chk == U0 and rights != 0:
        for r in range(2):
            if rights >> r & 1 and _can_castle(T, bb, us, ksq, st[ST_ROOKSQ + 2 * us + r], occ):
                n += 1
    return n
