"""Micro-benchmark of the NNUE hot paths: Numba path against every C kernel variant this CPU runs.

    python -m tools.kernel_bench [--net PATH] [--runs 5] [--positions 300] [--variants avx512vnni,avx2]

Per path it prints, as the median of ``--runs`` short runs (timed loops run inside compiled code):
* forward : layer-stack passes per second (transform + non-zero groups + sparse fc_0 + fc_1/fc_2) on the
            accumulators of real positions (the first rows of the 15.1 reference data);
* update  : incremental accumulator updates per second, one move for one perspective (src -> dst with the
            move's 1-3 removed/added features), along random games (king moves of the perspective excluded);
* refresh : full refreshes of one perspective per second (all pieces);
* cached  : refreshes through the refresh cache (king-square entries; successive positions of games);
* eval    : lazy update of both perspectives + forward at every ply of games (what a search node costs;
            refresh when the perspective's king moved), and eval+cache: the same with the refresh cache;
and the cost of one call from compiled code into the library (a C function that returns at once).
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
import time
from pathlib import Path

import chess
import numpy as np

from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.accumulator import make_stack, refresh, update
from quantfish.runtime.jit import njit
from quantfish.nnue.stack import ensure_accumulator, refresh_ply
from quantfish.nnue.layers import forward, make_scratch
from quantfish.nnue.io import load_net
from quantfish.nnue.loader import resolve_main_path
from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty, side_to_move

TSV = Path(__file__).resolve().parent.parent / "tests" / "data" / "nnue" / "sf15.1_reference.tsv"
STACK = ckernel.make_cstack     # accumulator stacks for every path (--numpy-stacks: accumulator.make_stack)


# ---------------------------------------------------------------------------------------------------------
# Timed loops (compiled, cached)
# ---------------------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def loop_forward_numba(net, acc, psqt, sides, buckets, reps, scratch):
    s = 0
    for _ in range(reps):
        for i in range(acc.shape[0]):
            p, q = forward(net, acc, psqt, i, sides[i], buckets[i], scratch)
            s += p + q
    return s


@njit(cache=True, nogil=True)
def loop_forward_c(kf, cnet, acc, psqt, sides, buckets, reps, scratch):
    s = 0
    for _ in range(reps):
        for i in range(acc.shape[0]):
            p, q = ckernel.forward_c(kf, cnet, acc, psqt, i, sides[i], buckets[i], scratch)
            s += p + q
    return s


@njit(cache=True, nogil=True)
def loop_forward_scheme_c(kf, cnet, net, acc, psqt, sides, buckets, reps, scratch):
    """``loop_forward_c`` for a Quantfish-format net (``net`` its ``Net.arrays()``): its scheme's pass."""
    s = 0
    for _ in range(reps):
        for i in range(acc.shape[0]):
            p, q = ckernel.forward_scheme_c(kf, cnet, net, acc, psqt, i, sides[i], buckets[i], scratch)
            s += p + q
    return s


@njit(cache=True, nogil=True)
def loop_update_numba(net, plies, persps, ksqs, dirty, ndirty, acc, psqt, reps):
    for _ in range(reps):
        for t in range(plies.shape[0]):
            p = plies[t]
            c = persps[t]
            update(net, c, ksqs[t], dirty[p], ndirty[p], acc[p - 1, c], acc[p, c], psqt[p - 1, c], psqt[p, c])
    return acc[plies[-1], 0, 0]


@njit(cache=True, nogil=True)
def loop_update_c(kf, cnet, plies, persps, ksqs, dirty, ndirty, acc, psqt, reps, scratch):
    for _ in range(reps):
        for t in range(plies.shape[0]):
            p = plies[t]
            c = persps[t]
            ckernel.update_c(kf, cnet, c, ksqs[t], dirty[p], ndirty[p], acc[p - 1, c], acc[p, c], psqt[p - 1, c],
                             psqt[p, c], scratch)
    return acc[plies[-1], 0, 0]


@njit(cache=True, nogil=True)
def loop_refresh_numba(net, boards, kings, acc, psqt, reps):
    for _ in range(reps):
        for i in range(boards.shape[0]):
            for c in range(2):
                refresh(net, boards[i], c, kings[i, c], acc[c], psqt[c])
    return acc[0, 0]


@njit(cache=True, nogil=True)
def loop_refresh_c(kf, cnet, boards, kings, acc, psqt, reps, scratch):
    for _ in range(reps):
        for i in range(boards.shape[0]):
            for c in range(2):
                ckernel.refresh_c(kf, cnet, boards[i], c, kings[i, c], acc[c], psqt[c], scratch)
    return acc[0, 0]


