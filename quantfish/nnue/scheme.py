"""A quantisation scheme as data: everything the integer forward pass needs beyond the integer tensors.

Stockfish's file carries no scales because its arithmetic fixes them. A scheme record states them, so that one
simulator (``quantfish.quant.simulator``) computes any scheme's integers, and so that a file format can carry them.
Scales are "integers per float unit" (a float value v is stored as about v * scale). The integer forward pass:

    acc   = ft_bias + sum of active ft_weights rows                    int16, scale ft_scale
    a     = clamp(acc, 0, ft_hi)                                       the float clamp [0, 1]
    x     = clamp(R_x(a_j * a_j+L1/2), 0, x.hi)                        fc_0's input, scale x.scale
    psqt  = R_psqt(psqt_us - psqt_them)                                int32, scale psqt_scale
    per layer stack:
      z0  = b0 + w0 @ x                                                int32, row o at scale fc_0.acc_scale[o]
      sq  = min(R_sq(min(|z0|, limit)^2), sq.hi)      (rows 0..14)     SqrClippedReLU of the signed z0
      h   = clamp(R_0(z0), 0, ac_0.hi)                (rows 0..14)     ClippedReLU
      z1  = b1 + w1 @ [sq, h, 0, 0]                                    int32, scale fc_1.acc_scale[o]
      c1  = clamp(R_1(z1), 0, ac_1.hi)
      z2  = b2 + w2 @ c1                                               int32, scale fc_2.acc_scale
      positional = R_out(z2) + R_skip(z0[15])                          output scale (9600 per float unit)
    raw   = R_final(psqt + positional)                                 internal units (/ 16)

``R`` is a ``Requant``: ``v * mul / (div * 2**shift)`` rounded by floor (Stockfish's ``>>``), trunc (C++
``/``) or nearest (half up, ``(v * mul + half) >> shift``); ``mul`` and ``hi`` may hold one value per row.
A weight w[o][i] of an affine layer is stored as ``round(w * acc_scale[o] / in_scale[i])``: the input
scales are the exact scales of the previous activation, so a product always lands at the row's sum scale.
Biases are ``round(b * acc_scale[o])``. ``to_dict``/``from_dict`` give the record as JSON-ready values.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

ROUNDINGS = ("floor", "trunc", "nearest")
RESOLUTIONS = (127, 255)
MUL_BITS = 15                   # requantisation multipliers lie in [2**14, 2**15) unless exact


def _ints(v) -> tuple:
    return tuple(int(i) for i in np.atleast_1d(np.asarray(v)).reshape(-1))


def _floats(v) -> tuple:
    return tuple(float(f) for f in np.atleast_1d(np.asarray(v, np.float64)).reshape(-1))


@dataclass(frozen=True)
class Requant:
    """``R(v * mul / (div * 2**shift))``: one multiplier, or one per output row."""

    mul: tuple = (1,)
    shift: int = 0
    div: int = 1
    rounding: str = "floor"
    int32: bool = False         # the product wraps to int32 first, as C++ ``int`` arithmetic (Stockfish's skip)

    def __post_init__(self):
        object.__setattr__(self, "mul", _ints(self.mul))
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"rounding {self.rounding!r}: expected one of {ROUNDINGS}")
        if self.shift < 0 or self.div < 1 or min(self.mul) < 0:
            raise ValueError(f"bad requantisation {self}")

    @property
    def ratio(self) -> np.ndarray:
        """The real factor (per row) the integer operation applies."""
        return np.asarray(self.mul, np.float64) / (self.div * 2.0 ** self.shift)

    def describe(self) -> str:
        mul = (f"*{self.mul[0]}" if len(set(self.mul)) == 1 else f"*[{min(self.mul)}..{max(self.mul)}]")
        mul = "" if mul == "*1" else mul
        parts = [mul, f"/{self.div}" if self.div != 1 else "", f">>{self.shift}" if self.shift else ""]
        return ("".join(parts) or "x1") + f" {self.rounding}"


def requant_for(ratio, rounding: str, shifts_only: bool = False) -> Requant:
    """The integer rescaling nearest ``ratio`` (scalar or per row; all ratios below 2**15).

    An exact power of two (every row the same) is a plain shift. Otherwise ``shifts_only`` rounds each ratio
    to its nearest power of two (rows must agree: one shift serves them all); else one shift and a
    ``MUL_BITS`` multiplier per row, the shift set by the largest ratio.
    """
    r = np.atleast_1d(np.asarray(ratio, np.float64))
    if np.any(r <= 0) or np.any(~np.isfinite(r)):
        raise ValueError(f"requantisation ratio must be positive and finite, got {r}")
    lg = np.log2(r)
    exact = np.abs(lg - np.round(lg)) < 1e-9
    if (exact.all() and np.all(np.round(lg) == np.round(lg[0]))) or shifts_only:
        k = np.round(lg).astype(np.int64)
        if len(set(k.tolist())) != 1:
            raise ValueError(f"shift-only requantisation needs one shift for all rows, ratios give {sorted(set(k))}")
        k = int(k[0])
        return Requant((1 << k,) if k > 0 else (1,), max(-k, 0), 1, rounding)
    shift = MUL_BITS - 1 - int(math.floor(np.log2(r.max())))
    if shift < 0:
        raise ValueError(f"requantisation ratio {r.max():g} too large")
    mul = np.round(r * 2.0 ** shift).astype(np.int64)
    return Requant(tuple(mul), shift, 1, rounding)


@dataclass(frozen=True)
class Activation:
    """An integer activation ``clamp(R(v), 0, hi)``: its requantisation, clamp and exact output scale."""

    requant: Requant
    hi: tuple                   # integer clamp, per row (the function's clamp at 1.0, or the scheme's clip)
    scale: tuple                # exact scale of each output row: integer / scale is the float it stands for
    clip: float = 1.0           # the float top the scheme chose (1.0: the function's own clamp)
    limit: tuple = ()           # SqrClippedReLU: |v| is capped at this before squaring (same result, no overflow)

    def __post_init__(self):
        object.__setattr__(self, "hi", _ints(self.hi))
        object.__setattr__(self, "scale", _floats(self.scale))
        object.__setattr__(self, "limit", _ints(self.limit) if len(self.limit) else ())
        object.__setattr__(self, "clip", float(self.clip))


@dataclass(frozen=True)
class Affine:
    """An affine layer's sum scale per output row (its biases' scale); weights follow ``acc_scale / in_scale``."""

    acc_scale: tuple
    per_row: bool = False       # scales chosen per output row (else one per tensor)

    def __post_init__(self):
        object.__setattr__(self, "acc_scale", _floats(self.acc_scale))


@dataclass(frozen=True)
class StackScheme:
    """One layer stack's record."""

    fc_0: Affine
    ac_sqr_0: Activation
    ac_0: Activation
    skip: Requant               # fc_0's last output into the output scale
    fc_1: Affine
    ac_1: Activation
    fc_2: Affine
    out: Requant                # fc_2's sum into the output scale


