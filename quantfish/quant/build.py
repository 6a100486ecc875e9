"""From a float net and a scheme's choices to the scheme record and the integer tensors, refusing overflow.

``plan`` walks the net layer by layer, because each requantisation depends on the exact scale the previous
integer operations produce: the FT scale gives the pairwise product's scale, the scheme's target for fc_0's
input gives a multiplier and shift (or a shift), whose exact result is the input scale the fc_0 weights are
quantised against, and so on to the output, which is always brought to Stockfish's output scale (600 * 16 per
float unit) so every scheme's ``raw`` is in internal units. ``quantise`` then rounds every tensor and checks
every integer type: a weight, a bias, the FT accumulator (bias plus any 32 rows of one king bucket), an
affine sum that could leave its type, or a requantisation whose product could pass int64, raises ``QuantError``
naming the layer; nothing is clipped silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from quantfish.nnue.architecture import (
    BIAS_DTYPE, FC0_OUT, FC1_IN_PADDED, FC1_OUT, FC2_IN_PADDED, FT_DTYPE, KING_BUCKETS, MAX_ACTIVE, N_HIDDEN,
    PS_NB, PSQT_DTYPE, WEIGHT_DTYPE, padded,
)
from quantfish.nnue.io.overflow import INT32_MAX, QuantError, QuantNet, check_requants, check_sums
from quantfish.quant.floatnet import PAIRWISE, SKIP, SQR, FloatNet
from quantfish.nnue.scheme import RESOLUTIONS, Activation, Affine, Requant, Scheme, StackScheme, requant_for
from quantfish.nnue import scales

OUTPUT_SCALE = scales.OUTPUT_BIAS_SCALE        # 9600 integers per float unit: psqt + positional, before / 16
PSQT_DIV = 2                                  # psqt = (us - them) / 2
FINAL_DIV = scales.OUTPUT_SCALE               # raw = (psqt + positional) / 16
WEIGHT_MAX = 127                              # int8 weights are kept symmetric (nnue-pytorch's +-127)
FT_MAX = int(np.iinfo(FT_DTYPE).max)
FIXED_HIDDEN_WEIGHT_SCALE = scales.HIDDEN_WEIGHT_SCALE     # 64


@dataclass(frozen=True)
class Choices:
    """What a named scheme decides; ``plan`` turns it into a record."""

    name: str
    rounding: str = "floor"           # "floor" (Stockfish) or "nearest", for every activation requantisation
    resolution: int = 127             # activations stored in 0..127 or 0..255
    ft_scale: float = scales.FT_SCALE
    weights: str = "fixed"            # fixed (64, 64, 9600/127) | tensor | row | pow2 (per tensor)
    clip_x: float = 1.0               # float top of fc_0's input (1.0: the function's clamp)
    clip_l1in: tuple = ()             # per stack, fc_1's input (SqrClippedReLU and ClippedReLU together)
    clip_c1: tuple = ()               # per stack, fc_2's input
    pow2_targets: bool = False        # activation scales: the largest power of two that holds the clip (DFP)
    shifts_only: bool = False         # hidden requantisations are shifts, never multipliers (Stockfish, DFP)
    calibration: dict = field(default=None, compare=False)

    def clip(self, clips: tuple, s: int) -> float:
        return float(clips[s]) if clips else 1.0


def _target(qmax: int, clip: float, pow2: bool) -> float:
    """The scale that maps the float ``clip`` to ``qmax``; DFP takes the largest power of two not above it."""
    t = qmax / clip
    return 2.0 ** math.floor(math.log2(t) + 1e-12) if pow2 else t


def _hi(qmax: int, scale, clip: float) -> np.ndarray:
    """Integer clamp: the clip at this scale, never above the storage limit."""
    return np.minimum(qmax, np.round(np.asarray(scale) * min(clip, 1.0))).astype(np.int64)


def _acc_scale(ch: Choices, layer: str, w: np.ndarray | None, in_scale, rows: int) -> np.ndarray:
    """Sum scale per output row of an affine layer with float weights ``w`` [rows, inputs] (None for fixed
    scales) whose inputs have exact scales ``in_scale``: the scheme's weight scale times the largest input
    scale, the weights then quantised against their own input's scale."""
    nom = float(np.max(in_scale))
    if ch.weights == "fixed":
        if layer == "fc_2":
            return np.full(rows, OUTPUT_SCALE * nom / scales.FT_SCALE)    # 9600 / 127 per input one
        return np.full(rows, FIXED_HIDDEN_WEIGHT_SCALE * nom)
    s_in = np.broadcast_to(np.asarray(in_scale, np.float64), (w.shape[1],))
    w_eff = np.abs(w * (nom / s_in))
    m = w_eff.max(axis=1) if ch.weights == "row" else np.full(rows, w_eff.max())
    m = np.where(m > 0, m, 1.0)
    ws = WEIGHT_MAX / m
    if ch.weights == "pow2":
        ws = 2.0 ** np.floor(np.log2(ws) + 1e-12)
    elif ch.weights not in ("tensor", "row"):
        raise ValueError(f"weights rule {ch.weights!r}: expected fixed, tensor, row or pow2")
    return ws * nom


