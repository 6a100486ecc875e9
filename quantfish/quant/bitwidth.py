"""Ristretto's bit-width search, as a report: how many bits each layer group needs, and what that would save.

Ristretto (Gysel et al.) quantises one group of layers at a time to dynamic fixed point, leaving the rest in
float, and lowers the bit width until the network's error leaves a margin; then it puts all groups at their
widths together. Here a group is stored as signed (weights) or unsigned (activations) b-bit integers with a
power-of-two step chosen per tensor so that its largest magnitude fits (``dfp``), rounded to nearest and
saturated; the error is the mean absolute centipawn difference from the float net on the given positions.

The width is found by bisection between 1 bit and the group's ceiling, so it assumes (as Ristretto's descending
search does) that fewer bits never help; ``Width.errors`` keeps every width measured. What a narrower type
would save is stated against the engine's types: int16 feature-transformer weights and biases, int32 PSQT
weights, int8 hidden weights, 8-bit activations.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from quantfish.quant.floatnet import FloatNet
from quantfish.quant.report import CP_PER_UNIT

FC1_PADDED = 32            # fc_1's 30 inputs, padded to 32 in the engine


class Group(NamedTuple):
    name: str
    fields: tuple          # FloatNet fields quantised together (weights) or activation sites
    signed: bool
    engine_bits: int       # the engine's storage type
    ceiling: int           # the widest width searched


GROUPS = (
    Group("ft weights", ("ft_weights", "ft_bias"), True, 16, 16),
    Group("psqt weights", ("ft_psqt",), True, 32, 24),
    Group("fc_0 weights", ("w0",), True, 8, 16),
    Group("fc_1 weights", ("w1",), True, 8, 16),
    Group("fc_2 weights", ("w2",), True, 8, 16),
    Group("ft activations", ("ft", "x"), False, 8, 12),
    Group("hidden activations", ("hidden",), False, 8, 12),
)


class Width(NamedTuple):
    group: str
    bits: int | None       # the smallest width within the margin (None: not even at the ceiling)
    mae: float             # the error at that width (at the ceiling when None)
    engine_bits: int
    saving: str            # what the narrowest standard type that holds ``bits`` would change in the engine
    errors: dict           # every width measured -> MAE (cp)


class BitWidthReport(NamedTuple):
    margin: float
    positions: int
    widths: tuple          # one Width per group
    combined_mae: float    # all groups at their widths together

    def to_dict(self) -> dict:
        return {"margin_cp": self.margin, "positions": self.positions, "combined_mae": self.combined_mae,
                "groups": [{**w._asdict(), "errors": {str(k): v for k, v in sorted(w.errors.items())}}
                           for w in self.widths]}


def dfp(values: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """``values`` on a b-bit dynamic fixed-point grid: the finest power-of-two step whose range holds the
    largest magnitude; rounded to nearest, saturated."""
    values = np.asarray(values, np.float64)
    top = float(np.abs(values).max(initial=0.0))
    if top == 0.0:
        return values
    magnitude_bits = bits - 1 if signed else bits
    integer_bits = math.ceil(math.log2(top))           # 2**integer_bits >= top
    step = 2.0 ** (integer_bits - magnitude_bits)
    hi = 2 ** magnitude_bits - 1
    lo = -hi - 1 if signed else 0
    return np.clip(np.rint(values / step), lo, hi) * step


def _weights(fnet: FloatNet, group: Group, bits: int) -> FloatNet:
    return dataclasses.replace(fnet, **{f: dfp(getattr(fnet, f), bits, group.signed) for f in group.fields})


def _activations(widths: dict):
    """An ``act`` hook for ``FloatNet.forward`` that quantises the sites in ``widths`` (site -> bits)."""
    def act(site, values):
        bits = widths.get(site)
        return values if bits is None else dfp_unit(values, bits)
    return act


def dfp_unit(values: np.ndarray, bits: int) -> np.ndarray:
    """Activations in [0, 1] on a b-bit grid of step 2**-bits (their range is the function's, not the data's)."""
    return np.clip(np.rint(values * 2.0 ** bits), 0, 2 ** bits - 1) * 2.0 ** -bits


def _mae(fnet: FloatNet, positions, reference: np.ndarray, act=None) -> float:
    return float(np.abs(fnet.forward(positions, act=act).out - reference).mean() * CP_PER_UNIT)


def _error(fnet, positions, reference, group: Group, bits: int) -> float:
    if group.signed:
        return _mae(_weights(fnet, group, bits), positions, reference)
    return _mae(fnet, positions, reference, _activations({site: bits for site in group.fields}))


def _count(fnet: FloatNet, group: Group) -> int:
    """Elements the engine stores for a weight group (hidden rows padded as the engine pads them)."""
    sizes = {"ft_weights": fnet.ft_weights.size, "ft_bias": fnet.ft_bias.size, "ft_psqt": fnet.ft_psqt.size,
             "w0": fnet.w0.size, "w1": fnet.w1.shape[0] * fnet.w1.shape[1] * FC1_PADDED, "w2": fnet.w2.size}
    return sum(sizes.get(f, 0) for f in group.fields)


def saving(fnet: FloatNet, group: Group, bits: int | None) -> str:
    """What the narrowest standard type holding ``bits`` would change against the engine's type."""
    if bits is None:
        return f"needs more than {group.ceiling} bits"
    storage = next(t for t in (8, 16, 32) if bits <= t)
    if storage > group.engine_bits:
        return f"needs {storage}-bit storage, wider than the engine's {group.engine_bits}-bit type"
    if storage == group.engine_bits:
        return f"the engine's {group.engine_bits}-bit type is the narrowest that fits"
    if group.signed:
        saved = _count(fnet, group) * (group.engine_bits - storage) // 8
        return (f"int{storage} would do: {saved / 2**20:.1f} MiB less than int{group.engine_bits}, and "
                f"{group.engine_bits // storage}x the values per SIMD load")
    return f"{storage}-bit activations would do"


