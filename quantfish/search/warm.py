"""Compiles (or loads from Numba's cache) the search's hot functions once, before the first real ``go``.

Run time: the UCI loader thread calls ``warm_for_play`` before it answers ``isready``: the search and the
`position` command, what a game needs at once. ``make warm`` (``quantfish.cli.warm``) calls ``warm_search_code``,
everything, at install time so the cache exists before the first game, compiling the two halves below in two
processes at once. The reports (`eval`, `go perft`) then load from the cache when first asked for.
"""
import numpy as np

WARM_FEN = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def warm_search_code(searcher):
    """Everything the engine runs: a tiny search, a move made outside it, perft and the evaluation report."""
    warm_search(searcher)
    warm_beside_search(searcher.T, searcher.net, searcher.small_net)


def warm_for_play(searcher):
    """What a game needs before its first `go`: the search and the `position ... moves` command."""
    warm_search(searcher)
    warm_position_command()


def warm_search(searcher):
    """The search (and all it calls): most of the compile, one depth-3 search."""
    from quantfish.core.fen import parse_fen
    from quantfish.search.driver import Limits
    searcher.think(parse_fen(WARM_FEN), [], Limits(depth=3), on_info=lambda **line: searcher.hashfull())
    searcher.clear()


def warm_search_leaves(searcher):
    """Functions the search compiles late in its own compile (captures' generation, the check and exchange
    tests, the tablebase probe), called with the argument types the search gives them, so that ``make warm``'s
    second process has them in the cache before the search's compile reaches them. The search compiles them
    itself when they are not there: a change of those types costs time, not correctness."""
    from quantfish.core.fen import parse_fen
    from quantfish.core.movegen import checkers, generate_legal, generate_legal_with, generate_tactical_with, gives_check
    from quantfish.search.see import see_ge
    from quantfish.tablebase.probe import probe_wdl
    S, T = searcher.S, searcher.T
    board = parse_fen(WARM_FEN)
    searcher._setup(board, [])
    bb, squares, st, moves = S.bbs[0], S.boards[0], S.sts[0], S.moves[0]
    chk = np.uint64(checkers(T, bb, st))       # a uint64, as the search holds it
    generate_tactical_with(T, bb, squares, st, moves, chk)
    generate_legal_with(T, bb, squares, st, moves, chk)
    move = moves[generate_legal(T, bb, squares, st, moves) - 1]     # the tablebase probe's generator
    gives_check(T, bb, squares, st, move)
    see_ge(T, bb, squares, int(board.side), move, -100)
    probe_wdl(T, S.tb, S.bbs, S.boards, S.sts, S.moves, 0, S.tb_scratch)


def warm_position_command():
    """What `position ... moves` and `d` run: a move made on a board outside the search, its key."""
    from quantfish.core.fen import parse_fen
    from quantfish.core.notation import parse_uci_move, push
    from quantfish.search.driver import board_key
    board = parse_fen(WARM_FEN)
    board_key(push(board, parse_uci_move(board, "e1g1", False)))


def warm_beside_search(T, net, small_net=None):
    """What the commands around the search run: a move made outside it, perft, the `eval` report."""
    from quantfish.core.fen import parse_fen
    from quantfish.core.perft import perft_divide
    from quantfish.nnue.formulas import eval_report
    warm_position_command()
    board = parse_fen(WARM_FEN)
    perft_divide(T, board.bb, board.board, board.st, 2, np.empty(256, np.int32), np.empty(256, np.int64))
    if small_net is not None:
        # A 17.1 pair: the search ran the two-net evaluation (one compiled search for every net); this
        # compiles the `eval` command's two-net report.
        from quantfish.nnue.formulas import eval_report_pair
        eval_report_pair(net, small_net, board.board, board.side, board.halfmove)
    else:
        eval_report(net, board.board, board.side, board.halfmove)
