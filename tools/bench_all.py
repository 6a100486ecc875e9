"""`make bench`: every speed figure side by side in one run, next to Stockfish's.

    python -m tools.bench_all [--runs N] [--bench-depth D] [--startup] [--skip-nnue]

Perft (bulk-counted leaves) on the start position to depth 6 and Kiwipete to depth 5, next to python-chess on
the same positions (at smaller depths: it is ~1000x slower) and Stockfish's ``go perft``; the search bench
(``quantfish.search.bench.run_bench``) with each evaluation path (the best C kernel variant, the AVX2 variant, the Numba
path) next to Stockfish's ``bench 16 1 13`` run three ways (``STOCKFISH_BENCHES``: with its net on quantfish's
positions, with its net on its own, and its default mixed bench); the bench positions searched by Stockfish and
every path in turn, position by position (``interleaved_nps``: the fairest figure on a machine whose speed
drifts); NNUE evaluations per second (``tools.nnue_bench``) and the C kernel against the Numba path
(``tools.kernel_bench``); the UCI start-up (``uciok``, ``readyok``). With ``--startup``, the cold (empty
Numba cache) and warm start of ``quantfish perft`` measured on a temporary copy of the package (run as a
subprocess, so this tool imports nothing from ``uci``). Each Quantfish figure is the median of ``--runs`` runs.

Stockfish is ``$STOCKFISH`` when set (``STOCKFISH=/path/to/stockfish make bench``: a build for this CPU is
the fair yardstick), else the installed one; the first line says which.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PERFT_CASES = [
    ("start position", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 6, 4),
    ("Kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 5, 3),
]


def quantfish_perft_nps(fen, depth, runs):
    from quantfish.core.fen import parse_fen
    from quantfish.core.perft import perft
    from quantfish.core.tables import tables
    board = parse_fen(fen)
    T = tables()
    perft(T, board.bb, board.board, board.st, 2)
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        n = perft(T, board.bb, board.board, board.st, depth)
        rates.append(n / (time.perf_counter() - start))
    return int(n), statistics.median(rates)


def python_chess_perft_nps(fen, depth):
    import chess

    def count(board, d):
        if d == 1:
            return board.legal_moves.count()
        total = 0
        for move in board.legal_moves:
            board.push(move)
            total += count(board, d - 1)
            board.pop()
        return total

    board = chess.Board(fen)
    start = time.perf_counter()
    n = count(board, depth)
    return n, n / (time.perf_counter() - start)


class Stockfish:
    """A Stockfish process driven over UCI, for timings inside one process (no start-up cost)."""

    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.send("uci")
        self.wait("uciok")

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def wait(self, prefix):
        for line in self.p.stdout:
            if line.startswith(prefix):
                return line
        raise RuntimeError("stockfish exited")

    def perft_nps(self, fen, depth, runs):
        rates = []
        for _ in range(runs):
            self.send(f"position fen {fen}")
            self.send("isready")
            self.wait("readyok")
            start = time.perf_counter()
            self.send(f"go perft {depth}")
            n = int(self.wait("Nodes searched").split(":")[1])
            rates.append(n / (time.perf_counter() - start))
        return n, statistics.median(rates)

    def search(self, fen, depth):
        """(nodes, seconds) of a search of ``fen`` to ``depth`` from an empty hash, as its last ``info`` line
        reports them (search time alone: no start-up, clearing or pipe)."""
        self.send("ucinewgame")
        self.send(f"position fen {fen}")
        self.send("isready")
        self.wait("readyok")
        self.send(f"go depth {depth}")
        last = None
        for line in self.p.stdout:
            if line.startswith("info") and " nodes " in line and " time " in line:
                last = line
            elif line.startswith("bestmove"):
                nodes = int(re.search(r" nodes (\d+)", last).group(1))
                return nodes, max(int(re.search(r" time (\d+)", last).group(1)), 1) / 1000
        raise RuntimeError("stockfish exited")

    def close(self):
        self.send("quit")
        self.p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# How Stockfish's bench is run, by name. Its default bench ("mixed") searches every other position with its
# classical evaluation (Use NNUE false), and decisive positions of the others too (15.1's hybrid): on its
# positions 70% of its evaluations are classical, so it is not a same-net yardstick. "nnue" is Stockfish as it
# plays (Use NNUE true) on its own positions, "nnue, quantfish's positions" the same on the positions
# `quantfish bench` searches (quantfish.search.bench_positions), which compares like with like.
STOCKFISH_BENCHES = ("nnue, quantfish's positions", "nnue", "default (mixed)")


def stockfish_bench_once(path, kind="default (mixed)", fen_file=None):
    """Stockfish's bench nodes/second at depth 13, 16 MB, one thread, run as ``kind`` (``STOCKFISH_BENCHES``)."""
    args = {"default (mixed)": [], "nnue": ["default", "depth", "NNUE"],
            "nnue, quantfish's positions": [fen_file, "depth", "NNUE"]}[kind]
    out = subprocess.run([path, "bench", "16", "1", "13", *args], capture_output=True, text=True).stderr
    return int(re.search(r"Nodes/second\s*:\s*(\d+)", out).group(1))


