"""Best-move agreement at one ply: does the integer net pick the move the float net picks?

A centipawn error matters in play only where it changes a choice. For each position with two or more legal
moves, every legal move is made and the net evaluates the position after it (from the opponent's side, so
the mover's value is its negation); the float net's best move is the one it values most, and so is the
integer net's, taking the first in python-chess's move order when several tie. They agree when the integer
net's choice is worth as much to the float net as the float net's own (float ties count as agreement). The
cost of a disagreement is that difference, in centipawns of the float net.
"""

from __future__ import annotations

from typing import NamedTuple

import chess
import numpy as np

from quantfish.quant.positions import Positions, from_boards


class Children(NamedTuple):
    """Every legal child of the parents that have two or more legal moves, grouped by parent."""

    positions: Positions     # the children, parent after parent
    starts: np.ndarray       # int64[k] first child of each kept parent
    parents: np.ndarray      # int64[k] the kept parents' rows in the parent set


class BestMove(NamedTuple):
    positions: int           # parents with a choice (two or more legal moves)
    agreement: float         # fraction where the integer net's choice is a float-best move
    cp_loss: float           # mean float value (cp) given up by the integer net's choice


def _mailbox(board: chess.Board) -> np.ndarray:
    """int8[64] mailbox (A1 = 0; colour * 8 + piece type) of a python-chess board."""
    out = np.zeros(64, np.int8)
    for square, piece in board.piece_map().items():
        out[square] = (0 if piece.color == chess.WHITE else 8) + piece.piece_type
    return out


def children(parents: Positions) -> Children:
    """The legal children of each parent (its ``fens``: placement, side, castling, en passant).

    Parents python-chess finds invalid (for example the side not to move in check) or that have fewer than two
    legal moves are left out: they offer no choice to agree on.
    """
    boards, sides, starts, kept = [], [], [], []
    for row, fen in enumerate(parents.fens):
        try:
            board = chess.Board(f"{fen} 0 1")
        except ValueError:
            continue
        if not board.is_valid():
            continue
        moves = list(board.legal_moves)
        if len(moves) < 2:
            continue
        starts.append(len(sides))
        kept.append(row)
        for move in moves:
            board.push(move)
            boards.append(_mailbox(board))
            sides.append(0 if board.turn == chess.WHITE else 1)
            board.pop()
    if not boards:
        return Children(from_boards([np.zeros(64, np.int8)], [0]).take(slice(0, 0)),
                        np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Children(from_boards(boards, sides), np.asarray(starts, np.int64), np.asarray(kept, np.int64))


def picks(kids: Children, values: np.ndarray) -> np.ndarray:
    """The child each parent chooses: the largest of ``values`` (the mover's), the first in move order on a tie."""
    group = np.repeat(np.arange(len(kids.starts)), np.diff(np.append(kids.starts, len(values))))
    order = np.lexsort((np.arange(len(values)), -np.asarray(values), group))
    return order[kids.starts]


def agreement(kids: Children, float_child: np.ndarray, int_child: np.ndarray, cp_per_unit: float) -> BestMove:
    """Agreement of the integer and float nets' one-ply choices, given both nets' values of every child
    (internal units, from the child's side to move)."""
    k = len(kids.starts)
    if k == 0:
        return BestMove(0, float("nan"), float("nan"))
    fv = -np.asarray(float_child, np.float64)          # the mover's value of each move
    picked = picks(kids, -np.asarray(int_child, np.int64))
    best = np.maximum.reduceat(fv, kids.starts)
    loss = best - fv[picked]
    return BestMove(k, float(np.mean(loss <= 1e-9)), float(loss.mean() * cp_per_unit))