@njit(cache=True, nogil=True)
def loop_cached_numba(net, cache, boards, kings, acc, psqt, reps, scratch):
    for _ in range(reps):
        for i in range(boards.shape[0]):
            for c in range(2):
                ckernel.refresh_cached(net, cache, boards[i], c, kings[i, c], acc[c], psqt[c], scratch)
    return acc[0, 0]


@njit(cache=True, nogil=True)
def loop_cached_c(kf, cnet, cache, boards, kings, acc, psqt, reps, scratch):
    for _ in range(reps):
        for i in range(boards.shape[0]):
            for c in range(2):
                ckernel.refresh_cached_c(kf, cnet, cache, boards[i], c, kings[i, c], acc[c], psqt[c], scratch)
    return acc[0, 0]


@njit(cache=True, nogil=True)
def loop_eval_numba(net, boards, kings, sides, buckets, dirty, ndirty, acc, psqt, computed, reps, scratch):
    s = 0
    for _ in range(reps):
        refresh_ply(net, acc, psqt, computed, 0, boards[0])
        for p in range(1, boards.shape[0]):
            computed[p, 0] = 0
            computed[p, 1] = 0
            ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1])
            a, b = forward(net, acc, psqt, p, sides[p], buckets[p], scratch)
            s += a + b
    return s


@njit(cache=True, nogil=True)
def loop_eval_numba_cached(net, cache, boards, kings, sides, buckets, dirty, ndirty, acc, psqt, computed, reps,
                           scratch):
    s = 0
    for _ in range(reps):
        refresh_ply(net, acc, psqt, computed, 0, boards[0])
        for p in range(1, boards.shape[0]):
            computed[p, 0] = 0
            computed[p, 1] = 0
            ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1],
                               scratch, cache)
            a, b = forward(net, acc, psqt, p, sides[p], buckets[p], scratch)
            s += a + b
    return s


@njit(cache=True, nogil=True)
def loop_eval_c(net, kf, cnet, cache, use_cache, boards, kings, sides, buckets, dirty, ndirty, acc, psqt, computed,
                reps, scratch):
    s = 0
    for _ in range(reps):
        refresh_ply(net, acc, psqt, computed, 0, boards[0], scratch, kf, cnet)
        for p in range(1, boards.shape[0]):
            computed[p, 0] = 0
            computed[p, 1] = 0
            if use_cache:
                ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1],
                                   scratch, cache, kf, cnet)
            else:
                ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1],
                                   scratch, None, kf, cnet)
            a, b = ckernel.forward_c(kf, cnet, acc, psqt, p, sides[p], buckets[p], scratch)
            s += a + b
    return s


@njit(cache=True, nogil=True)
def loop_call_overhead(kf, x, nnz, n):
    s = 0
    for i in range(n):
        s += kf.find_nnz(x.ctypes, 0, nnz.ctypes)     # l1 = 0: the function returns at once
    return s


# ---------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------

def reference_positions(arrays, n):
    """Accumulators (ply = position), sides and buckets of the first ``n`` reference positions."""
    with open(TSV) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))[:n]
    l1 = arrays.ft_bias.shape[0]
    acc, psqt, computed, _, _ = STACK(l1, len(rows))
    sides = np.zeros(len(rows), np.int64)
    buckets = np.zeros(len(rows), np.int64)
    boards = np.zeros((len(rows), 64), np.int8)
    kings = np.zeros((len(rows), 2), np.int64)
    for i, r in enumerate(rows):
        board = chess.Board(r["fen"])
        boards[i] = mailbox(board)
        refresh_ply(arrays, acc, psqt, computed, i, boards[i])
        sides[i] = side_to_move(board)
        buckets[i] = int(r["bucket"])
        kings[i] = [int(np.nonzero(boards[i] == 6)[0][0]), int(np.nonzero(boards[i] == 14)[0][0])]
    return acc, psqt, sides, buckets, boards, kings


def games(n_games, plies, seed=7):
    rng = random.Random(seed)
    out = []
    for _ in range(n_games):
        board = chess.Board()
        boards, kings, sides = [mailbox(board)], [(board.king(True), board.king(False))], [0]
        _, _, _, dirty, ndirty = make_stack(8, plies + 1)
        for p in range(1, plies + 1):
            moves = list(board.legal_moves)
            if not moves or board.is_insufficient_material():
                break
            move = rng.choice(moves)
            set_dirty(dirty, ndirty, p, dirty_pieces(board, move))
            board.push(move)
            boards.append(mailbox(board))
            kings.append((board.king(True), board.king(False)))
            sides.append(0 if board.turn else 1)
        n = len(boards)
        b = np.array(boards, np.int8)
        pieces = (b != 0).sum(axis=1)
        out.append((b, np.array(kings, np.int64), np.array(sides, np.int64), (pieces - 1) // 4, dirty[:n].copy(),
                    ndirty[:n].copy()))
    return out


