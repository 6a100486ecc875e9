"""Two nets in Stockfish 17.1's format, made from Stockfish 15.1's net, for the 17.1 exactness tests.

Stockfish 17.1's own nets are not distributed with it, so the 17.1 reference data in ``tests/data/nnue`` was
measured with two synthetic nets derived from the 15.1 net: a big one (L1 = 3072) and a small one (L1 = 128),
both with LEB128-compressed feature transformers. They are not trained (as chess they mean nothing); every
integer of them is test material. The recipe is fixed, seeded and deterministic: the nets made here must have
the sha256 that the reference data was measured with (``SHA256``), which the fixture in ``conftest.py`` checks.
The nets are read and written with the engine's own reader and writer (``quantfish.nnue.io.stockfish``).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from quantfish.nnue.architecture import Architecture
from quantfish.nnue.net import Net
from quantfish.nnue.io import load_net
from quantfish.nnue.io.stockfish import net_bytes

SHA256 = {
    "synthetic_big.nnue": "f4259ea4516a6792b36b61339d12a8ab9071c308accb7927aa39146df36c63a8",
    "synthetic_small.nnue": "1e9d8355738ce490c302ddd1cf1020b4888665ff7dd97dd71eac5ff96e395218",
}
DESCRIPTION = {
    "synthetic_big.nnue": b"SYNTHETIC TEST NET (not trained): SF17.1 big-net format, L1=3072, derived from SF15.1 "
                          b"nn-ad9b42354671.nnue",
    "synthetic_small.nnue": b"SYNTHETIC TEST NET (not trained): SF17.1 small-net format, L1=128, derived from SF15.1 "
                            b"nn-ad9b42354671.nnue",
}
SOURCE_HALF = 512           # the 15.1 net's accumulator width per perspective half
BIG_SEED, SMALL_SEED = 17, 128


def _perturbed_stack(src: Net, s: int, rng) -> dict:
    """Stack ``s`` of ``src`` with fc_1 and fc_2 nudged by +-1 here and there, fc_1's two padding columns filled
    with noise (they must have no effect) and small offsets on their biases; fc_0 is set by the caller."""
    w1 = src.w1[s].astype(np.int64)
    w1 += (rng.random(w1.shape) < 0.25) * rng.choice([-1, 1], w1.shape)
    w1[:, 30:32] = rng.integers(-20, 21, (w1.shape[0], 2))
    w2 = src.w2[s].astype(np.int64)
    w2 += (rng.random(w2.shape) < 0.25) * rng.choice([-1, 1], w2.shape)
    b1 = src.b1[s].astype(np.int64) + rng.integers(-8, 9, src.b1[s].shape)
    b2 = np.int64(src.b2[s]) + rng.integers(-8, 9, 1)[0]
    return {"w1": np.clip(w1, -128, 127).astype(np.int8), "w2": np.clip(w2, -128, 127).astype(np.int8),
            "b1": b1.astype(np.int32), "b2": np.int32(b2), "b0": src.b0[s].copy()}


def _net(l1: int, name: str, ft_bias, ft_weights, ft_psqt, stacks: list) -> Net:
    def stacked(key, dtype):
        return np.ascontiguousarray(np.stack([st[key] for st in stacks]).astype(dtype))
    return Net(Architecture(l1=l1, compressed_ft=True), DESCRIPTION[name], ft_bias, ft_weights, ft_psqt,
               stacked("b0", np.int32), stacked("w0", np.int8), stacked("b1", np.int32), stacked("w1", np.int8),
               stacked("b2", np.int32), stacked("w2", np.int8))


def make_big(src: Net) -> Net:
    """L1 = 3072: each perspective half holds the 15.1 half three times (as is, and twice permuted, scaled by
    0.92 and 1.08), with noise; fc_0's weight of each source input is split in three parts over its copies."""
    rng = np.random.default_rng(BIG_SEED)
    n_features = src.ft_weights.shape[0]
    perms = [np.arange(SOURCE_HALF), rng.permutation(SOURCE_HALF), rng.permutation(SOURCE_HALF)]
    scales = [1.00, 0.92, 1.08]
    ft_weights = np.empty((n_features, 3072), np.int16)
    ft_bias = np.empty(3072, np.int16)
    for half in range(2):
        for k in range(3):
            cols = half * SOURCE_HALF + perms[k]
            dst = slice(half * 1536 + k * 512, half * 1536 + (k + 1) * 512)
            w = np.rint(src.ft_weights[:, cols].astype(np.float32) * scales[k]) + rng.normal(0, 2.0, (n_features, 512))
            ft_weights[:, dst] = np.rint(w).astype(np.int16)
            ft_bias[dst] = np.rint(src.ft_bias[cols] * scales[k] + rng.normal(0, 3.0, 512)).astype(np.int16)
    ft_psqt = (src.ft_psqt.astype(np.int64) + np.rint(rng.normal(0, 40, src.ft_psqt.shape))).astype(np.int32)
    stacks = []
    for s in range(src.arch.layer_stacks):
        stack = _perturbed_stack(src, s, rng)
        w0 = src.w0[s].astype(np.int64)
        third = np.floor_divide(w0, 3)
        extra = w0 - 3 * third                     # 0..2 units left over, given to randomly chosen copies
        order = np.argsort(rng.random((3,) + w0.shape), axis=0)
        parts = third[None] + (order < extra[None]).astype(np.int64)
        assert (parts.sum(axis=0) == w0).all()
        w0_big = np.empty((w0.shape[0], 3072), np.int64)
        for half in range(2):
            for k in range(3):
                w0_big[:, half * 1536 + k * 512:half * 1536 + (k + 1) * 512] = \
                    parts[k][:, half * SOURCE_HALF + perms[k]]
        stack["w0"] = w0_big.astype(np.int8)
        stacks.append(stack)
    return _net(3072, "synthetic_big.nnue", ft_bias, ft_weights, ft_psqt, stacks)


