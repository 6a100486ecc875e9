"""The search's learnt statistics (continuation and capture histories) and its singular-extension exclusion."""
import numpy as np

from quantfish.core.fen import parse_fen
from quantfish.core.notation import move_to_uci
from quantfish.core.position import ST_KEY
from quantfish.search.tree import search_root
from quantfish.search.tt import tt_probe
from quantfish.search.values import INF
from quantfish.search.driver import Limits
from quantfish.search.state import TTE_SIZE

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8"
# White mates at once with Qh7 (the queen on h5, the bishop on d3 guarding h7).
MATE_IN_ONE = "r1b2rk1/ppq2ppp/2n1p3/3pP2Q/3P4/3B1N2/PP3PPP/R1B2RK1 w - - 0 14"


def test_histories_learn_within_bounds_and_clear(searcher):
    searcher.clear()
    searcher.think(parse_fen(MIDDLEGAME), [], Limits(depth=10))
    S = searcher.S
    for name, limit in (("history", 7183), ("cont_history", 29952), ("capture_history", 10692)):
        table = getattr(S, name)
        assert np.count_nonzero(table), f"{name} learnt nothing"
        assert np.abs(table.astype(np.int32)).max() <= limit, f"{name} left its gravity bound {limit}"
    # Row 0 stands for "no earlier move" (the root's ancestors, a null move): read, never written.
    assert not np.count_nonzero(S.cont_history[0])
    searcher.clear()
    for name in ("history", "cont_history", "capture_history"):
        assert not np.count_nonzero(getattr(S, name)), f"clear() left {name}"


def test_excluded_move_is_never_searched_nor_stored(searcher):
    """A singular-extension search leaves out one move: the best move must come from the others, and the
    node's result (which is not the position's) must not enter the table."""
    board = parse_fen(MATE_IN_ONE)
    searcher.clear()
    best, _, lines = searcher.think(board, [], Limits(depth=4))
    assert move_to_uci(best) == "h5h7" and lines[0].score > 30000
    searcher.clear()
    searcher._setup(board, [])
    S = searcher.S
    S.excluded[0] = best
    search_root(searcher.T, S, 4, -INF, INF)
    S.excluded[0] = 0
    assert S.pv_len[0] >= 1 and S.pv[0, 0] != best and S.pv[0, 0] in searcher.legal_root_moves(board)
    out = np.zeros(TTE_SIZE, np.int64)
    key = np.int64(board.st[ST_KEY])
    assert not tt_probe(S.tt, key, out), "an excluded search stored the root position"