def search(fnet: FloatNet, positions, margin: float, groups=GROUPS) -> BitWidthReport:
    """The smallest width of each group within ``margin`` cp MAE of the float net, and all of them together."""
    reference = fnet.forward(positions).out
    widths = []
    for group in groups:
        errors = {group.ceiling: _error(fnet, positions, reference, group, group.ceiling)}
        if errors[group.ceiling] > margin:
            widths.append(Width(group.name, None, errors[group.ceiling], group.engine_bits,
                                saving(fnet, group, None), errors))
            continue
        lo, hi = 0, group.ceiling                      # err(hi) <= margin; lo is a width not yet known to pass
        while hi - lo > 1:
            mid = (lo + hi) // 2
            errors[mid] = _error(fnet, positions, reference, group, mid)
            lo, hi = (lo, mid) if errors[mid] <= margin else (mid, hi)
        widths.append(Width(group.name, hi, errors[hi], group.engine_bits, saving(fnet, group, hi), errors))
    chosen = {g.name: w.bits or g.ceiling for g, w in zip(groups, widths)}
    net = fnet
    sites = {}
    for g in groups:
        if g.signed:
            net = _weights(net, g, chosen[g.name])
        else:
            sites.update({site: chosen[g.name] for site in g.fields})
    combined = _mae(net, positions, reference, _activations(sites))
    return BitWidthReport(margin, len(positions), tuple(widths), combined)


def format_report(rep: BitWidthReport) -> str:
    lines = [f"Bit widths (Ristretto's search, dynamic fixed point, nearest): the smallest width per group whose "
             f"error against the float net stays within {rep.margin:g} cp MAE on {rep.positions} positions, the "
             f"other groups in float",
             f"  {'group':<19} {'bits':>5} {'MAE cp':>7} {'engine':>7}  what a narrower type would change"]
    for w in rep.widths:
        bits = "-" if w.bits is None else str(w.bits)
        lines.append(f"  {w.group:<19} {bits:>5} {w.mae:>7.3f} {w.engine_bits:>6}b  {w.saving}")
    lines.append(f"  all groups at these widths together: {rep.combined_mae:.3f} cp MAE")
    return "\n".join(lines)
