"""The engine with a Stockfish 17.1 pair (big L1 = 3072 + small L1 = 128, the synthetic test nets): search,
UCI options EvalFile/EvalFileSmall, the command line (static evaluation inside the search: test_search_eval).
The 15.1 single net's behaviour is covered by test_uci.py and test_tactics.py."""

import sys

import numba
import numpy as np
import pytest

from quantfish.core.fen import parse_fen
from quantfish.core.movegen import MAX_MOVES, generate_legal
from quantfish.search.state import SearchState
from quantfish.search.driver import Limits, Searcher
from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.loader import NetPairError
from tests.test_uci import ROOT, Uci

# Balanced starts and large material imbalances (so the small net is used, and sometimes re-evaluated).
STARTS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/RN1QKBNR w KQkq - 0 1",
    "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",
    "4k3/8/8/8/8/8/PPPPPPPP/R3K2R w KQ - 0 1",
    "1n2k1n1/P6P/8/8/8/8/p6p/1N2K1N1 w - - 0 1",
    "4k3/1P4p1/8/2pP4/8/8/1p4P1/4K3 w - c6 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3Q2K1 w - - 0 1",
]


def _kernel_modes():
    modes = ["numba"]
    if ckernel.load_kernel("auto").is_c:
        modes.append("c")
    return modes


@pytest.fixture(scope="module")
def pair_searchers(nnue17_pair):
    """One pair Searcher per evaluation path (building one for the big net takes a second)."""
    return {mode: Searcher(nnue17_pair.big, 4, mode, small_net=nnue17_pair.small) for mode in _kernel_modes()}


def _legal(searcher, ply):
    moves = np.empty(MAX_MOVES, np.int32)
    n = generate_legal(searcher.T, searcher.S.bbs[ply], searcher.S.boards[ply], searcher.S.sts[ply], moves)
    return [int(m) for m in moves[:n]]


def test_searcher_pair_slots(nnue_net, nnue17_pair, pair_searchers):
    s = next(iter(pair_searchers.values()))
    assert s.is_pair and s.nets == (nnue17_pair.big, nnue17_pair.small) and s.eval_mode["pair"]
    assert "big" in s.describe_nets() and "small" in s.describe_nets()
    one = Searcher(nnue_net, 1, "numba")
    assert not one.is_pair and not one.eval_mode["pair"] and one.nets == (nnue_net,)
    # One compiled search serves every net: the search tuples have the same Numba type.
    assert numba.typeof(one.S) == numba.typeof(s.S)
    # The small net's fields (its directory and computed flags) are there with one net too, unused.
    assert type(s.S) is type(one.S) is SearchState
    # A NetPair is accepted as it is.
    assert Searcher(nnue17_pair, 1, "numba").is_pair


def test_mismatched_pairs_are_refused(nnue_net, nnue17_pair):
    with pytest.raises(NetPairError):
        Searcher(nnue17_pair.big, 1, "numba", small_net=nnue_net)
    with pytest.raises(NetPairError, match="swapped"):
        Searcher(nnue17_pair.small, 1, "numba", small_net=nnue17_pair.big)


@pytest.mark.parametrize("fen", STARTS[:6])
def test_pair_search_returns_a_legal_move(pair_searchers, fen):
    board = parse_fen(fen)
    for s in pair_searchers.values():
        s.clear()
        best, _, lines = s.think(board, [], Limits(depth=5))
        assert best in s.legal_root_moves(board) and lines and lines[0].moves[0] == best


def test_pair_search_same_tree_with_either_path(pair_searchers):
    """The C kernel and the Numba path give the same integers, so the same search tree."""
    if len(pair_searchers) < 2:
        pytest.skip("C kernel not available")
    for fen in (STARTS[1], STARTS[2], STARTS[5]):
        board = parse_fen(fen)
        got = []
        for s in pair_searchers.values():
            s.clear()
            best, _, lines = s.think(board, [], Limits(depth=7))
            got.append((best, lines[0].score, s.nodes))
        assert got[0] == got[1], fen


def test_single_17_nets_search(nnue17_pair):
    """A 17.1 net alone (no pair) searches with its own formula (17.1, one net)."""
    board = parse_fen(STARTS[1])
    for net in nnue17_pair:
        s = Searcher(net, 1, "numba")
        assert not s.is_pair
        best, _, _ = s.think(board, [], Limits(depth=3))
        assert best in s.legal_root_moves(board)


# ---------------------------------------------------------------------------------------------------------
# UCI and command line


def _info_strings(lines):
    return [l for l in lines if l.startswith("info string")]


