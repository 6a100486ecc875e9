"""tools/net_distance.py on played games: which positions it takes, and that it evaluates them as the engine does."""

import subprocess
import sys

import chess
import numpy as np
import pytest

from quantfish.api import Engine
from quantfish.data.text import format_lines
from quantfish.nnue.io import load_net
from quantfish.nnue.locate import OWN_NET_NAME, package_nets_dir
from quantfish.train.features import batch_features
from tools.net_distance import CP, game_positions, raw_cp

# Scholar's mate (the last position is mate: left out) and a knight shuffle back to a position already seen.
GAMES = """[Event "a"]
[Result "1-0"]

1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0

[Event "b"]
[Result "*"]

1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 *

[Event "c"]
[Result "*"]

1. e4 f5 2. Qh5+ g6 3. e5 d5 4. exd6 *
"""


def _expected(skip_plies):
    """The distinct quiet positions of GAMES' main lines after skip_plies plies, as EPD, worked out here move
    by move with python-chess."""
    games = [["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"], ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3"],
             ["e4", "f5", "Qh5+", "g6", "e5", "d5", "exd6"]]
    out = set()
    for moves in games:
        board = chess.Board()
        for ply, san in enumerate(moves, 1):
            board.push_san(san)
            if ply > skip_plies and not board.is_check() and not board.is_game_over():
                out.add(board.epd())
    return out


@pytest.fixture
def pgn(tmp_path):
    path = tmp_path / "games.pgn"
    path.write_text(GAMES)
    return path


def _epds(records):
    return {" ".join(line.split(" | ")[0].split()[:4]) for line in format_lines(records)}


@pytest.mark.parametrize("skip", [0, 2, 5])
def test_game_positions_are_the_quiet_distinct_ones(pgn, skip):
    records = game_positions([pgn], skip)
    epds = _epds(records)
    assert len(epds) == len(records)          # each position once
    assert epds == _expected(skip)


def test_game_positions_keep_side_castling_and_en_passant(pgn):
    epds = _epds(game_positions([pgn]))
    # after 1. e4 f5 2. Qh5+ g6 3. e5 d5, White may take en passant on d6
    assert "rnbqkbnr/ppp1p2p/6p1/3pPp1Q/8/8/PPPP1PPP/RNB1KBNR w KQkq d6" in epds
    assert "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq -" in epds
    assert "rnbqkbnr/ppppp1pp/8/5p1Q/4P3/8/PPPP1PPP/RNB1KBNR b KQkq -" not in epds     # in check: left out


def test_raw_output_matches_the_engine(pgn):
    """The tool's integer output on played positions is the engine's nnue_raw for the same FEN."""
    path = package_nets_dir() / OWN_NET_NAME
    records = game_positions([pgn])
    ours = raw_cp(load_net(path), batch_features(records))
    fens = [line.split(" | ")[0] for line in format_lines(records)]
    with Engine(path, hash_mb=1) as engine:
        expected = np.array([engine.eval_report(fen).nnue_raw for fen in fens]) * CP
    assert np.array_equal(ours, expected)
    assert np.any(expected != 0)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "tools.net_distance", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_pgn_needs_a_reference(pgn):
    r = _run(package_nets_dir() / OWN_NET_NAME, "--pgn", pgn)
    assert r.returncode == 2 and "--pgn needs --against" in r.stderr


def test_pgn_without_positions(tmp_path):
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    net = package_nets_dir() / OWN_NET_NAME
    r = _run(net, "--pgn", empty, "--against", net)
    assert r.returncode == 2 and "no positions" in r.stderr


def test_against_itself_by_pieces(pgn):
    net = package_nets_dir() / OWN_NET_NAME
    r = _run(net, "--pgn", pgn, "--against", net, "--by-pieces")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"all  positions {len(_expected(0))}  mean_cp 0 ")
    assert "all pieces 27-32  positions" in r.stdout and "all pieces 2-8  no positions" in r.stdout
