"""Perft counts of every shared suite position, at every depth up to about two million nodes."""
import os
import re
import subprocess
import sys

import pytest

from quantfish.core.epd import read_perft_suite
from quantfish.core.fen import parse_fen
from quantfish.core.perft import perft
from quantfish.core.tables import tables
from tests.testdata import PERFT_DATA

DATA = str(PERFT_DATA)
SUITES = ["perftsuite_standard_128.epd", "perft_special_cases.epd", "chess960_fischer_960.epd",
          "cpw_perft_positions.epd"]
LIMIT = 2_000_000


def _suite_cases():
    for name in SUITES:
        for fen, expected in read_perft_suite(os.path.join(DATA, name)):
            checks = [(d, n) for d, n in expected if n <= LIMIT]
            if checks:
                yield pytest.param(fen, checks, id=f"{name}:{fen}")


def _tricky_cases():
    """python-chess's `id / epd / perft d n` blocks (X-FEN castling for Chess960)."""
    epd, checks = None, []
    with open(os.path.join(DATA, "python-chess_tricky.perft")) as fh:
        for line in list(fh) + ["id end"]:
            line = line.strip()
            if line.startswith("id ") and epd:
                yield pytest.param(epd, [c for c in checks if c[1] <= LIMIT], id=f"tricky:{epd}")
                epd, checks = None, []
            elif line.startswith("epd "):
                epd = line[4:]
            elif line.startswith("perft "):
                _, d, n = line.split()
                checks.append((int(d), int(n)))


@pytest.mark.parametrize("fen,checks", list(_suite_cases()) + list(_tricky_cases()))
def test_suite_position(fen, checks):
    board = parse_fen(fen, chess960=True)
    T = tables()
    got = [(d, int(perft(T, board.bb, board.board, board.st, d))) for d, _ in checks]
    assert got == checks


@pytest.mark.slow
@pytest.mark.parametrize("fen,depth,count", [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 6, 119060324),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 5, 193690690),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 7, 178633661),
])
def test_deep_counts(fen, depth, count):
    board = parse_fen(fen)
    assert perft(tables(), board.bb, board.board, board.st, depth) == count


def _run(*args):
    return subprocess.run([sys.executable, "-m", "quantfish.cli.main", *args], capture_output=True, text=True, timeout=600)


def test_cli_perft_divide_sums_to_total():
    r = _run("perft", "3", "--divide", "--fen", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    counts = [int(l.split(": ")[1]) for l in lines if ": " in l]
    assert len(counts) == 48 and sum(counts) == 97862 == int(lines[-1])
    assert "e1g1: " in r.stdout and "e1c1: " in r.stdout
    assert "nodes/second" in r.stderr


def test_cli_perft_chess960_castling_notation():
    r = _run("perft", "1", "--divide", "--chess960", "--fen",
             "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    assert "e1h1: 1" in r.stdout and "e1a1: 1" in r.stdout and "e1g1" not in r.stdout


def test_cli_epd_suite_reports_mismatch(tmp_path):
    suite = tmp_path / "s.epd"
    suite.write_text("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 ;D1 20 ;D2 400\n"
                     "4k3/8/8/8/8/8/8/4K2R w K - 0 1; D1 15; D2 67\n")
    r = _run("perft", "--epd", str(suite))
    assert r.returncode == 1
    assert "passed 3 of 4" in r.stdout
    assert re.search(r"mismatch: 4k3/8/8/8/8/8/8/4K2R w K - 0 1 depth 2: expected 67, got 66", r.stdout)


def test_cli_bad_fen_is_one_clear_line():
    r = _run("perft", "2", "--fen", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq")
    assert r.returncode != 0
    assert "Traceback" not in r.stderr + r.stdout
    assert "fields" in r.stderr
