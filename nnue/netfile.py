"""Read and write Stockfish HalfKAv2_hm ``.nnue`` files, validating every size and hash.

The layout is ``docs/nnue-sf15.1.md`` section 1: header (version, hash, description), FT hash, FT biases,
weights and PSQT weights, then 8 layer stacks, then EOF. The L1 width is taken from the header hash (and
the file size), never assumed. L1 = 1024 is Stockfish 15.1's raw layout (so is a file of another width whose
size is exactly that layout's: Quantfish's own nets, evaluated with 15.1's arithmetic); every other width is a
Stockfish 16+ net whose three FT tensors are signed-LEB128 blocks (``docs/nnue-sf17.1.md`` section 1.1:
magic ``COMPRESSED_LEB128``, u32 payload byte count, payload). Each block is checked strictly: the magic, the
byte count used exactly by the implied number of values (neither short nor long), every value within its
type's width (int16 / int32, at most ceil(bits/7) bytes), and the payload present in full; then the stack
hashes and EOF as for 15.1. Anything wrong raises ``NetFileError`` naming the problem with expected and
found values. A file with Quantfish's version word (``QF_VERSION``) is read by ``nnue.quant.qformat`` and
gives a ``Net`` whose ``scheme`` is its record: the engine evaluates it by that record (``nnue.requant``).

The layout is not written out here: the reader and the writer walk the tensors that ``nnue.architecture``
declares (the FT's, then each layer stack's hash and the tensors of its layers in order).

``Net.arrays()`` gives the weights to compiled code as a ``NetArrays`` named tuple, read by field name
(``net.w0t``); ``NET_ARRAYS_SPEC`` declares each field's dtype and ndim (``nnue.netdir`` derives its table
from it).
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nnue import largepages, leb128
from nnue.architecture import (
    BIAS_DTYPE, FT_DTYPE, LEB128_MAGIC, PSQT_DTYPE, SF15_1_L1, VERSION, WEIGHT_DTYPE, Architecture,
    architecture_from_header_hash, architecture_from_raw_size,
)
from nnue.rawview import ArraySpec, check_arrays
from nnue.requant import no_scheme, pack_scheme


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
    qscheme: np.ndarray      # int64[stacks, sites, row]: a Quantfish net's scheme (nnue.requant), else unread


# dtype and ndim of each field, the one statement of them (Net.arrays checks them, nnue.netdir uses them).
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


# The version word of the Quantfish net format (nnue.quant.qformat): Stockfish's layout plus a scheme record.
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
    scheme: object = None    # a Quantfish-format net's record (nnue.quant.scheme.Scheme); None: Stockfish's
    _tuple: NetArrays = field(default=None, repr=False)

    @property
    def description_text(self) -> str:
        return self.description.decode("utf-8", errors="replace")

    def arrays(self) -> NetArrays:
        """The parameters as C-contiguous arrays for compiled code (built once).

        ``w0t`` is fc_0's weights transposed to [stack][input][output] so that the sparse fc_0 reads 16
        contiguous weights per non-zero input. ``params`` is int32[3]: the generation, the FT shift and
        whether a scheme record applies (see ``P_GENERATION``, ``P_FT_SHIFT``, ``P_SCHEME``); ``qscheme`` is
        the record packed by ``nnue.requant.pack_scheme`` (a zero placeholder without one). The FT tensors
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


# Arrays read from a file start on a cache line (a large one on a huge page: nnue.largepages), as the C kernel's
# SIMD rows want them, so that it shares the 46 MB of feature-transformer weights of Stockfish 15.1's net instead
# of copying them into an aligned buffer (nnue.ckernel.make_cnet): less memory and a faster start.
CACHE_LINE = 64


