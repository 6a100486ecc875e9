"""Move ordering: each move's score, and picking the best remaining move one at a time.

The table's move comes first, then winning captures (by victim and capture history), the killers and the
counter-move, quiet moves by their histories (butterfly and continuation) and, out of check, by what they do
(``quiet_bonus``: a piece escaping an attack by a lesser piece, a move to a square that checks), losing
captures, under-promotions. A capture is scored as winning until it is picked: only then is its exchange tested
(``pick_move``).
"""
import numpy as np

from quantfish.core.attacks import bishop_attacks, knight_attacks, rook_attacks
from quantfish.core.bitops import U0, bit, lsb, pop_lsb
from quantfish.core.movegen import check_squares
from quantfish.core.position import MOVE_CASTLE, MOVE_EP, MOVE_NULL, MOVE_PROMO_SHIFT, move_from, move_promo, move_to
from quantfish.core.types import (BISHOP, BLACK_PIECES, COLOUR_STRIDE, EMPTY, KNIGHT, NO_PIECE_TYPE, PAWN, QUEEN,
                                  ROOK, SQUARE_NB, TYPE_MASK, WHITE, WHITE_PIECES, type_of)
from quantfish.runtime.jit import njit
from quantfish.search.see import see_ge, see_value

TT_MOVE_SCORE = 1 << 30
GOOD_CAPTURE = 1 << 28
CAPTURE_SPAN = 1 << 24     # more than a capture's victim and capture-history terms can add or take
KILLER_SCORE = 1 << 27     # the counter-move; + 1 and + 2 for the killers. Quiet histories stay below it.
UNDER_PROMOTION = -(1 << 29)
PROMOTION_BITS = TYPE_MASK << MOVE_PROMO_SHIFT   # a move's promotion field

# Stockfish 15.1's ordering bonuses of a quiet move: a queen, rook or minor piece attacked by a lesser piece
# moving to a square no lesser piece attacks, and a move to a square from which the piece checks.
ESCAPE_QUEEN = 50000
ESCAPE_ROOK = 25000
ESCAPE_MINOR = 15000
CHECK_SQUARE = 16384
NO_THREATS = (U0, U0, U0, U0)
NO_CHECK_INFO = (U0, U0, U0, U0, U0)

_NOT_FILE_A = np.uint64(0xFEFEFEFEFEFEFEFE)
_NOT_FILE_H = np.uint64(0x7F7F7F7F7F7F7F7F)
_SHIFT_7 = np.uint64(7)
_SHIFT_9 = np.uint64(9)


@njit(cache=True, nogil=True, inline="always")
def threats(T, bb, side):
    """What the opponent of ``side`` attacks: (squares its pawns attack, those its pawns or minor pieces attack,
    those its pawns, minor pieces or rooks attack, ``side``'s queens, rooks and minor pieces attacked by a
    lesser piece)."""
    them = (1 - side) * COLOUR_STRIDE
    us = side * COLOUR_STRIDE
    occ = bb[WHITE_PIECES] | bb[BLACK_PIECES]
    pawns = bb[them + PAWN]
    if side == WHITE:      # black pawns attack downwards
        by_pawn = ((pawns & _NOT_FILE_A) >> _SHIFT_9) | ((pawns & _NOT_FILE_H) >> _SHIFT_7)
    else:
        by_pawn = ((pawns & _NOT_FILE_A) << _SHIFT_7) | ((pawns & _NOT_FILE_H) << _SHIFT_9)
    by_minor = by_pawn
    pieces = bb[them + KNIGHT]
    while pieces:
        by_minor |= knight_attacks(T, lsb(pieces))
        pieces = pop_lsb(pieces)
    pieces = bb[them + BISHOP]
    while pieces:
        by_minor |= bishop_attacks(T, lsb(pieces), occ)
        pieces = pop_lsb(pieces)
    by_rook = by_minor
    pieces = bb[them + ROOK]
    while pieces:
        by_rook |= rook_attacks(T, lsb(pieces), occ)
        pieces = pop_lsb(pieces)
    threatened = ((bb[us + QUEEN] & by_rook) | (bb[us + ROOK] & by_minor)
                  | ((bb[us + KNIGHT] | bb[us + BISHOP]) & by_pawn))
    return by_pawn, by_minor, by_rook, threatened


@njit(cache=True, nogil=True, inline="always")
def quiet_bonus(board, m, threat, info):
    """The part of quiet move ``m``'s score that is not history: escaping an attack by a lesser piece to a
    square that lesser pieces do not attack (``threat`` from ``threats``), and landing where the piece checks
    (``info`` from ``quantfish.core.movegen.check_info``)."""
    frm = move_from(m)
    to = move_to(m)
    pt = type_of(board[frm])
    target = bit(to)
    bonus = 0
    by_pawn, by_minor, by_rook, threatened = threat
    if threatened & bit(frm):
        if pt == QUEEN and not (by_rook & target):
            bonus = ESCAPE_QUEEN
        elif pt == ROOK and not (by_minor & target):
            bonus = ESCAPE_ROOK
        elif not (by_pawn & target):
            bonus = ESCAPE_MINOR
    if check_squares(info, pt) & target:
        bonus += CHECK_SQUARE
    return bonus


