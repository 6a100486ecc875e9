"""The histories that order moves and scale reductions, and how a search result updates them.

Every history entry moves towards its table's limit by a bonus, less the nearer it is (``gravity``), so it stays
in an int16. The limits are Stockfish 15.1's: the butterfly history 7183, the capture history 10692, the
continuation history 29952, so that the thresholds taken from Stockfish weigh the tables as there. A beta cutoff
rewards the move that caused it and punishes the moves tried before it; a node where every move failed low rewards
the opponent's quiet move that led to it.
"""
from quantfish.core.position import MOVE_NULL, move_from, move_to
from quantfish.runtime.jit import njit
from quantfish.core.types import SQUARE_NB
from quantfish.search.movepick import captured_type, cont_row, cont_rows, is_quiet

BUTTERFLY_MAX = 7183
CAPTURE_MAX = 10692
CONTINUATION_MAX = 29952
BONUS_QUADRATIC = 12
BONUS_LINEAR = 282
BONUS_OFFSET = 349
BONUS_MAX = 1594


@njit(cache=True, nogil=True, inline="always")
def gravity(table, row, col, bonus, limit):
    """Moves a history entry towards +-limit by ``bonus``, less the nearer it is (so |h| <= limit)."""
    h = table[row, col]
    table[row, col] = h + bonus - h * abs(bonus) // limit


@njit(cache=True, nogil=True, inline="always")
def _update_capture_history(S, board, m, bonus):
    to = move_to(m)
    gravity(S.capture_history, board[move_from(m)] * SQUARE_NB + to, captured_type(board, m), bonus, CAPTURE_MAX)


@njit(cache=True, nogil=True, inline="always")
def update_quiet_histories(S, side, board, m, bonus, r1, r2, r4):
    """``bonus`` (a malus when negative) for quiet move ``m``: its butterfly history and its continuation
    histories after the moves 1, 2 and 4 plies back (rows ``r1``, ``r2``, ``r4``; row 0 is left at 0)."""
    frm = move_from(m)
    to = move_to(m)
    gravity(S.history, side, frm * SQUARE_NB + to, bonus, BUTTERFLY_MAX)
    update_cont_histories(S, board[frm] * SQUARE_NB + to, bonus, r1, r2, r4)


@njit(cache=True, nogil=True, inline="always")
def update_cont_histories(S, k, bonus, r1, r2, r4):
    """``bonus`` for column ``k`` (piece * 64 + to-square) of continuation-history rows ``r1``, ``r2``, ``r4``."""
    cont = S.cont_history
    if r1 != 0:
        gravity(cont, r1, k, bonus, CONTINUATION_MAX)
    if r2 != 0:
        gravity(cont, r2, k, bonus, CONTINUATION_MAX)
    if r4 != 0:
        gravity(cont, r4, k, bonus, CONTINUATION_MAX)


@njit(cache=True, nogil=True, inline="always")
def history_bonus(depth):
    """Stockfish 15.1's bonus, (12 d + 282) d - 349 capped at 1594: 263 at depth 2, 1361 at 5, and -55 at
    depth 1 (so a cutoff there nudges its move down; the formula was measured as a whole, `experiments.md`)."""
    return min((BONUS_QUADRATIC * depth + BONUS_LINEAR) * depth - BONUS_OFFSET, BONUS_MAX)


@njit(cache=True, nogil=True, inline="always")
def update_capture_stats(S, board, best_move, depth, captures, n_captures):
    """A beta cutoff: capture-history bonus for the best move if it is a capture or promotion, and malus for
    the other captures and promotions tried (whichever move caused the cutoff)."""
    bonus = history_bonus(depth)
    if not is_quiet(board, best_move):
        _update_capture_history(S, board, best_move, bonus)
    for j in range(n_captures):
        if captures[j] != best_move:
            _update_capture_history(S, board, captures[j], -bonus)


@njit(cache=True, nogil=True, inline="always")
def update_quiet_stats(S, ply, side, board, best_move, depth, prev_move, quiets, n_quiets):
    """A quiet move caused a beta cutoff: history bonus for it and malus for the quiets tried before it,
    killer and counter-move."""
    killers = S.killers
    bonus = history_bonus(depth)
    r1, r2, r4 = cont_rows(S, ply)
    update_quiet_histories(S, side, board, best_move, bonus, r1, r2, r4)
    for j in range(n_quiets):
        if quiets[j] != best_move:
            update_quiet_histories(S, side, board, quiets[j], -bonus, r1, r2, r4)
    if killers[ply, 0] != best_move:
        killers[ply, 1] = killers[ply, 0]
        killers[ply, 0] = best_move
    if prev_move != 0 and prev_move != MOVE_NULL:
        pto = move_to(prev_move)
        S.counters[board[pto] * SQUARE_NB + pto] = best_move


@njit(cache=True, nogil=True, inline="always")
def reward_prior_quiet(S, ply, prev_move, depth, extra):
    """Every move here failed low: the opponent's quiet move that led here refuted this node, so its
    continuation histories get half a cutoff's bonus, a whole one when the node was expected to hold (PV or
    cut node) or the fail low was deep. (The whole bonus everywhere solved fewer of the WAC test's positions.)"""
    k = cont_row(S, ply, 1)    # the prior move's piece * 64 + to-square; 0 at the root or after a null move
    if k == 0 or not is_quiet(S.boards[ply - 1], prev_move):
        return
    r1, r2, r4 = cont_rows(S, ply - 1)
    update_cont_histories(S, k, history_bonus(depth) * (2 if extra else 1) // 2, r1, r2, r4)
