"""Compiles (or loads from the cache) every hot function once, for `make install`."""
import time


def main():
    start = time.perf_counter()
    from engine.fen import STARTING_FEN, parse_fen
    from engine.perft import perft, perft_divide
    from engine.tables import tables
    import numpy as np
    board = parse_fen(STARTING_FEN)
    T = tables()
    perft(T, board.bb, board.board, board.st, 3)
    perft_divide(T, board.bb, board.board, board.st, 2, np.empty(256, np.int32), np.empty(256, np.int64))
    try:
        from engine.warm_search import warm_search
    except ImportError:
        warm_search = None
    if warm_search is not None:
        warm_search()
    print(f"compiled code ready in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
