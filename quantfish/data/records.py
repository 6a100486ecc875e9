"""The training record: 32 bytes per labelled position, files that merge by concatenation.

Byte layout (little-endian; squares A1 = 0 ... H8 = 63; piece codes as ``quantfish.core.types``: colour * 8 + type,
white P N B R Q K = 1..6, black = 9..14)::

    offset size field      meaning
     0     8   occupancy  uint64, bit s set when square s holds a piece
     8    16   pieces     4-bit piece codes of the occupied squares in ascending square order; piece i is
                          in byte 8 + i // 2, low nibble for even i; unused nibbles are 0
    24     2   score      int16, centipawns (100 = one pawn, UCI's ``cp``), side to move's view, +-32767
    26     1   stm        side to move: 0 White, 1 Black
    27     1   result     bits 0-1: game result, side to move's view: 0 loss, 1 draw, 2 win; bit 7: the score
                          is a net's raw output in internal units (a distillation label), not centipawns
    28     1   rights     bits 0-3 castling rights (1 White O-O, 2 White O-O-O, 4 Black O-O, 8 Black O-O-O);
                          bits 4-7 en passant file + 1, 0 for none (the square is on rank 6 when White
                          is to move, rank 3 when Black is)
    29     1   halfmove   halfmove clock (50-move rule), capped at 255
    30     2   fullmove   uint16 move number, from 1

There is no file header: a file is a plain array of records, so shards merge with ``cat`` and a reader is
``np.fromfile(path, RECORD_DTYPE)`` or ``np.memmap``. Instead each record is checked on reading (side,
result, piece codes, unused nibbles, one king a side, no pawn on rank 1 or 8, en passant consistent, move
number from 1), and a size that is not a multiple of 32 is refused as truncated, so a corrupt or foreign
file fails with ``DataFileError`` naming the record and the problem. Castling rights are the four standard
rights (standard chess; the record does not hold Chess960 rook files).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Union

import numpy as np

from quantfish.data import codec

RECORD_SIZE = codec.RECORD_SIZE

RECORD_DTYPE = np.dtype([
    ("occupancy", "<u8"),
    ("pieces", "u1", (16,)),
    ("score", "<i2"),
    ("stm", "u1"),
    ("result", "u1"),
    ("rights", "u1"),
    ("halfmove", "u1"),
    ("fullmove", "<u2"),
])
assert RECORD_DTYPE.itemsize == RECORD_SIZE

LOSS, DRAW, WIN = 0, 1, 2

ERRORS = {
    codec.BAD_SIDE: "side to move is not 0 (White) or 1 (Black)",
    codec.BAD_RESULT: "result is not 0, 1 or 2 (with at most the raw-label bit set)",
    codec.BAD_COUNT: "occupancy has fewer than 2 or more than 32 pieces",
    codec.BAD_PIECE: "bad piece code (valid: 1-6 White, 9-14 Black)",
    codec.BAD_PADDING: "unused piece nibbles are not zero",
    codec.BAD_KINGS: "not exactly one king of each colour",
    codec.BAD_PAWN: "a pawn on rank 1 or 8",
    codec.BAD_EP: "en passant file without a pawn that has just advanced two squares",
    codec.BAD_FULLMOVE: "move number 0",
    codec.BAD_SCORE: "score -32768 (the range is -32767..32767)",
}

PathLike = Union[str, os.PathLike]


class DataFileError(ValueError):
    """A record file (or text line) that is truncated, corrupt or not in this format."""


def empty(n: int = 0) -> np.ndarray:
    """``n`` zeroed records (not valid until filled)."""
    return np.zeros(n, RECORD_DTYPE)


def as_bytes(records: np.ndarray) -> np.ndarray:
    """The records as uint8[n, 32] (a view when they are contiguous), the form compiled code takes."""
    if records.dtype != RECORD_DTYPE:
        raise TypeError(f"expected records of RECORD_DTYPE, got {records.dtype}")
    return np.ascontiguousarray(records).view(np.uint8).reshape(-1, RECORD_SIZE)


def from_bytes(data: np.ndarray) -> np.ndarray:
    """uint8[n, 32] as records (a view)."""
    return np.ascontiguousarray(data, dtype=np.uint8).reshape(-1).view(RECORD_DTYPE)


def validate(records: np.ndarray, source: str = "records") -> None:
    """Raise ``DataFileError`` at the first bad record, naming ``source``, the index and the problem."""
    if len(records) == 0:
        return
    index, code = codec.first_error(as_bytes(records))
    if index >= 0:
        raise DataFileError(f"{source}: record {index} (byte {index * RECORD_SIZE}) is corrupt: {ERRORS[code]}")


def count_records(path: PathLike) -> int:
    """Number of whole records in a file; ``DataFileError`` when its size is not a multiple of 32."""
    size = os.path.getsize(path)
    if size % RECORD_SIZE:
        raise DataFileError(f"{path}: truncated or not a record file: {size} bytes is not a multiple of "
                            f"{RECORD_SIZE} (the last record has {size % RECORD_SIZE} bytes)")
    return size // RECORD_SIZE


def read_records(path: PathLike, mmap: bool = False, check: bool = True) -> np.ndarray:
    """All records of a file (a read-only memory map with ``mmap``), checked unless ``check`` is False."""
    try:
        n = count_records(path)
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such file") from None
    if n == 0:
        records = empty()
    elif mmap:
        records = np.memmap(path, dtype=RECORD_DTYPE, mode="r", shape=(n,))
    else:
        records = np.fromfile(path, dtype=RECORD_DTYPE)
    if check:
        validate(records, str(path))
    return records


def append_records(path: PathLike, records: np.ndarray) -> None:
    """Append whole records to ``path`` (created if missing) with one write; refuses a truncated file."""
    path = Path(path)
    if path.exists():
        count_records(path)
    write_all(path, as_bytes(records).tobytes())


def write_all(path: PathLike, data: bytes) -> None:
    """Append ``data`` to ``path`` unbuffered, looping until every byte is written."""
    view = memoryview(data)
    with open(path, "ab", buffering=0) as fh:
        while view:
            view = view[fh.write(view):]
