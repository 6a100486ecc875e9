"""Search speed of several nets side by side: nodes/second of each over the first's.

    python -m tools.net_speed NET [NET ...] [--depth D] [--rounds R] [--positions N]

NET is a net file, or ``default`` for the net Quantfish loads by itself. Every net gets its own searcher in
one process; the bench positions (``quantfish.search.bench``) are searched to depth D, the nets taking turns position
by position, so a machine whose speed drifts over seconds (a shared virtual machine) slows them alike. Prints,
per net, its nodes, its nodes/second, the ratio to the first net's over all positions, and the median of
the per-position ratios. A net with its own arithmetic (a Quantfish-format file) searches its own tree, so
only nets with the same evaluations (the same tree) compare like with like; the others also differ by
their trees.
"""
import argparse
import statistics
import sys
import time

from quantfish.search.bench import BENCH_FENS
from quantfish.core.fen import parse_fen
from quantfish.search.driver import Limits, Searcher
from quantfish.nnue.loader import load_nets


def compare(nets, depth=13, rounds=2, positions=None, hash_mb=16):
    """{net: (nodes, seconds, per-position ratios to the first net)} over ``rounds`` passes of the positions."""
    fens = BENCH_FENS[:positions] if positions else BENCH_FENS
    searchers = [Searcher(load_nets(None if n == "default" else n, None), hash_mb, None) for n in nets]
    for s in searchers:                         # compiled and warm before anything is timed
        s.clear()
        s.think(parse_fen(fens[0]), [], Limits(depth=min(depth, 6)))
    out = {i: [0, 0.0, []] for i in range(len(nets))}
    for _ in range(rounds):
        for fen in fens:
            rates = []
            for i, s in enumerate(searchers):
                board = parse_fen(fen)
                s.clear()
                start = time.perf_counter()
                s.think(board, [], Limits(depth=depth))
                dt = time.perf_counter() - start
                out[i][0] += s.nodes
                out[i][1] += dt
                rates.append(s.nodes / dt if dt > 0 else 0.0)
            for i, r in enumerate(rates):
                out[i][2].append(r / rates[0] if rates[0] > 0 else 0.0)
    return [(nets[i], *out[i]) for i in range(len(nets))]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Search speed of several nets side by side, in one process.")
    ap.add_argument("nets", nargs="+", help="net files, or 'default'")
    ap.add_argument("--depth", type=int, default=13)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--positions", type=int, default=None, help="only the first N bench positions")
    args = ap.parse_args(argv)
    try:
        rows = compare(args.nets, args.depth, args.rounds, args.positions)
    except (OSError, ValueError) as exc:
        print(f"net_speed: {exc}", file=sys.stderr)
        return 1
    base_nps = rows[0][1] / rows[0][2] if rows[0][2] > 0 else 0.0
    for net, nodes, seconds, ratios in rows:
        nps = nodes / seconds if seconds > 0 else 0.0
        print(f"{net:40s} nodes {nodes:>10d}  nodes/s {nps:>9.0f}  / first {nps / base_nps if base_nps else 0:.3f}"
              f"  per-position median {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
