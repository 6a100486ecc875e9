"""``make warm``: compile every hot function once at install time, so that the first game starts at once.

    python -m engine.tools.warm
"""
import time


def main():
    start = time.perf_counter()
    from engine.fen import STARTING_FEN, parse_fen
    from engine.perft_count import perft
    from engine.searcher import Searcher
    from engine.tables import tables
    from engine.warm import warm_search_code
    from nnue.netpair import load_nets
    board = parse_fen(STARTING_FEN)
    perft(tables(), board.bb, board.board, board.st, 3)
    warm_search_code(Searcher(load_nets(), 1))
    print(f"compiled code ready in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
