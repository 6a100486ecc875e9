"""Bias correction: each layer's mean quantisation error on calibration positions folded into its bias.

Rounding weights and flooring activations make an integer layer's output differ from the float one by an
amount whose mean over real positions is not zero (a floor loses half a step on average, in one direction).
That mean, measured per output neuron and layer stack on calibration data, is subtracted by adding it to the
integer bias. The layers are corrected in order, each measured after the ones before it are corrected, so a
layer also absorbs the mean error its inputs still carry. fc_2's correction is measured on the net's final
output, so it also takes in the output's own requantisations. Only biases change: a scheme keeps its record
(an ``sf`` net stays a plain Stockfish file).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from quantfish.nnue.architecture import BIAS_DTYPE
from quantfish.nnue.io.overflow import QuantNet, check_requants, check_sums
from quantfish.nnue.scales import NNUE2SCORE
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.simulator import accumulate, simulate

SUFFIX = "+bc"          # the corrected scheme's name: "sf+bc"
MIN_POSITIONS = 32      # a stack seen on fewer calibration positions keeps its biases


def bias_correct(qnet: QuantNet, fnet: FloatNet, positions) -> QuantNet:
    """``qnet`` with fc_0's, fc_1's and fc_2's biases corrected on ``positions`` (each through its own
    bucket's stack), named ``<scheme>+bc``."""
    ft = fnet.forward(positions)
    accs = accumulate(qnet, positions)
    stack = np.asarray(positions.bucket)
    stacks = [s for s in range(len(qnet.scheme.stacks)) if (stack == s).sum() >= MIN_POSITIONS]
    q = replace(qnet, b0=qnet.b0.copy(), b1=qnet.b1.copy(), b2=qnet.b2.copy())
    for layer in ("fc_0", "fc_1", "fc_2"):
        it = simulate(q, positions, accumulators=accs)
        for s in stacks:
            m = stack == s
            st = qnet.scheme.stacks[s]
            if layer == "fc_0":
                err = (ft.z0[m] * np.asarray(st.fc_0.acc_scale) - it.z0[m]).mean(0)
                q.b0[s] = _shifted(q.b0[s], err)
            elif layer == "fc_1":
                err = (ft.z1[m] * np.asarray(st.fc_1.acc_scale) - it.z1[m]).mean(0)
                q.b1[s] = _shifted(q.b1[s], err)
            else:       # internal units of the final output, in fc_2's accumulator units
                err = (ft.out[m] - it.raw[m]).mean() * st.fc_2.acc_scale[0] / NNUE2SCORE
                q.b2[s] = _shifted(np.asarray(q.b2[s]), np.asarray(err))
    q = replace(q, scheme=replace(q.scheme, name=q.scheme.name + SUFFIX))
    check_sums(q)
    check_requants(q)
    return q


def _shifted(bias: np.ndarray, err: np.ndarray) -> np.ndarray:
    info = np.iinfo(BIAS_DTYPE)
    return np.clip(bias.astype(np.int64) + np.rint(err).astype(np.int64), info.min, info.max).astype(BIAS_DTYPE)
