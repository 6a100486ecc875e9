"""Activation statistics on calibration positions, and the rules that turn them into clips.

Three activations get a scale of their own: ``x`` (fc_0's input, shared by every stack, since the FT is),
and per stack ``l1in`` (fc_1's input: SqrClippedReLU and ClippedReLU together, as one vector feeds one
matrix) and ``c1`` (fc_2's input). A stack is measured on the calibration positions of its own bucket; when
fewer than ``min_per_stack`` fall in it (the few-piece buckets), on every calibration position run through
that stack instead, so that no scale rests on a handful of values.

Clip rules (all on the non-negative activations, in float units; no clip exceeds the function's own 1.0):

* ``range_clip``: the largest value seen (Distiller's range-based linear, symmetric, min/max mode);
* ``kl_clip``: TensorRT's entropy calibration: a 2048-bin histogram of the values, and for each threshold of
  ``levels`` bins or more the KL divergence between the histogram cut there (outliers folded into its last
  bin) and the same cut requantised to ``levels`` levels; the threshold with the smallest divergence wins;
* ``mse_clip``: the clip whose quantisation (``qmax`` levels, the scheme's rounding, saturation above) gives
  the smallest mean squared error on the values.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.quant.floatnet import FloatNet

KL_BINS = 2048
MSE_CANDIDATES = 256


class Site(NamedTuple):
    """The values one activation took on calibration positions (a sample of them when there are many)."""

    max: float
    sample: np.ndarray     # float64 values (at most ``sample_size``, drawn uniformly)
    count: int             # positions measured
    own_bucket: bool       # False: every calibration position run through this stack


class Stats(NamedTuple):
    x: Site
    l1in: tuple            # per stack
    c1: tuple
    positions: int


def _site(values: np.ndarray, count: int, own: bool, size: int, rng) -> Site:
    v = np.asarray(values, np.float64).reshape(-1)
    sample = v if v.size <= size else rng.choice(v, size, replace=False)
    return Site(float(v.max(initial=0.0)), sample, count, own)


def collect(fnet: FloatNet, positions, min_per_stack: int = 256, sample_size: int = 400_000,
            seed: int = 0) -> Stats:
    """Statistics of the three activation sites on ``positions``."""
    rng = np.random.default_rng(seed)
    trace = fnet.forward(positions)
    x = _site(trace.x, len(positions), True, sample_size, rng)
    l1in, c1 = [], []
    for s in range(fnet.stacks):
        m = positions.bucket == s
        if m.sum() >= min_per_stack:
            t, count, own = trace, int(m.sum()), True
        else:
            t, count, own = fnet.forward(positions, stack=s), len(positions), False
            m = np.ones(len(positions), bool)
        l1in.append(_site(t.l1in[m], count, own, sample_size, rng))
        c1.append(_site(t.c1[m], count, own, sample_size, rng))
    return Stats(x, tuple(l1in), tuple(c1), len(positions))


def range_clip(site: Site) -> float:
    return min(site.max, 1.0) if site.max > 0 else 1.0


def kl_clip(site: Site, levels: int) -> float:
    """TensorRT's entropy calibration threshold (float units)."""
    top = site.max
    if top <= 0:
        return 1.0
    hist, edges = np.histogram(site.sample, bins=KL_BINS, range=(0.0, top))
    hist = hist.astype(np.float64)
    best, best_i = np.inf, KL_BINS
    for i in range(levels, KL_BINS + 1):
        p = hist[:i].copy()
        p[i - 1] += hist[i:].sum()
        group = np.arange(i) * levels // i
        nonzero = hist[:i] > 0
        sums = np.bincount(group, weights=hist[:i], minlength=levels)
        counts = np.bincount(group, weights=nonzero, minlength=levels)
        q = np.where(nonzero, sums[group] / np.maximum(counts[group], 1), 0.0)
        if p.sum() == 0 or q.sum() == 0:
            continue
        p /= p.sum()
        q /= q.sum()
        mask = p > 0
        kl = float(np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-12))))
        if kl < best:
            best, best_i = kl, i
    return float(min((best_i + 0.5) * (edges[1] - edges[0]), 1.0))


def quantised(v: np.ndarray, clip: float, qmax: int, rounding: str) -> np.ndarray:
    """``v`` through a ``qmax``-level grid whose top is ``clip`` (saturating), back in float units."""
    scale = qmax / clip
    q = np.floor(v * scale) if rounding == "floor" else np.floor(v * scale + 0.5)
    return np.clip(q, 0, qmax) / scale


def mse_clip(site: Site, qmax: int, rounding: str) -> float:
    """The clip with the smallest mean squared quantisation error, among ``MSE_CANDIDATES`` up to the max."""
    top = min(site.max, 1.0)
    if top <= 0:
        return 1.0
    v = site.sample
    best, best_c = np.inf, top
    for c in top * np.arange(1, MSE_CANDIDATES + 1) / MSE_CANDIDATES:
        err = float(np.mean((v - quantised(v, c, qmax, rounding)) ** 2))
        if err < best:
            best, best_c = err, float(c)
    return best_c
