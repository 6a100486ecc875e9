"""The HalfKAv2_hm net architecture, declared once; every other module derives its sizes from this one.

Stockfish states its architecture once (``nnue_architecture.h``) and derives the rest; so does Quantfish:

* the feature set, the storage types, the layer widths and the scales and shifts are the constants below;
* ``layer_stack(l1)`` is the layer order of one stack, from which the hash chain, the file reader and writer
  (``quantfish.nnue.io.stockfish``) and the sizes are computed;
* ``GENERATIONS`` says what differs between Stockfish 15.1, 16.x and 17.1 (L1, LEB128 FT, the FT doubling);
* an ``Architecture`` value describes one net. Its L1 comes from the file's header hash, so a net of any L1
  (Stockfish 16 and later: 1536, 2560, 3072, 128) fits without touching the compiled code.

The compiled forward pass (``quantfish.nnue.layers``) and the C kernel read these constants: module-level ints are
compile-time constants for Numba, and the kernel is compiled with the header ``c_header()`` writes
(``quantfish/nnue/kernel/qfarch.h``, made by ``nnue.build_kernel``). Numbers and hash formulas follow
``docs/nnue-sf15.1.md`` sections 1-5 and ``nnue-sf17.1.md`` sections 1-5.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

VERSION = 0x7AF32F20

# Feature set HalfKAv2_hm: 32 king buckets x 11 planes x 64 squares.
FEATURE_SET_NAME = "HalfKAv2_hm"
FEATURE_HASH = 0x7F234CB8
PS_NB = 11 * 64            # 704 piece-square slots per king bucket
KING_BUCKETS = 32
NUM_FEATURES = KING_BUCKETS * PS_NB   # 22528
MAX_ACTIVE = 32            # at most 32 pieces on the board
KING_PLANE = 640           # both kings share one plane (own/enemy pawn 0/64, knight 128/192, ..., queen 512/576)

# The move record the search hands to the accumulators (quantfish.nnue.accumulator documents it): rows of (piece, from,
# to), NO_SQ for a piece that appears or disappears, at most MAX_DIRTY rows.
NO_SQ = 64
MAX_DIRTY = 3

# Storage types, in the file and in memory (Stockfish's BiasType / WeightType of each layer).
FT_DTYPE = np.int16        # FT biases and weights, and so the accumulator
PSQT_DTYPE = np.int32      # FT PSQT weights and the PSQT accumulator
BIAS_DTYPE = np.int32      # AffineTransform biases
WEIGHT_DTYPE = np.int8     # AffineTransform weights

# Layer widths shared by every HalfKAv2_hm generation from 15.1 to 17.1 (only L1 varies, per net).
FC0_OUT = 16               # fc_0 outputs; the last one is the skip connection
N_HIDDEN = FC0_OUT - 1     # fc_0 outputs that feed fc_1
FC1_OUT = 32
FC2_OUT = 1
LAYER_STACKS = 8
PIECES_PER_STACK = MAX_ACTIVE // LAYER_STACKS   # stack (bucket) = (pieces - 1) // 4
PSQT_BUCKETS = 8
SIMD_WIDTH = 32            # padding unit of AffineTransform inputs (MaxSimdWidth)

# Scales and shifts (nnue_common.h and the layer headers).
WEIGHT_SCALE_BITS = 6      # hidden layers: ClippedReLU(v) = clamp(v >> 6, 0, 127)
OUTPUT_SCALE = 16          # the net's output is in units of 1/16 of an internal value
ACT_MAX = 127              # hidden activations (ClippedReLU, SqrClippedReLU) lie in [0, 127]
SQR_SHIFT = 2 * WEIGHT_SCALE_BITS + 7   # SqrClippedReLU(v) = min(v * v >> 19, 127), of the signed v
FT_ACT_MAX = 127           # FT clamp [0, 127] before the pairwise product (in file units) ...
FT_PRODUCT_SHIFT = 7       # ... and the product a * b >> 7; a generation's ft_shift s scales both (below)
SKIP_SCALE = 600           # fc_0's last output v enters the result as v * 600 * 16 / (127 << 6)
SKIP_MUL = SKIP_SCALE * OUTPUT_SCALE            # 9600
SKIP_DIV = ACT_MAX * (1 << WEIGHT_SCALE_BITS)   # 8128

NETWORK_HASH_SEED = 0xEC42E90D
AFFINE_HASH_SEED = 0xCC03DAE4
CLIPPED_RELU_HASH = 0x538D24C7

LEB128_MAGIC = b"COMPRESSED_LEB128"

MASK32 = 0xFFFFFFFF


def padded(n: int, unit: int = SIMD_WIDTH) -> int:
    """Round an input width up to the SIMD padding the file layout uses."""
    return (n + unit - 1) // unit * unit


# Derived widths and limits.
FC1_IN = 2 * N_HIDDEN                  # SqrClippedReLU and ClippedReLU of the 15 hidden fc_0 outputs
FC1_IN_PADDED = padded(FC1_IN)         # 32: inputs 30 and 31 are always 0
FC2_IN = FC1_OUT
FC2_IN_PADDED = padded(FC2_IN)
SQR_INPUT_LIMIT = math.isqrt((ACT_MAX << SQR_SHIFT) - 1) + 1   # 8160: SqrClippedReLU is 127 from |v| = 8160

# ---------------------------------------------------------------------------------------------------------
# Generations: the arithmetic around the layer stacks, chosen from the file's architecture.

GEN_SF15_1 = 0      # raw FT, L1 = 1024: clamp 0..127, >> 7, (psqt + positional) / 16, 15.1 Eval::evaluate
GEN_SF17_1 = 1      # LEB128 FT, L1 = 3072 (big) or 128 (small): doubled FT, clamp 0..254, >> 9, separate / 16
GEN_SF16 = 2        # other LEB128 nets (Stockfish 16 / 16.1): undoubled FT; evaluated with 17.1's formulas
SF17_1_BIG_L1 = 3072
SF17_1_SMALL_L1 = 128
SF15_1_L1 = 1024


class Generation(NamedTuple):
    """What one Stockfish release does differently with a HalfKAv2_hm net."""

    id: int                 # GEN_*
    name: str
    compressed_ft: bool     # FT tensors stored as LEB128 blocks
    ft_shift: int           # s: FT scaled by 2**s at load, clamp FT_ACT_MAX << s, product >> FT_PRODUCT_SHIFT + 2s
    l1: tuple               # the L1 widths of its nets; () for a compressed net whose L1 no other claims


GENERATIONS = {g.id: g for g in (
    Generation(GEN_SF15_1, "15.1", False, 0, (SF15_1_L1,)),
    Generation(GEN_SF17_1, "17.1", True, 1, (SF17_1_BIG_L1, SF17_1_SMALL_L1)),
    Generation(GEN_SF16, "16.x", True, 0, ()),
)}
GENERATION_NAMES = {g.id: g.name for g in GENERATIONS.values()}
MAX_FT_SHIFT = max(g.ft_shift for g in GENERATIONS.values())

# ---------------------------------------------------------------------------------------------------------
# The layer stack

AFFINE = "AffineTransform"
CLIPPED_RELU = "ClippedReLU"
SQR_CLIPPED_RELU = "SqrClippedReLU"


class Tensor(NamedTuple):
    """One parameter tensor as the file stores it: the ``Net`` attribute, its name in messages, type and shape."""

    field: str
    what: str
    dtype: type
    shape: tuple

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.count * np.dtype(self.dtype).itemsize


class Layer(NamedTuple):
    """One layer of a layer stack (Stockfish's member name and class, widths); affine layers hold parameters,
    stored in ``Net`` attributes ``bias`` and ``weights``."""

    name: str
    kind: str
    inputs: int
    outputs: int
    bias: str = ""
    weights: str = ""

    @property
    def hashed(self) -> bool:
        """SqrClippedReLU is not part of Stockfish's hash chain (its hash function is never called)."""
        return self.kind != SQR_CLIPPED_RELU

    def hash(self, prev: int) -> int:
        """The next hash of the chain after ``prev`` (for a hashed layer)."""
        if self.kind == AFFINE:
            return ((AFFINE_HASH_SEED + self.outputs) ^ (prev >> 1) ^ (prev << 31)) & MASK32
        return (CLIPPED_RELU_HASH + prev) & MASK32

    @property
    def tensors(self) -> tuple:
        """(biases, weights) of one stack's copy of an affine layer, in file order: int32[out], then
        int8[out][padded in] row-major. A single-output layer's are int32 and int8[padded in]."""
        if self.kind != AFFINE:
            return ()
        lead = (self.outputs,) if self.outputs > 1 else ()
        return (Tensor(self.bias, f"{self.name} {'biases' if self.outputs > 1 else 'bias'}", BIAS_DTYPE, lead),
                Tensor(self.weights, f"{self.name} weights", WEIGHT_DTYPE, lead + (padded(self.inputs),)))


def layer_stack(l1: int) -> tuple:
    """One layer stack in Stockfish's order (nnue_architecture.h), the order of the file and the hash chain:
    fc_0 over the L1 transformed inputs; SqrClippedReLU and ClippedReLU of its outputs (the 15 hidden ones feed
    fc_1, the last is the skip); fc_1; ClippedReLU; fc_2."""
    return (Layer("fc_0", AFFINE, l1, FC0_OUT, "b0", "w0"),
            Layer("ac_sqr_0", SQR_CLIPPED_RELU, FC0_OUT, FC0_OUT),
            Layer("ac_0", CLIPPED_RELU, FC0_OUT, FC0_OUT),
            Layer("fc_1", AFFINE, FC1_IN, FC1_OUT, "b1", "w1"),
            Layer("ac_1", CLIPPED_RELU, FC1_OUT, FC1_OUT),
            Layer("fc_2", AFFINE, FC2_IN, FC2_OUT, "b2", "w2"))


def feature_transformer_tensors(l1: int, num_features: int = NUM_FEATURES,
                                psqt_buckets: int = PSQT_BUCKETS) -> tuple:
    """The FT's tensors in file order: biases, weights (feature-major), PSQT weights."""
    return (Tensor("ft_bias", "FT biases", FT_DTYPE, (l1,)),
            Tensor("ft_weights", "FT weights", FT_DTYPE, (num_features, l1)),
            Tensor("ft_psqt", "FT PSQT weights", PSQT_DTYPE, (num_features, psqt_buckets)))


def feature_transformer_hash(l1: int) -> int:
    return (FEATURE_HASH ^ (2 * l1)) & MASK32


def network_hash(l1: int) -> int:
    """Hash of the layer stack: the chain over its hashed layers, seeded with L1."""
    h = (NETWORK_HASH_SEED ^ (2 * l1)) & MASK32
    for layer in layer_stack(l1):
        if layer.hashed:
            h = layer.hash(h)
    return h


def header_hash(l1: int) -> int:
    return feature_transformer_hash(l1) ^ network_hash(l1)


class Architecture(NamedTuple):
    """Everything that determines array shapes and hashes of one net. Only L1 and the FT storage differ
    between nets; the layer widths are the module's constants (the compiled code is built for them)."""

    l1: int                      # accumulator width per perspective
    compressed_ft: bool = False  # FT tensors stored as LEB128 blocks (Stockfish 16+)
    num_features: int = NUM_FEATURES
    layer_stacks: int = LAYER_STACKS
    psqt_buckets: int = PSQT_BUCKETS

    @property
    def half(self) -> int:
        """Pairwise product width: x has L1 values, L1/2 from each perspective."""
        return self.l1 // 2

    @property
    def layers(self) -> tuple:
        return layer_stack(self.l1)

    @property
    def affine_layers(self) -> tuple:
        return tuple(layer for layer in self.layers if layer.kind == AFFINE)

    @property
    def fc0_out(self) -> int:
        return FC0_OUT

    @property
    def fc1_out(self) -> int:
        return FC1_OUT

    @property
    def fc0_in_padded(self) -> int:
        return padded(self.l1)

    @property
    def fc1_in(self) -> int:
        return FC1_IN

    @property
    def fc1_in_padded(self) -> int:
        return FC1_IN_PADDED

    @property
    def fc2_in_padded(self) -> int:
        return FC2_IN_PADDED

    @property
    def ft_tensors(self) -> tuple:
        return feature_transformer_tensors(self.l1, self.num_features, self.psqt_buckets)

    @property
    def stack_tensors(self) -> tuple:
        """The parameter tensors of one layer stack, in file order."""
        return tuple(t for layer in self.layers for t in layer.tensors)

    @property
    def ft_hash(self) -> int:
        return feature_transformer_hash(self.l1)

    @property
    def network_hash(self) -> int:
        return network_hash(self.l1)

    @property
    def header_hash(self) -> int:
        return self.ft_hash ^ self.network_hash

    @property
    def stack_bytes(self) -> int:
        """Bytes of one layer stack in the file: its hash, then the tensors of its affine layers."""
        return 4 + sum(t.nbytes for t in self.stack_tensors)

    def raw_ft_bytes(self) -> int:
        """Bytes of the uncompressed FT section (biases, weights, PSQT weights), after the FT hash."""
        return sum(t.nbytes for t in self.ft_tensors)

    def raw_file_size(self, description_len: int) -> int:
        """Exact size of an uncompressed (15.1-style) file with this architecture."""
        return (12 + description_len + 4 + self.raw_ft_bytes()
                + self.layer_stacks * self.stack_bytes)

    @property
    def generation(self) -> int:
        """Which Stockfish's arithmetic this net is evaluated with (``GEN_*``); see ``GENERATIONS``."""
        if not self.compressed_ft:
            return GEN_SF15_1
        return GEN_SF17_1 if self.l1 in GENERATIONS[GEN_SF17_1].l1 else GEN_SF16

    @property
    def generation_name(self) -> str:
        return GENERATION_NAMES[self.generation]

    @property
    def ft_shift(self) -> int:
        """1 when Stockfish doubles the FT weights and biases at load (17.1: clamp 0..254, >> 9), else 0."""
        return GENERATIONS[self.generation].ft_shift

    def require_fixed_scales(self, name: str = "net") -> None:
        """Raise ValueError naming ``name`` unless this net is stored as Stockfish 15.1 stores it (raw FT, no
        load-time shift): only then are ``scales``' fixed scales the exact inverse of its integers, which is what
        turning it back into floats (quantisation toolkit, trainer) assumes."""
        if self.generation != GEN_SF15_1:
            raise ValueError(f"{name}: a net of Stockfish 15.1's format is needed, found {self.describe()}")

    def describe(self) -> str:
        return (f"{FEATURE_SET_NAME}[{self.num_features}]x2 -> {self.l1} -> "
                f"{self.fc0_out} -> {self.fc1_out} -> {FC2_OUT}, {self.layer_stacks} buckets"
                + (", LEB128 FT" if self.compressed_ft else "")
                + f" (Stockfish {self.generation_name} arithmetic)")


# The largest accumulator we consider when matching a header hash; all real nets are far below.
MAX_L1 = 16384


def architecture_from_header_hash(h: int, compressed_ft: bool = False) -> Optional[Architecture]:
    """Find the L1 width whose hash chain gives header hash ``h`` (None if no width does)."""
    for l1 in range(SIMD_WIDTH, MAX_L1 + 1, SIMD_WIDTH):
        if header_hash(l1) == h:
            return Architecture(l1=l1, compressed_ft=compressed_ft)
    return None


def architecture_from_raw_size(size: int, description_len: int) -> Optional[Architecture]:
    """Solve the (linear in L1) size of an uncompressed file for L1; None if no width fits."""
    base = Architecture(l1=0)
    fixed = base.raw_file_size(description_len)
    per_l1 = Architecture(l1=SIMD_WIDTH).raw_file_size(description_len) - fixed
    if size <= fixed or (size - fixed) % per_l1:
        return None
    l1 = (size - fixed) // per_l1 * SIMD_WIDTH
    return Architecture(l1=l1) if 0 < l1 <= MAX_L1 else None


SF15_1 = Architecture(l1=SF15_1_L1)

# ---------------------------------------------------------------------------------------------------------
# A Quantfish-format net's scheme record, packed for compiled code (quantfish.nnue.requant): int64[stacks, sites, row],
# each (stack, site) row (shift, div, rounding, wrap32, mul[32], hi[32]). Stated here because the C kernel
# reads the same layout.

SCHEME_SITES = ("ft", "x", "psqt", "final", "sqr", "sqr_limit", "ac0", "ac1", "skip", "out")
SCHEME_Q_SHIFT, SCHEME_Q_DIV, SCHEME_Q_ROUND, SCHEME_Q_WRAP, SCHEME_Q_MUL = 0, 1, 2, 3, 4
SCHEME_Q_HI = SCHEME_Q_MUL + FC1_OUT
SCHEME_ROW = SCHEME_Q_HI + FC1_OUT
SCHEME_ROUNDINGS = ("floor", "trunc", "nearest")     # the rounding field's codes 0, 1, 2

# The search's evaluation context: the addresses and sizes the C kernel's ``evaluate`` reads, one int64 each in
# this order (``quantfish.nnue.kernel.ceval.context`` builds it; the arrays' layouts are ``ckernel``'s; ``qscheme`` is a
# Quantfish-format net's packed scheme record, 0 for a Stockfish-format net). ``plan_slots`` counts the slots
# of CX_PLAN_WORDS words after the fields (one per layer stack of a Quantfish-format net, none otherwise) where
# the kernel keeps what it decides from each stack's record on its first evaluation.
EVAL_CONTEXT_FIELDS = ("ft_weights", "ft_psqt", "l1", "nb", "ft_shift", "acc", "psqt", "computed", "dirty",
                       "ndirty", "cache_acc", "cache_psqt", "cache_boards", "w0g", "fc0_sat", "b0", "w1g", "b1", "w2",
                       "b2", "x", "nnz", "work", "qscheme", "plan_slots")
CX_PLAN_WORDS = 8

# ---------------------------------------------------------------------------------------------------------
# The C kernel's constants (quantfish/nnue/kernel/qfkernel.c includes the header below; it states no width itself)

C_HEADER_NAME = "qfarch.h"

# (C name, value, comment), in the order qf_arch() reports them back to the loader.
C_CONSTANTS = (
    ("QF_FC0_OUT", FC0_OUT, "fc_0 outputs; the last one is the skip connection"),
    ("QF_FC1_IN", FC1_IN_PADDED, "fc_1 inputs, padded: 15 squared, 15 clipped fc_0 outputs, zeros"),
    ("QF_FC1_OUT", FC1_OUT, "fc_1 outputs"),
    ("QF_FC2_IN", FC2_IN_PADDED, "fc_2 inputs, padded"),
    ("QF_WEIGHT_SCALE_BITS", WEIGHT_SCALE_BITS, "ClippedReLU(v) = clamp(v >> this, 0, QF_ACT_MAX)"),
    ("QF_ACT_MAX", ACT_MAX, "largest hidden activation"),
    ("QF_SQR_SHIFT", SQR_SHIFT, "SqrClippedReLU(v) = min(v * v >> this, QF_ACT_MAX)"),
    ("QF_SQR_LIMIT", SQR_INPUT_LIMIT, "SqrClippedReLU(v) = QF_ACT_MAX exactly when |v| >= this"),
    ("QF_FT_ACT_MAX", FT_ACT_MAX, "FT clamp before the pairwise product (shifted left by ft_shift)"),
    ("QF_FT_PRODUCT_SHIFT", FT_PRODUCT_SHIFT, "pairwise product shift (plus 2 * ft_shift)"),
    ("QF_MAX_FT_SHIFT", MAX_FT_SHIFT, "largest ft_shift of any generation"),
    ("QF_SKIP_MUL", SKIP_MUL, "skip connection: tdiv(wrap32(fc0[last] * QF_SKIP_MUL), QF_SKIP_DIV)"),
    ("QF_SKIP_DIV", SKIP_DIV, ""),
    ("QF_SCHEME_ROW", SCHEME_ROW, "a scheme record's packed row: shift, div, rounding, wrap32, mul[32], hi[32]"),
    ("QF_SCHEME_Q_SHIFT", SCHEME_Q_SHIFT, "a row's fields: shift, divisor, rounding code, wrap to int32"),
    ("QF_SCHEME_Q_DIV", SCHEME_Q_DIV, ""),
    ("QF_SCHEME_Q_ROUND", SCHEME_Q_ROUND, "0 floor, 1 trunc, 2 nearest (half up)"),
    ("QF_SCHEME_Q_WRAP", SCHEME_Q_WRAP, ""),
    ("QF_SCHEME_Q_MUL", SCHEME_Q_MUL, "first multiplier of a row"),
    ("QF_SCHEME_Q_HI", SCHEME_Q_HI, "first clamp of a row"),
    ("QF_SCHEME_SITES", len(SCHEME_SITES), "rows of one layer stack's scheme record"),
    ("QF_CX_PLAN_WORDS", CX_PLAN_WORDS, "int64 words of one plan slot after an evaluation context's fields"),
    ("QF_PS_NB", PS_NB, "feature slots per king bucket"),
    ("QF_KING_PLANE", KING_PLANE, "the kings' feature plane"),
    ("QF_NO_SQ", NO_SQ, "a move record's 'no square'"),
    ("QF_MAX_DIRTY", MAX_DIRTY, "rows of a move record"),
) + tuple((f"QF_S_{name.upper()}", i, "scheme site" if i == 0 else "") for i, name in enumerate(SCHEME_SITES)) \
  + tuple((f"QF_CX_{name.upper()}", i, "evaluation context field" if i == 0 else "")
          for i, name in enumerate(EVAL_CONTEXT_FIELDS)) + (("QF_CX_SIZE", len(EVAL_CONTEXT_FIELDS), ""),)


def c_defines() -> dict:
    """The constants the C kernel is compiled with, by their C names."""
    return {name: value for name, value, _ in C_CONSTANTS}


def c_header() -> str:
    """Text of ``quantfish/nnue/kernel/qfarch.h``: the constants as macros, and ``QF_ARCH_VALUES`` listing them (the
    kernel's ``qf_arch`` returns it, so the loader can refuse a library built for other constants)."""
    lines = ["/* Generated from quantfish/nnue/architecture.py by nnue/build_kernel.py before every build: do not edit. */",
             "#ifndef QFARCH_H", "#define QFARCH_H", ""]
    for name, value, comment in C_CONSTANTS:
        define = f"#define {name} {value}"
        lines.append(f"{define:<36}/* {comment} */" if comment else define)
    lines += ["", "#define QF_ARCH_VALUES {" + ", ".join(name for name, _, _ in C_CONSTANTS) + "}", "",
              "#endif", ""]
    return "\n".join(lines)


def write_c_header(directory) -> Path:
    """Write ``c_header()`` to ``directory/qfarch.h`` unless it holds that text already; returns the path."""
    path = Path(directory) / C_HEADER_NAME
    text = c_header()
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path
