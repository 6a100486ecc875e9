"""The search's static evaluation (lazy accumulators, refresh cache, material from bitboards) equals a
from-scratch evaluation of the same position: one net of each generation and a 17.1 pair, on both paths."""
import random
from collections import Counter

import pytest

from engine.fen import parse_fen
from engine.position import ST_RULE50, ST_SIDE
from engine.search import _do_move, static_eval
from engine.searcher import Searcher
from nnue.evaluate import eval_report, eval_report_pair, finish
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
    """A 17.1 net alone: its own formula (nnue.evaluate.finish on the mailbox) on the right bucket."""
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
