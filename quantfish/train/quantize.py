"""Between the float model and Stockfish's integer ``Net``: dequantise a net, quantise a model, export it.

Scales are the fixed ones of ``quantfish.nnue.scales``. Dequantising then quantising gives back the very same
integers (every integer / scale is exact enough in float32 to round back), so Stockfish 15.1's net survives
the round trip byte for byte. Quantising refuses, never clips: a value outside its integer type raises
``QuantisationError`` naming the layer, where the extreme value sits, and the range found. It also refuses
a feature transformer whose accumulator could leave int16 (for Stockfish 17.1-style nets, L1 = 128, half of
it, because Stockfish doubles the accumulator with int16 wrapping), since the engine would then wrap.

Every width is written in Stockfish 15.1's raw layout, so the engine evaluates it with 15.1's arithmetic, the
one the model is trained for (``quantfish.nnue.io.stockfish`` reads a raw file of any width; L1 = 1024 loads in Stockfish 15.1
itself). LEB128 FT tensors would mark a Stockfish 16+ net, evaluated with 17.1's formulas.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from quantfish.nnue.architecture import (
    FC0_OUT, FC1_OUT, KING_BUCKETS, LAYER_STACKS, MAX_ACTIVE, NUM_FEATURES, PS_NB, Architecture,
)
from quantfish.nnue.net import Net
from quantfish.nnue.io import load_net
from quantfish.nnue.io.stockfish import write_net
from quantfish.nnue import scales
from quantfish.train.model import FC1_IN, NnueModel

DEFAULT_DESCRIPTION = b"Network trained with Quantfish's trainer (nnue/train)."

_LAYER_NAMES = {
    "ft_bias": "feature transformer biases",
    "ft_weights": "feature transformer weights",
    "ft_psqt": "PSQT weights",
    "b0": "fc_0 biases", "w0": "fc_0 weights",
    "b1": "fc_1 biases", "w1": "fc_1 weights",
    "b2": "fc_2 bias", "w2": "fc_2 weights",
}


class QuantisationError(ValueError):
    """A parameter does not fit the integer type Stockfish stores it in."""


def net_architecture(l1: int) -> Architecture:
    """The file architecture for width ``l1``: Stockfish 15.1's raw layout and arithmetic at any width."""
    return Architecture(l1=l1, compressed_ft=False)


# ---------------------------------------------------------------------------------------------------------
# Net -> model

def dequantise(net: Net, model: NnueModel | None = None) -> NnueModel:
    """A float model holding ``net``'s parameters divided by their scales (a new model unless one is given).
    The fixed scales are those of Stockfish 15.1's format: a net stored otherwise (a compressed or shifted feature
    transformer) is refused rather than read at the wrong scale."""
    l1 = net.arch.l1
    name = net.path or "net"
    net.arch.require_fixed_scales(name)
    if net.arch.layer_stacks != LAYER_STACKS or net.arch.fc0_out != FC0_OUT or net.arch.fc1_out != FC1_OUT:
        raise ValueError(f"{name}: unsupported layer stack shape: {net.arch.describe()}")
    model = model if model is not None else NnueModel(l1, seed=None)
    if model.l1 != l1:
        raise ValueError(f"{name}: L1 = {l1}, the model has L1 = {model.l1} (give --l1 {l1} or wider)")
    f = lambda a, q: torch.from_numpy(np.asarray(a, np.float64) / q.scale).float()
    with torch.no_grad():
        model.ft_weight.zero_()
        model.ft_weight[:NUM_FEATURES, :l1] = f(net.ft_weights, scales.FT_WEIGHTS)
        model.ft_weight[:NUM_FEATURES, l1:] = f(net.ft_psqt, scales.FT_PSQT)
        model.ft_bias.copy_(f(net.ft_bias, scales.FT_BIAS))
        model.w0.copy_(f(net.w0[:, :, :l1], scales.W0).reshape(-1, l1))
        model.b0.copy_(f(net.b0, scales.B0).reshape(-1))
        model.w1.copy_(f(net.w1[:, :, :FC1_IN], scales.W1).reshape(-1, FC1_IN))
        model.b1.copy_(f(net.b1, scales.B1).reshape(-1))
        model.w2.copy_(f(net.w2[:, :FC1_OUT], scales.W2))
        model.b2.copy_(f(net.b2, scales.B2))
    return model


# ---------------------------------------------------------------------------------------------------------
# model -> Net

def _quantise(values: np.ndarray, q: scales.Quant, layer_shape: str) -> np.ndarray:
    """round(values * scale) as q.dtype, or QuantisationError naming the layer and the offending range."""
    ints = np.round(np.asarray(values, np.float64) * q.scale)
    lo, hi = q.int_range
    bad = (ints < lo) | (ints > hi) | ~np.isfinite(ints)
    if bad.any():
        finite = np.where(np.isfinite(ints), ints, 0)
        worst = np.unravel_index(np.argmax(np.where(bad, np.abs(finite), -1)), ints.shape)
        raise QuantisationError(
            f"cannot export: {_LAYER_NAMES[q.layer]} ({q.layer}) overflow {np.dtype(q.dtype).name}: "
            f"quantised values span {ints[np.isfinite(ints)].min():.0f}..{ints[np.isfinite(ints)].max():.0f} "
            f"(float {np.nanmin(values):.6g}..{np.nanmax(values):.6g} at scale {q.scale:g}), the type holds "
            f"{lo}..{hi} (float {lo / q.scale:.6g}..{hi / q.scale:.6g}); {int(bad.sum())} value(s) outside, the "
            f"largest at {layer_shape} {tuple(int(i) for i in worst)}. Train with weight clipping "
            f"(NnueModel.clip_weights) rather than clip here.")
    return ints.astype(q.dtype)


