"""Float model against integer engine, in numpy: the exact float value, the integer one, and a rigorous interval.

The float counterpart (``NnueModel`` with dequantised weights) and the engine share every weight; they differ
only where the engine rounds an activation down: the pairwise product ``>> 7``, fc_0's and fc_1's ``>> 6``
before ClippedReLU, SqrClippedReLU's ``>> 19``, and the truncating divisions of the skip connection
(``* 9600 / 8128``), of the PSQT (``/ 2``) and of the output (``/ 16``). For a ``Net`` and a batch of positions
``compare`` computes three things, all in the engine's units:

* ``real``: the float counterpart's output (no rounding, float64), what ``NnueModel`` computes in float32;
* ``psqt``/``positional``: the integer simulator (every rounding as the engine does it, int64), the ground
  truth the engine's compiled paths must equal integer for integer (docs/quantisation.md);
* ``lo``/``hi``: the quantisation-error bound. Propagating, layer by layer, the interval between an exact
  activation and its rounded-down value (each weight taking the end that lowers or raises its sum) gives an
  interval that contains both the float output and every output the engine's roundings can produce. It is
  rigorous, not statistical, so an engine value outside it means the model and the engine do not compute the
  same function (a wrong scale, order or clamp); it is also loose (hundreds of units: it lets each of up to
  L1 pairwise products lose a whole step, with the sign of its fc_0 weight), so the typical error is reported
  as measured (``mae``), not derived from it.

The output is in internal units: ``(psqt + positional) / 16``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.nnue.architecture import FC0_OUT, FC1_OUT
from quantfish.nnue.net import Net

N_HIDDEN = FC0_OUT - 1
SKIP = FC0_OUT - 1
FWD_MUL, FWD_DIV = 9600, 8128


class Comparison(NamedTuple):
    """Per position: float output, integer outputs, and the interval holding the float and integer output."""

    real: np.ndarray          # float64[n], internal units
    lo: np.ndarray
    hi: np.ndarray
    psqt: np.ndarray          # int64[n], before / 16 (engine units)
    positional: np.ndarray

    @property
    def integer(self) -> np.ndarray:
        """The engine's output ``tdiv(psqt + positional, 16)``."""
        return _tdiv(self.psqt + self.positional, 16)

    @property
    def width(self) -> np.ndarray:
        return self.hi - self.lo


def _tdiv(a, b):
    a = np.asarray(a, np.int64)
    return np.sign(a) * (np.abs(a) // b)


def _affine(b, w, lo, hi):
    """Interval of b + x @ w.T for x in [lo, hi] (rows of the batch): each weight takes the worse end."""
    wp = np.clip(w, 0, None)
    wn = np.clip(w, None, 0)
    return b + lo @ wp.T + hi @ wn.T, b + hi @ wp.T + lo @ wn.T


def _clipped_relu(lo, hi):
    """Interval of ClippedReLU: exact clamp(v / 64, 0, 127), engine clamp(v >> 6, 0, 127)."""
    return np.clip(np.floor(lo / 64), 0, 127), np.clip(hi / 64, 0, 127)


def _sqr_clipped_relu(lo, hi):
    """Interval of SqrClippedReLU of the signed value: exact min(v^2 / 2^19, 127), engine min(v^2 >> 19, 127)."""
    sq_hi = np.maximum(lo * lo, hi * hi)
    sq_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo * lo, hi * hi))
    return np.minimum(np.floor(sq_lo / 2**19), 127), np.minimum(sq_hi / 2**19, 127)


class _Stack(NamedTuple):
    """One layer stack's weights in float64 (interval and float paths) and int64 (integer path)."""

    w0: np.ndarray
    b0: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    @classmethod
    def of(cls, net: Net, s: int, dtype) -> "_Stack":
        l1 = net.arch.l1
        return cls(*(np.asarray(a, dtype) for a in (
            net.w0[s, :, :l1], net.b0[s], net.w1[s, :, :2 * N_HIDDEN], net.b1[s], net.w2[s, :FC1_OUT],
            net.b2[s:s + 1])))


def _float_stack(st: _Stack, x):
    """Float counterpart of fc_0 .. fc_2 in engine units: returns (fc0, fc2) without any rounding."""
    fc0 = st.b0 + x @ st.w0.T
    h = fc0[:, :N_HIDDEN]
    l1in = np.concatenate([np.minimum(h * h / 2**19, 127), np.clip(h / 64, 0, 127)], 1)
    cr1 = np.clip((st.b1 + l1in @ st.w1.T) / 64, 0, 127)
    return fc0, st.b2[0] + cr1 @ st.w2


def _int_stack(st: _Stack, x):
    """The engine's integer fc_0 .. fc_2 (int64 arithmetic, floors where the engine shifts)."""
    fc0 = st.b0 + x @ st.w0.T
    h = fc0[:, :N_HIDDEN]
    l1in = np.concatenate([np.minimum((h * h) >> 19, 127), np.clip(h >> 6, 0, 127)], 1)
    cr1 = np.clip((st.b1 + l1in @ st.w1.T) >> 6, 0, 127)
    return fc0, st.b2[0] + cr1 @ st.w2


