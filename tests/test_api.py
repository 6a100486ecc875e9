"""The Python API (``from quantfish import Engine, perft``): perft against the shared suites, evaluate against
``quantfish eval``, analyse/play on positions with known answers, the move stack's repetitions, errors."""

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import chess
import chess.engine
import pytest
from click.testing import CliRunner

from tests.testdata import NNUE_DATA, PERFT_DATA, require

REPO = Path(__file__).resolve().parent.parent
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"          # Ra8#


def _suite(name, n, max_count=200_000):
    """(fen, depth, count) of the first ``n`` lines of a shared perft suite, counts up to ``max_count``."""
    out = []
    with open(require(PERFT_DATA / name)) as fh:
        for line in list(fh)[:n]:
            fen, *depths = line.strip().split(";")
            for field in depths:
                d, count = field.split()
                if int(count) <= max_count:
                    out.append((fen.strip(), int(d[1:]), int(count)))
    return out


def _reference_fens(n):
    with open(require(NNUE_DATA / "sf15.1_reference.tsv")) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return [r["fen"] for r in rows[::len(rows) // n][:n]]


@pytest.fixture(scope="module")
def quantfish(nnue_net):
    from quantfish import Engine
    with Engine() as e:       # the default net: $QUANTFISH_NET, else nets/ (nnue_net fails with a hint if absent)
        yield e


def _legal_line(board, moves):
    walk = board.copy()
    for move in moves:
        assert move in walk.legal_moves, f"{move} illegal in {walk.fen()}"
        walk.push(move)


def _printed_final_cp(output, fen):
    """The "Final evaluation" of ``quantfish eval``'s human output, in centipawns from the side to move."""
    pawns = float(re.search(r"Final evaluation\s+([+-]?\d+\.\d\d) \(white side\)", output).group(1))
    return round(pawns * 100) * (1 if fen.split()[1] == "w" else -1)


# -- imports -----------------------------------------------------------------------------------------------

def test_import_is_lazy_and_perft_is_the_function():
    code = ("import sys, quantfish\n"
            "assert not {'quantfish.api.engine', 'numba', 'chess'} & set(sys.modules), sorted(sys.modules)\n"
            "from quantfish.core.perft import perft_divide\n"       # the compiled perft module first: the name is still the API function
            "from quantfish import Engine, perft\n"
            "assert 'quantfish.api.engine' in sys.modules and perft.__module__ == 'quantfish.api.engine', perft\n"
            "assert quantfish.perft is perft and Engine.__module__ == 'quantfish.api.engine'\n"
            "print(perft(None, 2))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "400"


# -- perft -------------------------------------------------------------------------------------------------

def test_perft_matches_shared_suites():
    from quantfish import perft
    cases = _suite("perftsuite_standard_128.epd", 8) + _suite("cpw_perft_positions.epd", 6)
    assert len(cases) > 30
    for fen, depth, count in cases:
        assert perft(fen, depth) == count, (fen, depth)


def test_perft_of_boards_and_defaults():
    from quantfish import perft
    fen, depth, count = _suite("chess960_fischer_960.epd", 1)[2]
    assert perft(chess.Board(fen, chess960=True), depth) == count
    board = chess.Board()
    board.push_uci("e2e4")
    assert perft(board, 2) == perft(board.fen(), 2) == 600
    assert perft() == 20 and perft(depth=3) == 8902 and perft(depth=0) == 1


def test_perft_bad_fen_has_the_parsers_message():
    from quantfish import perft
    from quantfish.core.fen import parse_fen
    for bad in ("xx w - - 0 1", "8/8/8/8/8/8/8/K7 w - - 0 1", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq"):
        with pytest.raises(ValueError) as expected:
            parse_fen(bad)
        with pytest.raises(ValueError) as got:
            perft(bad, 1)
        assert str(got.value) == str(expected.value) != ""
    with pytest.raises(ValueError, match="depth"):
        perft(None, -1)


# -- static evaluation -------------------------------------------------------------------------------------

def test_evaluate_is_what_the_eval_command_prints(quantfish):
    from quantfish.cli.eval import eval_command
    runner = CliRunner()
    fens = _reference_fens(8) + ["8/8/8/8/8/8/8/K6k w - - 0 1", "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 2 3"]
    assert {f.split()[1] for f in fens} == {"w", "b"}
    for fen in fens:
        human = runner.invoke(eval_command, [fen])
        raw = runner.invoke(eval_command, [fen, "--json"])
        assert human.exit_code == 0 and raw.exit_code == 0, human.output + raw.output
        assert quantfish.evaluate(fen) == _printed_final_cp(human.output, fen), fen
        report, expected = quantfish.eval_report(fen), json.loads(raw.output)
        integers = [k for k in expected if k not in ("fen", "quantisation")]
        assert {k: getattr(report, k) for k in integers} == {k: expected[k] for k in integers}
        assert expected["quantisation"] == {"format": "stockfish", "scheme": "sf", "rounding": "floor",
                                            "resolution": 127}


def test_evaluate_board_equals_its_fen(quantfish):
    board = chess.Board()
    for uci in ("e2e4", "c7c5", "g1f3", "d7d6", "d2d4"):
        board.push_uci(uci)
        assert quantfish.evaluate(board) == quantfish.evaluate(board.fen())
        assert quantfish.eval_report(board) == quantfish.eval_report(board.fen())
    assert quantfish.evaluate(board, optimism=100) != quantfish.evaluate(board)


def test_evaluate_with_a_stockfish17_pair(nnue17_dir):
    from quantfish import Engine
    from quantfish.nnue.formulas import PairReport
    from quantfish.cli.eval import eval_command
    big, small = str(nnue17_dir / "synthetic_big.nnue"), str(nnue17_dir / "synthetic_small.nnue")
    runner = CliRunner()
    with Engine(big, small) as pair:
        assert "two-net" in pair.description
        for fen in _reference_fens(4):
            human = runner.invoke(eval_command, [fen, "--net", big, "--net-small", small])
            raw = runner.invoke(eval_command, [fen, "--net", big, "--net-small", small, "--json"])
            assert human.exit_code == 0 and raw.exit_code == 0, human.output + raw.output
            assert pair.evaluate(fen) == _printed_final_cp(human.output, fen), fen
            report = pair.eval_report(chess.Board(fen))
            assert isinstance(report, PairReport) and report.final == json.loads(raw.output)["final"]


# -- search ------------------------------------------------------------------------------------------------

def test_mate_in_one_for_either_side(quantfish):
    white = chess.Board(MATE_IN_ONE)
    assert quantfish.play(white, chess.engine.Limit(depth=4)) == chess.Move.from_uci("a1a8")
    info = quantfish.analyse(white, chess.engine.Limit(depth=4))
    assert info["score"].relative == chess.engine.Mate(1) and info["score"].white() == chess.engine.Mate(1)
    assert info["pv"][0] == chess.Move.from_uci("a1a8")
    black = white.mirror()
    info = quantfish.analyse(black, chess.engine.Limit(depth=4))
    assert info["score"].turn == chess.BLACK and info["score"].relative == chess.engine.Mate(1)
    assert info["score"].white() == chess.engine.Mate(-1)
    assert quantfish.play(black, chess.engine.Limit(mate=1, depth=10)) == chess.Move.from_uci("a8a1")


def test_analyse_pv_depth_nodes_and_multipv(quantfish):
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    before = (board.fen(), list(board.move_stack))
    info = quantfish.analyse(board, chess.engine.Limit(depth=6))
    assert info["depth"] == 6 and info["seldepth"] >= 1 and info["nodes"] > 0 and info["time"] >= 0
    assert isinstance(info["score"], chess.engine.PovScore) and len(info["pv"]) >= 1
    _legal_line(board, info["pv"])
    info = quantfish.analyse(board, chess.engine.Limit(nodes=2000))
    assert 0 < info["nodes"] <= 2000 + 1024       # the search looks at the node count every 1024 nodes
    _legal_line(board, info["pv"])
    lines = quantfish.analyse(board, chess.engine.Limit(depth=5), multipv=3)
    assert [line["multipv"] for line in lines] == [1, 2, 3]
    assert len({line["pv"][0] for line in lines}) == 3
    scores = [line["score"].white().score() for line in lines]
    assert scores == sorted(scores, reverse=True)
    for line in lines:
        _legal_line(board, line["pv"])
    assert quantfish.play(board, chess.engine.Limit(time=0.05)) in board.legal_moves
    assert quantfish.play(board, chess.engine.Limit(white_clock=2, black_clock=2)) in board.legal_moves
    assert (board.fen(), list(board.move_stack)) == before


def test_repetition_through_the_move_stack(quantfish):
    """White, a king against king and two rooks, can only save the game by repeating a position for the third
    time (Kb2-a1): seen with the game's moves, not from the FEN alone."""
    board = chess.Board("7k/4rr2/8/8/8/8/K7/8 w - - 0 1")
    for uci in "a2a1 h8g8 a1b1 g8h8 b1a1 h8g8 a1b2 g8h8".split():
        board.push_uci(uci)
    assert board.can_claim_threefold_repetition() and not board.is_repetition(2)
    stack = list(board.move_stack)
    limit = chess.engine.Limit(depth=8)
    quantfish.clear()
    info = quantfish.analyse(board, limit)
    assert info["score"].relative == chess.engine.Cp(0)
    assert info["pv"][0] == chess.Move.from_uci("b2a1")
    assert quantfish.play(board, limit) == chess.Move.from_uci("b2a1")
    assert board.move_stack == stack
    quantfish.clear()
    alone = quantfish.analyse(chess.Board(board.fen()), limit)
    assert alone["score"].relative < chess.engine.Cp(-300)


def test_game_over_positions(quantfish):
    mated = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
    info = quantfish.analyse(mated, chess.engine.Limit(depth=3))
    assert info["score"].relative == chess.engine.Mate(0) and info["pv"] == []
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert quantfish.analyse(stalemate, chess.engine.Limit(depth=3))["score"].relative == chess.engine.Cp(0)
    with pytest.raises(ValueError, match="checkmate"):
        quantfish.play(mated, chess.engine.Limit(depth=3))


# -- errors ------------------------------------------------------------------------------------------------

def test_bad_limits_and_positions(quantfish):
    board = chess.Board()
    with pytest.raises(ValueError, match="bounds nothing"):
        quantfish.analyse(board, chess.engine.Limit())
    with pytest.raises(ValueError, match="bounds nothing"):
        quantfish.analyse(board, chess.engine.Limit(black_clock=10))     # White to move, no clock of its own
    with pytest.raises(ValueError, match="depth"):
        quantfish.analyse(board, chess.engine.Limit(depth=0))
    with pytest.raises(TypeError):
        quantfish.analyse(board, 5)
    with pytest.raises(ValueError, match="fields"):
        quantfish.evaluate("not a fen")
    with pytest.raises(ValueError, match="2 white kings"):
        quantfish.evaluate("8/8/8/8/8/8/8/KK5k w - - 0 1")


def test_missing_and_unpaired_nets(tmp_path, monkeypatch, nnue17_dir):
    from quantfish import Engine
    from quantfish.nnue.net import NetFileError
    from quantfish.nnue.loader import NetPairError
    missing = tmp_path / "none.nnue"
    with pytest.raises(NetFileError, match=f"net file not found: {re.escape(str(missing))}"):
        Engine(missing)
    monkeypatch.setenv("QUANTFISH_NET_SMALL", str(tmp_path / "absent.nnue"))
    lonely = tmp_path / "big.nnue"
    os.symlink(nnue17_dir / "synthetic_big.nnue", lonely)
    with pytest.raises(NetPairError, match="needs the small net of its pair"):
        Engine(lonely)


def test_closed_engine_refuses(nnue_net):
    from quantfish import Engine
    e = Engine(nnue_net.path, hash_mb=1)
    e.close()
    with pytest.raises(RuntimeError, match="closed"):
        e.evaluate(chess.STARTING_FEN)


def test_a_deadline_before_the_search_sets_up_is_kept(quantfish, monkeypatch):
    """The clock starts before the search sets up: a deadline that passed in between (a short time limit on a
    loaded machine) once stopped nothing, and the search ran to its depth limit. The deadline is absolute (from
    when the clock was made) and the search checks it itself, so a late set-up still stops at once."""
    import threading
    import time
    searcher = quantfish._live()
    real = searcher.think

    def slow_think(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)
    monkeypatch.setattr(searcher, "think", slow_think)
    result = []
    limit = chess.engine.Limit(time=0.05)
    player = threading.Thread(target=lambda: result.append(quantfish.play(chess.Board(), limit)), daemon=True)
    player.start()
    player.join(timeout=5)
    try:
        assert not player.is_alive(), "the search did not stop at its deadline"
        assert result[0] in chess.Board().legal_moves
    finally:
        while player.is_alive():                 # without the fix: end the search that did not stop
            searcher.stop()
            player.join(0.05)
