"""One layer-stack pass of several nets side by side on the C kernel: time a call, and its ratio to the first net's.

    python -m tools.forward_speed NET [NET ...] [--rounds 30] [--positions 300] [--variant avx2]

NET is a net file, or ``default`` for the net Quantfish loads by itself. The accumulators of the first reference
positions (``tools.kernel_bench.reference_positions``) are computed once per net; each round times 20 passes
over them for every net, the nets taking turns, so that a machine whose speed drifts slows them alike. A
Quantfish-format net takes its scheme's pass (``forward_scheme``), a Stockfish net the plain one (``forward``).
Prints, per net, its median time a call and the median of the per-round ratios to the first net's. What a
search pays for the pass is ``tools.net_speed``'s to say: this times the pass alone.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.net import NetFileError
from quantfish.nnue.io import load_net
from quantfish.nnue.loader import resolve_main_path
from tools.kernel_bench import loop_forward_c, loop_forward_scheme_c, reference_positions

PASSES = 20     # passes over the positions a net makes in one round


def _timer(kf, path, positions):
    """A function of a pass count that runs that many passes of the net at ``path`` over its positions."""
    net = load_net(resolve_main_path(None if path == "default" else path))
    arrays = net.arrays()
    cnet = ckernel.make_cnet(arrays)
    acc, psqt, sides, buckets, _, _ = reference_positions(arrays, positions)
    scratch = ckernel.make_cscratch(arrays.ft_bias.shape[0])
    if net.scheme is None:
        return acc.shape[0], lambda reps: loop_forward_c(kf, cnet, acc, psqt, sides, buckets, reps, scratch)
    return acc.shape[0], lambda reps: loop_forward_scheme_c(kf, cnet, arrays, acc, psqt, sides, buckets, reps,
                                                            scratch)


def measure(nets, rounds=30, positions=300, variant=None):
    """[(net, median ns a call, median ratio to the first net's)], the nets alternating round by round."""
    kernel = ckernel.load_kernel("c", variant=variant, require=True)
    timers = [_timer(kernel.funcs, path, positions) for path in nets]
    for _, run in timers:       # compiled and warm before anything is timed
        run(1)
    times = [[] for _ in nets]
    for _ in range(rounds):
        for k, (count, run) in enumerate(timers):
            start = time.perf_counter()
            run(PASSES)
            times[k].append((time.perf_counter() - start) / (PASSES * count) * 1e9)
    return [(path, statistics.median(t), statistics.median(a / b for a, b in zip(t, times[0])))
            for path, t in zip(nets, times)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Time one layer-stack pass of several nets on the C kernel.")
    ap.add_argument("nets", nargs="+", help="net files, or 'default'")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--positions", type=int, default=300)
    ap.add_argument("--variant", default=None, help="C kernel variant (default: the best this CPU runs)")
    args = ap.parse_args(argv)
    try:
        rows = measure(args.nets, args.rounds, args.positions, args.variant)
    except (OSError, NetFileError, ckernel.KernelUnavailable) as exc:
        print(f"forward_speed: {exc}", file=sys.stderr)
        return 1
    for path, ns, ratio in rows:
        print(f"{path:40s} {ns:8.1f} ns a call   / first {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
