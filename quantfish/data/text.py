"""Records as ``FEN | score | result`` text lines (the bullet / marlinflow text format), both ways.

One position a line: ``<FEN> | <score> | <result>``, where

* FEN has all six fields; castling is ``-`` or a subset of ``KQkq`` in that order;
* score is an integer in centipawns from **White's** view (-32767..32767);
* result is the game result from **White's** view: ``1.0`` White won, ``0.5`` draw, ``0.0`` Black won.

Records hold score and result from the side to move's view (``quantfish.data.records``); the conversion flips
both when Black is to move, so records -> text -> records and (canonical) text -> records -> text give the
input back exactly (records labelled with a net's raw output are written in centipawns, so they come back as
centipawn records). Reading also accepts a 4-field FEN (clocks 0 and 1), ``+12`` and ``1``/``0``, but
writes the canonical forms above.
"""
from __future__ import annotations

import os
from typing import Iterable, Iterator, TextIO

import numpy as np

from quantfish.nnue.units import PAWN_VALUE_NORMALIZE

from quantfish.core.placement import format_placement, parse_placement
from quantfish.data import codec
from quantfish.data.records import (ERRORS, RECORD_SIZE, DataFileError, PathLike, as_bytes, count_records, empty,
                                from_bytes, read_records, write_all)

FILES = "abcdefgh"
CASTLING = "KQkq"
RESULT_TEXT = ("0.0", "0.5", "1.0")       # indexed by White's result 0 (loss), 1 (draw), 2 (win)
CHUNK = 1 << 16


# ---------------------------------------------------------------------------------------------------------
# Records -> text


def format_lines(records: np.ndarray) -> list[str]:
    """One text line (no newline) per record."""
    data = as_bytes(records)
    boards = np.zeros((len(records), 64), np.int8)
    codec.unpack_boards(data, boards)
    lines = []
    for i, rec in enumerate(records.tolist()):
        _, _, score, stm, result, rights, halfmove, fullmove = rec
        if result & codec.RAW_LABEL:     # a net's raw output: written in centipawns like any score
            score = int(score * 100 / PAWN_VALUE_NORMALIZE)
            result &= codec.RESULT_MASK
        castling = "".join(c for bit, c in enumerate(CASTLING) if rights >> bit & 1) or "-"
        ep = "-" if rights >> 4 == 0 else FILES[(rights >> 4) - 1] + ("6" if stm == 0 else "3")
        fen = f"{format_placement(boards[i].tolist())} {'wb'[stm]} {castling} {ep} {halfmove} {fullmove}"
        white_score = score if stm == 0 else -score
        white_result = result if stm == 0 else 2 - result
        lines.append(f"{fen} | {white_score} | {RESULT_TEXT[white_result]}")
    return lines


def export_text(in_path: PathLike, out: TextIO) -> int:
    """Write every record of ``in_path`` to ``out`` as text lines; returns how many."""
    records = read_records(in_path, mmap=True)
    for start in range(0, len(records), CHUNK):
        chunk = np.array(records[start:start + CHUNK])
        out.write("".join(line + "\n" for line in format_lines(chunk)))
    return len(records)


# ---------------------------------------------------------------------------------------------------------
# Text -> records


def _parse_placement(field: str) -> np.ndarray:
    try:
        board = parse_placement(field)
    except ValueError as exc:
        raise DataFileError(str(exc)) from None
    if np.count_nonzero(board) > 32:
        raise DataFileError(f"{np.count_nonzero(board)} pieces, at most 32 fit a record")
    return board


def _parse_castling(field: str, board: np.ndarray) -> int:
    if field == "-":
        return 0
    rights = 0
    for ch in field:
        if ch not in CASTLING:
            raise DataFileError(f"castling field {field!r}: only KQkq rights are supported (standard chess)")
        bit = CASTLING.index(ch)
        if rights >> bit & 1:
            raise DataFileError(f"castling right {ch!r} given twice")
        colour = bit >> 1
        king, rook = (4, 7 if bit & 1 == 0 else 0) if colour == 0 else (60, 63 if bit & 1 == 0 else 56)
        if board[king] != colour * 8 + 6 or board[rook] != colour * 8 + 4:
            raise DataFileError(f"castling right {ch!r} without the king and rook on their squares")
        rights |= 1 << bit
    return rights


