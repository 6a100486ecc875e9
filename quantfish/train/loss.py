"""The training loss: evaluations mapped to WDL space by a sigmoid, mixed with the game result (nnue-pytorch style).

    q      = sigmoid(model_output / WDL_SCALE)                   the model's expected score
    p      = sigmoid(score_cp * CP_TO_INTERNAL / WDL_SCALE)       the teacher's expected score
    target = lambda * p + (1 - lambda) * result
    loss   = mean(|q - target| ** LOSS_EXPONENT)

Constants, and why:

* ``CP_TO_INTERNAL = 3.61``: scores arrive in centipawns; the model speaks Stockfish's internal units, and
  Stockfish 15.1 prints 100 cp for 361 of them (NormalizeToPawnValue).
* ``WDL_SCALE = 361`` internal units (one pawn): a one-pawn edge maps to sigmoid(1) = 0.73 expected score.
  nnue-pytorch uses 361 on the net's side and about 410 on the target's; one scale for both keeps the loss'
  minimum at exactly the teacher's value when lambda = 1 (distillation), and both are parameters.
* ``LOSS_EXPONENT = 2.6``: above 2 weighs large errors more (nnue-pytorch's setting for Stockfish's nets).
* ``lambda`` defaults to 1.0 (the score alone); results are 1 / 0.5 / 0 from the side to move's view.

The sigmoid compresses large evaluations, so a 1000 cp mistake in a won position costs little while a
50 cp mistake near equality costs much: that is where play is decided.
"""

from __future__ import annotations

import torch

from quantfish.nnue.units import PAWN_VALUE_NORMALIZE

CP_TO_INTERNAL = PAWN_VALUE_NORMALIZE / 100
WDL_SCALE = float(PAWN_VALUE_NORMALIZE)
LOSS_EXPONENT = 2.6
DEFAULT_LAMBDA = 1.0


def wdl(internal: torch.Tensor, scale: float = WDL_SCALE) -> torch.Tensor:
    """Expected score in [0, 1] of an evaluation in internal units."""
    return torch.sigmoid(internal / scale)


def loss_fn(output: torch.Tensor, score_cp: torch.Tensor, result: torch.Tensor, lambda_: float = DEFAULT_LAMBDA,
            scale: float = WDL_SCALE, exponent: float = LOSS_EXPONENT) -> torch.Tensor:
    """Mean |q - target| ** exponent over the batch (see the module docstring)."""
    q = wdl(output, scale)
    p = wdl(score_cp * CP_TO_INTERNAL, scale)
    target = lambda_ * p + (1.0 - lambda_) * result
    return torch.abs(q - target).pow(exponent).mean()
