"""Alpha-beta search, compiled: PVS with a transposition table, quiescence, pruning and reductions.

Everything the search touches is a field of ``S``, a ``quantfish.search.state.SearchState`` built by
``quantfish.search.driver``, and its counters and flags are the ``Control`` record ``S.ctl[0]``. The Python
driver runs one iteration of iterative deepening at a time (``search_root``) and keeps the clock; the compiled
code only polls the stop flag in ``ctl``. The parts the tree is built from have modules of their own: the
table (``tt``), the exchange test (``see``), move ordering (``movepick``), the histories (``history``), draws by
rule (``rules``); the net is reached through one entry, ``quantfish.nnue.evaluator.evaluate``.

Speed: the search reaches ``S`` through one pointer (``state_ref``: a call passes one word, not the tuple's
few hundred), holding ``borrowed`` (owner-less) views of its arrays, and the functions that take ``S`` are
compiled with ``_nrt=False``, a flag their callees inherit, so no node pays for reference counting (it was
more than half of the time). Nothing in that call tree may allocate or assign to a slice: Numba then refuses
to compile, so a violation is a compile error in the tests. Nor may a function in it return an array that
has an owner: a function compiled once serves every caller, so code with reference counting calling it
would release a reference it never got (the only array-returning function, ``quantfish.nnue.netdir.unpack``,
returns owner-less views).
"""
import numpy as np

from quantfish.core.bitops import U0, popcount
from quantfish.core.movegen import check_info, checkers, generate_legal_with, generate_tactical_with, gives_check_with
from quantfish.core.position import (MOVE_NULL, ST_CASTLE, ST_EP, ST_KEY, ST_RULE50, ST_SIDE, make_move,
                                     make_null_move, move_from, move_promo, move_to)
from quantfish.core.tables import OFF_ZEP, OFF_ZPIECE, OFF_ZSIDE
from quantfish.core.types import (BISHOP, BLACK_PIECES, COLOUR_STRIDE, EMPTY, KNIGHT, NO_PIECE_TYPE, NO_SQUARE, QUEEN,
                                  ROOK, SQUARE_NB, WHITE, WHITE_PIECES, file_of)
from quantfish.nnue.evaluator import evaluate, new_child, prefetch_cached
from quantfish.runtime.intrinsics import borrowed, prefetch, state_ref
from quantfish.runtime.jit import njit
from quantfish.search.correction import corrected, rows, update_correction
from quantfish.search.history import (history_bonus, reward_prior_quiet, update_capture_stats,
                                      update_quiet_histories, update_quiet_stats)
from quantfish.search.movepick import (KILLER_SCORE, NO_CHECK_INFO, NO_THREATS, captured_type, cont_rows, is_quiet,
                                      pick_move, quiet_bonus, score_moves, threats)
from quantfish.search.rules import insufficient_material, is_repetition, upcoming_repetition
from quantfish.search.see import see_ge
from quantfish.search.state import MAX_PLY
from quantfish.search.tt import (BOUND_EXACT, BOUND_LOWER, BOUND_UPPER, TT_DEPTH_MAX, TT_PV, score_from_tt,
                                 score_to_tt, tt_bucket, tt_probe, tt_store)
from quantfish.search.values import INF, KNOWN_WIN, MATE, MATE_IN_MAX, VALUE_NONE
from quantfish.tablebase.probe import TB_FAIL, probe_wdl

# Double extension of a singular move: how far below the singular bound, and how many on one path.
DOUBLE_EXT_MARGIN = 25
DOUBLE_EXT_MAX = 10
# A late move whose reduced search beats alpha by this much (plus so much a ply of the reduction) is
# re-searched one ply deeper than its full depth.
DEEPER_MARGIN = 70
DEEPER_PER_PLY = 12
# A check is extended only this deep, and only where the node's static evaluation is this far from 0 (in
# check, it has none and counts as far): shallow checks are left to quiescence and LMR.
CHECK_EXT_MIN_DEPTH = 10
CHECK_EXT_MIN_EVAL = 83
# Singular extension: tried from this depth, and from this much deeper at a PV node whose position was on a
# principal variation before.
SINGULAR_MIN_DEPTH = 4
SINGULAR_PV_EXTRA_DEPTH = 2
# The singular bound: the table's score less this much a ply.
SINGULAR_MARGIN = 3
# ProbCut: from this depth (exclusive), a capture whose search four plies shallower beats beta by this margin
# (less when improving) fails the node high.
PROBCUT_MIN_DEPTH = 4
PROBCUT_MARGIN = 191
PROBCUT_IMPROVING = 54
PROBCUT_REDUCTION = 4
POLL_EVERY = 256      # nodes between looks at the clock (a power of two)
NODE_LIMIT_EVERY = 1024