def parse_fen(fen: str) -> tuple:
    """(board int8[64], side, castling rights, en passant square or 64, halfmove, fullmove) of a FEN."""
    fields = fen.split()
    if len(fields) not in (4, 6):
        raise DataFileError(f"FEN {fen!r} has {len(fields)} fields, expected 6")
    board = _parse_placement(fields[0])
    if fields[1] not in ("w", "b"):
        raise DataFileError(f"side to move {fields[1]!r}, expected 'w' or 'b'")
    side = 0 if fields[1] == "w" else 1
    rights = _parse_castling(fields[2], board)
    ep = codec.NO_SQUARE
    if fields[3] != "-":
        rank = "6" if side == 0 else "3"
        if len(fields[3]) != 2 or fields[3][0] not in FILES or fields[3][1] != rank:
            raise DataFileError(f"en passant square {fields[3]!r}: expected '-' or a square on rank {rank}")
        ep = FILES.index(fields[3][0]) + 8 * (int(rank) - 1)
    halfmove, fullmove = 0, 1
    if len(fields) == 6:
        try:
            halfmove, fullmove = int(fields[4]), int(fields[5])
        except ValueError:
            raise DataFileError("halfmove clock and move number must be integers") from None
        if not 0 <= halfmove <= 255 or not 1 <= fullmove <= 65535:
            raise DataFileError(f"halfmove clock {halfmove} (0..255) or move number {fullmove} (1..65535) "
                                f"out of range")
    return board, side, rights, ep, halfmove, fullmove


def _parse_result(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value not in (0.0, 0.5, 1.0):
        raise DataFileError(f"result {text!r}: expected 1.0, 0.5 or 0.0 (White's view)")
    return int(value * 2)


def parse_line(line: str, out: np.ndarray) -> None:
    """Pack one ``FEN | score | result`` line into ``out`` (uint8[32]); ``DataFileError`` if malformed."""
    parts = line.split("|")
    if len(parts) != 3:
        raise DataFileError(f"expected 'FEN | score | result', found {len(parts)} field(s)")
    board, side, rights, ep, halfmove, fullmove = parse_fen(parts[0].strip())
    try:
        score = int(parts[1].strip())
    except ValueError:
        raise DataFileError(f"score {parts[1].strip()!r} is not an integer (centipawns)") from None
    if not -32767 <= score <= 32767:
        raise DataFileError(f"score {score} out of range -32767..32767")
    white_result = _parse_result(parts[2].strip())
    codec.pack_record(board, side, rights, ep, halfmove, fullmove, score if side == 0 else -score,
                      white_result if side == 0 else 2 - white_result, out)


def parse_lines(lines: Iterable[str], source: str = "text", first_line: int = 1) -> np.ndarray:
    """Records of text lines (blank lines skipped); errors name ``source`` and the line number."""
    lines = list(lines)
    data = np.zeros((len(lines), RECORD_SIZE), np.uint8)
    numbers = []
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            parse_line(line, data[len(numbers)])
        except DataFileError as exc:
            raise DataFileError(f"{source}:{first_line + k}: {exc}") from None
        numbers.append(first_line + k)
    data = data[:len(numbers)]
    index, code = codec.first_error(data)
    if index >= 0:
        raise DataFileError(f"{source}:{numbers[index]}: {ERRORS[code]}")
    return from_bytes(data) if len(numbers) else empty()


def _chunks(stream: TextIO) -> Iterator[tuple[int, list[str]]]:
    lines, first = [], 1
    for number, line in enumerate(stream, 1):
        if not lines:
            first = number
        lines.append(line)
        if len(lines) == CHUNK:
            yield first, lines
            lines = []
    if lines:
        yield first, lines


def import_text(stream: TextIO, out_path: PathLike, source: str = "text") -> int:
    """Append the records of every line of ``stream`` to ``out_path``; returns how many. On an error nothing
    is appended (the file is cut back to its size before the call) and ``DataFileError`` names the line."""
    start = count_records(out_path) * RECORD_SIZE if os.path.exists(out_path) else None
    total = 0
    try:
        for first, lines in _chunks(stream):
            records = parse_lines(lines, source, first)
            write_all(out_path, as_bytes(records).tobytes())
            total += len(records)
    except BaseException:
        if start is None:
            if os.path.exists(out_path):
                os.remove(out_path)
        else:
            os.truncate(out_path, start)
        raise
    if start is None and not os.path.exists(out_path):
        write_all(out_path, b"")
    return total
