"""The piece-placement field of a FEN, to and from a mailbox: the one parser of it.

``quantfish.core.fen`` builds whole positions on it; the training data's text (``quantfish.data.text``) and the
quantisation toolkit (``quantfish.quant.positions``) read boards with it alone, with no compiled code. Mailbox squares
run A1 = 0 to H8 = 63; piece codes are colour * 8 + type (``quantfish.core.types``).
"""
from __future__ import annotations

import numpy as np

from quantfish.core.types import PIECE_LETTERS as LETTERS


def parse_placement(field: str) -> np.ndarray:
    """int8[64] mailbox of a placement field; ``ValueError`` naming what is malformed (no king checks)."""
    ranks = field.split("/")
    if len(ranks) != 8:
        raise ValueError(f"piece placement {field!r} has {len(ranks)} ranks, expected 8")
    board = np.zeros(64, np.int8)
    for i, text in enumerate(ranks):
        rank = 7 - i
        f = 0
        for ch in text:
            if ch in "12345678":
                f += int(ch)
            elif ch in "PNBRQKpnbrqk" and f < 8:
                board[rank * 8 + f] = LETTERS.index(ch)
                f += 1
            else:
                raise ValueError(f"bad character {ch!r} in rank {rank + 1} of the piece placement {field!r}")
        if f != 8:
            raise ValueError(f"rank {rank + 1} ({text!r}) of the piece placement describes {f} squares, expected 8")
    return board


def format_placement(board) -> str:
    """The placement field of a mailbox."""
    rows = []
    for rank in range(7, -1, -1):
        row, gap = [], 0
        for sq in range(rank * 8, rank * 8 + 8):
            pc = int(board[sq])
            if pc == 0:
                gap += 1
                continue
            if gap:
                row.append(str(gap))
                gap = 0
            row.append(LETTERS[pc])
        if gap:
            row.append(str(gap))
        rows.append("".join(row))
    return "/".join(rows)
