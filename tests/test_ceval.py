"""The kernel's one-call evaluation (quantfish.nnue.kernel.ceval) gives exactly quantfish.nnue.stack's accumulators and outputs.

A random walk up and down a search stack (sibling moves, plies evaluated only sometimes so that updates span
several plies, null moves, king moves that need the refresh cache, a root left uncomputed) is evaluated twice:
by ``ceval.evaluate_c`` on one stack and by ``quantfish.nnue.stack.net_output`` (the Numba path, with its own refresh
cache) on another, in every kernel variant this CPU runs."""

import random

import chess
import numpy as np
import pytest
from numba import njit

from quantfish.nnue.kernel import ceval, loader as ckernel
from quantfish.nnue.accumulator import refresh
from quantfish.nnue.architecture import EVAL_CONTEXT_FIELDS
from quantfish.nnue.layers import bucket_of, make_scratch
from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty, side_to_move
from quantfish.nnue.stack import net_output, net_output_scheme
from tests.test_ckernel import cnet, kernel_lib, kf  # noqa: F401  (fixtures)
from tests.test_nnue_incremental import _new_game, _pick

STACK = 40


@njit(cache=True, nogil=True)
def _evaluate_c(kf, cx, ply, board, kw, kb, side, bucket):
    return ceval.evaluate_c(kf, cx, ply, board, kw, kb, side, bucket)


def _stack_and_context(cnet, arrays, qscheme=None):
    l1 = arrays.ft_bias.shape[0]
    stack = ckernel.make_cstack(l1, STACK)
    cache = ckernel.make_refresh_cache(arrays)
    scratch = ckernel.make_cscratch(l1)
    return stack, cache, scratch, ceval.context(cnet, stack, cache, scratch, qscheme)


def _king_move_above(stack, ply):
    """[(perspective, q)] where the walk back from ply meets, before any computed ply, a move of that
    perspective's king into ply q < ply: the accumulator both paths refresh there."""
    computed, dirty, ndirty = stack.computed, stack.dirty, stack.ndirty
    found = []
    for persp in range(2):
        q = ply
        while not computed[q][persp] and q > 0:
            if any(dirty[q][i][0] == persp * 8 + 6 for i in range(ndirty[q])):
                if q < ply:
                    found.append((persp, q))
                break
            q -= 1
    return found


def _refreshed(net, board, back, persp):
    """The accumulator and PSQT sums of ``persp`` from scratch, for ``board`` ``back`` moves earlier."""
    earlier = board.copy()
    for _ in range(back):
        earlier.pop()
    acc = np.zeros(net.ft_bias.shape[0], np.int16)
    psqt = np.zeros(net.ft_psqt.shape[1], np.int32)
    refresh(net, mailbox(earlier), persp, earlier.king(persp == 0), acc, psqt)
    return acc, psqt