# Stockfish 15.1's endgame value of a captured piece, internal units, by piece type (none, pawn .. queen, king).
VICTIM_VALUE_EG = (0, 208, 854, 915, 1380, 2682, 0)
PV_REDUCTION_DEPTH_TERM = 11    # a PV node's late moves are reduced 1 + 11 / (3 + depth) plies less
PV_DROP_MAX_DEPTH = 6           # below this depth a PV node's moves after an alpha raise go a ply shallower


@njit(cache=True, nogil=True, inline="always")
def _base_reduction(lmr, depth, move_count, improving, delta, root_delta):
    """Stockfish 15.1's late-move reduction before its adjustments: the product of the depth's and the move
    number's factors (in 1/1024 plies), less when this node's window ``delta`` is as wide as the root's (a PV
    node whose alpha has not risen), and a ply more for a large product when not improving."""
    r = np.int64(lmr[min(depth, 255)]) * np.int64(lmr[min(move_count, 255)])
    return (r + 1642 - delta * 1024 // root_delta) // 1024 + (1 if not improving and r > 916 else 0)


@njit(cache=True, nogil=True, inline="always")
def _lmr_depth(lmr, depth, move_count, improving, delta, root_delta):
    """The depth a late move's reduced search would have before its adjustments, which Stockfish 15.1's shallow
    pruning rules are measured on."""
    return max(depth - 1 - _base_reduction(lmr, depth, move_count, improving, delta, root_delta), 0)


@njit(cache=True, nogil=True, inline="always")
def _optimism(ctl, side):
    """The side to move's optimism (``ctl`` is the search's Control record)."""
    return ctl.optimism_w if side == WHITE else ctl.optimism_b


@njit(cache=True, nogil=True, inline="always")
def _count_double_ext(S, ply, doubled):
    """The double extensions on the path through the move made at ``ply``: its parent's, plus ``doubled``."""
    S.double_ext[ply] = (S.double_ext[ply - 1] if ply > 0 else 0) + doubled


@njit(cache=True, nogil=True, inline="always")
def _child_key_guess(T, board, st, m):
    """The key after ``m`` as a plain move or capture makes it: the side, the piece's two squares, the captured
    piece and the old en passant file. Exact for most moves; castling, promotions, en passant, a new en passant
    square or lost castling rights make it wrong, which only wastes the prefetch it is for."""
    frm = move_from(m)
    to = move_to(m)
    pc = board[frm]
    key = np.int64(st[ST_KEY]) ^ np.int64(T[OFF_ZSIDE]) ^ np.int64(T[OFF_ZPIECE + pc * SQUARE_NB + frm]) ^ \
        np.int64(T[OFF_ZPIECE + pc * SQUARE_NB + to])
    cap = board[to]
    if cap != EMPTY:
        key ^= np.int64(T[OFF_ZPIECE + cap * SQUARE_NB + to])
    if st[ST_EP] != NO_SQUARE:
        key ^= np.int64(T[OFF_ZEP + file_of(st[ST_EP])])
    return key


@njit(cache=True, nogil=True, inline="always")
def _prefetch_child(S, key):
    """The child's TT bucket and evaluation-cache entry asked for (``key`` as the child's ``ST_KEY``)."""
    tt = S.tt
    prefetch(tt.ctypes.data + tt_bucket(tt, key) * 8)
    prefetch_cached(S, key)


@njit(cache=True, nogil=True, inline="always")
def _enter_child(S, ply, m, nd, guessed_key):
    """Bookkeeping of a move (``MOVE_NULL`` for a null move) made from ``ply``: the child's accumulators of both
    nets are not computed yet (``nd`` pieces changed), its key joins the repetition history, and the child's
    TT bucket and evaluation-cache entry are prefetched (as Stockfish prefetches its TT entry in do_move) unless
    ``guessed_key`` (``_do_move``'s guess, asked for before the move was made; 0 for none) was the key.

    The TT probe's first load was the search's costliest instruction (a quarter of ``search``'s own samples
    under ``perf``, a miss to memory). Prefetched here, seven alternating runs of ``quantfish bench`` on Zen 3
    gave a median of 698k against 654k nodes/s (paired ratios 0.96 to 1.13, median 1.08). Asked for before
    ``make_move`` as well, from the guess, the probe's load still led ``search``'s samples but with 45% of
    them; four builds searching the bench positions in turn (14 rounds) put that step at 1.03."""
    new_child(S, ply, nd)
    key = S.sts[ply + 1][ST_KEY]
    S.keys[S.ctl[0].root_index + ply + 1] = np.uint64(key)
    S.cur_move[ply] = m
    if key != guessed_key:
        _prefetch_child(S, key)


@njit(cache=True, nogil=True, inline="always")
def _do_move(T, S, ply, m):
    bbs, boards, sts = S.bbs, S.boards, S.sts
    guess = _child_key_guess(T, boards[ply], sts[ply], m)
    _prefetch_child(S, guess)
    nd = make_move(T, bbs[ply], boards[ply], sts[ply], bbs[ply + 1], boards[ply + 1], sts[ply + 1], m,
                   S.nn.dirty[ply + 1])
    _enter_child(S, ply, m, nd, guess)


@njit(cache=True, nogil=True, inline="always")
def _do_null_move(T, S, ply):
    bbs, boards, sts = S.bbs, S.boards, S.sts
    make_null_move(T, bbs[ply], boards[ply], sts[ply], bbs[ply + 1], boards[ply + 1], sts[ply + 1])
    _enter_child(S, ply, MOVE_NULL, 0, 0)
    _count_double_ext(S, ply, 0)


@njit(cache=True, nogil=True, inline="always")
def _null_move_allowed(bb, side, depth, ev, beta, prev_move):
    """Null move only at depth >= 3 above beta, not twice in a row, and not without pieces (zugzwang)."""
    c = side * COLOUR_STRIDE
    return (depth >= 3 and ev >= beta and prev_move != MOVE_NULL
            and (bb[c + KNIGHT] | bb[c + BISHOP] | bb[c + ROOK] | bb[c + QUEEN]) != U0 and beta > -MATE_IN_MAX)


@njit(cache=True, nogil=True, inline="always")
def _null_move_reduction(depth, ev, beta):
    return 3 + depth // 3 + min((ev - beta) // 200, 3)


@njit(cache=True, nogil=True, inline="always")
def _reduction(r, depth, pv_node, pv_line, cut_node, gives_check, quiet, score):
    """Late-move reduction of a move with ordering ``score`` from its base ``r`` (``_base_reduction``): less for
    PV nodes (most at low depth, as Stockfish 15.1), for positions that are or were on a principal variation
    (``pv_line``, unless the node is likely to fail low), checks, killers/counter-moves and good histories
    (butterfly and continuation, as ``score_moves`` sums them), more at expected cut nodes."""
    if pv_node:
        r -= 1 + PV_REDUCTION_DEPTH_TERM // (3 + depth)
    if pv_line:
        r -= 2
    if cut_node == 1:
        r += 1
    if gives_check:
        r -= 1
    if quiet:
        if score >= KILLER_SCORE:
            r -= 1
        else:
            r -= score // 14000
    return r


@njit(cache=True, nogil=True, inline="always")
def _update_pv(pv, pv_len, ply, m):
    """The PV of ``ply`` becomes ``m`` followed by the child's PV."""
    pv[ply, ply] = m
    for j in range(ply + 1, pv_len[ply + 1]):
        pv[ply, j] = pv[ply + 1, j]
    pv_len[ply] = max(pv_len[ply + 1], ply + 1)


@njit(cache=True, nogil=True, inline="always")
def _poll(S, ctl):
    """Counts a node; true when the search must stop (driver's stop, node limit, deadline)."""
    ctl.nodes += 1
    if (ctl.nodes & (POLL_EVERY - 1)) == 0:
        if (ctl.nodes & (NODE_LIMIT_EVERY - 1)) == 0 and ctl.max_nodes > 0 and ctl.nodes >= ctl.max_nodes:
            ctl.stop = 1
        if ctl.deadline > 0:
            S.clock(ctl.clock_id, S.ctl.ctypes)      # fills ctl.now_s, ctl.now_ns
            if ctl.now_s * 1000000000 + ctl.now_ns >= ctl.deadline:
                ctl.stop = 1
    return ctl.stop != 0


@njit(cache=True, nogil=True, _nrt=False)
def qsearch(T, S, ply, alpha, beta):
    ctl = S.ctl[0]
    if _poll(S, ctl):
        return 0
    bb, board, st = S.bbs[ply], S.boards[ply], S.sts[ply]
    pv_len = S.pv_len
    pv_len[ply] = ply
    if ply > ctl.seldepth:
        ctl.seldepth = ply
    idx = ctl.root_index + ply
    if st[ST_RULE50] >= 100 or insufficient_material(bb) or is_repetition(S.keys, st, idx, ctl.root_index):
        return 0
    side = st[ST_SIDE]
    chk = checkers(T, bb, st)
    in_check = chk != U0
    if ply >= MAX_PLY - 1:
        return 0 if in_check else evaluate(S, ply, bb, board, st, _optimism(ctl, side))

    key = st[ST_KEY]
    tte = S.tte[ply]
    tt_move = 0
    tt_hit = tt_probe(S.tt, key, tte)
    s = VALUE_NONE
    b = 0
    pv_flag = 0
    if tt_hit:
        tt_move = tte[0]
        s = score_from_tt(tte[1], ply)
        b = tte[4]
        pv_flag = TT_PV * tte[5]
        if (b == BOUND_EXACT or (b == BOUND_LOWER and s >= beta) or (b == BOUND_UPPER and s <= alpha)) \
                and beta - alpha == 1:
            return s

    best = -INF
    raw_eval = 0
    if not in_check:
        # The table's evaluation (0: none stored) spares the net; its score, where its bound allows, is a better
        # estimate than the evaluation.
        raw_eval = tte[2] if tt_hit else 0
        if raw_eval == 0:
            raw_eval = evaluate(S, ply, bb, board, st, _optimism(ctl, side))
        stand = corrected(S, side, rows(S, ply, bb), raw_eval)
        if tt_hit and abs(s) < MATE_IN_MAX and (b & (BOUND_LOWER if s > stand else BOUND_UPPER)) != 0:
            stand = s
        if stand >= beta:
            if not tt_hit:
                tt_store(S.tt, key, 0, score_to_tt(stand, ply), raw_eval, 0, BOUND_LOWER, ctl.tt_gen)
            return stand
        if stand > alpha:
            alpha = stand
        best = stand

    moves = S.moves[ply]
    scores = S.scores[ply]
    k = generate_tactical_with(T, bb, board, st, moves, chk)
    if k == 0 and in_check:
        return -MATE + ply
    score_moves(T, S, ply, k, tt_move, bb, board, side, S.cur_move[ply - 1] if ply > 0 else 0, NO_THREATS,
                NO_CHECK_INFO)
    best_move = 0
    for i in range(k):
        m = pick_move(T, bb, board, side, moves, scores, i, k)
        if not in_check and scores[i] < 0 and best > -MATE_IN_MAX:
            break  # losing captures
        _do_move(T, S, ply, m)
        score = -qsearch(T, S, ply + 1, -beta, -alpha)
        if ctl.stop:
            return 0
        if score > best:
            best = score
            if score > alpha:
                best_move = m
                if score >= beta:
                    break
                alpha = score
    if in_check and best == -INF:
        return -MATE + ply
    bound = BOUND_LOWER if best >= beta else BOUND_UPPER
    tt_store(S.tt, key, best_move, score_to_tt(best, ply), raw_eval, 0, bound | pv_flag, ctl.tt_gen)
    return best


@njit(cache=True, nogil=True, _nrt=False)
def search(T, S, ply, depth, alpha, beta, cut_node):
    """Principal variation search; returns the score from the side to move's view."""
    ctl = S.ctl[0]
    pv_node = beta - alpha > 1
    # A move of the side to move that repeats an earlier position makes a draw a floor of the score.
    if ply > 0 and alpha < 0 and S.sts[ply][ST_RULE50] >= 3 and \
            upcoming_repetition(T, S.keys, S.bbs[ply], S.boards[ply], S.sts[ply], ctl.root_index + ply, ply):
        alpha = 0
        if alpha >= beta:
            return alpha
    if depth <= 0:
        return qsearch(T, S, ply, alpha, beta)
    if _poll(S, ctl):
        return 0
    bb, board, st = S.bbs[ply], S.boards[ply], S.sts[ply]
    pv, pv_len = S.pv, S.pv_len
    pv_len[ply] = ply
    if ply > ctl.seldepth:
        ctl.seldepth = ply
    side = st[ST_SIDE]
    root = ply == 0
    idx = ctl.root_index + ply
    chk = checkers(T, bb, st)
    in_check = chk != U0
    if not root:
        if insufficient_material(bb) or is_repetition(S.keys, st, idx, ctl.root_index):
            return 0
        if st[ST_RULE50] >= 100 and not in_check:
            return 0
        if ply >= MAX_PLY - 1:
            return 0 if in_check else evaluate(S, ply, bb, board, st, _optimism(ctl, side))
        # Mate distance pruning.
        alpha = max(alpha, -MATE + ply)
        beta = min(beta, MATE - ply - 1)
        if alpha >= beta:
            return alpha
    else:
        ctl.root_delta = beta - alpha

    # A singular-extension search of this node leaves out ``excluded``: its result is not the node's, so it
    # neither takes nor stores a table cutoff, and does not try a null move.
    excluded = S.excluded[ply]
    key = st[ST_KEY]
    tte = S.tte[ply]
    tt_hit = tt_probe(S.tt, key, tte)
    tt_move = 0
    tt_score = VALUE_NONE
    tt_depth = -99
    tt_bound = 0
    tt_eval = VALUE_NONE
    tt_pv = pv_node
    if tt_hit:
        tt_pv = tt_pv or tte[5] != 0
        tt_move = tte[0]
        tt_score = score_from_tt(tte[1], ply)
        tt_eval = tte[2]
        tt_depth = tte[3]
        tt_bound = tte[4]
        # A table cutoff, as Stockfish 15.1 takes it: from an exact score of at least this depth, or a bound
        # from a deeper search. A quiet table move is rewarded as a searched cutoff would reward it (histories,
        # killer, counter-move) when the score beats beta, and punished when it does not.
        if not pv_node and excluded == 0 and tt_depth > depth - (1 if tt_bound == BOUND_EXACT else 0) and \
                tt_score != VALUE_NONE and (tt_bound & (BOUND_LOWER if tt_score >= beta else BOUND_UPPER)) != 0:
            if tt_move != 0 and is_quiet(board, tt_move):
                if tt_score >= beta:
                    update_quiet_stats(S, ply, side, board, tt_move, depth, S.cur_move[ply - 1] if ply > 0 else 0,
                                       S.quiets[ply], 0)
                else:
                    r1, r2, r4 = cont_rows(S, ply)
                    update_quiet_histories(S, side, board, tt_move, -history_bonus(depth), r1, r2, r4)
            if st[ST_RULE50] < 90:
                return tt_score
    # Syzygy tables, right after a capture or pawn move: a win or loss the window cannot change, or a draw,
    # ends the node with the tables' bound (a win scores just below the mates). Otherwise, in a PV node, the
    # bound still holds: a win is the least the node scores (``tb_floor``), a loss the most (``tb_cap``).
    tb_floor, tb_cap = -INF, INF
    if not root and excluded == 0 and ctl.tb_pieces > 0 and st[ST_RULE50] == 0 and st[ST_CASTLE] == 0:
        pieces = popcount(bb[WHITE_PIECES] | bb[BLACK_PIECES])
        if pieces <= ctl.tb_pieces and (pieces < ctl.tb_pieces or depth >= ctl.tb_depth):
            wdl = probe_wdl(T, S.tb, S.bbs, S.boards, S.sts, S.moves, ply, S.tb_scratch)
            if wdl != TB_FAIL:
                ctl.tb_hits += 1
                draw = ctl.tb_rule50
                if wdl < -draw:
                    value, bound = -MATE_IN_MAX + ply + 1, BOUND_UPPER
                elif wdl > draw:
                    value, bound = MATE_IN_MAX - ply - 1, BOUND_LOWER
                else:
                    value, bound = 2 * wdl * draw, BOUND_EXACT
                if bound == BOUND_EXACT or (bound == BOUND_LOWER and value >= beta) or \
                        (bound == BOUND_UPPER and value <= alpha):
                    tt_store(S.tt, key, 0, score_to_tt(value, ply), 0, min(depth + 6, TT_DEPTH_MAX),
                             bound | (TT_PV if tt_pv else 0), ctl.tt_gen)
                    return value
                if pv_node:
                    if bound == BOUND_LOWER:
                        tb_floor = value
                        alpha = max(alpha, value)
                    else:
                        tb_cap = value
    if root and ctl.n_root > 0:
        # A root move excluded by searchmoves or MultiPV must not come first.
        ok = False
        for i in range(ctl.n_root):
            if S.root_moves[i] == tt_move:
                ok = True
        if not ok:
            tt_move = 0

    # The static evaluation: the net's output (``raw_eval``, what the table keeps; 0 for none) with the
    # correction histories' entries for its parts added (``evals[ply]``, what the rules read).
    evals = S.evals
    raw_eval = 0
    corr_rows = rows(S, ply, bb)
    if in_check:
        ev = -INF
        evals[ply] = VALUE_NONE
        improving = False
    else:
        if tt_hit and tt_eval != VALUE_NONE and tt_eval != 0:
            raw_eval = tt_eval
            ev = corrected(S, side, corr_rows, raw_eval)
        elif ply > 0 and S.cur_move[ply - 1] == MOVE_NULL and evals[ply - 1] != VALUE_NONE:
            ev = -evals[ply - 1]     # after a null move: the position is the parent's with the other side to move
        else:
            raw_eval = evaluate(S, ply, bb, board, st, _optimism(ctl, side))
            ev = corrected(S, side, corr_rows, raw_eval)
            if not tt_hit and excluded == 0:
                # Kept at once, under no bound and the least depth, so that a transposition met before this node
                # is searched (or when its search is cut short) takes the evaluation instead of the net's work.
                tt_store(S.tt, key, 0, VALUE_NONE, raw_eval, -1, TT_PV if tt_pv else 0, ctl.tt_gen)
        evals[ply] = ev
        # A TT score is a better estimate than the static eval when its bound allows (an exact score always).
        if tt_hit and tt_score != VALUE_NONE and abs(tt_score) < MATE_IN_MAX and \
                (tt_bound & (BOUND_LOWER if tt_score > ev else BOUND_UPPER)) != 0:
            ev = tt_score
        improving = ply >= 2 and evals[ply - 2] != VALUE_NONE and evals[ply] > evals[ply - 2]

    prev_move = S.cur_move[ply - 1] if ply > 0 else 0
    if not pv_node and not in_check:
        # Reverse futility: far above beta at shallow depth.
        if depth <= 8 and ev - 85 * (depth - (1 if improving else 0)) >= beta and ev < MATE_IN_MAX:
            return ev
        # Null move.
        if excluded == 0 and _null_move_allowed(bb, side, depth, ev, beta, prev_move):
            r = _null_move_reduction(depth, ev, beta)
            _do_null_move(T, S, ply)
            score = -search(T, S, ply + 1, depth - r, -beta, -beta + 1, np.int64(1 - cut_node))
            if ctl.stop:
                return 0
            if score >= beta:
                if score >= MATE_IN_MAX:
                    score = beta
                return score
        # ProbCut, as Stockfish 15.1: a capture that wins at least the margin by exchange and beats the raised
        # bound in quiescence, then in a search ``PROBCUT_REDUCTION`` plies shallower, fails the node high;
        # not when the table already says the node stays below that bound at nearly this depth.
        probcut_beta = beta + PROBCUT_MARGIN - (PROBCUT_IMPROVING if improving else 0)
        if (depth > PROBCUT_MIN_DEPTH and abs(beta) < MATE_IN_MAX - MAX_PLY
                and not (tt_depth >= depth - 3 and tt_score != VALUE_NONE and tt_score < probcut_beta)):
            moves = S.moves[ply]
            scores = S.scores[ply]
            k = generate_tactical_with(T, bb, board, st, moves, chk)
            score_moves(T, S, ply, k, tt_move, bb, board, side, prev_move, NO_THREATS, NO_CHECK_INFO)
            threshold = probcut_beta - evals[ply]
            for i in range(k):
                m = pick_move(T, bb, board, side, moves, scores, i, k)
                if m == excluded or (captured_type(board, m) == NO_PIECE_TYPE and move_promo(m) != QUEEN):
                    continue
                if not see_ge(T, bb, board, side, m, threshold):
                    continue
                _do_move(T, S, ply, m)
                _count_double_ext(S, ply, 0)
                value = -qsearch(T, S, ply + 1, -probcut_beta, -probcut_beta + 1)
                if value >= probcut_beta:
                    value = -search(T, S, ply + 1, depth - PROBCUT_REDUCTION, -probcut_beta, -probcut_beta + 1,
                                    np.int64(1 - cut_node))
                if ctl.stop:
                    return 0
                if value >= probcut_beta:
                    if excluded == 0:
                        tt_store(S.tt, key, m, score_to_tt(value, ply), raw_eval, depth - 3,
                                 BOUND_LOWER | (TT_PV if tt_pv else 0), ctl.tt_gen)
                    return value

    # Internal iterative reduction: without a TT move this node is probably not worth full depth.
    if depth >= 6 and tt_move == 0 and (pv_node or cut_node == 1):
        depth -= 1

    # Singular extension: when every move but the table's fails low against a bound a little below the table's
    # score, searched at half depth, the table's move is extended. It runs here, before this ply's move list is
    # generated, because that search uses the same ply's rows. When even the bound is above beta, some other
    # move also beats beta (multi-cut) and the node fails high; when the table's score is above beta, the
    # table's move is reduced by two plies instead, and by one when that score is at most alpha and the search's
    # result. The bound is a ply's margin lower at a node that was on a principal variation but is not a PV node
    # now. After a quiet singular move, the other moves are reduced a ply less.
    tt_ext = 0
    singular_quiet = False
    singular_depth = SINGULAR_MIN_DEPTH + (SINGULAR_PV_EXTRA_DEPTH if pv_node and tt_pv else 0)
    if (not root and excluded == 0 and depth >= singular_depth and ply < 2 * ctl.root_depth and tt_move != 0
            and (tt_bound & BOUND_LOWER) != 0
            and tt_depth >= depth - 3 and abs(tt_score) < MATE_IN_MAX):
        singular_beta = tt_score - (SINGULAR_MARGIN + (1 if tt_pv and not pv_node else 0)) * depth
        S.excluded[ply] = tt_move
        value = search(T, S, ply, (depth - 1) // 2, singular_beta - 1, singular_beta, cut_node)
        S.excluded[ply] = 0
        if ctl.stop:
            return 0
        if value < singular_beta:
            # Far below the bound, outside PV nodes: extended twice, as long as the path has few such.
            tt_ext = 2 if (not pv_node and value < singular_beta - DOUBLE_EXT_MARGIN
                           and S.double_ext[ply - 1] <= DOUBLE_EXT_MAX) else 1
            singular_quiet = is_quiet(board, tt_move)
        elif singular_beta >= beta:
            return singular_beta
        elif tt_score >= beta:
            tt_ext = -2
        elif tt_score <= alpha and tt_score <= value:
            tt_ext = -1

    moves = S.moves[ply]
    scores = S.scores[ply]
    n = generate_legal_with(T, bb, board, st, moves, chk)
    if n == 0:
        return -MATE + ply if in_check else 0
    if root and ctl.n_root > 0:
        k = 0
        for i in range(n):
            for j in range(ctl.n_root):
                if S.root_moves[j] == moves[i]:
                    moves[k] = moves[i]
                    k += 1
                    break
        n = k
    info = check_info(T, bb, st)
    # Out of check, quiet moves are ordered by what they do as well as by history (evasions by history alone).
    threat = threats(T, bb, side) if not in_check else NO_THREATS
    score_moves(T, S, ply, n, tt_move, bb, board, side, prev_move, threat, info if not in_check else NO_CHECK_INFO)

    quiets = S.quiets[ply]
    n_quiets = 0
    captures = S.captures[ply]
    n_captures = 0
    best = tb_floor
    best_move = 0
    move_count = 0
    lmr = S.lmr
    root_delta = ctl.root_delta
    lmp_limit = (3 + depth * depth) // (1 if improving else 2)
    # On a principal variation now or before, and not a PV node whose table entry already failed low at
    # this depth: its late moves are reduced less.
    pv_line = tt_pv and not (pv_node and tt_move != 0 and (tt_bound & BOUND_UPPER) != 0 and tt_depth >= depth)
    r1, r2, r4 = cont_rows(S, ply)
    i = -1
    while True:
        i += 1
        if i >= n:
            break
        m = pick_move(T, bb, board, side, moves, scores, i, n)
        if m == excluded:
            continue
        quiet = is_quiet(board, m)
        move_count += 1
        prune = not root and best > -MATE_IN_MAX
        if prune and quiet and depth <= 8 and not in_check and move_count > lmp_limit:
            # Late quiet moves at shallow depth: this one and every later quiet move are skipped, so drop
            # them from the list rather than picking each in turn. The quiets left all sort before the
            # moves kept (bad captures, under-promotions), so counting them now keeps the move count.
            k = i + 1
            for j in range(i + 1, n):
                if not is_quiet(board, moves[j]):
                    moves[k] = moves[j]
                    scores[k] = scores[j]
                    k += 1
            move_count += n - k
            n = k
            continue
        gives_check = gives_check_with(T, bb, board, st, m, info)
        if prune:
            if quiet and not gives_check:
                # Stockfish 15.1's pruning of quiets, on the depth the reduction would leave the move: by its
                # continuation histories, by futility of the static evaluation plus a history term, by exchange.
                lmr_depth = _lmr_depth(lmr, depth, move_count, improving, beta - alpha, root_delta)
                k = board[move_from(m)] * SQUARE_NB + move_to(m)
                cont = S.cont_history
                hist = np.int64(cont[r1, k]) + np.int64(cont[r2, k]) + np.int64(cont[r4, k])
                if lmr_depth < 5 and hist < -3875 * (depth - 1):
                    continue
                hist += 2 * np.int64(S.history[side, move_from(m) * SQUARE_NB + move_to(m)])
                if not in_check and lmr_depth < 13 and evals[ply] + 106 + 145 * lmr_depth + hist // 52 <= alpha:
                    continue
                if not see_ge(T, bb, board, side, m, -24 * lmr_depth * lmr_depth - 15 * lmr_depth):
                    continue
            else:
                # Captures and checks, as Stockfish 15.1: futility of a capture on its reduced depth (the
                # static evaluation, the victim's endgame value and the capture history), then the exchange
                # test at every depth.
                if not gives_check and not pv_node and not in_check:
                    lmr_depth = _lmr_depth(lmr, depth, move_count, improving, beta - alpha, root_delta)
                    victim = captured_type(board, m)
                    if lmr_depth < 7 and victim != NO_PIECE_TYPE:
                        history = S.capture_history[board[move_from(m)] * SQUARE_NB + move_to(m), victim]
                        if evals[ply] + 180 + 201 * lmr_depth + VICTIM_VALUE_EG[victim] + history // 6 < alpha:
                            continue
                if not see_ge(T, bb, board, side, m, -110 * depth):
                    continue
        _do_move(T, S, ply, m)
        ext = 1 if (gives_check and ply < 2 * ctl.root_depth and depth >= CHECK_EXT_MIN_DEPTH
                    and abs(evals[ply]) >= CHECK_EXT_MIN_EVAL) else 0
        if tt_ext != 0 and m == tt_move:
            ext = tt_ext
        new_depth = depth - 1 + ext
        _count_double_ext(S, ply, 1 if ext == 2 else 0)
        # Late-move reductions as Stockfish 15.1 gates them: from depth 2, after the first move (the first two at
        # the root and its children on a PV), for quiets, losing captures, and any capture off principal variations.
        if depth >= 2 and move_count > 1 + (1 if pv_node and ply <= 1 else 0) and (quiet or scores[i] < 0
                                                                                    or not tt_pv):
            # The reduction reads the histories in the move's score, not its ordering bonus.
            history_score = scores[i]
            if quiet and not in_check and history_score < KILLER_SCORE:
                history_score -= quiet_bonus(board, m, threat, info)
            r = _reduction(_base_reduction(lmr, depth, move_count, improving, beta - alpha, root_delta), depth,
                           pv_node, pv_line, cut_node, gives_check, quiet, history_score)
            if singular_quiet:
                r -= 1
            d = max(1, min(new_depth - r, new_depth))
            score = -search(T, S, ply + 1, d, -alpha - 1, -alpha, np.int64(1))
            if score > alpha and d < new_depth:
                # Far above alpha after the reduced search: the re-search goes one ply deeper.
                deeper = 1 if score > alpha + DEEPER_MARGIN + DEEPER_PER_PLY * (new_depth - d) else 0
                score = -search(T, S, ply + 1, new_depth + deeper, -alpha - 1, -alpha, np.int64(1 - cut_node))
        elif not pv_node or move_count > 1:
            score = -search(T, S, ply + 1, new_depth, -alpha - 1, -alpha, np.int64(1 - cut_node))
        else:
            score = alpha + 1  # forces the full-window search below
        if pv_node and (move_count == 1 or (score > alpha and score < beta)):
            score = -search(T, S, ply + 1, new_depth, -beta, -alpha, np.int64(0))
        if ctl.stop:
            return 0
        if score > best:
            best = score
            if score > alpha:
                best_move = m
                if root and move_count > 1:
                    ctl.best_changes += 1      # for the time manager: how unsettled the root is
                if pv_node:
                    _update_pv(pv, pv_len, ply, m)
                if score >= beta:
                    break
                # Stockfish 15.1: once a PV node has raised alpha at a low depth, the moves after it are
                # searched a ply shallower.
                if pv_node and 1 < depth < PV_DROP_MAX_DEPTH and beta < KNOWN_WIN and score > -KNOWN_WIN:
                    depth -= 1
                alpha = score
        if quiet:
            if n_quiets < quiets.shape[0]:
                quiets[n_quiets] = m
                n_quiets += 1
        elif n_captures < captures.shape[0]:
            captures[n_captures] = m
            n_captures += 1

    if move_count == 0:
        # Every legal move was excluded at the root (cannot happen) or pruned: keep alpha.
        return alpha

    if best_move != 0 and best >= beta:
        if is_quiet(board, best_move):
            update_quiet_stats(S, ply, side, board, best_move, depth, prev_move, quiets, n_quiets)
        update_capture_stats(S, board, best_move, depth, captures, n_captures)
    elif best_move == 0 and (depth >= 5 or pv_node):
        reward_prior_quiet(S, ply, prev_move, depth, pv_node or cut_node == 1 or best < alpha - 80 * depth)
    best = min(best, tb_cap)
    if excluded == 0:
        bound = BOUND_LOWER if best >= beta else (BOUND_EXACT if pv_node and best_move != 0 else BOUND_UPPER)
        tt_store(S.tt, key, best_move, score_to_tt(best, ply), raw_eval,
                 depth, bound | (TT_PV if tt_pv else 0), ctl.tt_gen)
    if not in_check:
        update_correction(S, side, corr_rows, best, evals[ply], depth,
                          best_move != 0 and captured_type(board, best_move) != NO_PIECE_TYPE, best_move != 0, beta)
    return best


@njit(cache=True, nogil=True)
def search_root(T, S, depth, alpha, beta):
    """One iteration at the root with window (alpha, beta); the PV is left in S's pv row 0."""
    ctl = S.ctl[0]
    ctl.root_depth = depth
    ctl.seldepth = 0
    # The caller holds T and S for the whole call, so the tree below can use them without reference counts.
    return search(borrowed(T), state_ref(borrowed(S)), np.int64(0), np.int64(depth), np.int64(alpha), np.int64(beta),
                  np.int64(0))
