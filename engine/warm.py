"""Compiles (or loads from Numba's cache) every hot function once, for `make install` and start-up."""
import time

import numpy as np


def warm_search_code(searcher):
    """A tiny search, perft and evaluation so that the first real `go` does not compile."""
    from engine.fen import STARTING_FEN, parse_fen
    from engine.perft_count import perft_divide
    from engine.searcher import Limits
    from nnue.evaluate import eval_report
    board = parse_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    searcher.think(board, [], Limits(depth=3))
    searcher.clear()
    perft_divide(searcher.T, board.bb, board.board, board.st, 2, np.empty(256, np.int32), np.empty(256, np.int64))
    if getattr(searcher, "small_net", None) is not None:
        # A 17.1 pair: the search above ran the two-net evaluation (one compiled search for every net);
        # this compiles the `eval` command's two-net report.
        from nnue.evaluate import eval_report_pair
        eval_report_pair(searcher.net, searcher.small_net, board.board, board.side, board.halfmove)
    else:
        eval_report(searcher.net, board.board, board.side, board.halfmove)


def main():
    start = time.perf_counter()
    from engine.fen import STARTING_FEN, parse_fen
    from engine.perft_count import perft
    from engine.searcher import Searcher
    from engine.tables import tables
    from nnue.netfile import load_net
    from nnue.netpath import resolve_net_path
    board = parse_fen(STARTING_FEN)
    perft(tables(), board.bb, board.board, board.st, 3)
    warm_search_code(Searcher(load_net(resolve_net_path()), 1))
    print(f"compiled code ready in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