def _walk(kf, net, cnet, scheme, seed, steps=500, games=4, buckets=None):
    """Random walks of a search stack; each evaluation by the kernel's one call and by ``quantfish.nnue.stack`` (Numba)
    on a second stack must agree, and so must every accumulator both have computed. ``kf`` may be a list of
    variants, which then take turns on the one context; ``buckets`` (a set) collects the stacks evaluated."""
    kfs = kf if isinstance(kf, list) else [kf]
    l1 = net.ft_bias.shape[0]
    c_stack, c_cache, c_scratch, cx = _stack_and_context(cnet, net, net.qscheme if scheme else None)  # kept alive
    n_stack = ckernel.make_cstack(l1, STACK)
    n_cache = ckernel.make_refresh_cache(net)
    n_scratch = make_scratch(l1)            # the Numba forward's buffers (its nnz list is longer)
    reference = net_output_scheme if scheme else net_output
    rng = random.Random(seed)
    evaluated = multi = refreshed = refreshed_above = 0
    for _ in range(games):
        board = _new_game(rng)
        for s in (c_stack, n_stack):
            s[2][:] = 0                      # a new root: nothing computed
        ply = 0
        for _ in range(steps):
            if ply < STACK - 2 and not board.is_game_over() and (ply == 0 or rng.random() < 0.6):
                ply += 1
                if rng.random() < 0.05 and not board.is_check():
                    board.push(chess.Move.null())
                    rows = []
                else:
                    move = _pick(board, rng)
                    rows = dirty_pieces(board, move)
                    board.push(move)
                for s in (c_stack, n_stack):
                    set_dirty(s[3], s[4], ply, rows)
                    s[2][ply] = 0
            else:
                board.pop()
                ply -= 1
            if rng.random() < 0.45:
                m = mailbox(board)
                kw, kb = board.king(chess.WHITE), board.king(chess.BLACK)
                side = side_to_move(board)
                bucket = bucket_of(len(board.piece_map()))
                if ply > 0 and not c_stack.computed[ply - 1].all():
                    multi += 1
                if any(row[0] & 7 == 6 for row in c_stack.dirty[ply][:c_stack.ndirty[ply]]):
                    refreshed += 1
                above = _king_move_above(c_stack, ply)
                got = _evaluate_c(kfs[evaluated % len(kfs)], cx, ply, m, kw, kb, side, bucket)
                if buckets is not None:
                    buckets.add(bucket)
                want = reference(net, n_stack, ply, m, kw, kb, side, bucket, n_scratch, n_cache)
                assert got == want, (board.fen(), ply)
                assert np.array_equal(m, mailbox(board))     # the Numba walk takes moves back on it and replays them
                assert c_stack.computed[ply].all()
                for persp, q in above:
                    # refreshed where the king moved, from the board of that ply, on both paths
                    assert c_stack.computed[q][persp] and n_stack.computed[q][persp], (board.fen(), ply, q)
                    acc, psqt = _refreshed(net, board, ply - q, persp)
                    assert np.array_equal(c_stack.acc[q][persp], acc)
                    assert np.array_equal(c_stack.psqt[q][persp], psqt)
                refreshed_above += len(above)
                for p in range(ply + 1):
                    if c_stack.computed[p].all() and n_stack.computed[p].all():
                        assert np.array_equal(c_stack.acc[p], n_stack.acc[p]), (board.fen(), p)
                        assert np.array_equal(c_stack.psqt[p], n_stack.psqt[p]), (board.fen(), p)
                evaluated += 1
    assert refreshed_above > 10
    return evaluated, multi, refreshed


def test_one_call_equals_the_stack_walk(kf, cnet, nnue_arrays):  # noqa: F811
    evaluated, multi, refreshed = _walk(kf, nnue_arrays, cnet, False, 1913)
    assert evaluated > 700 and multi > 100 and refreshed > 20


@pytest.mark.parametrize("name,rounding,resolution", [("range-row", "nearest", 255), ("dfp", "floor", 127),
                                                      ("sf", "nearest", 255)])
def test_one_call_equals_the_stack_walk_for_quantfish_nets(kf, tmp_path, name, rounding, resolution):  # noqa: F811
    """A Quantfish-format net: the context lists its scheme record and the kernel takes its forward pass."""
    from tests.test_quant_engine import _written
    from tests.test_quant_schemes import _net, _positions
    from quantfish.quant import calibrate, schemes
    fnet = _net()
    qnet = schemes.make(name, fnet, calibrate.collect(fnet, _positions(200, 3), min_per_stack=64), rounding,
                        resolution)
    net = _written(qnet, tmp_path / "net.qfnn")
    arrays = net.arrays()
    evaluated, multi, _ = _walk(kf, arrays, ckernel.make_cnet(net), True, 77, steps=300, games=2)
    assert evaluated > 200 and multi > 20


def _net_of_several_plans(tmp_path):
    """A Quantfish-format net whose stacks' records take different plans (how fc_0's input and the head are
    computed): stack 7 (the walks' first) shifts only, which is wrong for the others; stack 6 a calibrated
    record's multipliers (64-bit lanes in the SIMD heads, the general head in the scalar one); stack 5 the
    general head (a divisor); stack 4 too (a square limit of 2^31)."""
    from tests.test_quant_engine import _written
    from tests.test_quant_schemes import _net, _positions
    from quantfish.quant import calibrate, schemes
    from quantfish.nnue.requant import Q_DIV, Q_HI, Q_MUL, Q_SHIFT, S_AC0, S_AC1, S_SQR, S_SQR_LIMIT, S_X
    fnet = _net()
    qnet = schemes.make("range-row", fnet, calibrate.collect(fnet, _positions(200, 3), min_per_stack=64),
                        "nearest", 255)
    arrays = _written(qnet, tmp_path / "net.qfnn").arrays()
    qs = arrays.qscheme.copy()
    assert (qs[6, S_SQR, Q_MUL:Q_MUL + 15] != 1).any() and (qs[6, S_X, Q_MUL] != 1)
    for site, shift in ((S_X, 17), (S_SQR, 20), (S_AC0, 7), (S_AC1, 7)):
        qs[7, site, Q_MUL:Q_MUL + 32] = 1
        qs[7, site, Q_SHIFT] = shift
    qs[5, S_AC1, Q_DIV] = 3
    qs[4, S_SQR_LIMIT, Q_HI:Q_HI + 16] = 2 ** 31
    return arrays._replace(qscheme=qs)