@njit(cache=True, nogil=True, inline="always")
def cont_row(S, ply, back):
    """The continuation-history row of the move made ``back`` plies before ``ply``: its moved piece * 64 + its
    to-square, read from the board it was made on; 0 (a row never written) before the root or for a null move."""
    p = ply - back
    if p < 0:
        return 0
    m = S.cur_move[p]
    if m == 0 or m == MOVE_NULL:
        return 0
    return S.boards[p][move_from(m)] * SQUARE_NB + move_to(m)


@njit(cache=True, nogil=True, inline="always")
def cont_rows(S, ply):
    """The continuation-history rows a node at ``ply`` reads and writes: those of the moves 1, 2 and 4 plies back."""
    return cont_row(S, ply, 1), cont_row(S, ply, 2), cont_row(S, ply, 4)


@njit(cache=True, nogil=True, inline="always")
def captured_type(board, m):
    """The type of the piece ``m`` captures (a pawn en passant), 0 for none (a promotion, castling)."""
    if m & MOVE_EP:
        return PAWN
    if m & MOVE_CASTLE:
        return NO_PIECE_TYPE
    return type_of(board[move_to(m)])


@njit(cache=True, nogil=True, _nrt=False)
def score_moves(T, S, ply, n, tt_move, bb, board, side, prev_move, threat, info):
    """The ordering score of each of the ``n`` moves of ``ply`` (see the module docstring); quiet moves get
    ``quiet_bonus`` from ``threat`` and ``info`` (``NO_THREATS`` and ``NO_CHECK_INFO`` give none)."""
    moves = S.moves[ply]
    scores = S.scores[ply]
    killers = S.killers
    history = S.history
    counters = S.counters
    cont = S.cont_history
    r1, r2, r4 = cont_rows(S, ply)
    counter = 0
    if prev_move != 0 and prev_move != MOVE_NULL:
        pto = move_to(prev_move)
        counter = counters[board[pto] * SQUARE_NB + pto]
    for i in range(n):
        m = moves[i]
        if m == tt_move:
            scores[i] = TT_MOVE_SCORE
            continue
        frm = move_from(m)
        to = move_to(m)
        promo = move_promo(m)
        victim = captured_type(board, m)
        if victim != NO_PIECE_TYPE or promo == QUEEN:
            # Provisionally a good capture: pick_move tests its exchange only if it is ever picked.
            v = see_value(victim) + (900 if promo == QUEEN else 0)
            scores[i] = GOOD_CAPTURE + 16 * v + S.capture_history[board[frm] * SQUARE_NB + to, victim] // 2
        elif promo != 0:
            scores[i] = UNDER_PROMOTION + promo
        elif m == killers[ply, 0]:
            scores[i] = KILLER_SCORE + 2
        elif m == killers[ply, 1]:
            scores[i] = KILLER_SCORE + 1
        elif m == counter:
            scores[i] = KILLER_SCORE
        else:
            k = board[frm] * SQUARE_NB + to
            scores[i] = (2 * history[side, frm * SQUARE_NB + to] + 2 * cont[r1, k] + cont[r2, k] + cont[r4, k]
                         + quiet_bonus(board, m, threat, info))


@njit(cache=True, nogil=True, inline="always")
def pick_move(T, bb, board, side, moves, scores, start, n):
    """Swaps the best-scored move of ``start..n`` to ``start`` and returns it. A capture still scored as good
    has its exchange tested here, when first chosen: a losing one drops to its bad-capture score in place and
    the choice is made again. Captures never reached (after a cutoff) are never tested, and since a losing
    capture is never moved, the order is the one that testing every capture up front would give."""
    while True:
        # The highest score first, in a loop without branches that LLVM vectorises (unsigned indices spare
        # Numba's negative-index wrap-around), then the first move that has it: the move a scan keeping the
        # first best would choose, found at a fraction of its cost (the scan was 3.4% of the bench's time).
        best_score = scores[start]
        for i in range(start + 1, n):
            s = scores[np.uint64(i)]
            best_score = s if s > best_score else best_score
        best = start
        while scores[np.uint64(best)] != best_score:
            best += 1
        if best_score >= GOOD_CAPTURE - CAPTURE_SPAN and best_score < TT_MOVE_SCORE \
                and not see_ge(T, bb, board, side, moves[best], 0):
            scores[best] = best_score - 2 * GOOD_CAPTURE
            continue
        if best != start:
            m = moves[start]
            moves[start] = moves[best]
            moves[best] = m
            s = scores[start]
            scores[start] = scores[best]
            scores[best] = s
        return moves[start]


@njit(cache=True, nogil=True, inline="always")
def is_quiet(board, m):
    """Neither a capture (castling is king-takes-own-rook) nor a promotion."""
    if m & (MOVE_EP | PROMOTION_BITS):
        return False
    return board[move_to(m)] == EMPTY or (m & MOVE_CASTLE) != 0
