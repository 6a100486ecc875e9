"""Where the search differs from Stockfish's: nodes and time to reach each depth, and the branching factor.

    python -m tools.search_gap --stockfish PATH [--quantfish "quantfish"] [--depth 14] [--hash 16]
                               [--positions FILE] [--count 30] [--json FILE]

Both engines search the same positions one at a time from a new game (``ucinewgame``, one thread, the same
hash) to ``--depth``; for every completed depth the tool notes the nodes and the time at the last ``info``
line of that depth. It prints, per depth, the medians over the positions of each engine's nodes and time and
of their ratios (Quantfish / Stockfish), and each engine's effective branching factor (the geometric mean
over positions of nodes(d) / nodes(d - 2), square-rooted: one ply's growth, smoothed over the odd-even
alternation). Positions: Quantfish's bench set, or an EPD/FEN file.

With the same net in both (Quantfish loads Stockfish 15.1's when it is installed) and speed at parity, the
node ratio at a depth is the tree's share of the gap; the fixed-nodes match (``quantfish match --nodes N``)
is the other half of the comparison: what those trees are worth.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import time

from quantfish.data.openings import Openings
from quantfish.match.uci import UciEngine
from quantfish.search.bench_positions import BENCH_FENS


def depth_profile(engine: UciEngine, fen: str, depth: int, timeout: float) -> dict[int, tuple[int, float]]:
    """{depth: (nodes, seconds)} at the last info line of each depth reached."""
    engine.new_game(timeout)
    seen: dict[int, tuple[int, float]] = {}

    def on_info(tokens, seconds):
        if "depth" in tokens and "nodes" in tokens and "score" in tokens:
            try:
                d = int(tokens[tokens.index("depth") + 1])
                n = int(tokens[tokens.index("nodes") + 1])
            except (IndexError, ValueError):
                return
            seen[d] = (n, seconds)

    engine.search(f"position fen {fen}", f"go depth {depth}", time.monotonic() + timeout, on_info)
    return seen


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarise(profiles: dict[str, list[dict]], depth: int) -> list[dict]:
    qf, sf = profiles["quantfish"], profiles["stockfish"]
    rows = []
    for d in range(2, depth + 1):
        pairs = [(q[d], s[d]) for q, s in zip(qf, sf) if d in q and d in s]
        if not pairs:
            continue
        row = {"depth": d, "positions": len(pairs),
               "qf_nodes": median([q[0] for q, _ in pairs]), "sf_nodes": median([s[0] for _, s in pairs]),
               "node_ratio": median([q[0] / max(1, s[0]) for q, s in pairs]),
               "qf_seconds": median([q[1] for q, _ in pairs]), "sf_seconds": median([s[1] for _, s in pairs]),
               "time_ratio": median([q[1] / max(1e-3, s[1]) for q, s in pairs])}
        for name, prof in (("qf", qf), ("sf", sf)):
            growth = [p[d][0] / p[d - 2][0] for p in prof if d in p and d - 2 in p and p[d - 2][0] > 0]
            row[f"{name}_ebf"] = math.sqrt(geomean(growth)) if growth else float("nan")
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stockfish", default=os.environ.get("STOCKFISH") or shutil.which("stockfish"),
                   help="Stockfish 15.1 (default: $STOCKFISH, or stockfish on PATH)")
    p.add_argument("--quantfish", default="quantfish", help="command that starts Quantfish's UCI loop")
    p.add_argument("--depth", type=int, default=14)
    p.add_argument("--hash", type=int, default=16)
    p.add_argument("--positions", help="EPD/FEN file (default: the bench positions)")
    p.add_argument("--count", type=int, default=30, help="first N positions")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a search may take")
    p.add_argument("--json", help="write the per-depth rows here")
    a = p.parse_args()
    if not a.stockfish:
        p.error("no Stockfish: give --stockfish PATH or set STOCKFISH")
    if a.positions:
        book = Openings(a.positions)
        fens = [book.fen(i) for i in range(min(len(book), a.count))]
    else:
        fens = list(BENCH_FENS)
    fens = fens[:a.count]
    options = [("Threads", "1"), ("Hash", str(a.hash))]
    engines = {"quantfish": UciEngine("quantfish", shlex.split(a.quantfish), options),
               "stockfish": UciEngine("stockfish", [a.stockfish], options)}
    profiles: dict[str, list[dict]] = {name: [] for name in engines}
    try:
        for e in engines.values():
            e.start(120.0)
        for i, fen in enumerate(fens, 1):
            for name, e in engines.items():
                profiles[name].append(depth_profile(e, fen, a.depth, a.timeout))
            print(f"\r{i}/{len(fens)} positions", end="", flush=True)
        print()
    finally:
        for e in engines.values():
            e.quit()
    rows = summarise(profiles, a.depth)
    head = ("depth", "n", "QF nodes", "SF nodes", "nodes QF/SF", "QF s", "SF s", "time QF/SF", "EBF QF", "EBF SF")
    print(" ".join(f"{h:>11}" for h in head))
    for r in rows:
        cells = (r["depth"], r["positions"], f"{r['qf_nodes']:,.0f}", f"{r['sf_nodes']:,.0f}",
                 f"{r['node_ratio']:.2f}", f"{r['qf_seconds']:.3f}", f"{r['sf_seconds']:.3f}",
                 f"{r['time_ratio']:.2f}", f"{r['qf_ebf']:.2f}", f"{r['sf_ebf']:.2f}")
        print(" ".join(f"{c:>11}" for c in cells))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"depth": a.depth, "hash": a.hash, "positions": len(fens), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
