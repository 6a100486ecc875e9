"""Alpha-beta search, compiled: PVS with a transposition table, quiescence, pruning and reductions.

Everything the search touches is a field of ``S``, an ``quantfish.search.state.SearchState`` built by
``quantfish.search.driver``, and its counters and flags are the ``Control`` record ``S.ctl[0]``. The Python driver
runs one iteration of iterative deepening at a time (``search_root``) and keeps the clock; the compiled
code only polls the stop flag in ``ctl``.

Speed: the search reaches ``S`` through one pointer (``state_ref``: a call passes one word, not the tuple's
few hundred), holding ``borrowed`` (owner-less) views of its arrays, and the functions that take ``S`` are
compiled with ``_nrt=False``, a flag their callees inherit, so no node pays for reference counting (it was
more than half of the time). Nothing in that call tree may allocate or assign to a slice: Numba then refuses
to compile, so a violation is a compile error in the tests. Nor may a function in it return an array that
has an owner: a function compiled once serves every caller, so code with reference counting calling it
would release a reference it never got (the only array-returning function, ``quantfish.nnue.netdir.unpack``, returns
owner-less views).
"""
import numpy as np

from quantfish.core.attacks import attackers_by, bishop_attacks, rook_attacks
from quantfish.core.bitops import U0, bit, lsb, pop_lsb, popcount
from quantfish.runtime.intrinsics import borrowed, prefetch, state_ref
from quantfish.core.movegen import checkers, generate_legal_with, generate_tactical_with
from quantfish.core.movegen import check_info, gives_check_with
from quantfish.core.position import (MOVE_CASTLE, MOVE_EP, MOVE_NULL, ST_CASTLE, ST_EP, ST_KEY, ST_KSQ, ST_PLY_FROM_NULL,
                             ST_RULE50, ST_SIDE, make_move, make_null_move)
from quantfish.search.state import MAX_PLY
from quantfish.core.tables import OFF_ZEP, OFF_ZPIECE, OFF_ZSIDE
from quantfish.tablebase.probe import TB_FAIL, probe_wdl
from quantfish.nnue.kernel.ceval import evaluate_c
from quantfish.nnue.evaluate import evaluate_pair_counts, finish_bb, finish_bb_gen, material_17_bb
from quantfish.nnue.layers import bucket_of
from quantfish.runtime.jit import njit
from quantfish.nnue.netdir import unpack as unpack_net
from quantfish.nnue.stack import net_output, net_output_scheme

INF = 32001
MATE = 32000
MATE_IN_MAX = MATE - 2 * MAX_PLY
VALUE_NONE = 32002


@njit(cache=True, nogil=True, inline="always")
def _optimism(ctl, side):
    """The side to move's optimism (``ctl`` is the search's Control record)."""
    return ctl.optimism_w if side == 0 else ctl.optimism_b


# Transposition table: one int64 array of buckets of two entries, each entry (key, packed data), so a
# bucket is 32 bytes and one probe touches one cache line (the array is 64-byte aligned).
BOUND_UPPER = 1
BOUND_LOWER = 2
BOUND_EXACT = 3
TT_PV = 4          # or-ed into a stored bound: the position is or was on a principal variation
TT_DEPTH_MAX = 111  # a stored depth is capped to fit its 7 bits (depth + 16)
TT_BUCKET = 4      # int64 words per bucket

# Move-ordering scores: the table's move first, then winning captures (by victim and capture history), killers
# and the counter-move, quiets by history, losing captures, under-promotions.
TT_MOVE_SCORE = 1 << 30
GOOD_CAPTURE = 1 << 28
CAPTURE_SPAN = 1 << 24     # more than a capture's victim and capture-history terms can add or take
KILLER_SCORE = 1 << 27     # the counter-move; + 1 and + 2 for the killers. Quiet histories stay below it.
UNDER_PROMOTION = -(1 << 29)

# Double extension of a singular move: how far below the singular bound, and how many on one path.
DOUBLE_EXT_MARGIN = 25
DOUBLE_EXT_MAX = 10
# A late move whose reduced search beats alpha by this much (plus so much a ply of the reduction) is
# re-searched one ply deeper than its full depth.
DEEPER_MARGIN = 70
DEEPER_PER_PLY = 12


@njit(cache=True, nogil=True, inline="always")
def _see_value(pt):
    if pt == 1:
        return 100
    if pt == 2:
        return 320
    if pt == 3:
        return 330
    if pt == 4:
        return 500
    if pt == 5:
        return 950
    if pt == 6:
        return 20000
    return 0


# ---------------------------------------------------------------------------------------------
# Transposition table


