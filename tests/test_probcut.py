"""ProbCut: at a non-PV node whose static evaluation is below beta (so neither reverse futility nor the null move
ends it), a capture that wins a queen beats beta by ProbCut's margin in a search four plies shallower; the node
fails high there and keeps that result in the table at three plies less than its depth, with the capture."""
import numpy as np

from quantfish.core.fen import parse_fen
from quantfish.core.notation import move_to_uci
from quantfish.core.position import ST_KEY
from quantfish.nnue.evaluator import evaluate as static_eval
from quantfish.search.driver import Searcher
from quantfish.search.state import TTE_SIZE
from quantfish.search.tree import PROBCUT_MARGIN, search_root
from quantfish.search.tt import BOUND_LOWER, tt_probe

# White's queen takes Black's, undefended, on d5.
HANGING_QUEEN = "4k3/8/8/3q4/8/8/3Q4/4K3 w - - 0 1"


def test_a_winning_capture_cuts_a_non_pv_node(nnue_net):
    searcher = Searcher(nnue_net, 16)
    board = parse_fen(HANGING_QUEEN)
    searcher.clear()
    searcher._setup(board, [])
    S = searcher.S
    beta = int(static_eval(S, 0, S.bbs[0], S.boards[0], S.sts[0], 0)) + 50
    score = int(search_root(searcher.T, S, 8, beta - 1, beta))
    assert score >= beta + PROBCUT_MARGIN - 54
    out = np.zeros(TTE_SIZE, np.int64)
    assert tt_probe(S.tt, np.int64(board.st[ST_KEY]), out)
    move, depth, bound = int(out[0]), int(out[3]), int(out[4]) & 3
    assert (move_to_uci(move), depth, bound) == ("d2d5", 5, BOUND_LOWER)
