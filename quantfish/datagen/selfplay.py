"""One self-play game in one compiled call: random opening plies, then the engine's search for every move,
and the quiet positions packed as training records.

Why compiled: ``Searcher.think`` took 0.45 ms a move at depth 1 here (its Python set-up and iterative
deepening loop, and some 45 us for each call that passes the ``SearchState`` into compiled code), several
times a whole search at the budgets data generation affords. Here iterative deepening, the game loop, the
end-of-game rules and the record packing run in one ``nogil`` call per game, reusing
``quantfish.search.tree.search_root`` and the ``SearchState`` of a ``Searcher``.

Teacher: the score of the last completed iteration of the move's own search (side to move's view, converted to
centipawns as UCI's ``cp``). Its leaves are quiescence searches ending in Stockfish 15.1's net through our
exact inference (the default net; optimism 0), so it is that net's evaluation after resolving captures, plus
the search's look-ahead (one ply at the default depth 1). Chosen over a separate quiescence search of the
position because it is at least as well informed (the root's quiescence is part of any depth >= 1 search) and
costs nothing: the search runs anyway to choose the move.

Random plies: ``random_plies`` uniformly random moves from the first or the second ply of the game, by the
game's random stream, so that each side is as often the first to search after them. The first searcher
punishes the random moves still hanging; with random moves always from the first ply, White won 960
games and Black 504 of 1,798 (depth 1, 4 random plies, openings with White to move), and with 4 or 5
random moves from the first ply, 687 and 838.

Kept positions: the positions searched (not those where a random move is played), not in check, the best move
neither a capture nor a promotion (so the static evaluation is a fair target), and no mate score. Game end:
checkmate, stalemate, the 50-move rule, threefold repetition, insufficient material
(``quantfish.search.rules.insufficient_material``: no pawns, rooks or queens and at most one minor piece), or
``max_plies`` (adjudicated a draw).
"""
import numpy as np

from quantfish.core.bitops import U0
from quantfish.core.movegen import MAX_MOVES, checkers, generate_legal
from quantfish.core.position import (ST_CASTLE, ST_EP, ST_FULLMOVE, ST_KEY, ST_RULE50, ST_SIDE,
                             make_move)
from quantfish.nnue.evaluator import new_root
from quantfish.search.movepick import is_quiet
from quantfish.search.rules import insufficient_material
from quantfish.search.tree import search_root
from quantfish.search.values import INF, MATE_IN_MAX
from quantfish.runtime.jit import njit
from quantfish.data.codec import RAW_LABEL, RESULT_AT, STM_AT, pack_record
from quantfish.nnue.evaluator import C_CASTLE, C_EP, C_FULLMOVE, C_KEY, C_RAW, C_RULE50, C_SIDE, TAP_COUNT
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE

# Why a game ended (``play_game``'s ``reason``).
CHECKMATE = 0
STALEMATE = 1
FIFTY_MOVES = 2
REPETITION = 3
MATERIAL = 4
MAX_PLIES = 5
REASONS = ("checkmate", "stalemate", "50-move rule", "repetition", "insufficient material", "move limit")

# White's result of a game (the records hold the side to move's: 0 loss, 1 draw, 2 win).
BLACK_WINS, DRAW, WHITE_WINS = 0, 1, 2


@njit(cache=True, nogil=True)
def rng_next(state):
    """splitmix64 step of ``state`` (uint64[1]): a fixed, portable stream for a given seed."""
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def rng_below(state, n):
    """A number in 0..n-1 (n > 0)."""
    return np.int64(rng_next(state) % np.uint64(n))


