"""``quantfish warm`` (run by ``make install``): compile every hot function once, so that the first game starts
at once.

Numba compiles on one core. The search's own compile is most of the time, so this process compiles it while
a second process (``--beside``) compiles first what the search reaches late in its compile (capture generation,
the check and exchange tests, the tablebase probe), then what is off its path: perft and the `eval` report. The
two share the cache (``quantfish.runtime.jit`` locks it between processes); when both are done, this process runs the whole
warm-up again, which loads everything from the cache and compiles anything still missing.
"""
import subprocess
import sys
import time


def warm_beside():
    """The second process: the leaves the search reaches late (``quantfish.search.warm.warm_search_leaves``), then perft
    from the start position and ``quantfish.search.warm.warm_beside_search``."""
    from quantfish.core.fen import STARTING_FEN, parse_fen
    from quantfish.core.perft import perft
    from quantfish.search.driver import Searcher
    from quantfish.search.warm import warm_beside_search, warm_search_leaves
    from quantfish.nnue.loader import load_nets
    searcher = Searcher(load_nets(), 1)
    warm_search_leaves(searcher)
    board = parse_fen(STARTING_FEN)
    perft(searcher.T, board.bb, board.board, board.st, 3)
    warm_beside_search(searcher.T, searcher.net, searcher.small_net)


def write_bytecode():
    """Python's own compile of the packages' modules, saved as it is for an installed package: an editable
    install saves none, and where ``PYTHONDONTWRITEBYTECODE`` is set every start compiled them again (about
    0.1 s of each engine's start-up here)."""
    import compileall

    from quantfish.runtime.paths import PACKAGE_DIR
    compileall.compile_dir(PACKAGE_DIR, quiet=1)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--beside"]:
        warm_beside()
        return 0
    start = time.perf_counter()
    write_bytecode()
    beside = subprocess.Popen([sys.executable, "-m", "quantfish.cli.warm", "--beside"])
    from quantfish.core.fen import STARTING_FEN, parse_fen
    from quantfish.core.perft import perft
    from quantfish.search.driver import Searcher
    from quantfish.search.warm import warm_search, warm_search_code
    from quantfish.nnue.loader import load_nets
    searcher = Searcher(load_nets(), 1)
    try:
        warm_search(searcher)
    except BaseException:   # Ctrl-C or a failure here: the second process stops too
        beside.terminate()
        beside.wait()
        raise
    status = beside.wait()
    if status != 0:
        print(f"the second compile process failed (exit status {status}): compiling its part here", file=sys.stderr)
    board = parse_fen(STARTING_FEN)
    perft(searcher.T, board.bb, board.board, board.st, 3)
    warm_search_code(searcher)
    print(f"compiled code ready in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:   # Ctrl-C reaches both processes; the main one says it
        if sys.argv[1:] != ["--beside"]:
            print("interrupted: what was compiled stays in the cache", file=sys.stderr)
        sys.exit(130)