class _Reader:
    """Cursor over the file bytes that turns short reads into 'truncated' errors."""

    def __init__(self, data: bytes, path: str):
        self.data = data
        self.pos = 0
        self.path = path

    def take(self, n: int, what: str) -> memoryview:
        if self.pos + n > len(self.data):
            raise NetFileError(
                f"{self.path}: truncated file: {what} needs {n} bytes at offset {self.pos}, "
                f"but the file has {len(self.data)} bytes ({len(self.data) - self.pos} left)")
        view = memoryview(self.data)[self.pos:self.pos + n]
        self.pos += n
        return view

    def u32(self, what: str) -> int:
        return struct.unpack("<I", self.take(4, what))[0]

    def array(self, dtype, shape, what: str) -> np.ndarray:
        dt = np.dtype(dtype).newbyteorder("<")
        count = int(np.prod(shape))
        raw = self.take(count * dt.itemsize, what)
        out = largepages.aligned_zeros(shape, dtype, CACHE_LINE)
        out.reshape(-1)[...] = np.frombuffer(raw, dtype=dt)
        return out

    def leb128(self, dtype, shape, what: str) -> np.ndarray:
        start = self.pos
        magic = bytes(self.take(len(LEB128_MAGIC), f"{what} LEB128 magic"))
        if magic != LEB128_MAGIC:
            raise NetFileError(f"{self.path}: wrong LEB128 magic before {what} at offset {start}: "
                               f"expected {LEB128_MAGIC!r}, found {magic!r}")
        nbytes = self.u32(f"{what} LEB128 byte count")
        left = len(self.data) - self.pos
        if nbytes > left:
            raise NetFileError(f"{self.path}: truncated LEB128 payload of {what}: the byte count says {nbytes} "
                               f"bytes at offset {self.pos}, but only {left} bytes are left in the file")
        payload = np.frombuffer(self.take(nbytes, f"{what} LEB128 payload"), dtype=np.uint8)
        count = int(np.prod(shape))
        bits = np.dtype(dtype).itemsize * 8
        out = np.empty(count, dtype=np.int64)
        used, status, index = leb128.decode_checked(payload, count, bits, out)
        if status == leb128.SHORT:
            raise NetFileError(f"{self.path}: LEB128 byte count of {what} too small: the block says {nbytes} "
                               f"bytes, but they end inside value {index} of {count}")
        if status == leb128.TOO_LONG:
            raise NetFileError(f"{self.path}: LEB128 value too wide in {what}: value {index} has more than "
                               f"{(bits + 6) // 7} bytes (int{bits})")
        if status == leb128.OUT_OF_RANGE:
            raise NetFileError(f"{self.path}: LEB128 value out of range in {what}: value {index} does not fit "
                               f"int{bits}")
        if used != nbytes:
            raise NetFileError(f"{self.path}: LEB128 byte count of {what} too large: the block says {nbytes} "
                               f"bytes, but its {count} values end after {used} ({nbytes - used} unused)")
        aligned = largepages.aligned_zeros(shape, dtype, CACHE_LINE)
        aligned.reshape(-1)[...] = out
        return aligned

    def check_hash(self, expected: int, what: str) -> None:
        found = self.u32(what)
        if found != expected:
            raise NetFileError(f"{self.path}: {what} mismatch: expected 0x{expected:08X}, found 0x{found:08X}")


# Stockfish and Quantfish name a net by its content: ``nn-`` or ``qf-`` and the first 12 hex digits of the file's
# sha256 (nets/README.md). Stockfish's format has no checksum, so a flipped bit among the weights is otherwise
# invisible; a file named so must match its name.
HASH_NAME = re.compile(r"(nn|qf)-([0-9a-f]{12})\.nnue")


def claimed_sha256_prefix(path):
    """The sha256 prefix that the file's name states (the name after following symbolic links, so a link
    under a net's name to a file of another name claims nothing), or None."""
    match = HASH_NAME.fullmatch(os.path.basename(os.path.realpath(path)))
    return match.group(2) if match else None