def _interval_stack(st: _Stack, x_lo, x_hi):
    """Intervals of fc_0 and fc_2 given the interval of the transformed input."""
    fc0_lo, fc0_hi = _affine(st.b0, st.w0, x_lo, x_hi)
    h = slice(0, N_HIDDEN)
    sq = _sqr_clipped_relu(fc0_lo[:, h], fc0_hi[:, h])
    cr = _clipped_relu(fc0_lo[:, h], fc0_hi[:, h])
    in_lo, in_hi = (np.concatenate([a, b], 1) for a, b in zip(sq, cr))
    cr1_lo, cr1_hi = _clipped_relu(*_affine(st.b1, st.w1, in_lo, in_hi))
    fc2_lo, fc2_hi = _affine(st.b2, st.w2[None, :], cr1_lo, cr1_hi)
    return fc0_lo, fc0_hi, fc2_lo[:, 0], fc2_hi[:, 0]


def _accumulate(net: Net, idx: np.ndarray):
    """Accumulator (int64, no wrap) and PSQT sums of one perspective's padded index rows."""
    pads = (idx < 0).sum(1)[:, None]
    safe = np.where(idx < 0, 0, idx)                 # padding reads row 0, whose sum is taken back out
    acc = net.ft_weights[safe].sum(1, dtype=np.int64) - pads * net.ft_weights[0] + net.ft_bias
    psqt = net.ft_psqt[safe].sum(1, dtype=np.int64) - pads * net.ft_psqt[0]
    return acc, psqt


def _transform(acc: np.ndarray, shift: int):
    """Pairwise product of one perspective: (exact a*b/128, engine integer) with the net's FT shift."""
    half = acc.shape[1] // 2
    c = np.clip(acc, 0, 127).astype(np.float64)
    exact = c[:, :half] * c[:, half:] / 128
    doubled = ((acc << shift) + 32768) % 65536 - 32768          # int16 wrap of the doubled accumulator
    d = np.clip(doubled, 0, 127 << shift)
    return exact, (d[:, :half] * d[:, half:]) >> (7 + 2 * shift)


def _compare_chunk(net: Net, w_idx, b_idx, stm, bucket) -> Comparison:
    n = stm.shape[0]
    acc_w, psqt_w = _accumulate(net, w_idx)
    acc_b, psqt_b = _accumulate(net, b_idx)
    white = (stm == 0)[:, None]
    acc_us, acc_them = np.where(white, acc_w, acc_b), np.where(white, acc_b, acc_w)
    psqt_us, psqt_them = np.where(white, psqt_w, psqt_b), np.where(white, psqt_b, psqt_w)
    rows = np.arange(n)
    shift = net.arch.ft_shift
    (ex_us, in_us), (ex_them, in_them) = _transform(acc_us, shift), _transform(acc_them, shift)
    x_real = np.concatenate([ex_us, ex_them], 1)
    x_int = np.concatenate([in_us, in_them], 1)

    fc0_real, fc0_int, fc0_lo, fc0_hi = (np.empty((n, FC0_OUT), t) for t in (float, np.int64, float, float))
    fc2_real, fc2_int, fc2_lo, fc2_hi = (np.empty(n, t) for t in (float, np.int64, float, float))
    for s in np.unique(bucket):
        m = bucket == s
        fst, ist = _Stack.of(net, int(s), np.float64), _Stack.of(net, int(s), np.int64)
        fc0_real[m], fc2_real[m] = _float_stack(fst, x_real[m])
        fc0_int[m], fc2_int[m] = _int_stack(ist, x_int[m])
        fc0_lo[m], fc0_hi[m], fc2_lo[m], fc2_hi[m] = _interval_stack(fst, np.floor(x_real[m]), x_real[m])

    k = FWD_MUL / FWD_DIV
    psqt_diff = psqt_us[rows, bucket] - psqt_them[rows, bucket]
    p_real = psqt_diff / 2
    real = (p_real + fc2_real + fc0_real[:, SKIP] * k) / 16
    positional = fc2_int + _tdiv(fc0_int[:, SKIP] * FWD_MUL, FWD_DIV)
    # Truncating divisions can round either way: floor of the low end, ceiling of the high end.
    pos_lo = fc2_lo + np.floor(fc0_lo[:, SKIP] * k)
    pos_hi = fc2_hi + np.ceil(fc0_hi[:, SKIP] * k)
    lo = np.floor((np.floor(p_real) + pos_lo) / 16)
    hi = np.ceil((np.ceil(p_real) + pos_hi) / 16)
    return Comparison(real, lo, hi, _tdiv(psqt_diff, 2), positional)


def compare(net: Net, white_idx, black_idx, stm, bucket, chunk: int = 256) -> Comparison:
    """Float output, integer output and bound for each position (``bucket`` chooses the layer stack)."""
    arrays = [np.asarray(a, np.int64) for a in (white_idx, black_idx, stm, bucket)]
    n = arrays[2].shape[0]
    parts = [_compare_chunk(net, *(a[i:i + chunk] for a in arrays)) for i in range(0, n, chunk)]
    return Comparison(*(np.concatenate(p) for p in zip(*parts)))
