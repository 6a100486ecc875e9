"""The named quantisation schemes, each a rule for the choices ``quantfish.quant.build.plan`` turns into a record.

* ``sf``: Stockfish's fixed scales (FT 127, hidden weights 64, output weights 9600/127) and shifts. With
  floor rounding and resolution 127 it is Stockfish 15.1 exactly: quantising Stockfish 15.1's dequantised net
  gives its file back byte for byte. ``nearest`` rounds every shift instead; resolution 255 keeps the fixed
  weight scales and shifts, which makes the activation one 254 (``a * b >> 6``, then ``>> 6`` as before).
* ``range`` / ``range-row``: Distiller's symmetric range-based linear quantisation. Weights: 127 / max|w|
  per tensor, or per output row. Activations: the largest value seen on calibration positions maps to the
  top integer. Requantisations are integer multipliers and shifts (Distiller's A / 2^n).
* ``dfp``: Ristretto's dynamic fixed point: every scale a power of two, the largest whose integer holds the
  range measured (weights per tensor, activations per site), so nothing overflows; requantisations are shifts.
* ``kl``: TensorRT's entropy calibration of the activation clips (weights as ``range``). It clips fc_0's input
  too, which the function's own clamp at 1 does not need: the report shows what that costs.
* ``mse``: the activation clips that minimise the mean squared quantisation error (weights as ``range``).

Distiller's asymmetric (zero-point) variant is not offered: every quantised activation is already
non-negative (it follows a clamp at 0), so a zero point would only add a correction term to each sum, and the
weights are symmetric about 0 in every trained net.

Every scheme but ``sf`` needs calibration statistics (``quantfish.quant.calibrate.collect``). The FT scale of the
data-driven schemes is range-based too: the largest that keeps the guaranteed accumulator range (bias plus
any 32 rows of a king bucket, plus the rounding of those 33 values) inside int16; ``dfp`` takes the power of
two below it. The FT is one tensor in every scheme: scales per FT neuron would need a requantisation per
product pair and 32-bit products.
"""

from __future__ import annotations

import math
from dataclasses import replace

from quantfish.nnue.architecture import LAYER_STACKS, MAX_ACTIVE
from quantfish.nnue.architecture import SF15_1_L1, Architecture
from quantfish.nnue.net import Net
from quantfish.quant.build import FT_MAX, Choices, QuantError, QuantNet, accumulator_bounds, plan, quantise
from quantfish.quant.calibrate import Stats, kl_clip, mse_clip, range_clip
from quantfish.quant.floatnet import FloatNet
from quantfish.nnue.scheme import Scheme
from quantfish.nnue import scales

NAMES = ("sf", "range", "range-row", "dfp", "kl", "mse")
CALIBRATED = frozenset(NAMES[1:])
DEFAULT_ROUNDING = {"sf": "floor"}            # every other scheme rounds to nearest unless told


class SchemeError(ValueError):
    """An unknown scheme, or one used without what it needs."""


def default_rounding(name: str) -> str:
    return DEFAULT_ROUNDING.get(name, "nearest")


def stockfish_record(stacks: int = LAYER_STACKS) -> Scheme:
    """Stockfish 15.1's arithmetic as a record (needs no net: every scale is fixed)."""
    return plan(Choices("sf", shifts_only=True), None, stacks)


def is_stockfish(scheme: Scheme) -> bool:
    """True when the record's integers are exactly Stockfish 15.1's arithmetic (a plain .nnue holds them)."""
    ref = stockfish_record(len(scheme.stacks))
    return replace(scheme, name=ref.name, calibration=ref.calibration) == ref


def to_net(qnet: QuantNet) -> Net:
    """Stockfish's ``Net`` of these integers; only a record equal to Stockfish's arithmetic fits it."""
    if not is_stockfish(qnet.scheme):
        raise QuantError(f"scheme {qnet.scheme.name} ({qnet.scheme.rounding}, {qnet.scheme.resolution}) is "
                         f"not Stockfish 15.1's fixed arithmetic: a plain .nnue cannot state its scales")
    arch = Architecture(l1=qnet.l1, compressed_ft=qnet.l1 != SF15_1_L1)
    return Net(arch, qnet.description, qnet.ft_bias, qnet.ft_weights, qnet.ft_psqt, qnet.b0, qnet.w0,
               qnet.b1, qnet.w1, qnet.b2, qnet.w2)


def ft_range_scale(fnet: FloatNet, pow2: bool = False) -> float:
    """The largest FT scale whose guaranteed accumulator range fits int16 after rounding 33 values."""
    lo, hi = accumulator_bounds(fnet.ft_bias, fnet.ft_weights)
    bound = max(abs(float(lo.min())), abs(float(hi.max())), 1e-12)
    s = (FT_MAX - (MAX_ACTIVE + 1) / 2) / bound
    return 2.0 ** math.floor(math.log2(s)) if pow2 else s


def choices(name: str, fnet: FloatNet, stats: Stats | None, rounding: str | None = None,
            resolution: int = 127) -> Choices:
    """The choices of scheme ``name`` for ``fnet`` (``stats`` from ``calibrate.collect`` unless ``sf``)."""
    if name not in NAMES:
        raise SchemeError(f"unknown scheme {name!r}: expected one of {', '.join(NAMES)}")
    rounding = rounding or default_rounding(name)
    if name == "sf":
        return Choices("sf", rounding, resolution, scales.FT_SCALE, "fixed", shifts_only=True)
    if stats is None:
        raise SchemeError(f"scheme {name} needs calibration positions")
    if name == "kl":
        rule = lambda site: kl_clip(site, resolution + 1)
    elif name == "mse":
        rule = lambda site: mse_clip(site, resolution, rounding)
    else:
        rule = range_clip
    clip_x = rule(stats.x)
    clip_l1in = tuple(rule(s) for s in stats.l1in)
    clip_c1 = tuple(rule(s) for s in stats.c1)
    dfp = name == "dfp"
    weights = {"range-row": "row", "dfp": "pow2"}.get(name, "tensor")
    calibration = {"positions": stats.positions, "clip_x": clip_x, "clip_l1in": list(clip_l1in),
                   "clip_c1": list(clip_c1),
                   "stack_positions": [s.count for s in stats.l1in],
                   "stack_own_bucket": [s.own_bucket for s in stats.l1in]}
    return Choices(name, rounding, resolution, ft_range_scale(fnet, pow2=dfp), weights, clip_x, clip_l1in,
                   clip_c1, pow2_targets=dfp, shifts_only=dfp, calibration=calibration)


def make(name: str, fnet: FloatNet, stats: Stats | None = None, rounding: str | None = None,
         resolution: int = 127) -> QuantNet:
    """Quantise ``fnet`` with scheme ``name`` (``QuantError`` if any integer would overflow)."""
    ch = choices(name, fnet, stats, rounding, resolution)
    return quantise(fnet, plan(ch, fnet, fnet.stacks))
