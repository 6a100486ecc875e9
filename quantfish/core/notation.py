"""UCI move text to and from the engine's move encoding."""
import numpy as np

from quantfish.core.fen import square_name
from quantfish.core.movegen import MAX_MOVES, generate_legal
from quantfish.core.position import MOVE_CASTLE, castle_targets, make_move
from quantfish.core.tables import tables
from quantfish.core.position import move_from, move_promo, move_to

PROMO_LETTERS = "  nbrq"


class IllegalMoveError(ValueError):
    """A move text that is not a legal move in the position."""


def move_to_uci(m, chess960=False):
    """Castling is king-takes-rook in Chess960 mode, king-to-destination otherwise."""
    m = int(m)
    frm, to, promo = move_from(m), move_to(m), move_promo(m)
    if m & MOVE_CASTLE and not chess960:
        to = castle_targets(frm, to)[0]
    text = square_name(frm) + square_name(to)
    if promo:
        text += PROMO_LETTERS[promo]
    return text


def legal_moves(board):
    moves = np.empty(MAX_MOVES, dtype=np.int32)
    n = generate_legal(tables(), board.bb, board.board, board.st, moves)
    return [int(m) for m in moves[:n]]


def parse_uci_move(board, text, chess960=False):
    """The legal move that ``text`` names; accepts either castling notation in either mode."""
    if not isinstance(text, str) or not (4 <= len(text) <= 5):
        raise IllegalMoveError(f"bad move text {text!r}")
    moves = legal_moves(board)
    for mode in (chess960, not chess960):
        for m in moves:
            if move_to_uci(m, mode) == text:
                return m
    raise IllegalMoveError(f"illegal move {text!r} in position {board.fen()}")


def push(board, m):
    """The board after move ``m`` (a new Board; the argument is left alone)."""
    child = board.copy()
    dirty = np.empty((3, 3), dtype=np.int32)
    make_move(tables(), board.bb, board.board, board.st, child.bb, child.board, child.st, m, dirty)
    return child