def test_one_call_keeps_each_stacks_own_plan(kf, tmp_path):  # noqa: F811
    """The context keeps each layer stack's plan from the stack's first evaluation on: a plan used for
    another stack than its own would not give the Numba path's integers."""
    arrays = _net_of_several_plans(tmp_path)
    buckets = set()
    evaluated, _, _ = _walk(kf, arrays, ckernel.make_cnet(arrays), True, 79, buckets=buckets)
    assert evaluated > 500 and {5, 6, 7} <= buckets, buckets


def test_one_call_plans_are_the_variants_own(kernel_lib, tmp_path):  # noqa: F811
    """Every variant this CPU runs takes turns on one context: each must decide its own plans (the scalar head
    has no 64-bit sites, so the SIMD variants' plan for stack 6 is wrong for it)."""
    arrays = _net_of_several_plans(tmp_path)
    variants = [ckernel.kernel_funcs(kernel_lib, v) for v in ckernel.usable_variants(kernel_lib)]
    assert len(variants) >= 2, ckernel.usable_variants(kernel_lib)
    buckets = set()
    evaluated, _, _ = _walk(variants, arrays, ckernel.make_cnet(arrays), True, 80, buckets=buckets)
    assert evaluated > 500 and 6 in buckets, buckets


def test_one_call_reads_each_stacks_own_saturating_groups(kf, tmp_path):  # noqa: F811
    """Without VNNI a 0..255 net's fc_0 takes vpmaddubsw on the groups its stack's map leaves unmarked
    (``ckernel.fc0_saturating_groups``). Here stack 0's weights are small (nothing marked) and the others' span
    int8 (nearly every group marked): a stack read with another's map would saturate on the common buckets."""
    from tests.test_quant_engine import _written
    from tests.test_quant_schemes import _net, _positions
    from quantfish.quant import calibrate, schemes
    fnet = _net()
    qnet = schemes.make("sf", fnet, calibrate.collect(fnet, _positions(200, 3), min_per_stack=64), "nearest", 255)
    arrays = _written(qnet, tmp_path / "net.qfnn").arrays()
    rng = np.random.default_rng(11)
    w0 = rng.integers(-128, 127, size=arrays.w0.shape, endpoint=True).astype(np.int8)
    w0[0] = rng.integers(-40, 40, size=w0[0].shape, endpoint=True)
    arrays = arrays._replace(w0=w0, w0t=np.ascontiguousarray(w0.transpose(0, 2, 1)))
    cnet = ckernel.make_cnet(arrays)
    marked = np.unpackbits(cnet.fc0_sat, axis=1).sum(axis=1)
    assert marked[0] == 0 and (marked[1:] > cnet.w0g.shape[1] // 2).all(), marked
    evaluated, _, _ = _walk(kf, arrays, cnet, True, 78, steps=300, games=2)
    assert evaluated > 200


def test_context_lists_every_field_and_checks_widths(cnet, nnue_arrays):  # noqa: F811
    stack, cache, scratch, cx = _stack_and_context(cnet, nnue_arrays)
    assert cx.shape == (len(EVAL_CONTEXT_FIELDS),) and cx.dtype == np.int64
    field = {name: int(cx[i]) for i, name in enumerate(EVAL_CONTEXT_FIELDS)}
    assert field["acc"] == stack.acc.ctypes.data and field["ndirty"] == stack.ndirty.ctypes.data
    assert field["cache_boards"] == cache[2].ctypes.data and field["work"] == scratch[2].ctypes.data
    assert field["l1"] == nnue_arrays.ft_bias.shape[0] and field["nb"] == 8 and field["ft_shift"] == 0
    assert field["qscheme"] == 0
    small = ckernel.make_cstack(128, STACK)
    with pytest.raises(ValueError, match="different widths"):
        ceval.context(cnet, small, cache, scratch)
    with pytest.raises(ValueError, match="scheme record of shape"):
        ceval.context(cnet, stack, cache, scratch, np.zeros((8, 3, 68), np.int64))


def test_the_search_takes_the_one_call_path_on_the_c_kernel(nnue_net):
    from quantfish.search.driver import Searcher
    k = ckernel.load_kernel("auto")
    if not k.is_c:
        pytest.fail(f"no C kernel: {k.reason}")
    assert Searcher(nnue_net, 1, kernel=k).eval_mode["one_call"]
    assert not Searcher(nnue_net, 1, kernel=ckernel.load_kernel("numba")).eval_mode["one_call"]
