"""The search bench: a fixed set of positions searched to a fixed depth from an empty hash.

Shared by the UCI ``bench`` command and ``quantfish bench``, so it sits at the engine level. The total node
count is a signature of the search: any change to its behaviour changes it (tests/test_signature.py).
"""
import time

from quantfish.search.bench_positions import BENCH_FENS
from quantfish.core.fen import parse_fen
from quantfish.search.driver import Limits

DEFAULT_DEPTH = 13


def run_bench(searcher, depth=None, send=print, fens=BENCH_FENS):
    depth = depth or DEFAULT_DEPTH
    total_nodes = 0
    total_time = 0.0
    for i, fen in enumerate(fens, 1):
        board = parse_fen(fen)
        searcher.clear()
        start = time.perf_counter()
        searcher.think(board, [], Limits(depth=depth))
        total_time += time.perf_counter() - start
        nodes = searcher.nodes
        total_nodes += nodes
        send(f"Position: {i}/{len(fens)} ({fen}): {nodes} nodes")
    send("")
    send("===========================")
    send(f"Total time (ms) : {int(total_time * 1000)}")
    send(f"Nodes searched  : {total_nodes}")
    send(f"Nodes/second    : {int(total_nodes / total_time) if total_time > 0 else 0}")
    return total_nodes, total_time
