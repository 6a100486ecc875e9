"""The search's static evaluation (lazy accumulators, refresh cache, material from bitboards) equals a
from-scratch evaluation of the same position: one net of each generation and a 17.1 pair, on both paths."""
import random
from collections import Counter

import pytest

from quantfish.core.fen import STARTING_FEN, parse_fen
from quantfish.core.notation import move_to_uci
from quantfish.core.position import ST_RULE50, ST_SIDE
from quantfish.nnue.evaluator import evaluate as static_eval
from quantfish.search.tree import _do_move
from quantfish.search.driver import Searcher
from quantfish.nnue.formulas import eval_report, eval_report_pair, finish
from tests.test_engine_pair import STARTS, _kernel_modes, _legal, pair_searchers  # noqa: F401 (fixture)


def _walk_and_compare(searcher, reference, seed, games=16, steps=60):
    """Random walks through the search's own make-move code (``_do_move``), with backtracking as the search
    does (a sibling overwrites ply p + 1), evaluating lazily at some plies only: every ``static_eval`` must
    equal ``reference(board, side, rule50, optimism)`` computed from scratch."""
    rng = random.Random(seed)
    compared = 0
    for game in range(games):
        searcher._setup(parse_fen(STARTS[game % len(STARTS)]), [])
        ply = 0
        for step in range(steps):
            if ply >= 40 or (ply > 0 and rng.random() < 0.2):
                ply = rng.randrange(0, ply)
            moves = _legal(searcher, ply)
            if not moves:
                if ply == 0:
                    break
                ply -= 1
                continue
            if rng.random() < 0.6 or step == 0:
                optimism = rng.choice((0, 0, 57, -100))
                st = searcher.S.sts[ply]
                side, rule50 = int(st[ST_SIDE]), int(st[ST_RULE50])
                got = int(static_eval(searcher.S, ply, searcher.S.bbs[ply], searcher.S.boards[ply], st, optimism))
                assert got == reference(searcher.S.boards[ply], side, rule50, optimism), (game, step, ply)
                compared += 1
            _do_move(searcher.T, searcher.S, ply, rng.choice(moves))
            ply += 1
    assert compared > 300


@pytest.mark.parametrize("mode", _kernel_modes())
def test_static_eval_15_1_equals_from_scratch(nnue_net, mode):
    arrays = nnue_net.arrays()

    def reference(board, side, rule50, optimism):
        return eval_report(arrays, board, side, rule50, optimism).final

    _walk_and_compare(Searcher(nnue_net, 1, mode), reference, 11)


@pytest.mark.parametrize("mode", _kernel_modes())
def test_static_eval_single_17_1_net_equals_from_scratch(nnue17_pair, mode):
    """A 17.1 net alone: its own formula (quantfish.nnue.formulas.finish on the mailbox) on the right bucket."""
    arrays = nnue17_pair.big.arrays()

    def reference(board, side, rule50, optimism):
        r = eval_report(arrays, board, side, rule50, optimism)
        return int(finish(arrays, r.psqt[r.bucket], r.positional[r.bucket], board, side, rule50, optimism))

    _walk_and_compare(Searcher(nnue17_pair.big, 1, mode), reference, 12)


@pytest.mark.parametrize("mode", _kernel_modes())
def test_static_eval_17_1_pair_equals_from_scratch(nnue17_pair, pair_searchers, mode):
    """A pair: ``eval_report_pair(...).final``, with both nets used and some small-net results re-evaluated."""
    big, small = nnue17_pair.big.arrays(), nnue17_pair.small.arrays()
    used = Counter()

    def reference(board, side, rule50, optimism):
        ref = eval_report_pair(big, small, board, side, rule50, optimism)
        used[ref.used_net + ("/reeval" if ref.reeval_big else "")] += 1
        return ref.final

    _walk_and_compare(pair_searchers[mode], reference, 2024, games=24, steps=70)
    assert used["big"] > 20 and used["small"] > 20, used


@pytest.mark.parametrize("mode", _kernel_modes())
def test_a_position_met_again_takes_the_nets_outputs_from_the_evaluation_cache(nnue_net, mode):
    """Reached again by another move order, a position is not run through the net a second time: its
    accumulators at that ply stay uncomputed, and its evaluation still equals the from-scratch one. Clearing
    (ucinewgame) empties the cache."""
    arrays = nnue_net.arrays()
    searcher = Searcher(nnue_net, 1, mode)
    searcher.clear()
    S = searcher.S
    computed = S.nn.computed

    def play(ucis):
        searcher._setup(parse_fen(STARTING_FEN), [])
        for ply, uci in enumerate(ucis):
            move = next(m for m in _legal(searcher, ply) if move_to_uci(m) == uci)
            _do_move(searcher.T, S, ply, move)
        return len(ucis)

    def evaluate(ply):
        st = S.sts[ply]
        return int(static_eval(S, ply, S.bbs[ply], S.boards[ply], st, 0))

    ply = play(["g1f3", "g8f6", "b1c3"])
    first = evaluate(ply)
    assert computed[ply].all(), "the first evaluation did not run the net"
    expected = eval_report(arrays, S.boards[ply], int(S.sts[ply][ST_SIDE]), int(S.sts[ply][ST_RULE50]), 0).final
    assert first == expected

    ply = play(["b1c3", "g8f6", "g1f3"])
    assert evaluate(ply) == expected
    assert not computed[ply].any(), "the position met again was evaluated by the net"

    searcher.clear()
    assert evaluate(ply) == expected
    assert computed[ply].all(), "clear() left the evaluation cache"


# Stockfish 15.1's optimism, 118 s / (|s| + 169) truncated toward zero, worked out by hand for root scores s.
OPTIMISM = [(0, 0), (300, 75), (-300, -75), (50, 26), (-1, 0), (-2, -1), (30000, 117)]


@pytest.mark.parametrize("score, expected", OPTIMISM)
@pytest.mark.parametrize("fen", [STARTING_FEN, "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"])
def test_optimism_is_set_for_the_root_side_from_its_score(nnue_net, score, expected, fen):
    searcher = Searcher(nnue_net, 1)
    board = parse_fen(fen)
    searcher._setup(board, [])
    assert searcher.ctl["optimism_w"][0] == 0 and searcher.ctl["optimism_b"][0] == 0
    searcher._set_optimism(score)
    us, them = ("optimism_w", "optimism_b") if board.side == 0 else ("optimism_b", "optimism_w")
    assert searcher.ctl[us][0] == expected and searcher.ctl[them][0] == -expected