def accumulator_range(ft_bias: np.ndarray, ft_weights: np.ndarray) -> tuple[int, int]:
    """Bounds of any accumulator value: bias + the 32 most positive (negative) weights of one king bucket.

    One perspective's active features all lie in the 704 rows of its king's bucket, at most 32 of them.
    """
    l1 = ft_weights.shape[1]
    hi = np.full(l1, np.iinfo(np.int64).min)
    lo = np.full(l1, np.iinfo(np.int64).max)
    for b in range(KING_BUCKETS):
        block = ft_weights[b * PS_NB:(b + 1) * PS_NB].astype(np.int32)
        top = np.partition(block, PS_NB - MAX_ACTIVE, axis=0)[-MAX_ACTIVE:]
        bottom = np.partition(block, MAX_ACTIVE - 1, axis=0)[:MAX_ACTIVE]
        hi = np.maximum(hi, np.clip(top, 0, None).sum(0, dtype=np.int64))
        lo = np.minimum(lo, np.clip(bottom, None, 0).sum(0, dtype=np.int64))
    bias = ft_bias.astype(np.int64)
    return int((bias + lo).min()), int((bias + hi).max())


def _check_accumulator(arch: Architecture, ft_bias: np.ndarray, ft_weights: np.ndarray) -> None:
    lo, hi = accumulator_range(ft_bias, ft_weights)
    shift = arch.ft_shift
    lim_lo, lim_hi = -(scales.ACC_LIMIT + 1) >> shift, scales.ACC_LIMIT >> shift
    if lo < lim_lo or hi > lim_hi:
        why = ("int16 after Stockfish 17.1 doubles it at load" if shift else "int16")
        raise QuantisationError(
            f"cannot export: feature transformer accumulator (ft_bias + 32 ft_weights rows) could reach "
            f"{lo}..{hi}, outside {lim_lo}..{lim_hi} ({why}); the engine would wrap around")


def model_arrays(model: NnueModel) -> dict[str, np.ndarray]:
    """The model's float parameters (float64) in the shapes of ``Net``'s fields, padding columns zero (a
    factorised model's virtual rows folded into the real ones; QAT parametrisations in their exported form,
    ``NnueModel.exported``)."""
    model = model.folded()
    l1 = model.l1
    g = lambda p: p.detach().cpu().double().numpy()
    with torch.no_grad():
        ftw, ftb, eff_w0, b0, eff_w1, b1, eff_w2, b2 = (g(p) for p in model.exported())
    arch = net_architecture(l1)
    w0 = np.zeros((LAYER_STACKS, FC0_OUT, arch.fc0_in_padded))
    w0[:, :, :l1] = eff_w0.reshape(LAYER_STACKS, FC0_OUT, l1)
    w1 = np.zeros((LAYER_STACKS, FC1_OUT, arch.fc1_in_padded))
    w1[:, :, :FC1_IN] = eff_w1.reshape(LAYER_STACKS, FC1_OUT, FC1_IN)
    w2 = np.zeros((LAYER_STACKS, arch.fc2_in_padded))
    w2[:, :FC1_OUT] = eff_w2
    return {"ft_bias": ftb, "ft_weights": ftw[:NUM_FEATURES, :l1],
            "ft_psqt": ftw[:NUM_FEATURES, l1:], "b0": b0.reshape(LAYER_STACKS, FC0_OUT), "w0": w0,
            "b1": b1.reshape(LAYER_STACKS, FC1_OUT), "w1": w1, "b2": b2, "w2": w2}


_SHAPE_NAMES = {"ft_bias": "[neuron]", "ft_weights": "[feature, neuron]", "ft_psqt": "[feature, bucket]",
                "b0": "[stack, output]", "w0": "[stack, output, input]", "b1": "[stack, output]",
                "w1": "[stack, output, input]", "b2": "[stack]", "w2": "[stack, input]"}


def quantise(model: NnueModel, description: bytes = DEFAULT_DESCRIPTION) -> Net:
    """The model as a Stockfish ``Net`` (refuses with ``QuantisationError`` rather than clip)."""
    arch = net_architecture(model.l1)
    floats = model_arrays(model)
    ints = {q.layer: _quantise(floats[q.layer], q, _SHAPE_NAMES[q.layer]) for q in scales.ALL}
    _check_accumulator(arch, ints["ft_bias"], ints["ft_weights"])
    return Net(arch=arch, description=bytes(description), **ints)


def export(model: NnueModel, path, description: bytes = DEFAULT_DESCRIPTION) -> Net:
    """Quantise, write ``path``, and read it back through the engine's loader (which validates it)."""
    net = quantise(model, description)
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    write_net(net, path)
    return load_net(path)
