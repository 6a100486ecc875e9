"""The shape of a HalfKAv2_hm net, described once.

Every size the reader, the accumulators and the forward pass need comes from an ``Architecture``
value, which is derived from the net file itself (its header hash), so a net with another L1 width
(Stockfish 16 and later: 1536, 2560, 3072, 128) fits without touching the compiled code.
Numbers and hash formulas follow ``docs/nnue-sf15.1.md`` sections 1-3 and ``nnue-sf17.1.md`` section 2.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

VERSION = 0x7AF32F20

# Feature set HalfKAv2_hm: 32 king buckets x 11 planes x 64 squares.
FEATURE_SET_NAME = "HalfKAv2_hm"
FEATURE_HASH = 0x7F234CB8
PS_NB = 11 * 64            # 704 piece-square slots per king bucket
KING_BUCKETS = 32
NUM_FEATURES = KING_BUCKETS * PS_NB   # 22528
MAX_ACTIVE = 32            # at most 32 pieces on the board

# Layer stack shape shared by every HalfKAv2_hm generation from 15.1 to 17.1.
FC0_OUT = 16               # the 16th output is the skip connection
FC1_OUT = 32
FC2_OUT = 1
LAYER_STACKS = 8
PSQT_BUCKETS = 8
SIMD_WIDTH = 32            # padding unit of AffineTransform inputs

NETWORK_HASH_SEED = 0xEC42E90D
AFFINE_HASH_SEED = 0xCC03DAE4
CLIPPED_RELU_HASH = 0x538D24C7

LEB128_MAGIC = b"COMPRESSED_LEB128"

MASK32 = 0xFFFFFFFF

# Evaluation generations (the arithmetic around the layer stacks), chosen from the file's architecture.
GEN_SF15_1 = 0      # raw FT, L1 = 1024: clamp 0..127, >> 7, (psqt + positional) / 16, 15.1 Eval::evaluate
GEN_SF17_1 = 1      # LEB128 FT, L1 = 3072 (big) or 128 (small): doubled FT, clamp 0..254, >> 9, separate / 16
GEN_SF16 = 2        # other LEB128 nets (Stockfish 16 / 16.1): undoubled FT; evaluated with 17.1's formulas
GENERATION_NAMES = {GEN_SF15_1: "15.1", GEN_SF17_1: "17.1", GEN_SF16: "16.x"}
SF17_1_BIG_L1 = 3072
SF17_1_SMALL_L1 = 128
SF15_1_L1 = 1024


def padded(n: int, unit: int = SIMD_WIDTH) -> int:
    """Round an input width up to the SIMD padding the file layout uses."""
    return (n + unit - 1) // unit * unit


def _affine_hash(prev: int, out_dims: int) -> int:
    return ((AFFINE_HASH_SEED + out_dims) ^ (prev >> 1) ^ (prev << 31)) & MASK32


def _relu_hash(prev: int) -> int:
    return (CLIPPED_RELU_HASH + prev) & MASK32


def feature_transformer_hash(l1: int) -> int:
    return (FEATURE_HASH ^ (2 * l1)) & MASK32


def network_hash(l1: int) -> int:
    """Hash of the layer stack fc_0 -> ac_0 -> fc_1 -> ac_1 -> fc_2 (ac_sqr_0 is not hashed)."""
    h = (NETWORK_HASH_SEED ^ (2 * l1)) & MASK32
    h = _affine_hash(h, FC0_OUT)
    h = _relu_hash(h)
    h = _affine_hash(h, FC1_OUT)
    h = _relu_hash(h)
    h = _affine_hash(h, FC2_OUT)
    return h


def header_hash(l1: int) -> int:
    return feature_transformer_hash(l1) ^ network_hash(l1)


class Architecture(NamedTuple):
    """Everything that determines array shapes and hashes of one net."""

    l1: int                      # accumulator width per perspective
    compressed_ft: bool = False  # FT tensors stored as LEB128 blocks (Stockfish 16+)
    num_features: int = NUM_FEATURES
    fc0_out: int = FC0_OUT
    fc1_out: int = FC1_OUT
    layer_stacks: int = LAYER_STACKS
    psqt_buckets: int = PSQT_BUCKETS

    @property
    def half(self) -> int:
        """Pairwise product width: x has L1 values, L1/2 from each perspective."""
        return self.l1 // 2

    @property
    def fc0_in_padded(self) -> int:
        return padded(self.l1)

    @property
    def fc1_in(self) -> int:
        """fc_1 sees 15 squared + 15 clipped fc_0 outputs."""
        return 2 * (self.fc0_out - 1)

    @property
    def fc1_in_padded(self) -> int:
        return padded(self.fc1_in)

    @property
    def fc2_in_padded(self) -> int:
        return padded(self.fc1_out)

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
        """Bytes of one layer stack in the file: hash, then (biases, weights) of fc_0, fc_1, fc_2."""
        return (4
                + 4 * self.fc0_out + self.fc0_out * self.fc0_in_padded
                + 4 * self.fc1_out + self.fc1_out * self.fc1_in_padded
                + 4 * FC2_OUT + FC2_OUT * self.fc2_in_padded)

    def raw_ft_bytes(self) -> int:
        """Bytes of the uncompressed FT section (biases, weights, PSQT weights), after the FT hash."""
        return (2 * self.l1 + 2 * self.num_features * self.l1
                + 4 * self.num_features * self.psqt_buckets)

    def raw_file_size(self, description_len: int) -> int:
        """Exact size of an uncompressed (15.1-style) file with this architecture."""
        return (12 + description_len + 4 + self.raw_ft_bytes()
                + self.layer_stacks * self.stack_bytes)

    @property
    def generation(self) -> int:
        """Which Stockfish's arithmetic this net is evaluated with (``GEN_*``); see the constants."""
        if not self.compressed_ft:
            return GEN_SF15_1
        if self.l1 in (SF17_1_BIG_L1, SF17_1_SMALL_L1):
            return GEN_SF17_1
        return GEN_SF16

    @property
    def generation_name(self) -> str:
        return GENERATION_NAMES[self.generation]

    @property
    def ft_shift(self) -> int:
        """1 when Stockfish doubles the FT weights and biases at load (17.1: clamp 0..254, >> 9), else 0."""
        return 1 if self.generation == GEN_SF17_1 else 0

    def describe(self) -> str:
        return (f"{FEATURE_SET_NAME}[{self.num_features}]x2 -> {self.l1} -> "
                f"{self.fc0_out} -> {self.fc1_out} -> 1, {self.layer_stacks} buckets"
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


SF15_1 = Architecture(l1=1024)