@njit(cache=True, nogil=True, inline="always")
def _tt_pack(move, score, ev, depth, bound, gen):
    """One data word: move (17 bits), score and eval (16 each), depth + 16 (7), the PV flag (1), bound (2),
    generation (5)."""
    return (np.int64(move) | (np.int64(score + 32768) << 17) | (np.int64(ev + 32768) << 33)
            | (np.int64(min(depth, TT_DEPTH_MAX) + 16) << 49) | (np.int64((bound >> 2) & 1) << 56)
            | (np.int64(bound & 3) << 57) | (np.int64(gen & 31) << 59))


@njit(cache=True, nogil=True, inline="always")
def _tt_depth(d):
    """The depth stored in data word ``d`` (its 7-bit field holds depth + 16)."""
    return ((d >> 49) & 0x7F) - 16


@njit(cache=True, nogil=True, inline="always")
def tt_bucket(tt, key):
    """Index in ``tt`` of the bucket of ``key`` (the Zobrist key as int64 bits)."""
    return (key & (tt.shape[0] // TT_BUCKET - 1)) * TT_BUCKET


@njit(cache=True, nogil=True)
def tt_probe(tt, key, out):
    """Fills out = (move, score, eval, depth, bound, PV flag) and returns True on a hit.

    An entry is (key XOR data, data), so that an entry torn by two threads writing it at once (Lazy SMP; the
    words are written one at a time, with no lock) fails the key check instead of giving another position's
    move: the data word is read once, and checked and decoded from that one read."""
    i = tt_bucket(tt, key)
    for j in range(0, TT_BUCKET, 2):
        d = tt[i + j + 1]
        if tt[i + j] ^ d == key:
            out[0] = d & 0x1FFFF
            out[1] = ((d >> 17) & 0xFFFF) - 32768
            out[2] = ((d >> 33) & 0xFFFF) - 32768
            out[3] = _tt_depth(d)
            out[4] = (d >> 57) & 3
            out[5] = (d >> 56) & 1
            return True
    return False


@njit(cache=True, nogil=True)
def tt_store(tt, key, move, score, ev, depth, bound, gen):
    """Stores an entry; ``bound`` may carry ``TT_PV``."""
    i = tt_bucket(tt, key)
    slot = -1
    for j in range(0, TT_BUCKET, 2):
        if tt[i + j] ^ tt[i + j + 1] == key:
            slot = i + j
            break
    if slot < 0:
        # Replace the shallower entry, preferring entries from older searches.
        best = 1 << 30
        for j in range(0, TT_BUCKET, 2):
            d = tt[i + j + 1]
            age = (gen - ((d >> 59) & 31)) & 31
            worth = _tt_depth(d) - 8 * age
            if d == 0:
                worth = -(1 << 20)
            if worth < best:
                best = worth
                slot = i + j
    else:
        old = tt[slot + 1]
        if move == 0:
            move = old & 0x1FFFF
        old_depth = _tt_depth(old)
        old_gen = (old >> 59) & 31
        if (bound & 3) != BOUND_EXACT and depth < old_depth - 3 and old_gen == (gen & 31):
            return
    data = _tt_pack(move, score, ev, depth, bound, gen)
    tt[slot] = key ^ data
    tt[slot + 1] = data


@njit(cache=True, nogil=True)
def tt_hashfull(tt, gen):
    """Permille of the first thousand entries used by the current search."""
    used = 0
    n = min(1000, tt.shape[0] // 2)
    for e in range(n):
        d = tt[2 * e + 1]
        if d != 0 and ((d >> 59) & 31) == (gen & 31):
            used += 1
    return used * 1000 // n


@njit(cache=True, nogil=True, inline="always")
def _score_to_tt(s, ply):
    if s >= MATE_IN_MAX:
        return s + ply
    if s <= -MATE_IN_MAX:
        return s - ply
    return s


@njit(cache=True, nogil=True, inline="always")
def _score_from_tt(s, ply):
    if s >= MATE_IN_MAX:
        return s - ply
    if s <= -MATE_IN_MAX:
        return s + ply
    return s


# ---------------------------------------------------------------------------------------------
# Static exchange evaluation


@njit(cache=True, nogil=True)
def see_ge(T, bb, board, side, m, threshold):
    """True when the exchange started by ``m`` wins at least ``threshold`` (in SEE units)."""
    if m & MOVE_CASTLE:
        return 0 >= threshold
    frm = m & 63
    to = (m >> 6) & 63
    victim = 1 if m & MOVE_EP else board[to] & 7
    swap = _see_value(victim) - threshold
    if swap < 0:
        return False
    swap = _see_value(board[frm] & 7) - swap
    if swap <= 0:
        return True
    occ = (bb[0] | bb[8]) ^ bit(frm) ^ bit(to)
    if m & MOVE_EP:
        occ ^= bit(to - 8 if side == 0 else to + 8)
    att = attackers_by(T, bb, to, occ, 0) | attackers_by(T, bb, to, occ, 1)
    diag = bb[3] | bb[5] | bb[11] | bb[13]
    straight = bb[4] | bb[5] | bb[12] | bb[13]
    stm = side
    res = 1
    while True:
        stm ^= 1
        att &= occ
        mine = att & bb[stm * 8]
        if mine == U0:
            break
        res ^= 1
        # The least valuable attacker takes; sliders behind it join in (x-rays).
        c = stm * 8
        pt = 1
        while pt < 6 and (mine & bb[c + pt]) == U0:
            pt += 1
        if pt == 6:
            # The king can only take last: if the other side still attacks, the result flips back.
            if att & ~bb[stm * 8] & occ:
                return res == 0
            return res == 1
        swap = _see_value(pt) - swap
        if swap < res:
            break
        occ ^= bit(lsb(mine & bb[c + pt]))
        if pt == 1 or pt == 3 or pt == 5:
            att |= bishop_attacks(T, to, occ) & diag
        if pt == 4 or pt == 5:
            att |= rook_attacks(T, to, occ) & straight
    return res == 1


# ---------------------------------------------------------------------------------------------
# Draws and evaluation


@njit(cache=True, nogil=True)
def insufficient_material(bb):
    if bb[1] | bb[9] | bb[4] | bb[12] | bb[5] | bb[13]:
        return False
    minors = bb[2] | bb[10] | bb[3] | bb[11]
    return pop_lsb(minors) == U0


@njit(cache=True, nogil=True)
def is_repetition(keys, st, idx, root_idx):
    """A repetition after the root, or a threefold repetition including the game before it."""
    key = keys[idx]
    end = min(st[ST_RULE50], st[ST_PLY_FROM_NULL])
    count = 0
    i = 4
    while i <= end and idx - i >= 0:
        if keys[idx - i] == key:
            if idx - i > root_idx:
                return True
            count += 1
            if count >= 2:
                return True
        i += 2
    return False


@njit(cache=True, nogil=True, inline="always")
def _prefetch_eval(S, key):
    """Asks for the evaluation cache's entry of ``key`` as the move to it is made (``_enter_child``):
    ``static_eval`` reads it later, so its memory latency overlaps other work. Unprefetched, the cache's misses
    cost about what its hits saved."""
    ec = S.eval_cache
    prefetch(ec.ctypes.data + (key & (ec.shape[0] - 1)) * (2 * 8))


@njit(cache=True, nogil=True, _nrt=False)
def static_eval(S, ply, bb, board, st, optimism):
    """NNUE evaluation of the position at ``ply`` (side to move's view), by the C kernel or Numba.

    One net: the formula of its generation (``quantfish.nnue.evaluate.finish``); on the C kernel (``ctl.one_call``) the
    kernel brings the accumulators up to date and runs the net in one call (``quantfish.nnue.kernel.ceval``). A 17.1 pair
    (``ctl.pair``): ``quantfish.nnue.evaluate.evaluate_pair_counts``, which takes the pair decision (small net when
    |simple_eval| is large, the big net otherwise or when the small net's result is small). Otherwise each
    net's accumulators are brought up to date lazily (``quantfish.nnue.stack``), through the refresh caches, on the path
    ``ctl.use_c`` names. One net's outputs are kept in the evaluation cache (``S.eval_cache``): about a fifth
    of the bench's evaluations are of positions evaluated before, whose table entry holds no evaluation (a node
    cut before it stored one, or an entry replaced since).
    """
    ctl = S.ctl[0]
    kf = S.kf
    side = st[ST_SIDE]
    rule50 = st[ST_RULE50]
    ksq_w = st[ST_KSQ]
    ksq_b = st[ST_KSQ + 1]
    if ctl.pair:
        # Which net of a pair evaluates depends on the small net's result: nothing is cached.
        net, cnet, _, _, cache, scratch = unpack_net(S.net)
        pieces, simple, mat = material_17_bb(bb, side)
        s_net, s_cnet, s_acc, s_psqt, s_cache, s_scratch = unpack_net(S.small_net)
        nn = S.nn
        s_nn = (s_acc, s_psqt, S.small_computed, nn[3], nn[4])
        if ctl.use_c != 0:
            return evaluate_pair_counts(net, s_net, nn, s_nn, ply, board, ksq_w, ksq_b, side, pieces, simple, mat,
                                        rule50, optimism, scratch, s_scratch, cache, s_cache, kf, cnet, s_cnet)
        return evaluate_pair_counts(net, s_net, nn, s_nn, ply, board, ksq_w, ksq_b, side, pieces, simple, mat,
                                    rule50, optimism, scratch, s_scratch, cache, s_cache)
    # One net: its (psqt, positional) depend on the pieces and the side to move only, so a position met again
    # (in the next iteration, by a transposition) takes them from the evaluation cache instead of the net. They
    # are the net's own values, so the tree is the same with the cache as without it.
    key = st[ST_KEY]
    ec = S.eval_cache
    e = key & (ec.shape[0] - 1)
    w = ec[e, 1]
    if ec[e, 0] == key and w != 0:
        p, q = w >> 32, np.int64(np.int32(w & 0xFFFFFFFF))
    else:
        bucket = bucket_of(popcount(bb[0] | bb[8]))
        if ctl.one_call:
            p, q = evaluate_c(kf, S.cx, ply, board, ksq_w, ksq_b, side, bucket)
        else:
            # The Numba path (or a Quantfish-format net's scheme on it).
            net, _, _, _, cache, scratch = unpack_net(S.net)
            if ctl.scheme:
                p, q = net_output_scheme(net, S.nn, ply, board, ksq_w, ksq_b, side, bucket, scratch, cache)
            else:
                p, q = net_output(net, S.nn, ply, board, ksq_w, ksq_b, side, bucket, scratch, cache)
        ec[e, 0] = key
        ec[e, 1] = (np.int64(p) << 32) | (np.int64(q) & 0xFFFFFFFF)
    if ctl.one_call:
        return finish_bb_gen(ctl.generation, p, q, bb, side, rule50, optimism)
    net = unpack_net(S.net)[0]
    return finish_bb(net, p, q, bb, side, rule50, optimism)


# ---------------------------------------------------------------------------------------------
# Move ordering


@njit(cache=True, nogil=True, inline="always")
def _cont_row(S, ply, back):
    """The continuation-history row of the move made ``back`` plies before ``ply``: its moved piece * 64 + its
    to-square, read from the board it was made on; 0 (a row never written) before the root or for a null move."""
    p = ply - back
    if p < 0:
        return 0
    m = S.cur_move[p]
    if m == 0 or m == MOVE_NULL:
        return 0
    return S.boards[p][m & 63] * 64 + ((m >> 6) & 63)


@njit(cache=True, nogil=True, inline="always")
def _cont_rows(S, ply):
    """The continuation-history rows a node at ``ply`` reads and writes: those of the moves 1, 2 and 4 plies back."""
    return _cont_row(S, ply, 1), _cont_row(S, ply, 2), _cont_row(S, ply, 4)


@njit(cache=True, nogil=True, inline="always")
def _captured_type(board, m):
    """The type of the piece ``m`` captures (a pawn en passant), 0 for none (a promotion, castling)."""
    if m & MOVE_EP:
        return 1
    if m & MOVE_CASTLE:
        return 0
    return board[(m >> 6) & 63] & 7


@njit(cache=True, nogil=True, _nrt=False)
def _score_moves(T, S, ply, n, tt_move, bb, board, side, prev_move):
    moves = S.moves[ply]
    scores = S.scores[ply]
    killers = S.killers
    history = S.history
    counters = S.counters
    cont = S.cont_history
    r1, r2, r4 = _cont_rows(S, ply)
    counter = 0
    if prev_move != 0 and prev_move != MOVE_NULL:
        pto = (prev_move >> 6) & 63
        counter = counters[board[pto] * 64 + pto]
    for i in range(n):
        m = moves[i]
        if m == tt_move:
            scores[i] = TT_MOVE_SCORE
            continue
        frm = m & 63
        to = (m >> 6) & 63
        promo = (m >> 12) & 7
        victim = _captured_type(board, m)
        if victim != 0 or promo == 5:
            # Provisionally a good capture: _pick_move tests its exchange only if it is ever picked.
            v = _see_value(victim) + (900 if promo == 5 else 0)
            scores[i] = GOOD_CAPTURE + 16 * v + S.capture_history[board[frm] * 64 + to, victim] // 2
        elif promo != 0:
            scores[i] = UNDER_PROMOTION + promo
        elif m == killers[ply, 0]:
            scores[i] = KILLER_SCORE + 2
        elif m == killers[ply, 1]:
            scores[i] = KILLER_SCORE + 1
        elif m == counter:
            scores[i] = KILLER_SCORE
        else:
            k = board[frm] * 64 + to
            scores[i] = 2 * history[side, frm * 64 + to] + 2 * cont[r1, k] + cont[r2, k] + cont[r4, k]


@njit(cache=True, nogil=True, inline="always")
def _pick_move(T, bb, board, side, moves, scores, start, n):
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
def _is_quiet(board, m):
    """Neither a capture (castling is king-takes-own-rook) nor a promotion."""
    if m & (MOVE_EP | (7 << 12)):
        return False
    return board[(m >> 6) & 63] == 0 or (m & MOVE_CASTLE) != 0


@njit(cache=True, nogil=True, inline="always")
def _gravity(table, row, col, bonus):
    """Moves a history entry towards +-16384 by ``bonus``, less the nearer it is (so |h| <= 16384, an int16)."""
    h = table[row, col]
    table[row, col] = h + bonus - h * abs(bonus) // 16384


@njit(cache=True, nogil=True, inline="always")
def _update_capture_history(S, board, m, bonus):
    to = (m >> 6) & 63
    _gravity(S.capture_history, board[m & 63] * 64 + to, _captured_type(board, m), bonus)


@njit(cache=True, nogil=True, inline="always")
def _update_quiet_histories(S, side, board, m, bonus, r1, r2, r4):
    """``bonus`` (a malus when negative) for quiet move ``m``: its butterfly history and its continuation
    histories after the moves 1, 2 and 4 plies back (rows ``r1``, ``r2``, ``r4``; row 0 is left at 0)."""
    frm = m & 63
    to = (m >> 6) & 63
    _gravity(S.history, side, frm * 64 + to, bonus)
    _update_cont_histories(S, board[frm] * 64 + to, bonus, r1, r2, r4)


@njit(cache=True, nogil=True, inline="always")
def _update_cont_histories(S, k, bonus, r1, r2, r4):
    """``bonus`` for column ``k`` (piece * 64 + to-square) of continuation-history rows ``r1``, ``r2``, ``r4``."""
    cont = S.cont_history
    if r1 != 0:
        _gravity(cont, r1, k, bonus)
    if r2 != 0:
        _gravity(cont, r2, k, bonus)
    if r4 != 0:
        _gravity(cont, r4, k, bonus)


# ---------------------------------------------------------------------------------------------
# The search tree


@njit(cache=True, nogil=True, inline="always")
def _count_double_ext(S, ply, doubled):
    """The double extensions on the path through the move made at ``ply``: its parent's, plus ``doubled``."""
    S.double_ext[ply] = (S.double_ext[ply - 1] if ply > 0 else 0) + doubled


@njit(cache=True, nogil=True, inline="always")
def _child_key_guess(T, board, st, m):
    """The key after ``m`` as a plain move or capture makes it: the side, the piece's two squares, the captured
    piece and the old en passant file. Exact for most moves; castling, promotions, en passant, a new en passant
    square or lost castling rights make it wrong, which only wastes the prefetch it is for."""
    frm = m & 63
    to = (m >> 6) & 63
    pc = board[frm]
    key = np.int64(st[ST_KEY]) ^ np.int64(T[OFF_ZSIDE]) ^ np.int64(T[OFF_ZPIECE + pc * 64 + frm]) ^ \
        np.int64(T[OFF_ZPIECE + pc * 64 + to])
    cap = board[to]
    if cap != 0:
        key ^= np.int64(T[OFF_ZPIECE + cap * 64 + to])
    if st[ST_EP] != 64:
        key ^= np.int64(T[OFF_ZEP + (st[ST_EP] & 7)])
    return key


@njit(cache=True, nogil=True, inline="always")
def _prefetch_child(S, key):
    """The child's TT bucket and evaluation-cache entry asked for (``key`` as the child's ``ST_KEY``)."""
    tt = S.tt
    prefetch(tt.ctypes.data + tt_bucket(tt, key) * 8)
    _prefetch_eval(S, key)


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
    nn = S.nn
    nn[4][ply + 1] = nd
    nn[2][ply + 1, 0] = 0
    nn[2][ply + 1, 1] = 0
    S.small_computed[ply + 1, 0] = 0
    S.small_computed[ply + 1, 1] = 0
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
                   S.nn[3][ply + 1])
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
    c = side * 8
    return (depth >= 3 and ev >= beta and prev_move != MOVE_NULL
            and (bb[c + 2] | bb[c + 3] | bb[c + 4] | bb[c + 5]) != U0 and beta > -MATE_IN_MAX)


@njit(cache=True, nogil=True, inline="always")
def _null_move_reduction(depth, ev, beta):
    return 3 + depth // 3 + min((ev - beta) // 200, 3)


@njit(cache=True, nogil=True, inline="always")
def _reduction(lmr, depth, move_count, pv_node, pv_line, improving, cut_node, gives_check, quiet, score):
    """Late-move reduction of a move with ordering ``score``: the table's, less for PV nodes, for positions
    that are or were on a principal variation (``pv_line``, unless the node is likely to fail low), checks,
    killers/counter-moves and good histories (butterfly and continuation, as ``_score_moves`` sums them), more
    when not improving and at expected cut nodes."""
    r = np.int64(lmr[min(depth, 63), min(move_count, 63)])
    if pv_node:
        r -= 1
    if pv_line:
        r -= 1
    if not improving:
        r += 1
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
def _history_bonus(depth):
    return min(16 * depth * depth + 32 * depth, 1600)


@njit(cache=True, nogil=True, inline="always")
def _update_capture_stats(S, board, best_move, depth, captures, n_captures):
    """A beta cutoff: capture-history bonus for the best move if it is a capture or promotion, and malus for
    the other captures and promotions tried (whichever move caused the cutoff)."""
    bonus = _history_bonus(depth)
    if not _is_quiet(board, best_move):
        _update_capture_history(S, board, best_move, bonus)
    for j in range(n_captures):
        if captures[j] != best_move:
            _update_capture_history(S, board, captures[j], -bonus)


@njit(cache=True, nogil=True, inline="always")
def _update_quiet_stats(S, ply, side, board, best_move, depth, prev_move, quiets, n_quiets):
    """A quiet move caused a beta cutoff: history bonus for it and malus for the quiets tried before it,
    killer and counter-move."""
    killers = S.killers
    bonus = _history_bonus(depth)
    r1, r2, r4 = _cont_rows(S, ply)
    _update_quiet_histories(S, side, board, best_move, bonus, r1, r2, r4)
    for j in range(n_quiets):
        if quiets[j] != best_move:
            _update_quiet_histories(S, side, board, quiets[j], -bonus, r1, r2, r4)
    if killers[ply, 0] != best_move:
        killers[ply, 1] = killers[ply, 0]
        killers[ply, 0] = best_move
    if prev_move != 0 and prev_move != MOVE_NULL:
        pto = (prev_move >> 6) & 63
        S.counters[board[pto] * 64 + pto] = best_move


@njit(cache=True, nogil=True, inline="always")
def _reward_prior_quiet(S, ply, prev_move, depth, extra):
    """Every move here failed low: the opponent's quiet move that led here refuted this node, so its
    continuation histories get half a cutoff's bonus, a whole one when the node was expected to hold (PV or
    cut node) or the fail low was deep. (The whole bonus everywhere solved fewer of the WAC test's positions.)"""
    k = _cont_row(S, ply, 1)    # the prior move's piece * 64 + to-square; 0 at the root or after a null move
    if k == 0 or not _is_quiet(S.boards[ply - 1], prev_move):
        return
    r1, r2, r4 = _cont_rows(S, ply - 1)
    _update_cont_histories(S, k, _history_bonus(depth) * (2 if extra else 1) // 2, r1, r2, r4)


@njit(cache=True, nogil=True, inline="always")
def _poll(S, ctl):
    """Counts a node; true when the search must stop (driver's stop, node limit, deadline)."""
    ctl.nodes += 1
    if (ctl.nodes & 255) == 0:
        if (ctl.nodes & 1023) == 0 and ctl.max_nodes > 0 and ctl.nodes >= ctl.max_nodes:
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
        return 0 if in_check else static_eval(S, ply, bb, board, st, _optimism(ctl, side))

    key = st[ST_KEY]
    tte = S.tte[ply]
    tt_move = 0
    tt_hit = tt_probe(S.tt, key, tte)
    s = VALUE_NONE
    b = 0
    pv_flag = 0
    if tt_hit:
        tt_move = tte[0]
        s = _score_from_tt(tte[1], ply)
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
            raw_eval = static_eval(S, ply, bb, board, st, _optimism(ctl, side))
        stand = raw_eval
        if tt_hit and abs(s) < MATE_IN_MAX and ((b == BOUND_LOWER and s > stand) or (b == BOUND_UPPER and s < stand)):
            stand = s
        if stand >= beta:
            if not tt_hit:
                tt_store(S.tt, key, 0, _score_to_tt(stand, ply), raw_eval, 0, BOUND_LOWER, ctl.tt_gen)
            return stand
        if stand > alpha:
            alpha = stand
        best = stand

    moves = S.moves[ply]
    scores = S.scores[ply]
    k = generate_tactical_with(T, bb, board, st, moves, chk)
    if k == 0 and in_check:
        return -MATE + ply
    _score_moves(T, S, ply, k, tt_move, bb, board, side, S.cur_move[ply - 1] if ply > 0 else 0)
    best_move = 0
    for i in range(k):
        m = _pick_move(T, bb, board, side, moves, scores, i, k)
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
    tt_store(S.tt, key, best_move, _score_to_tt(best, ply), raw_eval, 0, bound | pv_flag, ctl.tt_gen)
    return best


@njit(cache=True, nogil=True, _nrt=False)
def search(T, S, ply, depth, alpha, beta, cut_node):
    """Principal variation search; returns the score from the side to move's view."""
    ctl = S.ctl[0]
    pv_node = beta - alpha > 1
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
            return 0 if in_check else static_eval(S, ply, bb, board, st, _optimism(ctl, side))
        # Mate distance pruning.
        alpha = max(alpha, -MATE + ply)
        beta = min(beta, MATE - ply - 1)
        if alpha >= beta:
            return alpha

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
        tt_score = _score_from_tt(tte[1], ply)
        tt_eval = tte[2]
        tt_depth = tte[3]
        tt_bound = tte[4]
        if not pv_node and excluded == 0 and tt_depth >= depth and st[ST_RULE50] < 90:
            if tt_bound == BOUND_EXACT or (tt_bound == BOUND_LOWER and tt_score >= beta) or \
                    (tt_bound == BOUND_UPPER and tt_score <= alpha):
                if tt_move != 0 and tt_score >= beta and _is_quiet(board, tt_move):
                    r1, r2, r4 = _cont_rows(S, ply)
                    _update_quiet_histories(S, side, board, tt_move, min(16 * depth * depth, 1200), r1, r2, r4)
                return tt_score
    # Syzygy tables, right after a capture or pawn move: a win or loss the window cannot change, or a draw,
    # ends the node with the tables' bound (a win scores just below the mates). Otherwise, in a PV node, the
    # bound still holds: a win is the least the node scores (``tb_floor``), a loss the most (``tb_cap``).
    tb_floor, tb_cap = -INF, INF
    if not root and excluded == 0 and ctl.tb_pieces > 0 and st[ST_RULE50] == 0 and st[ST_CASTLE] == 0:
        pieces = popcount(bb[0] | bb[8])
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
                    tt_store(S.tt, key, 0, _score_to_tt(value, ply), 0, min(depth + 6, TT_DEPTH_MAX),
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

    evals = S.evals
    if in_check:
        ev = -INF
        evals[ply] = VALUE_NONE
        improving = False
    else:
        if tt_hit and tt_eval != VALUE_NONE and tt_eval != 0:
            ev = tt_eval
        elif ply > 0 and S.cur_move[ply - 1] == MOVE_NULL and evals[ply - 1] != VALUE_NONE:
            ev = -evals[ply - 1]     # after a null move: the position is the parent's with the other side to move
        else:
            ev = static_eval(S, ply, bb, board, st, _optimism(ctl, side))
            if not tt_hit and excluded == 0:
                # Kept at once, under no bound and the least depth, so that a transposition met before this node
                # is searched (or when its search is cut short) takes the evaluation instead of the net's work.
                tt_store(S.tt, key, 0, VALUE_NONE, ev, -1, TT_PV if tt_pv else 0, ctl.tt_gen)
        evals[ply] = ev
        # A TT score is a better estimate than the static eval when its bound allows.
        if tt_hit and tt_score != VALUE_NONE and abs(tt_score) < MATE_IN_MAX and \
                ((tt_bound == BOUND_LOWER and tt_score > ev) or (tt_bound == BOUND_UPPER and tt_score < ev)):
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

    # Internal iterative reduction: without a TT move this node is probably not worth full depth.
    if depth >= 6 and tt_move == 0 and (pv_node or cut_node == 1):
        depth -= 1

    # Singular extension: when every move but the table's fails low against a bound a little below the table's
    # score, searched at half depth, the table's move is extended. It runs here, before this ply's move list is
    # generated, because that search uses the same ply's rows. When even the bound is above beta, some other
    # move also beats beta (multi-cut) and the node fails high; when the table's score is above beta, the
    # table's move is reduced instead.
    tt_ext = 0
    if (not root and excluded == 0 and depth >= 6 and ply < 2 * ctl.root_depth and tt_move != 0
            and (tt_bound & BOUND_LOWER) != 0
            and tt_depth >= depth - 3 and abs(tt_score) < MATE_IN_MAX):
        singular_beta = tt_score - 3 * depth
        S.excluded[ply] = tt_move
        value = search(T, S, ply, (depth - 1) // 2, singular_beta - 1, singular_beta, cut_node)
        S.excluded[ply] = 0
        if ctl.stop:
            return 0
        if value < singular_beta:
            # Far below the bound, outside PV nodes: extended twice, as long as the path has few such.
            tt_ext = 2 if (not pv_node and value < singular_beta - DOUBLE_EXT_MARGIN
                           and S.double_ext[ply - 1] <= DOUBLE_EXT_MAX) else 1
        elif singular_beta >= beta:
            return singular_beta
        elif tt_score >= beta:
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
    _score_moves(T, S, ply, n, tt_move, bb, board, side, prev_move)

    quiets = S.quiets[ply]
    n_quiets = 0
    captures = S.captures[ply]
    n_captures = 0
    best = tb_floor
    best_move = 0
    move_count = 0
    lmr = S.lmr
    lmp_limit = (3 + depth * depth) // (1 if improving else 2)
    # On a principal variation now or before, and not a PV node whose table entry already failed low at
    # this depth: its late moves are reduced less.
    pv_line = tt_pv and not (pv_node and tt_move != 0 and (tt_bound & BOUND_UPPER) != 0 and tt_depth >= depth)
    info = check_info(T, bb, st)
    i = -1
    while True:
        i += 1
        if i >= n:
            break
        m = _pick_move(T, bb, board, side, moves, scores, i, n)
        if m == excluded:
            continue
        quiet = _is_quiet(board, m)
        move_count += 1
        prune = not root and best > -MATE_IN_MAX
        if prune and quiet and depth <= 8 and not in_check and move_count > lmp_limit:
            # Late quiet moves at shallow depth: this one and every later quiet move are skipped, so drop
            # them from the list rather than picking each in turn. The quiets left all sort before the
            # moves kept (bad captures, under-promotions), so counting them now keeps the move count.
            k = i + 1
            for j in range(i + 1, n):
                if not _is_quiet(board, moves[j]):
                    moves[k] = moves[j]
                    scores[k] = scores[j]
                    k += 1
            move_count += n - k
            n = k
            continue
        gives_check = gives_check_with(T, bb, board, st, m, info)
        if prune:
            if quiet and not gives_check:
                if depth <= 7 and not in_check and ev + 110 + 140 * depth <= alpha and scores[i] < KILLER_SCORE:
                    continue
                # Histories say this move fails at shallow depth.
                if depth <= 4 and scores[i] < -4000 * depth:
                    continue
                if depth <= 7 and scores[i] < KILLER_SCORE and not see_ge(T, bb, board, side, m, -25 * depth * depth):
                    continue
            elif depth <= 6 and not see_ge(T, bb, board, side, m, -110 * depth):
                continue
        nodes_before = ctl.nodes
        _do_move(T, S, ply, m)
        ext = 1 if gives_check and ply < 2 * ctl.root_depth else 0
        if tt_ext != 0 and m == tt_move:
            ext = tt_ext
        new_depth = depth - 1 + ext
        _count_double_ext(S, ply, 1 if ext == 2 else 0)
        if depth >= 3 and move_count > 1 + (1 if pv_node else 0) and (quiet or scores[i] < 0):
            r = _reduction(lmr, depth, move_count, pv_node, pv_line, improving, cut_node, gives_check, quiet,
                           scores[i])
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
                if root:
                    # For the time manager: how unsettled the root is, and how much the best move cost.
                    ctl.best_nodes = ctl.nodes - nodes_before
                    if move_count > 1:
                        ctl.best_changes += 1
                if pv_node:
                    _update_pv(pv, pv_len, ply, m)
                if score >= beta:
                    break
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
        if _is_quiet(board, best_move):
            _update_quiet_stats(S, ply, side, board, best_move, depth, prev_move, quiets, n_quiets)
        _update_capture_stats(S, board, best_move, depth, captures, n_captures)
    elif best_move == 0 and (depth >= 5 or pv_node):
        _reward_prior_quiet(S, ply, prev_move, depth, pv_node or cut_node == 1 or best < alpha - 80 * depth)
    best = min(best, tb_cap)
    if excluded == 0:
        bound = BOUND_LOWER if best >= beta else (BOUND_EXACT if pv_node and best_move != 0 else BOUND_UPPER)
        tt_store(S.tt, key, best_move, _score_to_tt(best, ply), evals[ply] if not in_check else 0,
                 depth, bound | (TT_PV if tt_pv else 0), ctl.tt_gen)
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