@njit(cache=True, nogil=True, inline="always")
def centipawns(v):
    """Internal units to UCI centipawns, truncating as ``quantfish.search.driver.score_to_uci``."""
    if v >= 0:
        return (v * 100) // PAWN_VALUE_NORMALIZE
    return -((-v * 100) // PAWN_VALUE_NORMALIZE)


@njit(cache=True, nogil=True)
def threefold(keys, ply, rule50):
    """True when the position at ``ply`` of the game (``keys[0..ply]``) occurred twice before."""
    count = 0
    i = ply - 2
    while i >= 0 and i >= ply - rule50:
        if keys[i] == keys[ply]:
            count += 1
            if count >= 2:
                return True
        i -= 2
    return False


@njit(cache=True, nogil=True)
def search_position(T, S, root_index, max_depth, soft_nodes, hard_nodes):
    """Iterative deepening on ``S``'s ply-0 position: (best move, score) of the last completed iteration,
    (0, 0) if none completed. No iteration starts after ``soft_nodes``; ``hard_nodes`` stops one (0: never)."""
    ctl = S.ctl[0]
    ctl.root_index = root_index
    new_root(S)
    S.killers[:] = 0
    ctl.stop = 0
    ctl.nodes = 0
    ctl.n_root = 0              # every legal root move
    ctl.max_nodes = hard_nodes
    ctl.tt_gen = (ctl.tt_gen + 1) & 31
    best_move = 0
    best_score = 0
    for depth in range(1, max_depth + 1):
        score = search_root(T, S, depth, -INF, INF)
        if ctl.stop:
            break
        if S.pv_len[0] > 0:
            best_move = S.pv[0, 0]
            best_score = score
        if ctl.nodes >= soft_nodes:
            break
    return best_move, best_score


@njit(cache=True, nogil=True)
def _play(T, S, bb0, board0, st0, rng, random_plies, max_depth, soft_nodes, hard_nodes, max_plies, out, sampled,
          seen, seen_count):
    """The game loop of ``play_game`` (``sampled`` False: the searched roots) and ``play_sampled_game``
    (True: the positions each search evaluated, once each by ``seen``)."""
    bbs, boards, sts = S.bbs, S.boards, S.sts
    bb, board, st = bb0.copy(), board0.copy(), st0.copy()
    dirty = np.zeros((3, 3), np.int32)
    moves = np.empty(MAX_MOVES, np.int32)
    keys = S.keys                # the game's keys come first, as the search expects its history
    tap, tap_boards, tap_rows = S.tap, S.tap_boards, S.tap_rows
    ply = 0
    keys[0] = np.uint64(st[ST_KEY])
    n = 0
    nodes = 0
    white_result = DRAW
    reason = MAX_PLIES
    first_random = rng_below(rng, 2) if random_plies > 0 else 0
    while True:
        side = st[ST_SIDE]
        count = generate_legal(T, bb, board, st, moves)
        in_check = checkers(T, bb, st) != U0
        if count == 0:
            reason = CHECKMATE if in_check else STALEMATE
            if in_check:
                white_result = BLACK_WINS if side == 0 else WHITE_WINS
            break
        if st[ST_RULE50] >= 100:
            reason = FIFTY_MOVES
            break
        if insufficient_material(bb):
            reason = MATERIAL
            break
        if threefold(keys, ply, st[ST_RULE50]):
            reason = REPETITION
            break
        if ply >= max_plies:
            reason = MAX_PLIES
            break
        if first_random <= ply < first_random + random_plies:
            m = moves[rng_below(rng, count)]
        else:
            bbs[0][:] = bb
            boards[0][:] = board
            sts[0][:] = st
            if sampled:
                tap[TAP_COUNT] = 0
            m, score = search_position(T, S, ply, max_depth, soft_nodes, hard_nodes)
            nodes += S.ctl[0].nodes
            if sampled:
                for i in range(tap[TAP_COUNT]):
                    if n >= out.shape[0]:
                        break
                    if seen_before(seen, seen_count, tap_rows[i, C_KEY]):
                        continue
                    pack_record(tap_boards[i], tap_rows[i, C_SIDE], tap_rows[i, C_CASTLE], tap_rows[i, C_EP],
                                tap_rows[i, C_RULE50], tap_rows[i, C_FULLMOVE], tap_rows[i, C_RAW], 0, out[n])
                    n += 1
            elif m != 0 and not in_check and is_quiet(board, m) and abs(score) < MATE_IN_MAX:
                pack_record(board, side, st[ST_CASTLE], st[ST_EP], st[ST_RULE50], st[ST_FULLMOVE],
                            centipawns(score), 0, out[n])
                n += 1
            if m == 0:
                m = moves[0]
        make_move(T, bb, board, st, bbs[1], boards[1], sts[1], m, dirty)
        bb[:] = bbs[1]
        board[:] = boards[1]
        st[:] = sts[1]
        ply += 1
        keys[ply] = np.uint64(st[ST_KEY])
    label = RAW_LABEL if sampled else 0
    for i in range(n):
        out[i, RESULT_AT] = label | (white_result if out[i, STM_AT] == 0 else 2 - white_result)
    return n, white_result, reason, ply, nodes


@njit(cache=True, nogil=True)
def play_game(T, S, bb0, board0, st0, rng, random_plies, max_depth, soft_nodes, hard_nodes, max_plies, out):
    """Play one game from (bb0, board0, st0); pack its kept positions into ``out`` (uint8[k, 32], k >
    ``max_plies``) with the game's result. Returns (records, White's result, reason, plies, nodes)."""
    return _play(T, S, bb0, board0, st0, rng, random_plies, max_depth, soft_nodes, hard_nodes, max_plies, out,
                 False, np.zeros(0, np.uint64), np.zeros(1, np.int64))


# ---------------------------------------------------------------------------------------------------------
# Sampled games: the positions the search evaluates, labelled with the net's raw output

SAMPLE_RECORDS = 1 << 20        # records one game may keep (32 MB); later samples of a longer game are dropped
TAP_CAPACITY = 1 << 16          # positions one move's search may keep


@njit(cache=True, nogil=True)
def seen_before(keys, count, key):
    """Inserts ``key`` into the open-addressing set ``keys`` (uint64[2^k], 0 empty; ``count`` int64[1]); True
    when it was there. The set starts afresh when half full, so duplicates are dropped within a window of
    2^(k-1) positions (deterministically: it depends on the positions' order alone)."""
    k = np.uint64(key) | np.uint64(1)            # 0 marks an empty slot
    mask = np.uint64(keys.shape[0] - 1)
    if count[0] * 2 >= keys.shape[0]:
        keys[:] = 0
        count[0] = 0
    i = (k * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40) & mask
    while keys[i] != 0:
        if keys[i] == k:
            return True
        i = (i + np.uint64(1)) & mask
    keys[i] = k
    count[0] += 1
    return False


@njit(cache=True, nogil=True)
def play_sampled_game(T, S, bb0, board0, st0, rng, random_plies, max_depth, soft_nodes, hard_nodes, max_plies,
                      out, seen, seen_count):
    """``play_game``, keeping instead the positions the net evaluated during each move's search (the search
    state's evaluation tap, ``quantfish.nnue.evaluator``), each once (``seen_before``), labelled with the net's
    raw output and the game's result (records marked ``RAW_LABEL``). Returns (records, White's result, reason,
    plies, nodes)."""
    return _play(T, S, bb0, board0, st0, rng, random_plies, max_depth, soft_nodes, hard_nodes, max_plies, out,
                 True, seen, seen_count)
