"""Training speed: positions per second of full training steps (forward, loss, backward, Adam, clipping).

    python -m quantfish.train.speed [--l1 256] [--batch-size 16384] [--steps 8] [--threads 1]

Positions come from python-chess random games (``quantfish.train.distill``; about 20 s for 16384), with random
scores: the speed does not depend on the targets. The first step (Numba kernels loading) is not timed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def measure(l1: int = 256, batch_size: int = 16384, steps: int = 8, threads: int = 1, seed: int = 0) -> float:
    """Positions per second of ``steps`` training steps on batches of ``batch_size`` distinct positions."""
    from quantfish.train.distill import board_arrays, random_boards
    from quantfish.train.trainer import TrainConfig, _batch_loss, make_optimizer
    from quantfish.train.model import NnueModel
    from quantfish.train.ftkernel import set_threads
    from quantfish.train.alloc import keep_freed_memory

    keep_freed_memory()
    set_threads(threads)
    arrays = board_arrays(random_boards(batch_size, seed))
    rng = np.random.default_rng(seed)
    arrays = arrays._replace(score=rng.normal(0, 300, batch_size).astype(np.float32))
    config = TrainConfig(l1=l1, batch_size=batch_size, log=None)
    model = NnueModel(l1, seed=seed)
    optimizer = make_optimizer(model, config)
    device = next(model.parameters()).device

    def step(batch):
        optimizer.zero_grad(set_to_none=True)
        _batch_loss(model, batch, config, device).backward()
        optimizer.step()
        model.clip_weights()

    step(arrays)
    t0 = time.perf_counter()
    for _ in range(steps):
        step(arrays.take(rng.permutation(batch_size)))
    return steps * batch_size / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--l1", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16384)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    pps = measure(a.l1, a.batch_size, a.steps, a.threads)
    print(f"L1={a.l1} batch {a.batch_size} threads {a.threads}: {pps:,.0f} positions/s")


if __name__ == "__main__":
    main()
