"""``make warm`` (``quantfish.cli.warm``, two compiling processes) leaves a cache from which a new process
warms up the engine without compiling anything: what the UCI loader does before its first ``readyok``."""
import subprocess
import sys

from tests.testdata import ROOT

COUNT_COMPILES = """
from quantfish.core.fen import STARTING_FEN, parse_fen
from quantfish.core.perft import perft
from quantfish.search.driver import Searcher
from quantfish.search.warm import warm_search_code
from quantfish.nnue.loader import load_nets
from tests.compiles import counting_compiles
with counting_compiles() as compiled:
    searcher = Searcher(load_nets(), 1)
    board = parse_fen(STARTING_FEN)
    perft(searcher.T, board.bb, board.board, board.st, 3)
    warm_search_code(searcher)
print("compiled:", " ".join(sorted(set(compiled))) or "nothing")
"""


def test_a_new_process_after_make_warm_compiles_nothing():
    root = ROOT
    warm = subprocess.run([sys.executable, "-m", "quantfish.cli.warm"], cwd=root, capture_output=True, text=True,
                          timeout=1200)
    assert warm.returncode == 0, warm.stderr[-3000:]
    assert "compiled code ready in" in warm.stdout
    assert "second compile process failed" not in warm.stderr, warm.stderr[-3000:]
    after = subprocess.run([sys.executable, "-c", COUNT_COMPILES], cwd=root, capture_output=True, text=True,
                           timeout=1200)
    assert after.returncode == 0, after.stderr[-3000:]
    assert after.stdout.strip().splitlines()[-1] == "compiled: nothing"


def test_getting_ready_to_play_leaves_python_chess_unloaded():
    # python-chess serves the tablebase loader and the Python API; importing it is about a tenth of a second of
    # every engine's start-up, so the UCI loader's path (net, searcher, warm-up) must not.
    code = ("import sys\nfrom quantfish.search.driver import Searcher\nfrom quantfish.search.warm import warm_for_play\n"
            "from quantfish.nnue.loader import load_nets\nwarm_for_play(Searcher(load_nets(), 1))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'chess'))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
