"""Move ordering: each move's score, and picking the best remaining move one at a time.

The table's move comes first, then winning captures (by victim and capture history), the killers and the
counter-move, quiet moves by their histories (butterfly and continuation), losing captures, under-promotions.
A capture is scored as winning until it is picked: only then is its exchange tested (``pick_move``).
"""
import numpy as np

from quantfish.core.position import MOVE_CASTLE, MOVE_EP, MOVE_NULL, MOVE_PROMO_SHIFT, move_from, move_promo, move_to
from quantfish.core.types import EMPTY, NO_PIECE_TYPE, PAWN, QUEEN, SQUARE_NB, TYPE_MASK, type_of
from quantfish.runtime.jit import njit
from quantfish.search.see import see_ge, see_value

TT_MOVE_SCORE = 1 << 30
GOOD_CAPTURE = 1 << 28
CAPTURE_SPAN = 1 << 24     # more than a capture's victim and capture-history terms can add or take
KILLER_SCORE = 1 << 27     # the counter-move; + 1 and + 2 for the killers. Quiet histories stay below it.
UNDER_PROMOTION = -(1 << 29)
PROMOTION_BITS = TYPE_MASK << MOVE_PROMO_SHIFT   # a move's promotion field


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
def score_moves(T, S, ply, n, tt_move, bb, board, side, prev_move):
    """The ordering score of each of the ``n`` moves of ``ply`` (see the module docstring)."""
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
            scores[i] = 2 * history[side, frm * SQUARE_NB + to] + 2 * cont[r1, k] + cont[r2, k] + cont[r4, k]


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