def median_rate(fn, count, runs):
    rates = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        rates.append(count / (time.perf_counter() - t))
    return statistics.median(rates)


# ---------------------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description="NNUE kernel micro-benchmark: Numba path vs C kernel variants.")
    ap.add_argument("--net", default=None)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--positions", type=int, default=300)
    ap.add_argument("--games", type=int, default=6)
    ap.add_argument("--plies", type=int, default=100)
    ap.add_argument("--variants", default=None, help="comma-separated C variants (default: all usable)")
    ap.add_argument("--numpy-stacks", action="store_true",
                    help="accumulator stacks from accumulator.make_stack (rows not 64-byte aligned)")
    args = ap.parse_args(argv)
    global STACK
    if args.numpy_stacks:
        STACK = make_stack

    net = load_net(resolve_main_path(args.net))
    arrays = net.arrays()
    l1 = arrays.ft_bias.shape[0]
    try:
        lib = ckernel.load_library()
        usable = ckernel.usable_variants(lib)
    except ckernel.KernelUnavailable as exc:
        print(f"C kernel unavailable: {exc}")
        lib, usable = None, []
    variants = args.variants.split(",") if args.variants else usable
    cnet_al = ckernel.make_cnet(arrays, align_ft=True)
    cnet = ckernel.make_cnet(arrays, align_ft=False)

    acc, psqt, sides, buckets, boards, kings = reference_positions(arrays, args.positions)
    npos = acc.shape[0]
    scratch = make_scratch(l1)
    cscratch = ckernel.make_cscratch(l1)
    gl = games(args.games, args.plies)

    # update workload: (ply, perspective) pairs whose perspective's king did not move
    upd = []
    for g, (b, k, s, bk, d, nd) in enumerate(gl):
        plies, persps, ksqs = [], [], []
        for p in range(1, b.shape[0]):
            for c in range(2):
                if not any(d[p, i, 0] == c * 8 + 6 for i in range(nd[p])):
                    plies.append(p)
                    persps.append(c)
                    ksqs.append(k[p, c])
        upd.append((np.array(plies, np.int64), np.array(persps, np.int64), np.array(ksqs, np.int64), d, nd,
                    STACK(l1, b.shape[0])))
        acc_g, psqt_g = upd[-1][5][0], upd[-1][5][1]
        for p in range(b.shape[0]):
            for c in range(2):
                refresh(arrays, b[p], c, k[p, c], acc_g[p, c], psqt_g[p, c])
    n_upd = sum(u[0].shape[0] for u in upd)
    all_boards = np.concatenate([g[0] for g in gl])
    all_kings = np.concatenate([g[1] for g in gl])
    n_ref = all_boards.shape[0] * 2
    n_eval = sum(g[0].shape[0] - 1 for g in gl)
    racc = np.zeros((2, l1), np.int16)
    rpsqt = np.zeros((2, 8), np.int32)
    reps_fwd = max(1, 20000 // npos)
    reps_upd = max(1, 40000 // max(n_upd, 1))
    reps_ref = max(1, 4000 // n_ref)
    reps_eval = max(1, 10000 // max(n_eval, 1))

    def run_eval(fn):
        for b, k, s, bk, d, nd in gl:
            a2, p2, c2, _, _ = STACK(l1, b.shape[0])
            fn(b, k, s, bk, d, nd, a2, p2, c2)

    results = {}
    # ---- Numba path
    loop_forward_numba(arrays, acc, psqt, sides, buckets, 1, scratch)
    r = {"forward": median_rate(lambda: loop_forward_numba(arrays, acc, psqt, sides, buckets, reps_fwd, scratch),
                                npos * reps_fwd, args.runs)}
    for u in upd:
        loop_update_numba(arrays, u[0][:1], u[1][:1], u[2][:1], u[3], u[4], u[5][0], u[5][1], 1)
    r["update"] = median_rate(lambda: [loop_update_numba(arrays, u[0], u[1], u[2], u[3], u[4], u[5][0], u[5][1],
                                                         reps_upd) for u in upd], n_upd * reps_upd, args.runs)
    loop_refresh_numba(arrays, all_boards[:1], all_kings[:1], racc, rpsqt, 1)
    r["refresh"] = median_rate(lambda: loop_refresh_numba(arrays, all_boards, all_kings, racc, rpsqt, reps_ref),
                               n_ref * reps_ref, args.runs)
    cache = ckernel.make_refresh_cache(arrays)
    loop_cached_numba(arrays, cache, all_boards[:1], all_kings[:1], racc, rpsqt, 1, cscratch)
    r["cached"] = median_rate(lambda: loop_cached_numba(arrays, cache, all_boards, all_kings, racc, rpsqt, reps_ref,
                                                        cscratch), n_ref * reps_ref, args.runs)
    ev = lambda b, k, s, bk, d, nd, a2, p2, c2: loop_eval_numba(arrays, b, k, s, bk, d, nd, a2, p2, c2, reps_eval,
                                                                 scratch)
    run_eval(ev)
    r["eval"] = median_rate(lambda: run_eval(ev), n_eval * reps_eval, args.runs)
    cache = ckernel.make_refresh_cache(arrays)
    evn = lambda b, k, s, bk, d, nd, a2, p2, c2: loop_eval_numba_cached(arrays, cache, b, k, s, bk, d, nd, a2, p2,
                                                                        c2, reps_eval, scratch)
    run_eval(evn)
    r["eval+cache"] = median_rate(lambda: run_eval(evn), n_eval * reps_eval, args.runs)
    results["numba"] = r

    # ---- C variants
    overhead = None
    for v in variants:
        kf = ckernel.kernel_funcs(lib, v)
        for label, cn in ((f"c-{v}", cnet_al), (f"c-{v} (FT not aligned)", cnet)):
            if label.endswith("aligned)") and v != variants[0]:
                continue
            loop_forward_c(kf, cn, acc, psqt, sides, buckets, 1, cscratch)
            r = {"forward": median_rate(lambda: loop_forward_c(kf, cn, acc, psqt, sides, buckets, reps_fwd,
                                                               cscratch), npos * reps_fwd, args.runs)}
            for u in upd:
                loop_update_c(kf, cn, u[0][:1], u[1][:1], u[2][:1], u[3], u[4], u[5][0], u[5][1], 1, cscratch)
            r["update"] = median_rate(lambda: [loop_update_c(kf, cn, u[0], u[1], u[2], u[3], u[4], u[5][0], u[5][1],
                                                             reps_upd, cscratch) for u in upd],
                                      n_upd * reps_upd, args.runs)
            loop_refresh_c(kf, cn, all_boards[:1], all_kings[:1], racc, rpsqt, 1, cscratch)
            r["refresh"] = median_rate(lambda: loop_refresh_c(kf, cn, all_boards, all_kings, racc, rpsqt, reps_ref,
                                                              cscratch), n_ref * reps_ref, args.runs)
            cache = ckernel.make_refresh_cache(cn)
            loop_cached_c(kf, cn, cache, all_boards[:1], all_kings[:1], racc, rpsqt, 1, cscratch)
            r["cached"] = median_rate(lambda: loop_cached_c(kf, cn, cache, all_boards, all_kings, racc, rpsqt,
                                                            reps_ref, cscratch), n_ref * reps_ref, args.runs)
            for col, use_cache in (("eval", False), ("eval+cache", True)):
                cache = ckernel.make_refresh_cache(cn)
                evc = lambda b, k, s, bk, d, nd, a2, p2, c2: loop_eval_c(arrays, kf, cn, cache, use_cache, b, k, s,
                                                                        bk, d, nd, a2, p2, c2, reps_eval, cscratch)
                run_eval(evc)
                r[col] = median_rate(lambda: run_eval(evc), n_eval * reps_eval, args.runs)
            results[label] = r
        if overhead is None:
            n = 2_000_000
            loop_call_overhead(kf, cscratch[0], cscratch[1], 10)
            overhead = 1e9 / median_rate(lambda: loop_call_overhead(kf, cscratch[0], cscratch[1], n), n, args.runs)

    print(f"net: {net.arch.describe()}; median of {args.runs} runs; {npos} positions, {len(gl)} random games "
          f"({n_eval} plies, {n_upd} single-perspective updates); accumulator stacks "
          f"{'from accumulator.make_stack' if args.numpy_stacks else '64-byte aligned (ckernel.make_cstack)'}")
    cols = ("forward", "update", "refresh", "cached", "eval", "eval+cache")
    print(f"{'path':28s}" + "".join(f"{c + '/s':>14s}" for c in cols) + "   (us per op)")
    base = results["numba"]
    for label, r in results.items():
        print(f"{label:28s}" + "".join(f"{r[c]:14,.0f}" for c in cols)
              + "   " + " ".join(f"{1e6 / r[c]:.2f}" for c in cols))
    for label, r in results.items():
        if label != "numba":
            print(f"speed-up {label:24s}" + "".join(f"{r[c] / base[c]:13.2f}x" for c in cols))
    if overhead is not None:
        print(f"one call from compiled code into the library: {overhead:.2f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
