"""Win/draw/loss estimates for ``UCI_ShowWDL``: a win-rate model fitted to Quantfish's own self-play games.

The model has Stockfish's form. For a score ``cp`` (UCI centipawns, side to move's view) at game ply ``ply``
(0 = the start position, both sides' moves counted), with ``m = clamp(ply, 0, 240) / 64``::

    a = A(m),  b = B(m)                          (cubic polynomials, coefficients below)
    win  = 1000 / (1 + exp((a - cp) / b))        (permille, rounded)
    loss = 1000 / (1 + exp((a + cp) / b))
    draw = 1000 - win - loss

``a`` is the score at which the side to move wins half its games, ``b`` how fast the win rate rises with
the score. Both are in the engine's own centipawns, so the model describes how Quantfish's scores turned into
results in Quantfish's self-play, not how a strong engine would convert them.

Where the coefficients came from (reproduce with the second command)::

    quantfish gendata ...        -> /tmp/fl/d.bin: 600,000 positions from 10,638 self-play games
                                    (results 1-0 4598, 1/2-1/2 1849, 0-1 4191; its log does not record the
                                    options, the plies are those of the default 4 random opening plies)
    python -m tools.fit_wdl /tmp/fl/d.bin --min-ply 1

Maximum likelihood (each position's game result a trinomial draw from the model) on the 524,319 positions
with |score| <= 1000 and ply >= 1; ply 0 (the start position, searched before the random opening moves that
decide its game) carries no signal. Mean log-likelihood per position -0.7130 (separate (a, b) per 4-ply
bucket: -0.7126). Fit quality, model against observed rates: within 4.5 points before ply 32; at plies
32-130 this data's draw rate is more peaked at score 0 than the form allows (72% draws observed against 62%
at |cp| <= 40, plies 64-95; 5-10 points too many draws at 40 < |cp| <= 400); after ply 130 (few positions)
up to 8 points off, and the long games of this shallow self-play are mostly drawn whatever the score.
See tools/fit_wdl.py for the method and its check table.

Pure Python (math only): imported by the UCI layer when ``UCI_ShowWDL`` is on.
"""
from __future__ import annotations

import math

# a(m) and b(m), highest power first: a(m) = A[0] m^3 + A[1] m^2 + A[2] m + A[3].
A_COEFFS = (-20.069, 99.7717, 104.787, 88.7038)
B_COEFFS = (5.18685, -27.9298, 20.8979, 233.13)

MAX_PLY = 240           # plies beyond this use the model at ply 240
PLY_SCALE = 64.0


def _poly(coeffs, x: float) -> float:
    result = 0.0
    for c in coeffs:
        result = result * x + c
    return result


def model_params(ply: int) -> tuple[float, float]:
    """The model's (a, b) in centipawns at game ply ``ply``."""
    m = min(max(int(ply), 0), MAX_PLY) / PLY_SCALE
    return _poly(A_COEFFS, m), _poly(B_COEFFS, m)


def _win_permille(cp: float, a: float, b: float) -> int:
    x = max(-700.0, min(700.0, (a - cp) / b))
    return int(0.5 + 1000.0 / (1.0 + math.exp(x)))


def win_rate(cp: float, ply: int) -> int:
    """Permille chance that the side to move, whose score is ``cp`` centipawns, wins (game ply ``ply``)."""
    a, b = model_params(ply)
    return _win_permille(cp, a, b)


def wdl(cp: int, ply: int) -> tuple[int, int, int]:
    """(win, draw, loss) permille of the side to move with score ``cp`` at game ply ``ply``; sums to 1000."""
    a, b = model_params(ply)
    win = _win_permille(cp, a, b)
    loss = _win_permille(-cp, a, b)
    draw = 1000 - win - loss
    if draw < 0:                      # only by rounding, where a is near 0: keep the sum, no negative draw
        if win >= loss:
            win = 1000 - loss
        else:
            loss = 1000 - win
        draw = 0
    return win, draw, loss


def wdl_of_mate(mate_in: int) -> tuple[int, int, int]:
    """(win, draw, loss) for a UCI ``mate`` score: positive, the side to move mates: (1000, 0, 0); zero or
    negative, it is mated (``mate 0``: checkmated now): (0, 0, 1000)."""
    return (1000, 0, 0) if mate_in > 0 else (0, 0, 1000)

