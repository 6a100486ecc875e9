"""The integer reference simulator: what a scheme's integers compute, from the tensors and the record alone.

Plain numpy, int64 throughout (every sum is exact; the record's ``int32`` flag reproduces C++'s wrap where
Stockfish has it). It reads nothing but a ``QuantNet`` (integer tensors + ``Scheme``), and follows the
arithmetic in ``quantfish.nnue.scheme``'s docstring step by step. For the ``sf`` record it is Stockfish 15.1's
forward pass (docs/nnue-sf15.1.md sections 4-6), which the tests check against the reference data and the
engine; for every other record it is the definition the engine's future Numba and C paths must equal.

fc_0 runs as a float64 matrix product: its integer partial sums stay far below 2**53, so the result is exact
(``_exact_matmul`` checks the bound).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.nnue.architecture import FC0_OUT, N_HIDDEN
from quantfish.quant.build import QuantNet
from quantfish.nnue.scheme import Requant

SKIP = FC0_OUT - 1


def requant(rq: Requant, v) -> np.ndarray:
    """``R(v * mul / (div * 2**shift))`` elementwise; ``mul`` broadcasts over the last axis."""
    p = np.asarray(v, np.int64) * np.asarray(rq.mul if len(rq.mul) > 1 else rq.mul[0], np.int64)
    if rq.int32:
        p = (p + (1 << 31)) % (1 << 32) - (1 << 31)
    d = rq.div << rq.shift
    if d == 1:
        return p
    if rq.rounding == "floor":
        return p // d
    if rq.rounding == "trunc":
        return np.sign(p) * (np.abs(p) // d)
    return (p + d // 2) // d


def _exact_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w.T for integer arrays, through float64 when every partial sum is exactly representable."""
    bound = float(np.abs(x).max(initial=0)) * float(np.abs(w).sum(-1).max(initial=0))
    if bound < 2.0 ** 52:
        return np.rint(x.astype(np.float64) @ w.T.astype(np.float64)).astype(np.int64)
    return x.astype(np.int64) @ w.T.astype(np.int64)


class IntTrace(NamedTuple):
    """Every integer of the forward pass of n positions, each through its chosen stack."""

    acc: np.ndarray          # [n, 2 * L1] accumulators, side to move's first
    x: np.ndarray            # [n, L1] fc_0's input
    psqt: np.ndarray         # [n]
    z0: np.ndarray           # [n, 16]
    l1in: np.ndarray         # [n, 30] SqrClippedReLU then ClippedReLU outputs
    z1: np.ndarray           # [n, 32]
    c1: np.ndarray           # [n, 32]
    z2: np.ndarray           # [n]
    positional: np.ndarray   # [n]
    raw: np.ndarray          # [n] internal units


class Accumulators(NamedTuple):
    """The FT part of the pass, which depends only on the FT tensors (reusable across records that share them)."""

    acc: np.ndarray          # [n, 2 * L1] int64, side to move's first
    psqt_us: np.ndarray      # [n, buckets]
    psqt_them: np.ndarray


def accumulate(qnet: QuantNet, positions, chunk: int = 256) -> Accumulators:
    """Accumulators and PSQT sums of each position (side to move's first)."""
    parts = []
    for i in range(0, len(positions), chunk):
        sl = slice(i, i + chunk)
        sums = [_sums(qnet, idx) for idx in (positions.white[sl], positions.black[sl])]
        wtm = (positions.stm[sl] == 0)[:, None]
        (aw, pw), (ab, pb) = sums
        parts.append((np.concatenate([np.where(wtm, aw, ab), np.where(wtm, ab, aw)], 1),
                      np.where(wtm, pw, pb), np.where(wtm, pb, pw)))
    return Accumulators(*(np.concatenate(p) for p in zip(*parts)))


def _sums(qnet: QuantNet, idx: np.ndarray):
    pads = (idx < 0).sum(1)[:, None]
    safe = np.where(idx < 0, 0, idx)
    acc = (qnet.ft_weights[safe].sum(1, dtype=np.int64) - pads * qnet.ft_weights[0].astype(np.int64)
           + qnet.ft_bias)
    psqt = qnet.ft_psqt[safe].sum(1, dtype=np.int64) - pads * qnet.ft_psqt[0].astype(np.int64)
    return acc, psqt


def simulate(qnet: QuantNet, positions, stack=None, accumulators: Accumulators | None = None) -> IntTrace:
    """The integer forward pass; ``stack`` (default: each position's bucket) picks the layer stack and PSQT
    bucket. ``accumulators`` (from ``accumulate`` with the same FT tensors) saves the FT sums."""
    sch = qnet.scheme
    n, l1 = len(positions), qnet.l1
    stack = positions.bucket if stack is None else np.broadcast_to(np.asarray(stack, np.int64), (n,))
    accs = accumulators if accumulators is not None else accumulate(qnet, positions)
    acc = accs.acc
    half = l1 // 2
    a = np.clip(acc, 0, sch.ft_hi)
    prod = np.concatenate([a[:, :half] * a[:, half:l1], a[:, l1:l1 + half] * a[:, l1 + half:]], 1)
    x = np.clip(requant(sch.x.requant, prod), 0, sch.x.hi[0])
    rows = np.arange(n)
    psqt = requant(sch.psqt, accs.psqt_us[rows, stack] - accs.psqt_them[rows, stack])

    z0 = np.empty((n, FC0_OUT), np.int64)
    l1in = np.empty((n, 2 * N_HIDDEN), np.int64)
    z1 = np.empty((n, qnet.b1.shape[1]), np.int64)
    c1 = np.empty_like(z1)
    z2 = np.empty(n, np.int64)
    positional = np.empty(n, np.int64)
    for s in np.unique(stack):
        m = stack == s
        st = sch.stacks[s]
        z0[m] = qnet.b0[s] + _exact_matmul(x[m], qnet.w0[s, :, :l1])
        h = z0[m, :N_HIDDEN]
        capped = np.minimum(np.abs(h), np.asarray(st.ac_sqr_0.limit, np.int64))
        sq = np.minimum(requant(st.ac_sqr_0.requant, capped * capped), np.asarray(st.ac_sqr_0.hi, np.int64))
        cr = np.clip(requant(st.ac_0.requant, h), 0, np.asarray(st.ac_0.hi, np.int64))
        l1in[m] = np.concatenate([sq, cr], 1)
        z1[m] = qnet.b1[s] + l1in[m] @ qnet.w1[s, :, :2 * N_HIDDEN].T.astype(np.int64)
        c1[m] = np.clip(requant(st.ac_1.requant, z1[m]), 0, np.asarray(st.ac_1.hi, np.int64))
        z2[m] = qnet.b2[s] + c1[m] @ qnet.w2[s, :c1.shape[1]].astype(np.int64)
        positional[m] = requant(st.out, z2[m]) + requant(st.skip, z0[m, SKIP])
    raw = requant(sch.final, psqt + positional)
    return IntTrace(acc, x, psqt, z0, l1in, z1, c1, z2, positional, raw)
