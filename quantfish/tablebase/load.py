"""Syzygy WDL tables for the compiled probe (``quantfish.tablebase.probe``): headers parsed once, files mapped.

python-chess's ``chess.syzygy.WdlTable`` reads each file's header (piece order, group sizes and factors,
the compressed blocks' parameters, symbol lengths and code bases); this module copies what it found into the
flat arrays of ``TbArrays`` and keeps every file mapped, so that compiled code reads the values at their
addresses. The square maps are the format's constants, taken from the same module.

The mappings live as long as the ``CompiledTables`` that holds them: a search must not outlive it.
"""
from __future__ import annotations

import math
import os
import struct

import numpy as np

from quantfish.tablebase.probe import (SL_BASE, SL_BASES, SL_BLOCKS, SL_BLOCKSIZE, SL_DATA, SL_FACTOR, SL_IDXBITS, SL_INDEX,
                            SL_INDEX_END, SL_MINLEN, SL_NORM, SL_OFFSET, SL_PIECES, SL_PRESENT, SL_SIZE, SL_SIZES,
                            SL_SIZES_COUNT, SL_SYMLEN, SL_SYMPAT, SL_SYMS, SQ_DIAG, SQ_FILE, SQ_FLAP, SQ_LOWER,
                            SQ_PTWIST, SQ_TRIANGLE, TB_PIECES, TF_ADDR, TF_ENC, TF_LEN, TF_NUM, TF_PAWNS, TF_PAWNS0,
                            TF_PAWNS1, TF_SIZE, TF_SYMMETRIC, TbArrays)

_LETTERS = "PNBRQ"


def _code(key: str) -> int:
    """``quantfish.tablebase.probe.material_code`` of a table name such as ``KRPvKR`` (white's pieces first)."""
    code = 0
    for colour, part in enumerate(key.split("v")):
        for t, letter in enumerate(_LETTERS):
            code |= part.count(letter) << (3 * (colour * 5 + t))
    return code


def _squares() -> np.ndarray:
    import chess.syzygy as sz
    rows = np.zeros((6, 64), np.int64)
    rows[SQ_TRIANGLE] = sz.TRIANGLE
    rows[SQ_DIAG] = sz.DIAG
    rows[SQ_LOWER] = sz.LOWER
    rows[SQ_FLAP] = sz.FLAP
    rows[SQ_PTWIST] = sz.PTWIST
    rows[SQ_FILE, :8] = sz.FILE_TO_FILE
    return rows


def empty_arrays() -> TbArrays:
    """Arrays of the right types for no table at all (the search's state always has some)."""
    return TbArrays(np.zeros((0, TF_SIZE), np.int64), np.zeros((0, 8, SL_SIZE), np.int64), np.zeros(1, np.int64),
                    np.zeros(1, np.uint64), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros((6, 64), np.int64),
                    np.zeros((10, 64), np.int64), np.zeros((5, 24), np.int64), np.zeros((65, 8), np.int64))


def _region_sizes(table, f: int, side: int) -> tuple[int, int, int]:
    """Bytes of a slot's index table, size table and data blocks, as python-chess sized them."""
    at = (6 * f if table.has_pawns else 0) + 3 * side
    return table.size[at], table.size[at + 1], table.size[at + 2]


def _symbols(table, pairs) -> int:
    """How many symbols a slot's pair tree has (the count stored just before the symbol patterns)."""
    return struct.unpack_from("<H", table.data, pairs.sympat - 2)[0]


def _within_file(table) -> bool:
    """True when every region the header names lies inside the file (a truncated file is refused here, so
    that the compiled probe never reads past its mapping)."""
    length = len(table.data)
    owners = [(f, table.files[f]) for f in range(4)] if table.has_pawns else [(0, table)]
    for f, owner in owners:
        for side, pairs in owner.precomp.items():
            if not pairs.idxbits:
                continue
            index_bytes, sizes_bytes, data_bytes = _region_sizes(table, f, side)
            if (pairs.indextable + index_bytes > length or pairs.sizetable + sizes_bytes > length
                    or pairs.data + data_bytes > length or pairs.sympat + 3 * _symbols(table, pairs) > length):
                return False
    return True