def write_bench_fens(directory):
    """The positions of ``quantfish bench``, one FEN a line, for Stockfish's bench; returns the file's path."""
    from quantfish.search.bench_positions import BENCH_FENS
    path = os.path.join(directory, "quantfish_bench.fens")
    with open(path, "w") as f:
        f.write("\n".join(BENCH_FENS) + "\n")
    return path


def evaluation_paths():
    """The kernels to bench: the best C variant, the AVX2 variant (what most machines run) and the Numba path."""
    from quantfish.nnue.kernel import loader as ckernel
    paths = [ckernel.load_kernel("c")]
    try:
        paths.append(ckernel.load_kernel(variant="avx2", require=True))
    except ckernel.KernelUnavailable:
        pass
    paths.append(ckernel.load_kernel("numba"))
    return paths


def _searchers(kernels):
    """{kernel status: Searcher (Hash 16) on the default net}, one a distinct path of ``kernels`` (default:
    ``evaluation_paths()``)."""
    from quantfish.search.driver import Searcher
    from quantfish.nnue.io import load_net
    from quantfish.nnue.loader import resolve_main_path
    net = load_net(resolve_main_path())
    searchers = {}
    for kernel in kernels or evaluation_paths():
        if kernel.status not in searchers:
            searchers[kernel.status] = Searcher(net, 16, kernel=kernel)
    return searchers


def quantfish_bench_nps(depth, runs, kernels=None, stockfish=None):
    """{path status: (nodes, median nodes/second)}, the paths' runs interleaved so load hits all alike; with
    ``stockfish`` (a path) its bench runs in the same rounds in each way of ``STOCKFISH_BENCHES``, under the
    keys ("stockfish", kind)."""
    from quantfish.search.bench import run_bench
    searchers = _searchers(kernels)
    results = {status: [] for status in searchers}
    sf_rates = {kind: [] for kind in STOCKFISH_BENCHES}
    with tempfile.TemporaryDirectory() as tmp:
        fen_file = write_bench_fens(tmp)
        for _ in range(runs):
            if stockfish:
                for kind in STOCKFISH_BENCHES:
                    sf_rates[kind].append(stockfish_bench_once(stockfish, kind, fen_file))
            for status, s in searchers.items():
                results[status].append(run_bench(s, depth, lambda line: None))
    out = {status: (r[0][0], statistics.median(n / t for n, t in r)) for status, r in results.items()}
    for kind, r in sf_rates.items():
        if r:
            out[("stockfish", kind)] = (None, statistics.median(r))
    return out


def interleaved_nps(stockfish, depth, rounds, kernels=None, fens=None):
    """The bench positions searched to ``depth`` by Stockfish (a ``Stockfish`` process, Hash 16) and by each
    evaluation path in turn, position by position, the order rotating, so that the machine's drift (10-20%
    between minutes on a shared machine) falls alike on all. Returns ({path status: [nodes of each position]},
    {path status: [nodes/second over Stockfish's, one a round]}); Stockfish's and the searchers' times are
    both search time alone."""
    from quantfish.search.bench import DEFAULT_DEPTH
    from quantfish.search.bench_positions import BENCH_FENS
    from quantfish.core.fen import parse_fen
    from quantfish.search.driver import Limits
    depth = depth or DEFAULT_DEPTH
    fens = fens or BENCH_FENS
    searchers = _searchers(kernels)
    for s in searchers.values():
        s.think(parse_fen(fens[0]), [], Limits(depth=2))      # its code loaded before any timing
    stockfish.send("setoption name Hash value 16")
    stockfish.send("setoption name Threads value 1")
    names = list(searchers) + [None]            # None: Stockfish
    counts = {status: [0] * len(fens) for status in searchers}
    ratios = {status: [] for status in searchers}
    for r in range(rounds):
        totals = {name: [0, 0.0] for name in names}
        for i, fen in enumerate(fens):
            k = (i + r) % len(names)
            for name in names[k:] + names[:k]:
                if name is None:
                    nodes, seconds = stockfish.search(fen, depth)
                else:
                    s = searchers[name]
                    s.clear()
                    board = parse_fen(fen)
                    start = time.perf_counter()
                    s.think(board, [], Limits(depth=depth))
                    seconds = time.perf_counter() - start
                    nodes = s.nodes
                    counts[name][i] = nodes
                totals[name][0] += nodes
                totals[name][1] += seconds
        sf_nps = totals[None][0] / totals[None][1]
        for status in searchers:
            ratios[status].append(totals[status][0] / totals[status][1] / sf_nps)
    return counts, ratios


