"""Training speed: positions per second of full training steps (forward, loss, backward, Adam, clipping).

    python -m quantfish.train.speed [--l1 256] [--batch-size 16384] [--steps 8] [--threads 1] [--factoriser]
                                    [--data FILE ...]

Without ``--data``, positions come from python-chess random games (``quantfish.train.distill``; about 20 s for
16384), with random scores: the speed does not depend on the targets. With ``--data``, batches are streamed from
record files as a training run reads them, and decoding their features counts in the time. The first step
(Numba kernels loading) is not timed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def measure(l1: int = 256, batch_size: int = 16384, steps: int = 8, threads: int = 1, seed: int = 0,
            factoriser: bool = False, data=None) -> float:
    """Positions per second of ``steps`` training steps on batches of ``batch_size`` distinct positions (from
    the record files ``data`` when given, their decoding included)."""
    from quantfish.train.trainer import TrainConfig, _batch_loss, make_optimizer
    from quantfish.train.model import NnueModel
    from quantfish.train.ftkernel import set_threads
    from quantfish.train.alloc import keep_freed_memory

    keep_freed_memory()
    set_threads(threads)
    rng = np.random.default_rng(seed)
    if data:
        from quantfish.train.stream import load_data_files
        stream = load_data_files(data)
        if len(stream) < (steps + 1) * batch_size:
            raise SystemExit(f"{len(stream):,} positions in the data: {steps + 1} batches of {batch_size:,} need "
                             f"{(steps + 1) * batch_size:,}")
        source = stream.batches(batch_size, True, seed)
        next_batch = lambda: next(source)  # noqa: E731
    else:
        from quantfish.train.distill import board_arrays, random_boards
        arrays = board_arrays(random_boards(batch_size, seed))
        arrays = arrays._replace(score=rng.normal(0, 300, batch_size).astype(np.float32))
        next_batch = lambda: arrays.take(rng.permutation(batch_size))  # noqa: E731
    config = TrainConfig(l1=l1, batch_size=batch_size, factoriser=factoriser, log=None)
    model = NnueModel(l1, seed=seed, factoriser=factoriser)
    optimizer = make_optimizer(model, config)
    device = next(model.parameters()).device

    def step(batch):
        optimizer.zero_grad(set_to_none=True)
        _batch_loss(model, batch, config, device).backward()
        optimizer.step()
        model.clip_weights()

    step(next_batch())
    t0 = time.perf_counter()
    for _ in range(steps):
        step(next_batch())
    return steps * batch_size / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--l1", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16384)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--factoriser", action="store_true", help="train with the factoriser's virtual features")
    p.add_argument("--data", action="append", metavar="FILE", help="record file to stream batches from")
    a = p.parse_args()
    pps = measure(a.l1, a.batch_size, a.steps, a.threads, factoriser=a.factoriser, data=a.data)
    print(f"L1={a.l1} batch {a.batch_size} threads {a.threads}{' factoriser' if a.factoriser else ''}"
          f"{' data' if a.data else ''}: {pps:,.0f} positions/s")


if __name__ == "__main__":
    main()
