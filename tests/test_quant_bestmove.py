"""One-ply best-move agreement (``quantfish.quant.bestmove``): the children are python-chess's legal moves, the
choice is the mover's best value, and the report and the command carry the measure."""

import json

import chess
import numpy as np
import pytest
from click.testing import CliRunner

from quantfish.quant import bestmove
from quantfish.quant.bestmove import Children
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.positions import from_boards, parse_lines
from tests.testdata import NNUE_DATA, require
from quantfish.cli.main import main

EPD = NNUE_DATA.parent / "eval" / "tcec_league_positions_labeled.epd"

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",    # castling both ways
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",          # en passant
    "8/P6k/8/8/8/8/6Kp/8 w - - 0 1",                                            # promotions
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",                                           # stalemate: no choice
    "R6k/6pp/8/8/8/8/8/6K1 b - - 0 1",                                          # checkmate: no choice
    "k7/8/8/8/8/8/5r2/7K w - - 0 1",                                            # Kg1 only: no choice
]


def _children_by_python_chess(fen):
    board = chess.Board(fen)
    out = []
    for move in board.legal_moves:
        board.push(move)
        out.append(board.fen())
        board.pop()
    return out


def test_children_are_the_legal_moves_with_their_features():
    parents = parse_lines(FENS)
    kids = bestmove.children(parents)
    expected = [_children_by_python_chess(f) for f in FENS]
    kept = [i for i, e in enumerate(expected) if len(e) >= 2]
    assert kids.parents.tolist() == kept == [0, 1, 2, 3]
    assert np.diff(np.append(kids.starts, len(kids.positions))).tolist() == [len(expected[i]) for i in kept]
    assert [len(expected[i]) for i in kept] == [20, 48, 31, 11]     # known counts: ep capture; 4 promotions
    again = parse_lines([fen for i in kept for fen in expected[i]])  # the engine's features of python-chess's FENs
    for field in ("white", "black", "stm", "bucket"):
        assert np.array_equal(getattr(kids.positions, field), getattr(again, field)), field


def test_castling_and_en_passant_fields_are_kept():
    pos = parse_lines(["rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 hmvc 0;",
                       "4k3/8/8/8/8/8/8/4K3 b"])
    assert pos.fens == ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6", "4k3/8/8/8/8/8/8/4K3 b - -")


def _kids(sizes):
    starts = np.cumsum([0] + list(sizes[:-1])).astype(np.int64)
    n = sum(sizes)
    kings = np.array([6] + [0] * 62 + [14], np.int8)
    return Children(from_boards([kings] * n, [1] * n), starts, np.arange(len(sizes), dtype=np.int64))


def test_agreement_negates_children_breaks_ties_by_move_order_and_prices_disagreement():
    kids = _kids([3, 2, 2])
    # child values from the child's side to move: the mover prefers the most negative
    float_child = np.array([5.0, -2.0, 1.0, 4.0, 4.0, 0.0, -7.0])
    int_child = np.array([0, 10, -3, 7, 1, 3, 3])
    # parent 0: float best is child 1 (mover +2); integer best is child 2 (mover +3), worth -1 to the float net
    # parent 1: float tie (-4, -4); integer picks child 4: agrees
    # parent 2: integer tie (3, 3) -> first in move order (child 5), worth 0 against the float best 7
    assert bestmove.picks(kids, -int_child).tolist() == [2, 4, 5]
    bm = bestmove.agreement(kids, float_child, int_child, cp_per_unit=1.0)
    assert bm.positions == 3
    assert bm.agreement == pytest.approx(1 / 3)
    assert bm.cp_loss == pytest.approx((3.0 + 0.0 + 7.0) / 3)
    same = bestmove.agreement(kids, float_child, np.rint(float_child * 10).astype(np.int64), 1.0)
    assert same.agreement == 1.0 and same.cp_loss == 0.0


def test_the_float_net_takes_a_hanging_queen(nnue_net):
    fnet = FloatNet.from_net(nnue_net)
    fen = "rnb1kbnr/pppp1ppp/8/8/4P3/3q4/PPP2PPP/RNBQKBNR w KQkq - 0 1"       # Qd3 hangs: Bxd3 or Qxd3
    parents = parse_lines([fen])
    kids = bestmove.children(parents)
    values = -fnet.forward(kids.positions).out
    pick = int(bestmove.picks(kids, values)[0])
    board = chess.Board(fen)
    move = list(board.legal_moves)[pick]
    assert board.is_capture(move) and move.to_square == chess.D3, board.san(move)


def test_quant_report_carries_best_move(nnue_net, tmp_path):
    path = tmp_path / "p.epd"
    path.write_text("\n".join(require(EPD).read_text().splitlines()[:80]) + "\n")
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(path), "--rounding", "both",
                                    "--best-move", "12", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for r in out["results"]:
        bm = r["best_move"]
        assert bm["positions"] == 12 and 0.5 <= bm["agreement"] <= 1.0 and bm["cp_loss"] >= 0.0
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(path), "--best-move", "0"])
    assert res.exit_code == 0 and "best move" not in res.output
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(path), "--best-move", "5"])
    assert res.exit_code == 0 and "best move" in res.output and "on 5 positions" in res.output
