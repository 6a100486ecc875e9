"""What the Quantfish net format guarantees before the engine runs a net: no integer sum or product leaves its type.

A scheme's integers are run by three paths (the reference simulator in int64, the Numba path and the C kernel,
which sum in int32 as Stockfish does). They agree only while nothing overflows, so the quantiser refuses a
net that could overflow (``quantfish.quant.build``) and the reader checks every file again
(``quantfish.nnue.io.quantfish``): a net written elsewhere, or damaged, is refused with the layer named.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quantfish.nnue.architecture import FC1_IN_PADDED, FC1_OUT, FC2_IN_PADDED, MAX_ACTIVE, N_HIDDEN
from quantfish.nnue.scheme import Requant, Scheme

INT32_MAX = int(np.iinfo(np.int32).max)


class QuantError(ValueError):
    """A tensor or a sum that would not fit its integer type under the scheme."""


@dataclass(eq=False)
class QuantNet:
    """A scheme record and its integer tensors, in ``Net``'s field names, dtypes and padded shapes."""

    scheme: Scheme
    ft_bias: np.ndarray
    ft_weights: np.ndarray
    ft_psqt: np.ndarray
    b0: np.ndarray
    w0: np.ndarray
    b1: np.ndarray
    w1: np.ndarray
    b2: np.ndarray
    w2: np.ndarray
    description: bytes = b""

    @property
    def l1(self) -> int:
        return self.ft_bias.shape[0]


def _check_sum(what: str, bias: np.ndarray, w: np.ndarray, in_hi) -> list:
    """The int32 sum of an affine layer, whatever the inputs in [0, in_hi]; returns each row's bound on |sum|."""
    bound = np.abs(bias.astype(np.int64)) + (np.abs(w.astype(np.int64)) * np.asarray(in_hi, np.int64)).sum(-1)
    if bound.max() > INT32_MAX:
        raise QuantError(f"{what} sum could reach {int(bound.max())}, beyond int32")
    return [int(b) for b in np.atleast_1d(bound)]


def _check_requant(what: str, rq: Requant, in_bound) -> int:
    """The requantisation ``rq`` of inputs bounded by ``in_bound`` (per row, or one for all): ``QuantError`` if
    a product with its multiplier, plus the rounding addend, could pass int64, where the definition
    (``quantfish.quant.simulator``) and every engine path compute it (past it they would wrap, and not alike).
    Returns the bound on |R(v)|."""
    rows = max(len(rq.mul), len(in_bound) if isinstance(in_bound, (list, tuple)) else 1)
    muls = [int(m) for m in rq.mul] * (rows if len(rq.mul) == 1 else 1)
    bounds = [int(b) for b in in_bound] if isinstance(in_bound, (list, tuple)) else [int(in_bound)] * rows
    if len(bounds) == 1:
        bounds = bounds * rows
    d = rq.div << rq.shift
    top = max(b * m for b, m in zip(bounds, muls)) + d // 2
    if top >= 2 ** 63:
        raise QuantError(f"{what} requantisation could reach {top} (inputs up to {max(bounds)}, multipliers up to "
                         f"{max(muls)}), beyond int64")
    return top // d + 1


def _stack_sums(qnet: QuantNet, s: int) -> tuple:
    """Stack ``s``'s fc_0, fc_1 and fc_2 sums checked against int32 within the record's clamps
    (``_check_sum``); returns their per-row bounds."""
    sch = qnet.scheme
    st = sch.stacks[s]
    z0 = _check_sum(f"stack {s} fc_0", qnet.b0[s], qnet.w0[s], sch.x.hi[0])
    in1_hi = np.concatenate([np.broadcast_to(st.ac_sqr_0.hi, (N_HIDDEN,)), np.broadcast_to(st.ac_0.hi, (N_HIDDEN,)),
                             np.zeros(FC1_IN_PADDED - 2 * N_HIDDEN, np.int64)])
    z1 = _check_sum(f"stack {s} fc_1", qnet.b1[s], qnet.w1[s], in1_hi)
    c1_hi = np.concatenate([np.broadcast_to(st.ac_1.hi, (FC1_OUT,)), np.zeros(FC2_IN_PADDED - FC1_OUT, np.int64)])
    z2 = _check_sum(f"stack {s} fc_2", qnet.b2[s:s + 1], qnet.w2[s:s + 1], c1_hi)
    return z0, z1, z2


def check_sums(qnet: QuantNet) -> None:
    """``QuantError`` naming the layer if an affine layer's sum could leave int32 for some inputs within the
    record's clamps. The C kernel sums in int32 as Stockfish does, so a file read from disk is checked too
    (``quantfish.nnue.io.quantfish``): within this bound every path equals the simulator's int64 sums."""
    for s in range(len(qnet.scheme.stacks)):
        _stack_sums(qnet, s)


def check_requants(qnet: QuantNet) -> None:
    """``QuantError`` naming the site if a requantisation's product could pass int64 for some position, or the
    PSQT or positional output could leave int32 (the C kernel returns both in 32 bits). The inputs' bounds: the
    FT clamp's square, the PSQT sums of 32 features, the affine sums' bounds within the clamps (``check_sums``),
    the square's cap."""
    sch = qnet.scheme
    _check_requant("fc_0 input (the pairwise product)", sch.x.requant, sch.ft_hi ** 2)
    psqt = _check_requant("PSQT", sch.psqt, 2 * MAX_ACTIVE * int(np.abs(qnet.ft_psqt.astype(np.int64)).max(initial=0)))
    if psqt > INT32_MAX:
        raise QuantError(f"PSQT output could reach {psqt}, beyond int32")
    for s, st in enumerate(sch.stacks):
        z0, z1, z2 = _stack_sums(qnet, s)
        cap = list(st.ac_sqr_0.limit) if st.ac_sqr_0.limit else z0[:N_HIDDEN]
        cap = cap * N_HIDDEN if len(cap) == 1 else cap
        _check_requant(f"stack {s} SqrClippedReLU", st.ac_sqr_0.requant,
                       [min(int(c), z) ** 2 for c, z in zip(cap, z0[:N_HIDDEN])])
        _check_requant(f"stack {s} ClippedReLU of fc_0", st.ac_0.requant, z0[:N_HIDDEN])
        skip = _check_requant(f"stack {s} skip", st.skip, z0[N_HIDDEN])
        _check_requant(f"stack {s} ClippedReLU of fc_1", st.ac_1.requant, z1)
        positional = _check_requant(f"stack {s} output", st.out, z2[0]) + skip
        if positional > INT32_MAX:
            raise QuantError(f"stack {s} positional output could reach {positional}, beyond int32")
        _check_requant(f"stack {s} final", sch.final, psqt + positional)
