"""``quantfish perft``: one position (optionally divided) or a whole EPD suite, with timings on stderr."""
import sys
import time

from quantfish.runtime.progress import progress_bar

import numpy as np

from quantfish.core.epd import read_perft_suite
from quantfish.core.fen import STARTING_FEN, parse_fen
from quantfish.core.movegen import MAX_MOVES
from quantfish.core.notation import move_to_uci
from quantfish.core.perft import perft, perft_divide
from quantfish.core.tables import tables


def _rate(nodes, seconds):
    return int(nodes / seconds) if seconds > 0 else 0


def run_one(fen, depth, divide=False, chess960=False):
    board = parse_fen(fen or STARTING_FEN, chess960)
    T = tables()
    start = time.perf_counter()
    if divide and depth >= 1:
        moves = np.empty(MAX_MOVES, dtype=np.int32)
        counts = np.empty(MAX_MOVES, dtype=np.int64)
        n = perft_divide(T, board.bb, board.board, board.st, depth, moves, counts)
        elapsed = time.perf_counter() - start
        total = int(counts[:n].sum())
        for text, count in sorted((move_to_uci(moves[i], chess960 or board.chess960), int(counts[i]))
                                  for i in range(n)):
            print(f"{text}: {count}")
        print()
    else:
        total = int(perft(T, board.bb, board.board, board.st, depth))
        elapsed = time.perf_counter() - start
    print(total)
    print(f"time {elapsed:.3f} s, {_rate(total, elapsed)} nodes/second", file=sys.stderr)
    return total


def run_suite(path, max_depth=0, max_nodes=None):
    """Checks every (depth, count) of the suite; prints mismatches and ``passed N of M``."""
    rows = read_perft_suite(path)
    T = tables()
    passed = checked = 0
    nodes = 0
    start = time.perf_counter()
    wanted = [(fen, [(d, c) for d, c in expected
                     if not (max_depth and d > max_depth) and not (max_nodes is not None and c > max_nodes)])
              for fen, expected in rows]
    bar = progress_bar(sum(c for _, counts in wanted for _, c in counts), "perft", "nodes")
    for fen, expected in wanted:
        try:
            board = parse_fen(fen, chess960=True)
        except ValueError as exc:
            checked += 1
            bar.write(f"error: {fen}: {exc}", file=sys.stdout)
            continue
        for depth, count in expected:
            checked += 1
            got = int(perft(T, board.bb, board.board, board.st, depth))
            nodes += got
            bar.update(count)
            if got == count:
                passed += 1
            else:
                bar.write(f"mismatch: {fen} depth {depth}: expected {count}, got {got}", file=sys.stdout)
    bar.close()
    elapsed = time.perf_counter() - start
    print(f"passed {passed} of {checked}")
    print(f"time {elapsed:.3f} s, {_rate(nodes, elapsed)} nodes/second", file=sys.stderr)
    return passed == checked