def test_uci_pair_options(nnue17_dir):
    big, small = nnue17_dir / "synthetic_big.nnue", nnue17_dir / "synthetic_small.nnue"
    uci = Uci()
    try:
        uci.send("uci")
        lines = uci.expect("uciok", timeout=10)
        assert "option name EvalFileSmall type string default nn-37f18f62d772.nnue" in lines
        uci.send("isready")
        uci.expect("readyok", timeout=300)

        # 15.1 net live: EvalFileSmall is ignored, with a note.
        uci.send(f"setoption name EvalFileSmall value {small}")
        line = uci.expect("info string")[-1]
        assert "EvalFileSmall" in line and "ignored" in line

        # The big net: paired with EvalFileSmall (set above) -> the pair is live.
        uci.send(f"setoption name EvalFile value {big}")
        line = uci.expect("info string")[-1]
        assert "NNUE evaluation using" in line and str(big) in line and str(small) in line
        uci.send("position startpos moves e2e4 e7e5")
        uci.send("go depth 5")
        lines = uci.expect("bestmove", timeout=120)
        strings = _info_strings(lines)
        assert len(strings) == 1 and str(big) in strings[0] and str(small) in strings[0]
        assert any(l.startswith("info depth 5 ") for l in lines)
        uci.send("eval")
        lines = uci.expect("Final evaluation")
        assert any(l.startswith("Net used") for l in lines)

        # A 15.1 net as the small net: one info string, the pair stays.
        uci.send("setoption name EvalFileSmall value nn-ad9b42354671.nnue")
        uci.send("isready")
        lines = uci.expect("readyok")
        strings = _info_strings(lines)
        assert len(strings) == 1 and "keeping the previous net" in strings[0] and "small" in strings[0]
        # A corrupt small net: likewise.
        uci.send("setoption name EvalFileSmall value /no/such/small.nnue")
        uci.send("isready")
        strings = _info_strings(uci.expect("readyok"))
        assert len(strings) == 1 and "keeping the previous net" in strings[0]
        uci.send("position fen r3k2r/pppppppp/8/8/8/8/PPPPPPPP/RN1QKBNR w KQkq - 0 1")
        uci.send("go depth 4")
        assert uci.expect("bestmove", timeout=120)[-1].startswith("bestmove ")

        # The small net given as EvalFile: refused (swapped), the pair stays.
        uci.send(f"setoption name EvalFileSmall value {big}")
        uci.send(f"setoption name EvalFile value {small}")
        uci.send("isready")
        strings = _info_strings(uci.expect("readyok"))
        assert len(strings) == 2 and all("keeping the previous net" in s for s in strings)
        assert "swapped" in strings[1]
        uci.send("go depth 3")
        assert uci.expect("bestmove", timeout=120)[-1].startswith("bestmove ")

        # Back to the 15.1 net: single-net mode, EvalFileSmall (set to the big file above) ignored.
        uci.send("setoption name EvalFile value nn-ad9b42354671.nnue")
        line = uci.expect("info string")[-1]
        assert "nn-ad9b42354671.nnue" in line and "ignored" in line and str(small) not in line
        uci.send("position startpos")
        uci.send("go depth 4")
        lines = uci.expect("bestmove", timeout=120)
        strings = _info_strings(lines)
        assert len(strings) == 1 and "15.1" in strings[0]
    finally:
        uci.close()
    assert all("Traceback" not in line for line in uci.seen)


def test_uci_big_net_without_its_small_partner(nnue17_dir):
    """EvalFile set first (as GUIs do) to a big net whose small net is not found: one info string, the 15.1
    net stays; EvalFileSmall then completes the pair."""
    uci = Uci()
    try:
        uci.send("uci")
        uci.expect("uciok", timeout=10)
        uci.send(f"setoption name EvalFile value {nnue17_dir / 'synthetic_big.nnue'}")
        uci.send("isready")
        strings = _info_strings(uci.expect("readyok", timeout=300))
        assert len(strings) == 1 and "keeping the previous net" in strings[0] and "EvalFileSmall" in strings[0]
        uci.send(f"setoption name EvalFileSmall value {nnue17_dir / 'synthetic_small.nnue'}")
        line = uci.expect("info string")[-1]
        assert "NNUE evaluation using" in line and "two-net" in line
        uci.send("go depth 3")
        assert uci.expect("bestmove", timeout=120)[-1].startswith("bestmove ")
    finally:
        uci.close()


def test_command_line_net_options(nnue17_dir):
    """``quantfish --net BIG --net-small SMALL`` speaks UCI with the pair."""
    import subprocess
    big, small = nnue17_dir / "synthetic_big.nnue", nnue17_dir / "synthetic_small.nnue"
    proc = subprocess.run([sys.executable, "-m", "quantfish.cli.main", "--net", str(big), "--net-small", str(small)],
                          input="uci\nisready\nposition startpos\ngo depth 3\nisready\nquit\n", capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    out = proc.stdout.splitlines()
    assert any(l.startswith("bestmove ") for l in out), proc.stdout + proc.stderr
    strings = _info_strings(out)
    assert strings and str(big) in strings[0] and str(small) in strings[0]


def test_bench_command_with_a_pair(nnue17_dir, sf_net_path):
    from click.testing import CliRunner

    from quantfish.cli.bench import bench_command
    big, small = nnue17_dir / "synthetic_big.nnue", nnue17_dir / "synthetic_small.nnue"
    res = CliRunner().invoke(bench_command, ["--depth", "2", "--net", str(big), "--net-small", str(small),
                                             "--kernel", "numba"])
    assert res.exit_code == 0, res.output
    assert "Nodes searched" in res.output
    res = CliRunner().invoke(bench_command, ["--depth", "1", "--net", str(big), "--net-small",
                                             str(sf_net_path)])
    assert res.exit_code != 0 and "not a Stockfish 17.1 small net" in res.output
