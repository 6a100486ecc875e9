"""The search with Syzygy tables at the root: the best outcome in every shared 3-4 man position, and won
endings converted against itself within the 50-move rule (engine.searcher with engine.tablebase)."""
import chess
import chess.syzygy
import pytest

from engine.fen import parse_fen
from engine.notation import move_to_uci
from engine.searcher import TB_WIN, Limits, Searcher, score_to_uci
from engine.tablebase import Tablebases
from tests.shared import require
from tests.test_tablebase import KBNK, KRK, TABLES, _epd_positions


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


@pytest.mark.parametrize("fen", list(_epd_positions()))
def test_search_plays_a_move_of_the_best_outcome(searcher, oracle, fen):
    board = chess.Board(fen)
    infos = []
    best, _, _ = searcher.think(parse_fen(fen), [], Limits(depth=2), on_info=lambda **k: infos.append(k))
    move = chess.Move.from_uci(move_to_uci(best, False))
    assert move in board.legal_moves
    # The best outcome over all moves, the 50-move rule counted from a fresh clock as the tables do.
    want = max(_outcome_after(oracle, board, m) for m in board.legal_moves)
    assert _outcome_after(oracle, board, move) == want
    assert infos[-1]["tbhits"] == board.legal_moves.count()
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


def test_positions_outside_the_tables_search_as_before(searcher, nnue_net):
    fen = "8/5p2/8/4k3/8/2KQ4/3P4/8 w - - 0 1"      # five men: the tables hold up to four
    searcher.clear()
    best, _, _ = searcher.think(parse_fen(fen), [], Limits(depth=4))
    assert searcher.tb_hits == 0
    plain = Searcher(nnue_net, 8)
    assert plain.think(parse_fen(fen), [], Limits(depth=4))[0] == best