def _sqr_limit(rq: Requant, hi) -> np.ndarray:
    """Per row the smallest |v| whose SqrClippedReLU is already ``hi``: capping |v| there changes no result."""
    out = []
    for mul, h in zip(np.broadcast_to(rq.mul, np.shape(hi)), np.atleast_1d(hi)):
        d = rq.div << rq.shift
        t = int(h) * d - (d // 2 if rq.rounding == "nearest" else 0)
        c = -(-t // int(mul))                    # L * L >= ceil(t / mul)
        out.append(math.isqrt(c - 1) + 1 if c > 0 else 0)
    return np.asarray(out, np.int64)


def _out_requant(ratio: float, a: float, ch: Choices) -> Requant:
    """Into the output scale: Stockfish's ``v * 9600 / 8128`` form where the sum scale is an integer and the
    weights are the fixed ones, else the nearest multiplier and shift (or an exact shift)."""
    if ch.weights == "fixed" and abs(a - round(a)) < 1e-9 and abs(math.log2(ratio) - round(math.log2(ratio))) > 1e-9:
        return Requant((int(OUTPUT_SCALE),), 0, int(round(a)), "trunc" if ch.rounding == "floor" else "nearest",
                       int32=True)
    return requant_for(ratio, "floor" if ch.rounding == "floor" else "nearest")


def plan(ch: Choices, fnet: FloatNet | None, stacks: int) -> Scheme:
    """The record of ``ch``; ``fnet`` supplies the weights when their scales depend on them."""
    if ch.resolution not in RESOLUTIONS:
        raise ValueError(f"resolution {ch.resolution}: expected one of {RESOLUTIONS}")
    if ch.rounding not in ("floor", "nearest"):
        raise ValueError(f"rounding {ch.rounding!r}: expected floor or nearest")
    if fnet is None and ch.weights != "fixed":
        raise ValueError(f"scheme {ch.name}: weight scales from the weights need the float net")
    qmax, r = ch.resolution, ch.rounding
    out_r = "trunc" if r == "floor" else "nearest"
    s_acc = float(ch.ft_scale)
    ft_hi = int(min(round(s_acc), FT_MAX))

    base_x = s_acc * s_acc / PAIRWISE                      # scale of a * b for the float x
    rq_x = requant_for(_target(qmax, ch.clip_x, ch.pow2_targets) / base_x, r, ch.shifts_only)
    s_x = base_x * float(rq_x.ratio[0])
    x = Activation(rq_x, _hi(qmax, [s_x], ch.clip_x), [s_x], ch.clip_x)

    records = []
    for s in range(stacks):
        a0 = _acc_scale(ch, "fc_0", None if fnet is None else fnet.w0[s], s_x, FC0_OUT)
        clip_h = ch.clip(ch.clip_l1in, s)
        t_h = _target(qmax, clip_h, ch.pow2_targets)
        rq0 = requant_for(t_h / a0[:N_HIDDEN], r, ch.shifts_only)
        s_h = a0[:N_HIDDEN] * rq0.ratio
        ac_0 = Activation(rq0, _hi(qmax, s_h, clip_h), s_h, clip_h)
        sq_base = a0[:N_HIDDEN] ** 2 / SQR                 # scale of z0 * z0 for the float square
        rqs = requant_for(t_h / sq_base, r, ch.shifts_only)
        s_sq = sq_base * rqs.ratio
        hi_sq = _hi(qmax, s_sq, clip_h)
        ac_sqr = Activation(rqs, hi_sq, s_sq, clip_h, _sqr_limit(rqs, hi_sq))
        skip = _out_requant(OUTPUT_SCALE / a0[SKIP], a0[SKIP], ch)

        in1 = np.concatenate([s_sq, s_h])
        a1 = _acc_scale(ch, "fc_1", None if fnet is None else fnet.w1[s], in1, FC1_OUT)
        clip_c = ch.clip(ch.clip_c1, s)
        rq1 = requant_for(_target(qmax, clip_c, ch.pow2_targets) / a1, r, ch.shifts_only)
        s_c1 = a1 * rq1.ratio
        ac_1 = Activation(rq1, _hi(qmax, s_c1, clip_c), s_c1, clip_c)
        a2 = _acc_scale(ch, "fc_2", None if fnet is None else fnet.w2[s][None, :], s_c1, 1)
        out = _out_requant(OUTPUT_SCALE / a2[0], a2[0], ch)
        row = ch.weights == "row"
        records.append(StackScheme(Affine(a0, row), ac_sqr, ac_0, skip, Affine(a1, row), ac_1,
                                   Affine(a2, False), out))

    return Scheme(name=ch.name, rounding=r, resolution=qmax, ft_scale=s_acc, ft_hi=ft_hi, x=x,
                  psqt_scale=OUTPUT_SCALE, psqt=Requant((1,), 0, PSQT_DIV, out_r),
                  output_scale=OUTPUT_SCALE, final=Requant((1,), 0, FINAL_DIV, out_r), stacks=tuple(records),
                  calibration=ch.calibration)


# ---------------------------------------------------------------------------------------------------------

def _round(values, scale, dtype, what: str, lo=None, hi=None) -> np.ndarray:
    """round(values * scale) as ``dtype``, or ``QuantError`` naming ``what`` and the range found."""
    ints = np.round(np.asarray(values, np.float64) * scale)
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    if not np.all(np.isfinite(ints)):
        raise QuantError(f"{what}: non-finite value")
    if ints.size and (ints.min() < lo or ints.max() > hi):
        bad = int(((ints < lo) | (ints > hi)).sum())
        raise QuantError(f"{what} overflow {np.dtype(dtype).name}: quantised values span "
                         f"{ints.min():.0f}..{ints.max():.0f}, the type holds {lo}..{hi} ({bad} value(s) outside)")
    return ints.astype(dtype)


def accumulator_bounds(ft_bias: np.ndarray, ft_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per neuron, the lowest and highest accumulator any position can give: the bias plus the 32 most
    negative (positive) weights of one king bucket (a perspective's features all lie in its king's bucket)."""
    lo = np.full(ft_bias.shape, np.inf)
    hi = np.full(ft_bias.shape, -np.inf)
    k = min(MAX_ACTIVE, PS_NB)
    for b in range(KING_BUCKETS):
        block = np.asarray(ft_weights[b * PS_NB:(b + 1) * PS_NB], np.float64)
        top = np.partition(block, PS_NB - k, axis=0)[-k:]
        bottom = np.partition(block, k - 1, axis=0)[:k]
        hi = np.maximum(hi, np.clip(top, 0, None).sum(0))
        lo = np.minimum(lo, np.clip(bottom, None, 0).sum(0))
    return ft_bias + lo, ft_bias + hi


def quantise(fnet: FloatNet, scheme: Scheme) -> QuantNet:
    """The integer tensors of ``fnet`` under ``scheme`` (``QuantError`` on any overflow)."""
    l1, ns = fnet.l1, fnet.stacks
    if len(scheme.stacks) != ns:
        raise ValueError(f"scheme has {len(scheme.stacks)} stacks, the net {ns}")
    s_acc = scheme.ft_scale
    ft_bias = _round(fnet.ft_bias, s_acc, FT_DTYPE, "feature transformer biases")
    ft_weights = _round(fnet.ft_weights, s_acc, FT_DTYPE, "feature transformer weights")
    lo, hi = accumulator_bounds(ft_bias.astype(np.int64), ft_weights)
    if lo.min() < -FT_MAX - 1 or hi.max() > FT_MAX:
        raise QuantError(f"feature transformer accumulator (bias + 32 weights of one king bucket) could reach "
                         f"{lo.min():.0f}..{hi.max():.0f} at scale {s_acc:g}, beyond int16")
    ft_psqt = _round(fnet.ft_psqt, scheme.psqt_scale, PSQT_DTYPE, "PSQT weights")
    if MAX_ACTIVE * np.abs(ft_psqt.astype(np.int64)).max() > INT32_MAX:
        raise QuantError("PSQT accumulator could leave int32")

    b0 = np.zeros((ns, FC0_OUT), BIAS_DTYPE)
    w0 = np.zeros((ns, FC0_OUT, padded(l1)), WEIGHT_DTYPE)
    b1 = np.zeros((ns, FC1_OUT), BIAS_DTYPE)
    w1 = np.zeros((ns, FC1_OUT, FC1_IN_PADDED), WEIGHT_DTYPE)
    b2 = np.zeros(ns, BIAS_DTYPE)
    w2 = np.zeros((ns, FC2_IN_PADDED), WEIGHT_DTYPE)
    wlo, whi = -WEIGHT_MAX - 1, WEIGHT_MAX
    s_x = scheme.x.scale[0]
    for s, st in enumerate(scheme.stacks):
        a0 = np.asarray(st.fc_0.acc_scale)
        w0[s, :, :l1] = _round(fnet.w0[s] * (a0[:, None] / s_x), 1.0, WEIGHT_DTYPE, f"stack {s} fc_0 weights",
                               wlo, whi)
        b0[s] = _round(fnet.b0[s] * a0, 1.0, BIAS_DTYPE, f"stack {s} fc_0 biases")
        in1 = np.concatenate([st.ac_sqr_0.scale, st.ac_0.scale])
        a1 = np.asarray(st.fc_1.acc_scale)
        w1[s, :, :len(in1)] = _round(fnet.w1[s] * (a1[:, None] / in1[None, :]), 1.0, WEIGHT_DTYPE,
                                     f"stack {s} fc_1 weights", wlo, whi)
        b1[s] = _round(fnet.b1[s] * a1, 1.0, BIAS_DTYPE, f"stack {s} fc_1 biases")
        a2 = st.fc_2.acc_scale[0]
        w2[s, :FC1_OUT] = _round(fnet.w2[s] * (a2 / np.asarray(st.ac_1.scale)), 1.0, WEIGHT_DTYPE,
                                 f"stack {s} fc_2 weights", wlo, whi)
        b2[s] = _round(fnet.b2[s] * a2, 1.0, BIAS_DTYPE, f"stack {s} fc_2 bias")
    qnet = QuantNet(scheme, ft_bias, ft_weights, ft_psqt, b0, w0, b1, w1, b2, w2, fnet.description)
    check_sums(qnet)
    check_requants(qnet)
    return qnet
