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
found values. ``quantfish.nnue.io.load_net`` reads a file of either format and calls this one or
``quantfish.nnue.io.quantfish``.

The layout is not written out here: the reader and the writer walk the tensors that ``quantfish.nnue.architecture``
declares (the FT's, then each layer stack's hash and the tensors of its layers in order).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from quantfish.nnue.architecture import (
    LEB128_MAGIC, SF15_1_L1, VERSION, architecture_from_header_hash, architecture_from_raw_size,
)
from quantfish.nnue.io import leb128
from quantfish.nnue.net import Net, NetFileError
from quantfish.runtime import largepages

# Arrays read from a file start on a cache line (a large one on a huge page: quantfish.runtime.largepages), as the C kernel's
# SIMD rows want them, so that it shares the 46 MB of feature-transformer weights of Stockfish 15.1's net instead
# of copying them into an aligned buffer (quantfish.nnue.kernel.loader.make_cnet): less memory and a faster start.
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


def parse_net(data: bytes, path: str) -> Net:
    """A Stockfish net from the file's bytes (``path`` names it in messages); ``NetFileError`` on any fault."""
    r = _Reader(data, path)

    version = r.u32("version")
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