@dataclass(frozen=True)
class Scheme:
    """A whole net's record (see the module docstring for the arithmetic it defines)."""

    name: str
    rounding: str               # "floor" (Stockfish: >> and truncating divisions) or "nearest"
    resolution: int             # activations' storage limit: 127 (int8) or 255 (uint8)
    ft_scale: float
    ft_hi: int
    x: Activation               # the pairwise product's requantisation (one row per L1 input: scale shared)
    psqt_scale: float
    psqt: Requant               # (us - them) -> psqt
    output_scale: float         # positional and psqt: integers per float unit (Stockfish: 600 * 16)
    final: Requant              # (psqt + positional) -> internal units
    stacks: tuple
    calibration: dict = None    # what the scheme measured (clips, positions), for the reader

    def to_dict(self) -> dict:
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "Scheme":
        return _build(cls, d)


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _build(cls, d):
    """A dataclass from its ``asdict`` form (tuples of nested records rebuilt by field name)."""
    kinds = {"x": Activation, "ac_sqr_0": Activation, "ac_0": Activation, "ac_1": Activation,
             "requant": Requant, "skip": Requant, "out": Requant, "psqt": Requant, "final": Requant,
             "fc_0": Affine, "fc_1": Affine, "fc_2": Affine}
    kw = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        if f.name == "stacks":
            v = tuple(_build(StackScheme, s) for s in v)
        elif f.name in kinds and isinstance(v, dict):
            v = _build(kinds[f.name], v)
        elif isinstance(v, list):
            v = tuple(v)
        kw[f.name] = v
    return cls(**kw)
