"""Incremental accumulators (search-stack interface) equal a full refresh at every ply of random games."""

import random
from collections import Counter

import chess
import numpy as np

from quantfish.nnue.accumulator import MAX_DIRTY, make_stack, refresh
from quantfish.nnue.stack import ensure_accumulator, refresh_ply
from quantfish.nnue.formulas import evaluate
from quantfish.nnue.layers import make_scratch
from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty, side_to_move

MAX_PLY = 64


def _move_kinds(board, move):
    kinds = []
    if board.is_castling(move):
        kinds.append(("castle-K" if board.is_kingside_castling(move) else "castle-Q", board.turn))
    if board.is_en_passant(move):
        kinds.append(("ep", board.turn))
    if move.promotion:
        kinds.append(("promo-capture" if board.is_capture(move) else "promo", board.turn))
    elif board.is_capture(move) and not board.is_en_passant(move):
        kinds.append(("capture", board.turn))
    if board.piece_type_at(move.from_square) == chess.KING:
        kinds.append(("king", board.turn))
        if (move.from_square & 7 < 4) != (move.to_square & 7 < 4) and not board.is_castling(move):
            kinds.append(("king-crosses-d/e", board.turn))
    return kinds


def _pick(board, rng):
    """A random legal move, biased towards castling, promotions and captures so all kinds occur."""
    moves = list(board.legal_moves)
    special = [m for m in moves if board.is_castling(m) or m.promotion or board.is_en_passant(m)]
    if special and rng.random() < 0.7:
        return rng.choice(special)
    captures = [m for m in moves if board.is_capture(m)]
    if captures and rng.random() < 0.3:
        return rng.choice(captures)
    return rng.choice(moves)


def _check_ply(net, stack, ply, board, ref_acc, ref_psqt):
    acc, psqt, computed, dirty, ndirty = stack
    m = mailbox(board)
    kw, kb = board.king(chess.WHITE), board.king(chess.BLACK)
    ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, ply, m, kw, kb)
    assert computed[ply, 0] == 1 and computed[ply, 1] == 1
    for persp, k in ((0, kw), (1, kb)):
        refresh(net, m, persp, k, ref_acc, ref_psqt)
        assert np.array_equal(acc[ply, persp], ref_acc), (board.fen(), ply, persp)
        assert np.array_equal(psqt[ply, persp], ref_psqt), (board.fen(), ply, persp)


STARTS = [
    chess.STARTING_FEN,
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1",   # castling both wings
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 0 1",
    "4k3/1P4p1/8/2pP4/8/8/1p4P1/4K3 w - c6 0 1",                              # promotions, en passant
    "1n2k1n1/P6P/8/8/8/8/p6p/1N2K1N1 w - - 0 1",                              # capture-promotions
]


def _new_game(rng):
    board = chess.Board(rng.choice(STARTS))
    for _ in range(rng.randrange(0, 6)):      # vary the openings a little
        board.push(rng.choice(list(board.legal_moves)))
    return board


def test_incremental_equals_refresh_along_games(nnue_arrays):
    """Linear games: ply = position in the game (wrapping the stack), checked at every ply."""
    net = nnue_arrays
    rng = random.Random(20240515)
    stack = make_stack(net.ft_bias.shape[0], MAX_PLY)
    acc, psqt, computed, dirty, ndirty = stack
    ref_acc = np.zeros(net.ft_bias.shape[0], np.int16)
    ref_psqt = np.zeros(8, np.int32)
    kinds = Counter()
    plies = 0
    while plies < 3000:
        board = _new_game(rng)
        computed[:] = 0
        _check_ply(net, stack, 0, board, ref_acc, ref_psqt)
        ply = 0
        while not board.is_game_over() and plies < 3000:
            move = _pick(board, rng)
            kinds.update(_move_kinds(board, move))
            rows = dirty_pieces(board, move)
            assert 1 <= len(rows) <= MAX_DIRTY
            board.push(move)
            if ply + 1 == MAX_PLY:                # stack full: restart from a refreshed root
                ply = 0
                computed[0] = 0
                _check_ply(net, stack, 0, board, ref_acc, ref_psqt)
                continue
            ply += 1
            set_dirty(dirty, ndirty, ply, rows)
            computed[ply] = 0
            _check_ply(net, stack, ply, board, ref_acc, ref_psqt)
            plies += 1
    for kind in ("castle-K", "castle-Q", "ep", "promo", "promo-capture", "capture", "king", "king-crosses-d/e"):
        for colour in (chess.WHITE, chess.BLACK):
            assert kinds[(kind, colour)] > 0, f"no {kind} by {'white' if colour else 'black'} in the games"


def test_lazy_update_in_a_search_tree(nnue_arrays):
    """A random walk up and down the stack like a search: unmake, sibling moves, plies evaluated only
    sometimes (so updates span several plies), null moves; also evaluate() equals a from-scratch eval."""
    net = nnue_arrays
    l1 = net.ft_bias.shape[0]
    rng = random.Random(7)
    stack = make_stack(l1, MAX_PLY)
    acc, psqt, computed, dirty, ndirty = stack
    ref_stack = make_stack(l1, 1)
    ref_acc = np.zeros(l1, np.int16)
    ref_psqt = np.zeros(8, np.int32)
    scratch = make_scratch(l1)
    steps = evaluated = multi = 0
    for _ in range(6):
        board = _new_game(rng)
        computed[:] = 0
        refresh_ply(net, acc, psqt, computed, 0, mailbox(board))
        ply = 0
        for _ in range(700):
            steps += 1
            go_down = ply < 24 and not board.is_game_over() and (ply == 0 or rng.random() < 0.6)
            if go_down:
                ply += 1
                if rng.random() < 0.03 and not board.is_check():
                    board.push(chess.Move.null())
                    set_dirty(dirty, ndirty, ply, [])
                else:
                    move = _pick(board, rng)
                    rows = dirty_pieces(board, move)
                    board.push(move)
                    set_dirty(dirty, ndirty, ply, rows)
                computed[ply] = 0
            else:
                board.pop()
                ply -= 1
            if rng.random() < 0.4:
                if ply > 0 and not computed[ply - 1].all():
                    multi += 1
                _check_ply(net, stack, ply, board, ref_acc, ref_psqt)
                m = mailbox(board)
                side = side_to_move(board)
                v = evaluate(net, acc, psqt, ply, side, m, board.halfmove_clock, 0, scratch)
                refresh_ply(net, ref_stack.acc, ref_stack.psqt, ref_stack.computed, 0, m)
                assert v == evaluate(net, ref_stack.acc, ref_stack.psqt, 0, side, m, board.halfmove_clock, 0, scratch)
                evaluated += 1
    assert evaluated > 1000 and multi > 100