def make_small(src: Net, gain: float = 2.0) -> Net:
    """L1 = 128: the 64 accumulator columns per half that fc_0 weighs most, with noise; fc_0 scaled by ``gain``."""
    rng = np.random.default_rng(SMALL_SEED)
    n_features = src.ft_weights.shape[0]
    weight = np.zeros(SOURCE_HALF)
    for s in range(src.arch.layer_stacks):
        a = np.abs(src.w0[s].astype(np.int64))
        weight += a[:, :SOURCE_HALF].sum(0) + a[:, SOURCE_HALF:2 * SOURCE_HALF].sum(0)
    chosen = np.sort(np.argsort(-weight)[:64])
    ft_weights = np.empty((n_features, 128), np.int16)
    ft_bias = np.empty(128, np.int16)
    for half in range(2):
        cols = half * SOURCE_HALF + chosen
        ft_weights[:, half * 64:(half + 1) * 64] = \
            np.rint(src.ft_weights[:, cols] + rng.normal(0, 2.0, (n_features, 64))).astype(np.int16)
        ft_bias[half * 64:(half + 1) * 64] = np.rint(src.ft_bias[cols] + rng.normal(0, 3.0, 64)).astype(np.int16)
    ft_psqt = (src.ft_psqt.astype(np.int64) + np.rint(rng.normal(0, 60, src.ft_psqt.shape))).astype(np.int32)
    stacks = []
    for s in range(src.arch.layer_stacks):
        stack = _perturbed_stack(src, s, rng)
        w0 = src.w0[s].astype(np.float64)
        w0_small = np.concatenate([w0[:, chosen], w0[:, SOURCE_HALF + chosen]], axis=1) * gain
        stack["w0"] = np.clip(np.rint(w0_small), -128, 127).astype(np.int8)
        stacks.append(stack)
    return _net(128, "synthetic_small.nnue", ft_bias, ft_weights, ft_psqt, stacks)


def write_synthetic_nets(src_path, out_dir) -> dict:
    """Makes both nets from Stockfish 15.1's net at ``src_path`` into ``out_dir``; returns {name: sha256}."""
    src = load_net(src_path)
    digests = {}
    for name, make in (("synthetic_big.nnue", make_big), ("synthetic_small.nnue", make_small)):
        data = net_bytes(make(src))
        (Path(out_dir) / name).write_bytes(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests
