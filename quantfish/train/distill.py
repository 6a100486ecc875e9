"""A small distillation set: random legal positions scored by an integer net (tests and demos, not a data set).

Positions come from python-chess random games; their HalfKAv2_hm indices from ``quantfish.nnue.features`` (the engine's
own compiled functions); the score is the net's NNUE output ``(psqt + positional) / 16`` of the position's
bucket (``quantfish.nnue.formulas.eval_report``), converted to centipawns, and the result is unknown (0.5): train
with lambda = 1. The real training data comes from the data engineer's records (``quantfish.train.data``).
"""

from __future__ import annotations

import random

import chess
import numpy as np

from quantfish.nnue.architecture import MAX_ACTIVE
from quantfish.nnue.formulas import eval_report
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
from quantfish.nnue.features import active_features, king_square
from quantfish.nnue.pychess import mailbox, side_to_move
from quantfish.train.data import TrainingArrays


def feature_rows(board: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int32[32] HalfKAv2_hm indices of White's and Black's perspective of a mailbox, -1 padded."""
    out = []
    for persp in (0, 1):
        row = np.full(MAX_ACTIVE, -1, np.int32)
        n = active_features(persp, king_square(board, persp), board, row)
        assert n <= MAX_ACTIVE
        out.append(row)
    return out[0], out[1]


def random_boards(n: int, seed: int = 0, max_plies: int = 160, every: int = 8) -> list[chess.Board]:
    """``n`` positions from random games, about one ply in ``every`` (checks and mates included: NNUE
    evaluates any position)."""
    rng = random.Random(seed)
    boards = []
    while len(boards) < n:
        board = chess.Board()
        for _ in range(max_plies):
            moves = list(board.legal_moves)
            if not moves or board.is_insufficient_material() or board.halfmove_clock >= 100:
                break
            board.push(rng.choice(moves))
            if rng.randrange(every) == 0 and len(boards) < n:
                boards.append(board.copy(stack=False))
    return boards


def board_arrays(boards) -> TrainingArrays:
    """Indices, side to move and bucket of python-chess boards (score 0, result 0.5)."""
    n = len(boards)
    white = np.empty((n, MAX_ACTIVE), np.int32)
    black = np.empty((n, MAX_ACTIVE), np.int32)
    stm = np.empty(n, np.int8)
    bucket = np.empty(n, np.int8)
    for i, b in enumerate(boards):
        white[i], black[i] = feature_rows(mailbox(b))
        stm[i] = side_to_move(b)
        bucket[i] = (len(b.piece_map()) - 1) // 4
    return TrainingArrays(white, black, stm, bucket, np.zeros(n, np.float32), np.full(n, 0.5, np.float32))


def net_output(net, board: chess.Board) -> int:
    """The net's ``tdiv(psqt + positional, 16)`` of the position's bucket, internal units, side to move."""
    rep = eval_report(net, mailbox(board), side_to_move(board), board.halfmove_clock)
    return rep.nnue_raw


def distillation_arrays(net, n: int, seed: int = 0) -> TrainingArrays:
    """``n`` random positions scored (centipawns, side to move) by ``net``'s NNUE output."""
    boards = random_boards(n, seed)
    arrays = board_arrays(boards)
    cp = np.array([net_output(net, b) * 100 / PAWN_VALUE_NORMALIZE for b in boards], np.float32)
    return arrays._replace(score=cp)
