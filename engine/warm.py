"""Compiles (or loads from Numba's cache) the search's hot functions once, before the first real ``go``.

Run time: the UCI loader thread calls ``warm_search_code`` before it answers ``isready``; ``make warm``
(``engine.tools.warm``) calls it at install time so the cache exists before the first game, compiling the two
halves below in two processes at once.
"""
import numpy as np

WARM_FEN = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def warm_search_code(searcher):
    """A tiny search, perft and evaluation so that the first real `go` does not compile."""
    warm_search(searcher)
    warm_beside_search(searcher.T, searcher.net, searcher.small_net)


def warm_search(searcher):
    """The search (and all it calls): most of the compile, one depth-3 search."""
    from engine.fen import parse_fen
    from engine.searcher import Limits
    searcher.think(parse_fen(WARM_FEN), [], Limits(depth=3), on_info=lambda **line: searcher.hashfull())
    searcher.clear()


def warm_beside_search(T, net, small_net=None):
    """What the commands around the search run: a move made outside it, perft, the `eval` report."""
    from engine.fen import parse_fen
    from engine.notation import parse_uci_move, push
    from engine.perft_count import perft_divide
    from engine.searcher import board_key
    from nnue.evaluate import eval_report
    board = parse_fen(WARM_FEN)
    # What `position ... moves` and `d` run: a move made on a board outside the search, its key.
    board_key(push(board, parse_uci_move(board, "e1g1", False)))
    perft_divide(T, board.bb, board.board, board.st, 2, np.empty(256, np.int32), np.empty(256, np.int64))
    if small_net is not None:
        # A 17.1 pair: the search ran the two-net evaluation (one compiled search for every net); this
        # compiles the `eval` command's two-net report.
        from nnue.evaluate import eval_report_pair
        eval_report_pair(net, small_net, board.board, board.side, board.halfmove)
    else:
        eval_report(net, board.board, board.side, board.halfmove)
