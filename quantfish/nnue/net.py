"""A net in memory: its architecture, description and integer parameters in file order (``Net``), whatever file
format it came from.

``Net.arrays()`` gives the weights to compiled code as a ``NetArrays`` named tuple, read by field name
(``net.w0t``); ``NET_ARRAYS_SPEC`` declares each field's dtype and ndim (``quantfish.nnue.netdir`` derives its
table from it). A Quantfish-format net carries its scheme record (``Net.scheme``), by which the engine
evaluates it (``quantfish.nnue.requant``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from quantfish.nnue.architecture import BIAS_DTYPE, FT_DTYPE, PSQT_DTYPE, WEIGHT_DTYPE, Architecture
from quantfish.nnue.requant import no_scheme, pack_scheme
from quantfish.runtime.rawview import ArraySpec, check_arrays


class NetArrays(NamedTuple):
    """A net's parameters as compiled code reads them (``Net.arrays()``); Numba reads the fields by name."""

    ft_bias: np.ndarray      # int16[L1]
    ft_weights: np.ndarray   # int16[features, L1]
    ft_psqt: np.ndarray      # int32[features, psqt_buckets]
    b0: np.ndarray           # int32[stacks, 16]
    w0: np.ndarray           # int8[stacks, 16, L1 padded]
    w0t: np.ndarray          # int8[stacks, L1 padded, 16]: w0 by input, for the sparse fc_0
    b1: np.ndarray           # int32[stacks, 32]
    w1: np.ndarray           # int8[stacks, 32, 32]
    b2: np.ndarray           # int32[stacks]
    w2: np.ndarray           # int8[stacks, 32]
    params: np.ndarray       # int32[3]: entries P_GENERATION, P_FT_SHIFT, P_SCHEME
    qscheme: np.ndarray      # int64[stacks, sites, row]: a Quantfish net's scheme (quantfish.nnue.requant), else unread


# dtype and ndim of each field, the one statement of them (Net.arrays checks them, quantfish.nnue.netdir uses them).
NET_ARRAYS_SPEC = NetArrays(
    ft_bias=ArraySpec(FT_DTYPE, 1), ft_weights=ArraySpec(FT_DTYPE, 2), ft_psqt=ArraySpec(PSQT_DTYPE, 2),
    b0=ArraySpec(BIAS_DTYPE, 2), w0=ArraySpec(WEIGHT_DTYPE, 3), w0t=ArraySpec(WEIGHT_DTYPE, 3),
    b1=ArraySpec(BIAS_DTYPE, 2), w1=ArraySpec(WEIGHT_DTYPE, 3),
    b2=ArraySpec(BIAS_DTYPE, 1), w2=ArraySpec(WEIGHT_DTYPE, 2),
    params=ArraySpec(np.int32, 1), qscheme=ArraySpec(np.int64, 3))

# Entries of the int32 array ``NetArrays.params``.
P_GENERATION = 0     # architecture.GEN_* (which evaluation formulas apply)
P_FT_SHIFT = 1       # 1: FT doubled at load (clamp 0..254, >> 9), 0: clamp 0..127, >> 7
P_SCHEME = 2         # 1: a Quantfish-format net, evaluated by its scheme record (``qscheme``); 0: Stockfish's


# The version word of the Quantfish net format (quantfish.nnue.io.quantfish): Stockfish's layout plus a scheme record.
QF_VERSION = 0x51460001


class NetFileError(ValueError):
    """The file is missing, truncated, corrupt, or not a net this engine understands."""


@dataclass(eq=False)
class Net:
    """A loaded net: architecture, description and integer parameters in file order."""

    arch: Architecture
    description: bytes
    ft_bias: np.ndarray      # int16[L1]
    ft_weights: np.ndarray   # int16[features, L1]
    ft_psqt: np.ndarray      # int32[features, psqt_buckets]
    b0: np.ndarray           # int32[stacks, 16]
    w0: np.ndarray           # int8[stacks, 16, L1 padded]
    b1: np.ndarray           # int32[stacks, 32]
    w1: np.ndarray           # int8[stacks, 32, 32] (fc_1 input 30 padded to 32)
    b2: np.ndarray           # int32[stacks]
    w2: np.ndarray           # int8[stacks, 32]
    path: str = ""
    scheme: object = None    # a Quantfish-format net's record (quantfish.nnue.scheme.Scheme); None: Stockfish's
    _tuple: NetArrays = field(default=None, repr=False)

    @property
    def description_text(self) -> str:
        return self.description.decode("utf-8", errors="replace")

    def arrays(self) -> NetArrays:
        """The parameters as C-contiguous arrays for compiled code (built once).

        ``w0t`` is fc_0's weights transposed to [stack][input][output] so that the sparse fc_0 reads 16
        contiguous weights per non-zero input. ``params`` is int32[3]: the generation, the FT shift and
        whether a scheme record applies (see ``P_GENERATION``, ``P_FT_SHIFT``, ``P_SCHEME``); ``qscheme`` is
        the record packed by ``quantfish.nnue.requant.pack_scheme`` (a zero placeholder without one). The FT tensors
        stay in file units (not doubled): the accumulators sum file values with int16 wrapping, and the 17.1
        transform doubles them with int16 wrapping, which gives exactly Stockfish 17.1's doubled accumulator
        (doubling commutes with addition modulo 2^16).
        """
        if self._tuple is None:
            params = np.zeros(3, np.int32)
            params[P_GENERATION] = self.arch.generation
            params[P_FT_SHIFT] = self.arch.ft_shift
            params[P_SCHEME] = self.scheme is not None
            qscheme = pack_scheme(self.scheme) if self.scheme is not None else no_scheme()
            arrays = NetArrays(self.ft_bias, self.ft_weights, self.ft_psqt, self.b0, self.w0,
                               np.ascontiguousarray(self.w0.transpose(0, 2, 1)), self.b1, self.w1, self.b2,
                               self.w2, params, qscheme)
            check_arrays(NET_ARRAYS_SPEC, arrays, "Net.arrays()")
            self._tuple = arrays
        return self._tuple

    @property
    def generation(self) -> int:
        return self.arch.generation