def startup_times():
    """Cold and warm `perft 1` start of a copy of the package with no Numba cache."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        for pkg in ("engine", "nnue", "uci"):
            shutil.copytree(os.path.join(root, pkg), os.path.join(tmp, pkg),
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        env = dict(os.environ, PYTHONPATH=tmp)
        times = []
        for _ in range(2):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "quantfish.cli.main", "perft", "1"], cwd=tmp, env=env, capture_output=True,
                           check=True)
            times.append(time.perf_counter() - start)
        return times


def _ask(p, command, reply):
    """Send ``command`` to the engine process ``p`` and read up to its line ``reply``."""
    p.stdin.write(command + "\n")
    p.stdin.flush()
    for line in p.stdout:
        if line.strip() == reply:
            return
    raise RuntimeError(f"the engine exited before {reply}")


def uci_startup_times(runs):
    """Median seconds from process start to ``uciok`` and from ``isready`` to ``readyok`` (warm Numba cache)."""
    to_uciok, to_readyok = [], []
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "quantfish.cli.main"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, bufsize=1)
        _ask(p, "uci", "uciok")
        to_uciok.append(time.perf_counter() - start)
        start = time.perf_counter()
        _ask(p, "isready", "readyok")
        to_readyok.append(time.perf_counter() - start)
        p.communicate("quit\n", timeout=60)
    return statistics.median(to_uciok), statistics.median(to_readyok)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bench-depth", type=int, default=None)
    ap.add_argument("--startup", action="store_true")
    ap.add_argument("--skip-nnue", action="store_true")
    args = ap.parse_args(argv)
    from tools.nnue_bench import stockfish_for_comparison
    sf_path, sf_origin = stockfish_for_comparison()
    sf = Stockfish(sf_path) if sf_path else None
    print(f"Stockfish: {sf_path}, {sf_origin}" if sf_path else "Stockfish: none found (set STOCKFISH=...)")

    print("== perft (leaf nodes per second, median of runs) ==")
    for name, fen, depth, small in PERFT_CASES:
        n, qf = quantfish_perft_nps(fen, depth, args.runs)
        pn, pc = python_chess_perft_nps(fen, small)
        line = f"{name:15s} depth {depth}: {n} nodes  quantfish {qf / 1e6:7.1f} M/s"
        line += f"  python-chess (depth {small}) {pc / 1e6:6.3f} M/s ({qf / pc:,.0f}x)"
        if sf:
            _, sfr = sf.perft_nps(fen, depth, args.runs)
            line += f"  stockfish {sfr / 1e6:7.1f} M/s (quantfish/stockfish {qf / sfr:.2f})"
        print(line, flush=True)
    if sf:
        sf.close()

    print("== search bench (Nodes/second, median of runs; each run of Stockfish and of every path in one round) ==")
    rates = quantfish_bench_nps(args.bench_depth, args.runs, stockfish=sf_path)
    sf_rates = {key[1]: int(rates.pop(key)[1]) for key in list(rates) if isinstance(key, tuple)}
    for kind, snps in sf_rates.items():
        print(f"stockfish bench 16 1 13, {kind}: {snps} nodes/second", flush=True)
    for status, (nodes, qnps) in rates.items():
        line = f"quantfish bench ({status}): {nodes} nodes, {int(qnps)} nodes/second"
        if sf_rates:
            line += "; quantfish/stockfish " + ", ".join(f"{qnps / snps:.3f} ({kind})" for kind, snps in
                                                         sf_rates.items())
        print(line, flush=True)

    if sf_path:
        print(f"== search bench position by position with Stockfish ({args.runs} rounds: each position searched by "
              f"Stockfish and every path in turn; medians of the rounds' ratios) ==", flush=True)
        with Stockfish(sf_path) as sf:
            _, ratios = interleaved_nps(sf, args.bench_depth, args.runs)
        for status, r in ratios.items():
            print(f"quantfish ({status})/stockfish {statistics.median(r):.3f} "
                  f"(rounds {', '.join(f'{x:.3f}' for x in r)})", flush=True)

    if not args.skip_nnue:
        print("== NNUE evaluations (Numba path, with Stockfish for comparison) ==", flush=True)
        from tools import nnue_bench
        nnue_bench.main(["--runs", str(max(3, args.runs))])
        print("== NNUE kernel: C variants against the Numba path ==", flush=True)
        from tools import kernel_bench
        kernel_bench.main(["--runs", str(max(3, args.runs))])

    uciok, readyok = uci_startup_times(args.runs)
    print(f"== UCI start-up (warm cache, median of runs) ==\nprocess start to uciok {uciok:.3f} s, "
          f"isready to readyok {readyok:.3f} s", flush=True)
    if args.startup:
        cold, warm = startup_times()
        print(f"== start-up of `quantfish perft 1` ==\ncold (empty Numba cache) {cold:.1f} s, warm {warm:.2f} s")


if __name__ == "__main__":
    main()
