"""The search with Syzygy tables: the best outcome in every shared 3-4 man position, won endings converted
against itself within the 50-move rule, and the tables probed inside the search after a capture
(quantfish.search.driver with quantfish.tablebase.root and quantfish.tablebase.probe)."""
import chess
import chess.syzygy
import pytest

from quantfish.core.fen import parse_fen
from quantfish.core.notation import move_to_uci
from quantfish.search.driver import TB_WIN, Limits, Searcher, score_to_uci
from quantfish.tablebase.root import Tablebases
from tests.testdata import KBNK, KRK, SYZYGY34 as TABLES, endgame_positions, require


@pytest.fixture(scope="module")
def searcher(nnue_net):
    s = Searcher(nnue_net, 8)
    s.set_tablebases(Tablebases(str(require(TABLES))))
    return s


@pytest.fixture(scope="module")
def oracle():
    with chess.syzygy.open_tablebase(str(require(TABLES))) as tb:
        yield tb


def _outcome_after(oracle, board, move):
    """The mover's outcome after ``move`` by python-chess: 2 win ... -2 loss (mate a win, stalemate a draw)."""
    board = board.copy()
    board.push(move)
    if board.is_checkmate():
        return 2
    if board.is_stalemate():
        return 0
    return -oracle.probe_wdl(board)


@pytest.mark.parametrize("fen", list(endgame_positions()))
def test_search_plays_a_move_of_the_best_outcome(searcher, oracle, fen):
    board = chess.Board(fen)
    infos = []
    best, _, _ = searcher.think(parse_fen(fen), [], Limits(depth=2), on_info=lambda **k: infos.append(k))
    move = chess.Move.from_uci(move_to_uci(best, False))
    assert move in board.legal_moves
    # The best outcome over all moves, the 50-move rule counted from a fresh clock as the tables do.
    want = max(_outcome_after(oracle, board, m) for m in board.legal_moves)
    assert _outcome_after(oracle, board, move) == want
    assert infos[-1]["tbhits"] >= board.legal_moves.count()      # the root's ranking, then the search's probes
    score = infos[-1]["score"]
    if want == 2:
        assert score >= TB_WIN - 200 or score_to_uci(score).startswith("mate ")
    elif want == 0:
        assert score == 0


@pytest.mark.parametrize("fen", [KBNK, KRK])
def test_won_ending_is_converted_against_itself(searcher, fen):
    board = chess.Board(fen)
    while not board.is_game_over(claim_draw=True):
        best, _, _ = searcher.think(parse_fen(board.fen()), [], Limits(nodes=3000))
        board.push(chess.Move.from_uci(move_to_uci(best, False)))
        assert board.halfmove_clock < 100
    assert board.is_checkmate() and board.turn == chess.BLACK


# Five men, so the root is outside the 3-4 man tables, but Qxd1 leads into KQPvK, a won table position.
CAPTURE_INTO_TABLES = "8/8/8/4k3/8/2KQ4/P7/3r4 w - - 0 1"


def test_a_capture_into_the_tables_is_scored_by_them(searcher):
    searcher.set_tablebases(Tablebases(str(require(TABLES))))
    searcher.clear()
    infos = []
    best, _, _ = searcher.think(parse_fen(CAPTURE_INTO_TABLES), [], Limits(depth=6),
                                on_info=lambda **k: infos.append(k))
    assert move_to_uci(best, False) == "d3d1"
    assert infos[-1]["tbhits"] > 0 and searcher.tb_hits == infos[-1]["tbhits"]
    # A tablebase win one ply down: just below the mate scores, far above any evaluation.
    assert infos[-1]["score"] >= TB_WIN - 10 or score_to_uci(infos[-1]["score"]).startswith("mate ")


# Shallow enough that the search reaches no three-man position (a capture on each side) from CAPTURE_INTO_TABLES.
PROBE_GATE_DEPTH = 4


def test_probe_limit_and_depth_keep_the_tables_out(searcher, nnue_net):
    tables = Tablebases(str(require(TABLES)))
    # With every table allowed, this search does probe (so the zero counts below say something).
    searcher.set_tablebases(tables)
    searcher.clear()
    searcher.think(parse_fen(CAPTURE_INTO_TABLES), [], Limits(depth=PROBE_GATE_DEPTH))
    assert searcher.tb_hits > 0
    plain = Searcher(nnue_net, 8)
    want = plain.think(parse_fen(CAPTURE_INTO_TABLES), [], Limits(depth=PROBE_GATE_DEPTH))
    for limit, depth in ((0, 1), (3, 1), (4, 99)):
        # SyzygyProbeLimit 0 turns probing off; 3 keeps the 4-man tables out; and 4 pieces probed only from
        # depth 99 never are at this depth.
        searcher.set_tablebases(tables, probe_limit=limit, probe_depth=depth)
        searcher.clear()
        best, _, lines = searcher.think(parse_fen(CAPTURE_INTO_TABLES), [], Limits(depth=PROBE_GATE_DEPTH))
        assert searcher.tb_hits == 0
        assert (best, lines[0].score) == (want[0], want[2][0].score)
    searcher.set_tablebases(tables)


def test_threads_probe_the_tables_too(nnue_net):
    s = Searcher(nnue_net, 8)
    s.set_threads(2)
    s.set_tablebases(Tablebases(str(require(TABLES))))
    best, _, _ = s.think(parse_fen(CAPTURE_INTO_TABLES), [], Limits(nodes=400_000))
    assert move_to_uci(best, False) == "d3d1"
    assert s.pool.helpers[0].ctl["tb_pieces"][0] == 4 and s.pool.helpers[0].S.tb is s.S.tb
    assert int(s.pool.helpers[0].ctl["tb_hits"][0]) > 0
