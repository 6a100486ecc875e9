"""Runs a tactical EPD suite (``bm``/``am`` operations) and counts the solved positions.

    python -m tools.epdtest FILE [--movetime MS] [--depth D] [--hash MB] [--limit N]

A position is solved when the move chosen at the end is one of the ``bm`` moves (or none of the
``am`` moves). SAN in the suite is read with python-chess.
"""
import argparse
import time

import chess


def read_epd(path):
    """(board, best moves, avoid moves, id) for each line of an EPD file."""
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.replace("\x00", "").strip()
            if not line or line.startswith("#"):
                continue
            board, ops = chess.Board.from_epd(line)
            bm = ops.get("bm", []) or []
            am = ops.get("am", []) or []
            rows.append((board, [m.uci() for m in bm], [m.uci() for m in am], ops.get("id", "")))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("epd")
    ap.add_argument("--movetime", type=int, default=1000, help="milliseconds per position")
    ap.add_argument("--depth", type=int, default=None)
    ap.add_argument("--hash", type=int, default=64)
    ap.add_argument("--limit", type=int, default=None, help="only the first N positions")
    args = ap.parse_args(argv)

    from quantfish.core.fen import parse_fen
    from quantfish.core.notation import move_to_uci
    from quantfish.search.driver import Limits, Searcher
    from quantfish.search.timeman import Clock
    from quantfish.nnue.loader import load_nets

    searcher = Searcher(load_nets(), args.hash)
    rows = read_epd(args.epd)[:args.limit]
    solved = 0
    start = time.perf_counter()
    for board, bm, am, ident in rows:
        ours = parse_fen(board.fen())
        searcher.clear()
        limits = Limits(depth=args.depth) if args.depth else Limits(movetime=args.movetime)
        clock = Clock(None, None if args.depth else args.movetime)
        best, _, _ = searcher.think(ours, [], limits, clock=clock)
        move = move_to_uci(best)
        ok = (move in bm) if bm else (move not in am)
        solved += ok
        print(f"{'ok ' if ok else 'BAD'} {ident:12s} {move:6s} bm {' '.join(bm)} am {' '.join(am)}", flush=True)
    print(f"solved {solved} of {len(rows)} in {time.perf_counter() - start:.0f} s")
    return solved, len(rows)


if __name__ == "__main__":
    main()
