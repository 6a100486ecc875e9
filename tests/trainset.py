"""A tiny distillation set for the trainer's tests: random positions scored by the installed net (Stockfish
15.1's when it is there, else Quantfish's own; made once per session, a few seconds), and ``tiny_source`` for
``quantfish train --source tests.trainset:tiny_source``."""
from functools import lru_cache

@lru_cache(maxsize=None)
def distill_set(n: int = 1500, seed: int = 7):
    from quantfish.nnue.io import load_net
    from quantfish.nnue.loader import resolve_main_path
    from quantfish.train.distill import distillation_arrays
    return distillation_arrays(load_net(resolve_main_path()), n, seed)


def tiny_source():
    from quantfish.train.data import ArraySource
    return ArraySource(distill_set(300, 3))


TINY = dict(l1=128, epochs=6, batch_size=32, lr=2e-3, val_fraction=0.1, fake_quant_epochs=1, seed=0)


@lru_cache(maxsize=None)
def trained_tiny():
    """L1 = 128 trained for 6 epochs of 43 steps on ``distill_set()``, the last epoch with fake quantisation
    (about 8 s on one thread); returns (TrainResult, TrainConfig)."""
    import torch
    from quantfish.train.trainer import TrainConfig, train
    torch.set_num_threads(1)
    config = TrainConfig(**TINY, log=None)
    return train(distill_set(), config), config