def load_net(path) -> Net:
    """Read and validate a ``.nnue`` file; raise ``NetFileError`` with a clear message on any problem.

    A file whose name has the form ``nn-<12 hex>.nnue`` or ``qf-<12 hex>.nnue`` must also have a sha256 that
    begins with those digits. The hash is computed from the bytes already read, in a thread beside the parse
    (hashlib releases the GIL), so with a core to spare it costs no time."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise NetFileError(f"net file not found: {path}")
    if not os.path.isfile(path):
        raise NetFileError(f"net path is not a file: {path}")
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise NetFileError(f"cannot read net file {path}: {exc.strerror or exc}") from None
    claimed = claimed_sha256_prefix(path)
    if claimed is None:
        return _parse(data, path)
    digest = []
    hasher = threading.Thread(target=lambda: digest.append(hashlib.sha256(data).hexdigest()), daemon=True)
    hasher.start()
    net = _parse(data, path)       # a refusal does not wait for the hash (the thread ends by itself)
    hasher.join()
    if digest[0][:12] != claimed:
        raise NetFileError(f"{path} is corrupt: its sha256 begins {digest[0][:12]}, but its name says {claimed} "
                           f"(a net named nn-/qf-<12 hex digits> is named by its sha256)")
    return net


def _parse(data: bytes, path: str) -> Net:
    r = _Reader(data, path)

    version = r.u32("version")
    if version == QF_VERSION:
        return _parse_quantfish(data, path)
    if version != VERSION:
        raise NetFileError(f"{path}: bad version: expected 0x{VERSION:08X}, found 0x{version:08X} "
                           f"(not a HalfKAv2_hm .nnue net of Stockfish 15.1-17.1)")
    hhash = r.u32("header hash")
    desc_len = r.u32("description length")
    description = bytes(r.take(desc_len, "description"))
    ft_hash_pos = r.pos
    sniffed = data[ft_hash_pos + 4:ft_hash_pos + 4 + len(LEB128_MAGIC)] == LEB128_MAGIC
    arch = architecture_from_header_hash(hhash)
    if arch is None:
        guess = None if sniffed else architecture_from_raw_size(len(data), desc_len)
        if guess is not None:
            raise NetFileError(f"{path}: header hash mismatch: expected 0x{guess.header_hash:08X} "
                               f"(L1={guess.l1}, from the file size), found 0x{hhash:08X}")
        raise NetFileError(f"{path}: header hash mismatch: found 0x{hhash:08X}, which matches no "
                           f"HalfKAv2_hm architecture (Stockfish 15.1's net has 0x1C102EF2)")
    # Stockfish 15.1 (L1 = 1024) stores the FT raw; Stockfish 16+ (all other widths) as LEB128 blocks. A net
    # of another width in the raw layout (Quantfish's own nets, evaluated with 15.1's arithmetic) is raw only
    # when its size is exactly the raw size, so a damaged magic of a 16+ net is still reported as such.
    raw_other_width = not sniffed and len(data) == arch.raw_file_size(desc_len)
    compressed = sniffed if arch.l1 == SF15_1_L1 else not raw_other_width
    arch = arch._replace(compressed_ft=compressed)

    if not compressed:
        expected = arch.raw_file_size(desc_len)
        if len(data) < expected:
            raise NetFileError(f"{path}: truncated file: expected {expected} bytes for {arch.describe()}, "
                               f"found {len(data)}")
        if len(data) > expected:
            raise NetFileError(f"{path}: trailing bytes: expected end of file at offset {expected}, "
                               f"found {len(data) - expected} extra bytes")

    r.check_hash(arch.ft_hash, "feature transformer hash")
    if compressed and not sniffed and len(data) >= r.pos + len(LEB128_MAGIC):
        # No LEB128 magic, and not the exact size of a raw net of this width: say both, since a raw net with
        # bytes added or cut (Quantfish's own nets are raw) is as likely as a Stockfish 16+ net's damaged magic.
        raw = arch.raw_file_size(desc_len)
        diff = len(data) - raw
        raise NetFileError(f"{path}: wrong LEB128 magic before {arch.ft_tensors[0].what} at offset {r.pos}: "
                           f"expected {LEB128_MAGIC!r}, found {data[r.pos:r.pos + len(LEB128_MAGIC)]!r}; nor is it "
                           f"a raw net of L1 = {arch.l1}, which has {raw} bytes: this file has {len(data)} "
                           f"({abs(diff)} {'too many' if diff > 0 else 'too few'})")
    read_ft = r.leb128 if compressed else r.array
    tensors = {t.field: read_ft(t.dtype, t.shape, t.what) for t in arch.ft_tensors}

    ns = arch.layer_stacks
    stack_tensors = arch.stack_tensors
    for t in stack_tensors:
        tensors[t.field] = largepages.aligned_zeros((ns,) + t.shape, t.dtype, CACHE_LINE)
    for s in range(ns):
        r.check_hash(arch.network_hash, f"layer stack {s} hash")
        for t in stack_tensors:
            tensors[t.field][s] = r.array(t.dtype, t.shape, f"stack {s} {t.what}")

    if r.pos != len(data):
        raise NetFileError(f"{path}: trailing bytes: expected end of file at offset {r.pos}, "
                           f"found {len(data) - r.pos} extra bytes")
    return Net(arch, description, **tensors, path=path)


def _parse_quantfish(data: bytes, path: str) -> Net:
    """A Quantfish-format net (Stockfish's raw layout plus a scheme section): read by ``nnue.quant.qformat``,
    imported here only when such a file is met (the toolkit is not needed to play Stockfish's nets)."""
    from nnue.quant.qformat import parse_qnet
    qnet = parse_qnet(data, path)
    try:
        pack_scheme(qnet.scheme)
    except ValueError as exc:
        raise NetFileError(f"{path}: scheme record the engine cannot follow: {exc}") from None
    arch = Architecture(l1=qnet.l1, compressed_ft=False)
    return Net(arch, qnet.description, qnet.ft_bias, qnet.ft_weights, qnet.ft_psqt, qnet.b0, qnet.w0, qnet.b1,
               qnet.w1, qnet.b2, qnet.w2, path=path, scheme=qnet.scheme)


def _leb128_block(values: np.ndarray) -> bytes:
    flat = values.reshape(-1).astype(np.int64)
    out = np.empty(leb128.encoded_size(flat), np.uint8)
    n = leb128.encode(flat, out)
    return LEB128_MAGIC + struct.pack("<I", n) + out[:n].tobytes()


def net_bytes(net: Net) -> bytes:
    """Serialise ``net`` in the layout ``load_net`` reads (byte-identical round trip)."""
    a = net.arch
    le = lambda arr, dt: np.ascontiguousarray(arr, dtype=np.dtype(dt).newbyteorder("<")).tobytes()
    parts = [struct.pack("<III", VERSION, a.header_hash, len(net.description)), net.description,
             struct.pack("<I", a.ft_hash)]
    for t in a.ft_tensors:
        values = getattr(net, t.field)
        parts.append(_leb128_block(values) if a.compressed_ft else le(values, t.dtype))
    stack_tensors = a.stack_tensors
    for s in range(a.layer_stacks):
        parts.append(struct.pack("<I", a.network_hash))
        parts += [le(getattr(net, t.field)[s], t.dtype) for t in stack_tensors]
    return b"".join(parts)


def write_net(net: Net, path) -> None:
    """Write ``net`` to ``path`` (reading a file and writing it back gives the same bytes)."""
    Path(path).write_bytes(net_bytes(net))
