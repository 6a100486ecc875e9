"""The fixed quantisation scales of Stockfish's integer arithmetic, defined once for the model and the export.

A float parameter times its scale is the integer in the .nnue file. The file carries no scales: the engine's
arithmetic fixes them (docs/nnue-sf15.1.md sections 4-5; nnue-pytorch's scheme, seeds/000):

* FT weights and biases: 127 (the accumulator's clamp [0, 127] is the float clamp [0, 1]).
* fc_0 and fc_1 weights: 64 (``>> 6`` after each of them, WeightScaleBits = 6); their biases 127 * 64, because
  they add to a sum of (input * 127) * (weight * 64).
* The output: float 1.0 is 600 internal units (nnue2score), i.e. 600 * 16 = 9600 before Stockfish's / 16. So
  fc_2's bias and the PSQT weights have scale 9600, and fc_2's weights 9600 / 127 (their inputs are * 127).
  The skip connection fc0[15] * 9600 / 8128 is then exactly the float fc0[15] in those units.

No import of torch here: the export's range checks and the error bound use these with numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

FT_SCALE = 127.0
HIDDEN_WEIGHT_SCALE = 64.0
HIDDEN_BIAS_SCALE = 127.0 * 64.0          # 8128
NNUE2SCORE = 600.0                        # float output 1.0 = 600 internal units
OUTPUT_SCALE = 16                         # Stockfish divides psqt + positional by 16
OUTPUT_BIAS_SCALE = NNUE2SCORE * OUTPUT_SCALE          # 9600: fc_2 bias, PSQT weights
OUTPUT_WEIGHT_SCALE = OUTPUT_BIAS_SCALE / 127.0        # fc_2 weights (inputs are activations * 127)
PAIRWISE_FACTOR = 127.0 / 128.0           # (a*127)(b*127) >> 7 = a*b*127/128 * 127
SQR_FACTOR = 127.0 / 128.0                # (fc0*8128)^2 >> 19 = fc0^2 * 127/128 * 127


class Quant(NamedTuple):
    """One parameter tensor's integer type and scale."""

    layer: str        # name used in messages (and the Net field it becomes)
    scale: float
    dtype: type

    @property
    def int_range(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype)
        return int(info.min), int(info.max)

    @property
    def float_range(self) -> tuple[float, float]:
        """The float interval that rounds into the integer type."""
        lo, hi = self.int_range
        return lo / self.scale, hi / self.scale

    @property
    def clip_range(self) -> tuple[float, float]:
        """Training clip: symmetric (+-max / scale), as nnue-pytorch keeps int8 weights in [-127, 127].

        The bound is the largest float32 whose quantised value still fits: for int32 at scale 9600 the
        float32 nearest to max / scale would round to max + 52.
        """
        hi_int = self.int_range[1]
        hi = np.float32(hi_int / self.scale)
        while np.round(np.float64(hi) * self.scale) > hi_int:
            hi = np.nextafter(hi, np.float32(0))
        return -float(hi), float(hi)


FT_BIAS = Quant("ft_bias", FT_SCALE, np.int16)
FT_WEIGHTS = Quant("ft_weights", FT_SCALE, np.int16)
FT_PSQT = Quant("ft_psqt", OUTPUT_BIAS_SCALE, np.int32)
B0 = Quant("b0", HIDDEN_BIAS_SCALE, np.int32)
W0 = Quant("w0", HIDDEN_WEIGHT_SCALE, np.int8)
B1 = Quant("b1", HIDDEN_BIAS_SCALE, np.int32)
W1 = Quant("w1", HIDDEN_WEIGHT_SCALE, np.int8)
B2 = Quant("b2", OUTPUT_BIAS_SCALE, np.int32)
W2 = Quant("w2", OUTPUT_WEIGHT_SCALE, np.int8)

ALL = (FT_BIAS, FT_WEIGHTS, FT_PSQT, B0, W0, B1, W1, B2, W2)

# Stockfish 17.1 nets (L1 = 128 or 3072) double the FT at load with int16 wrapping: the accumulator must stay
# within half the int16 range for the doubling to be exact (architecture.Architecture.ft_shift).
ACC_LIMIT = 32767
