"""Positions for calibration and reports: a FEN (or EPD) file as the HalfKAv2_hm inputs of both perspectives.

Only the piece placement and the side to move matter to the net: an EPD line (``<placement> <side>
<castling> <ep> opcodes...``) serves as well as a FEN. The castling and en-passant fields are kept (in
``fens``) for the one-ply best-move measure, which needs the legal moves. The feature indices come from
``quantfish.nnue.features.active_features``, the function the engine's accumulators use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from quantfish.nnue.architecture import MAX_ACTIVE, PIECES_PER_STACK
from quantfish.nnue.features import active_features, king_square
from quantfish.core.placement import parse_placement



_CASTLING = re.compile(r"-|[KQkqA-Ha-h]{1,4}")
_EN_PASSANT = re.compile(r"-|[a-h][36]")


class PositionError(ValueError):
    """A position line that cannot be read."""


class Positions(NamedTuple):
    """n positions as the forward passes take them."""

    white: np.ndarray      # int64[n, 32] White's feature indices, -1 padding
    black: np.ndarray      # int64[n, 32] Black's
    stm: np.ndarray        # int64[n] 0 White to move, 1 Black
    bucket: np.ndarray     # int64[n] layer stack (pieces - 1) // 4
    fens: tuple            # each line's placement, side, castling and en passant fields ("-" when absent)

    def __len__(self) -> int:
        return len(self.stm)

    def take(self, rows) -> "Positions":
        """The positions at ``rows`` (a slice, mask or index array)."""
        idx = np.arange(len(self))[rows]
        return Positions(self.white[idx], self.black[idx], self.stm[idx], self.bucket[idx],
                         tuple(self.fens[i] for i in idx))


def parse_board(placement: str) -> np.ndarray:
    """int8[64] mailbox of a FEN placement field (A1 = 0); ``PositionError`` if malformed or kings missing."""
    try:
        board = parse_placement(placement)
    except ValueError as exc:
        raise PositionError(str(exc)) from None
    for colour, name in ((0, "White"), (1, "Black")):
        if np.count_nonzero(board == colour * 8 + 6) != 1:
            raise PositionError(f"placement {placement!r} needs exactly one {name} king")
    if np.count_nonzero(board) > MAX_ACTIVE:
        raise PositionError(f"placement {placement!r} has more than {MAX_ACTIVE} pieces")
    return board


def from_boards(boards, sides, fens=None) -> Positions:
    """Positions of mailboxes and sides to move."""
    n = len(sides)
    white = np.full((n, MAX_ACTIVE), -1, np.int64)
    black = np.full((n, MAX_ACTIVE), -1, np.int64)
    out = np.zeros(MAX_ACTIVE, np.int64)
    count = np.zeros(n, np.int64)
    for i, board in enumerate(boards):
        board = np.ascontiguousarray(board, np.int8)
        k = active_features(0, king_square(board, 0), board, out)
        white[i, :k] = out[:k]
        active_features(1, king_square(board, 1), board, out)
        black[i, :k] = out[:k]
        count[i] = k
    fens = tuple(fens) if fens is not None else ("",) * n
    return Positions(white, black, np.asarray(sides, np.int64), (count - 1) // PIECES_PER_STACK, fens)


def parse_lines(lines, source: str = "positions") -> Positions:
    """Positions of FEN/EPD lines (blank lines and lines starting with '#' are skipped)."""
    boards, sides, fens = [], [], []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 2 or fields[1] not in ("w", "b"):
            raise PositionError(f"{source}:{number}: expected a FEN or EPD line, found {line.strip()[:60]!r}")
        try:
            boards.append(parse_board(fields[0]))
        except PositionError as exc:
            raise PositionError(f"{source}:{number}: {exc}") from None
        sides.append(0 if fields[1] == "w" else 1)
        castling = fields[2] if len(fields) > 2 and _CASTLING.fullmatch(fields[2]) else "-"
        en_passant = fields[3] if len(fields) > 3 and _EN_PASSANT.fullmatch(fields[3]) else "-"
        fens.append(f"{fields[0]} {fields[1]} {castling} {en_passant}")
    if not boards:
        raise PositionError(f"{source}: no positions")
    return from_boards(boards, sides, fens)


def read_positions(path, limit: int | None = None) -> Positions:
    """The positions of a FEN/EPD file, the first ``limit`` of them when given."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise PositionError(f"cannot read {path}: {exc.strerror or exc}") from None
    pos = parse_lines(lines, str(path))
    return pos.take(slice(0, limit)) if limit is not None else pos
