"""Two-net search stacks: incremental accumulators equal a refresh for both 17.1 nets, and ``evaluate_pair``
(lazy, incremental, updating only the net(s) it uses) equals a from-scratch evaluation."""

import random
from collections import Counter

import chess
import numpy as np

from quantfish.nnue.accumulator import make_pair_stacks, make_stack, refresh
from quantfish.nnue.stack import ensure_accumulator
from quantfish.nnue.formulas import bitboards, eval_report_pair, evaluate_pair, material_17
from quantfish.nnue.layers import make_scratch
from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty, side_to_move
from tests.test_nnue_incremental import _move_kinds, _pick

MAX_PLY = 48

# Starts with large material imbalances (so the small net is used) as well as balanced ones.
STARTS = [
    chess.STARTING_FEN,
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1",
    "4k3/1P4p1/8/2pP4/8/8/1p4P1/4K3 w - c6 0 1",
    "1n2k1n1/P6P/8/8/8/8/p6p/1N2K1N1 w - - 0 1",
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/RN1QKBNR w KQkq - 0 1",       # White a queen and more up
    "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",        # Black up
    "4k3/8/8/8/8/8/PPPPPPPP/R3K2R w KQ - 0 1",
]


def _new_game(rng):
    board = chess.Board(rng.choice(STARTS))
    for _ in range(rng.randrange(0, 4)):
        board.push(rng.choice(list(board.legal_moves)))
    return board


def _check_both(nets, stacks, ply, board, refs):
    m = mailbox(board)
    kw, kb = board.king(chess.WHITE), board.king(chess.BLACK)
    for net, (acc, psqt, computed, dirty, ndirty), (ref_acc, ref_psqt) in zip(nets, stacks, refs):
        ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, ply, m, kw, kb)
        for persp, k in ((0, kw), (1, kb)):
            refresh(net, m, persp, k, ref_acc, ref_psqt)
            assert np.array_equal(acc[ply, persp], ref_acc), (board.fen(), ply, persp, acc.shape[2])
            assert np.array_equal(psqt[ply, persp], ref_psqt), (board.fen(), ply, persp, acc.shape[2])


def test_pair_stacks_share_the_move_record():
    big, small = make_pair_stacks(3072, 128, 8)
    assert big[3] is small[3] and big[4] is small[4]
    assert big[0].shape == (8, 2, 3072) and small[0].shape == (8, 2, 128)
    assert big[2] is not small[2]


def test_incremental_equals_refresh_for_both_nets(nnue17_pair):
    nets = tuple(n.arrays() for n in nnue17_pair)
    rng = random.Random(1717)
    stacks = make_pair_stacks(3072, 128, MAX_PLY)
    dirty, ndirty = stacks[0][3], stacks[0][4]
    refs = [(np.zeros(l1, np.int16), np.zeros(8, np.int32)) for l1 in (3072, 128)]
    kinds = Counter()
    plies = 0
    while plies < 1200:
        board = _new_game(rng)
        for s in stacks:
            s[2][:] = 0
        _check_both(nets, stacks, 0, board, refs)
        ply = 0
        while not board.is_game_over() and plies < 1200 and ply + 1 < MAX_PLY:
            move = _pick(board, rng)
            kinds.update(k for k, _ in _move_kinds(board, move))
            rows = dirty_pieces(board, move)
            board.push(move)
            ply += 1
            set_dirty(dirty, ndirty, ply, rows)
            for s in stacks:
                s[2][ply] = 0
            if rng.random() < 0.6 or board.is_game_over():     # sometimes skip plies: multi-ply updates
                _check_both(nets, stacks, ply, board, refs)
            plies += 1
    for kind in ("castle-K", "castle-Q", "ep", "promo", "promo-capture", "capture", "king", "king-crosses-d/e"):
        assert kinds[kind] > 0, kind


def test_evaluate_pair_lazy_and_incremental(nnue17_pair):
    """A random walk like a search (down, up, null moves): evaluate_pair on the incremental stacks equals the
    report's from-scratch value; only the net(s) it needs get computed at that ply."""
    big, small = nnue17_pair.arrays()
    rng = random.Random(99)
    stacks = make_pair_stacks(3072, 128, MAX_PLY)
    dirty, ndirty = stacks[0][3], stacks[0][4]
    sb, ss = make_scratch(3072), make_scratch(128)
    used = Counter()
    for _ in range(10):
        board = _new_game(rng)
        for s in stacks:
            s[2][:] = 0
        ply = 0
        for _ in range(150):
            if ply < 30 and not board.is_game_over() and (ply == 0 or rng.random() < 0.6):
                ply += 1
                if rng.random() < 0.05 and not board.is_check():
                    board.push(chess.Move.null())
                    set_dirty(dirty, ndirty, ply, [])
                else:
                    move = _pick(board, rng)
                    rows = dirty_pieces(board, move)
                    board.push(move)
                    set_dirty(dirty, ndirty, ply, rows)
                for s in stacks:
                    s[2][ply] = 0
            else:
                board.pop()
                ply -= 1
            if rng.random() < 0.5:
                continue
            m = mailbox(board)
            side = side_to_move(board)
            r50 = board.halfmove_clock
            opt = rng.choice((0, 37, -120))
            before = [s[2][ply].copy() for s in stacks]
            v = evaluate_pair(big, small, stacks[0], stacks[1], ply, m, bitboards(m),
                              board.king(chess.WHITE), board.king(chess.BLACK), side, r50, opt, sb, ss)
            rep = eval_report_pair(big, small, m, side, r50, opt)
            assert v == rep.final, board.fen()
            simple = material_17(m, side)[1]
            big_needed = abs(simple) <= 962 or rep.reeval_big
            small_needed = abs(simple) > 962
            assert bool(stacks[0][2][ply].all()) == (big_needed or bool(before[0].all()))
            assert bool(stacks[1][2][ply].all()) == (small_needed or bool(before[1].all()))
            used[rep.used_net] += 1
            used["reeval"] += rep.reeval_big
    assert used["big"] > 50 and used["small"] > 50 and used["reeval"] > 0, used


def test_single_stack_interface_unchanged_for_17_nets(nnue17_pair):
    """ensure_accumulator / make_stack / make_scratch work for a 17.1 net exactly as for 15.1."""
    small = nnue17_pair.small.arrays()
    acc, psqt, computed, dirty, ndirty = make_stack(128, 4)
    board = chess.Board()
    m = mailbox(board)
    ensure_accumulator(small, acc, psqt, computed, dirty, ndirty, 0, m, 4, 60)
    ref = np.zeros(128, np.int16), np.zeros(8, np.int32)
    refresh(small, m, 0, 4, *ref)
    assert np.array_equal(acc[0, 0], ref[0]) and computed[0].all()
    assert make_scratch(128)[0].shape == (128,)
