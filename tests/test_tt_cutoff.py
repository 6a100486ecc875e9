"""The table cutoff as Stockfish 15.1 takes it at a non-PV node: an exact score of at least the node's depth, or
a bound from a strictly deeper search, ends the node at once; a bound from a search of the same depth does not.
The root is searched with a null window, so that it is a non-PV node."""
import numpy as np
import pytest

from quantfish.core.fen import parse_fen
from quantfish.core.position import ST_KEY
from quantfish.search.tree import search_root
from quantfish.search.tt import BOUND_EXACT, BOUND_LOWER, BOUND_UPPER, score_to_tt, tt_store

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8"


@pytest.mark.parametrize("bound, score, stored_depth, cut", [
    (BOUND_LOWER, 500, 6, False),      # a lower bound from the same depth: searched
    (BOUND_LOWER, 500, 7, True),       # from one ply deeper: cut
    (BOUND_UPPER, -500, 6, False),
    (BOUND_UPPER, -500, 7, True),
    (BOUND_EXACT, 500, 6, True),       # an exact score of the same depth: cut
    (BOUND_EXACT, 500, 5, False),
])
def test_cutoff_depths(searcher, bound, score, stored_depth, cut):
    board = parse_fen(MIDDLEGAME)
    searcher.clear()
    searcher._setup(board, [])
    S = searcher.S
    tt_store(S.tt, np.int64(board.st[ST_KEY]), 0, score_to_tt(score, 0), 0, stored_depth, bound, int(S.ctl[0]["tt_gen"]))
    result = int(search_root(searcher.T, S, 6, -1, 0))     # beta 0: 500 fails high, -500 low
    nodes = int(S.ctl[0]["nodes"])
    if cut:
        assert (result, nodes) == (score, 1)
    else:
        assert nodes > 1