class CompiledTables:
    """Every WDL table of some directories, parsed and mapped, as ``arrays`` for the compiled probe."""

    def __init__(self, directories: list[str]) -> None:
        import chess.syzygy as sz      # here, not at the top: the engine starts without python-chess loaded
        self._tables: list = []        # WdlTable objects: they own the mappings
        self._views: list = []         # numpy views of the mappings: their addresses are in ``arrays``
        self.skipped: list[str] = []   # files that are not whole, valid WDL tables
        seen: set[str] = set()
        for directory in directories:
            for name in sorted(os.listdir(directory)):
                stem, ext = os.path.splitext(name)
                if ext != ".rtbw" or not sz.is_tablename(stem, normalized=False):
                    continue
                table = sz.WdlTable(os.path.join(directory, name))
                if table.key in seen:
                    continue
                try:
                    table.init_table_wdl()
                except (OSError, ValueError, IndexError, KeyError, struct.error):
                    self.skipped.append(name)     # a damaged or foreign file: the others still work
                    table.close()
                    continue
                if not _within_file(table):
                    self.skipped.append(name)
                    table.close()
                    continue
                seen.add(table.key)
                self._tables.append(table)
        self.max_pieces = max((t.num for t in self._tables), default=0)
        self.arrays = self._build()

    def __len__(self) -> int:
        return len(self._tables)

    def _build(self) -> TbArrays:
        import chess.syzygy as sz
        n = len(self._tables)
        if n == 0:
            return empty_arrays()
        tables = np.zeros((n, TF_SIZE), np.int64)
        slots = np.zeros((n, 8, SL_SIZE), np.int64)
        symlen: list[int] = []
        base: list[int] = []
        entries: list[tuple[int, int]] = []
        for t, table in enumerate(self._tables):
            view = np.frombuffer(table.data, dtype=np.uint8)
            self._views.append(view)
            tables[t, TF_NUM] = table.num
            tables[t, TF_SYMMETRIC] = int(table.symmetric)
            tables[t, TF_ADDR] = view.ctypes.data
            tables[t, TF_LEN] = view.shape[0]
            if table.has_pawns:
                tables[t, TF_PAWNS] = 1
                tables[t, TF_PAWNS0], tables[t, TF_PAWNS1] = table.pawns
                parts = [(f, side, table.files[f]) for f in range(4) for side in (0, 1)]
            else:
                tables[t, TF_ENC] = table.enc_type
                parts = [(0, side, table) for side in (0, 1)]
            for f, side, owner in parts:
                pairs = owner.precomp.get(side)
                if pairs is None:
                    continue
                sl = slots[t, 2 * f + side]
                sl[SL_PRESENT] = 1
                sl[SL_IDXBITS] = pairs.idxbits
                sl[SL_MINLEN] = pairs.min_len
                if pairs.idxbits:
                    index_bytes, sizes_bytes, data_bytes = _region_sizes(table, f, side)
                    sl[SL_INDEX], sl[SL_SIZES], sl[SL_DATA] = pairs.indextable, pairs.sizetable, pairs.data
                    sl[SL_OFFSET], sl[SL_SYMPAT], sl[SL_BLOCKSIZE] = pairs.offset, pairs.sympat, pairs.blocksize
                    sl[SL_INDEX_END] = pairs.indextable + index_bytes
                    sl[SL_SIZES_COUNT], sl[SL_BLOCKS] = sizes_bytes // 2, data_bytes >> pairs.blocksize
                    sl[SL_SYMS], sl[SL_BASES] = _symbols(table, pairs), len(pairs.base)
                    sl[SL_SYMLEN], sl[SL_BASE] = len(symlen), len(base)
                    symlen.extend(pairs.symlen)
                    base.extend(pairs.base)
                pieces, norm, factor = owner.pieces[side], owner.norm[side], owner.factor[side]
                sl[SL_PIECES:SL_PIECES + len(pieces)] = pieces
                sl[SL_NORM:SL_NORM + len(norm)] = norm
                sl[SL_FACTOR:SL_FACTOR + TB_PIECES] = factor[:TB_PIECES]
            entries.append((_code(table.key), 2 * t))
            if not table.symmetric:
                entries.append((_code(table.mirrored_key), 2 * t + 1))
        size = 1 << max(4, (4 * len(entries)).bit_length())
        keys, vals = np.zeros(size, np.int64), np.zeros(size, np.int64)
        for code, val in entries:
            h = (code * 0x9E3779B1) & (size - 1)
            while keys[h]:
                h = (h + 1) & (size - 1)
            keys[h], vals[h] = code + 1, val
        binom = np.array([[math.comb(x, y) for y in range(8)] for x in range(65)], np.int64)
        return TbArrays(tables, slots, np.array(symlen or [0], np.int64), np.array(base or [0], np.uint64), keys,
                        vals, _squares(), np.array(sz.KK_IDX, np.int64), np.array(sz.PAWNIDX, np.int64), binom)
