"""The Quantfish net file: Stockfish's layout, its own version word, and a section holding the scheme record.

A scheme other than Stockfish's fixed one has scales, multipliers, shifts, clamps and rounding that a
``.nnue`` file cannot state. This format keeps Stockfish 15.1's layout for every tensor (always raw, any L1)
so the same readers' logic applies, and appends what is missing:

    u32  version = QF_VERSION (0x51460001, "QF" format 1; Stockfish's is 0x7AF32F20, so Stockfish refuses the
         file, and so does the engine's current reader, naming the format: quantfish.nnue.io.stockfish.QF_VERSION)
    u32  header hash, u32 description length, description     (as Stockfish: hash of the architecture)
    u32  FT hash, FT biases int16[L1], FT weights int16[22528][L1], PSQT int32[22528][8]
    8 x (u32 network hash, fc_0 biases int32[16], weights int8[16][L1], fc_1 int32[32] + int8[32][32],
         fc_2 int32 + int8[32])
    8    section magic b"QFSCHEME"
    u32  record length n, then n bytes of UTF-8 JSON: ``Scheme.to_dict()`` (see quantfish.nnue.scheme: per layer
         the sum scales, each activation's requantisation (mul, shift, div, rounding), clamp ``hi``, exact
         scales and clip, the FT scale and clamp, PSQT and output scales and divisions, resolution, and what
         calibration measured)
    u32  CRC-32 of those n bytes
    EOF

Reading checks every hash, the section magic, the CRC and the end of file, that no affine layer's sum can
leave int32 within the record's clamps, and that no requantisation's product can pass int64 nor the PSQT or
positional output leave int32 (``quantfish.nnue.io.overflow``).
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np

from quantfish.nnue.architecture import Architecture, architecture_from_header_hash
from quantfish.nnue.io.stockfish import net_bytes
from quantfish.nnue.net import QF_VERSION, Net, NetFileError
from quantfish.nnue.io.overflow import QuantError, QuantNet, check_requants, check_sums
from quantfish.nnue.scheme import Scheme

SECTION_MAGIC = b"QFSCHEME"


def qnet_bytes(qnet: QuantNet) -> bytes:
    """The file's bytes."""
    arch = Architecture(l1=qnet.l1, compressed_ft=False)
    net = Net(arch, qnet.description, qnet.ft_bias, qnet.ft_weights, qnet.ft_psqt, qnet.b0, qnet.w0, qnet.b1,
              qnet.w1, qnet.b2, qnet.w2)
    body = net_bytes(net)
    record = json.dumps(qnet.scheme.to_dict(), sort_keys=True).encode("utf-8")
    return (struct.pack("<I", QF_VERSION) + body[4:] + SECTION_MAGIC + struct.pack("<I", len(record)) + record
            + struct.pack("<I", zlib.crc32(record)))


def write_qnet(qnet: QuantNet, path) -> None:
    Path(path).write_bytes(qnet_bytes(qnet))


def read_qnet(path) -> QuantNet:
    """Read and validate a Quantfish net file (``NetFileError`` naming the problem)."""
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise NetFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_qnet(data, path)


def parse_qnet(data: bytes, path: str) -> QuantNet:
    """A Quantfish net from the file's bytes (``path`` names it in messages); ``NetFileError`` on any fault."""
    pos = 0

    def take(n: int, what: str) -> bytes:
        nonlocal pos
        if pos + n > len(data):
            raise NetFileError(f"{path}: truncated file: {what} needs {n} bytes at offset {pos}, but the file "
                               f"has {len(data)} bytes")
        pos += n
        return data[pos - n:pos]

    u32 = lambda what: struct.unpack("<I", take(4, what))[0]
    version = u32("version")
    if version != QF_VERSION:
        raise NetFileError(f"{path}: not a Quantfish net: version 0x{version:08X}, expected 0x{QF_VERSION:08X}")
    hhash = u32("header hash")
    arch = architecture_from_header_hash(hhash)
    if arch is None:
        raise NetFileError(f"{path}: header hash mismatch: found 0x{hhash:08X}, which matches no HalfKAv2_hm "
                           f"architecture")
    description = take(u32("description length"), "description")

    def array(t, what):
        dt = np.dtype(t.dtype).newbyteorder("<")
        return np.frombuffer(take(t.count * dt.itemsize, what), dt).astype(t.dtype).reshape(t.shape)

    found = u32("FT hash")
    if found != arch.ft_hash:
        raise NetFileError(f"{path}: feature transformer hash mismatch: expected 0x{arch.ft_hash:08X}, "
                           f"found 0x{found:08X}")
    tensors = {t.field: array(t, t.what) for t in arch.ft_tensors}
    for t in arch.stack_tensors:
        tensors[t.field] = np.empty((arch.layer_stacks,) + t.shape, t.dtype)
    for s in range(arch.layer_stacks):
        found = u32(f"stack {s} hash")
        if found != arch.network_hash:
            raise NetFileError(f"{path}: layer stack {s} hash mismatch: expected 0x{arch.network_hash:08X}, "
                               f"found 0x{found:08X}")
        for t in arch.stack_tensors:
            tensors[t.field][s] = array(t, f"stack {s} {t.what}")
    if take(len(SECTION_MAGIC), "scheme section magic") != SECTION_MAGIC:
        raise NetFileError(f"{path}: scheme section magic {SECTION_MAGIC!r} missing at offset {pos - 8}")
    record = take(u32("record length"), "scheme record")
    crc = u32("record CRC")
    if crc != zlib.crc32(record):
        raise NetFileError(f"{path}: scheme record CRC mismatch: the file says 0x{crc:08X}, the {len(record)} "
                           f"bytes of the record give 0x{zlib.crc32(record):08X}")
    if pos != len(data):
        raise NetFileError(f"{path}: trailing bytes: expected end of file at offset {pos}, found {len(data) - pos} "
                           f"extra bytes after the scheme section")
    try:
        scheme = Scheme.from_dict(json.loads(record.decode("utf-8")))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise NetFileError(f"{path}: unreadable scheme record: {exc}") from None
    if len(scheme.stacks) != arch.layer_stacks:
        raise NetFileError(f"{path}: scheme record has {len(scheme.stacks)} stacks, the net {arch.layer_stacks}")
    qnet = QuantNet(scheme, description=bytes(description), **tensors)
    try:
        check_sums(qnet)
        check_requants(qnet)
    except QuantError as exc:
        raise NetFileError(f"{path}: {exc}") from None
    return qnet
