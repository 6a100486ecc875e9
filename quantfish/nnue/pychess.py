"""Bridges from python-chess to the NNUE inputs, for tests, the benchmark and tools (not the search).

``mailbox`` gives the int8[64] board of ``quantfish.core.types`` codes; ``dirty_pieces`` gives the
(piece, from, to) rows of ``accumulator``'s search-stack interface for a move, derived from the move's
kind (normal, capture, en passant, promotion, castling on either wing, Chess960 castling too).
"""

from __future__ import annotations

import chess
import numpy as np

from quantfish.nnue.accumulator import NO_SQ


def piece_code(piece: chess.Piece) -> int:
    return (0 if piece.color == chess.WHITE else 8) + piece.piece_type


def mailbox(board: chess.Board) -> np.ndarray:
    m = np.zeros(64, np.int8)
    for sq, pc in board.piece_map().items():
        m[sq] = piece_code(pc)
    return m


def side_to_move(board: chess.Board) -> int:
    return 0 if board.turn == chess.WHITE else 1


def dirty_pieces(board: chess.Board, move: chess.Move) -> list:
    """Changed pieces of ``move`` (not yet pushed on ``board``) as [(piece, from, to), ...], at most 3."""
    mover = board.piece_at(move.from_square)
    code = piece_code(mover)
    if board.is_castling(move):
        rank = move.from_square & 56
        kingside = board.is_kingside_castling(move)
        own_rook = chess.Piece(chess.ROOK, mover.color)
        if board.piece_at(move.to_square) == own_rook:      # king-takes-rook encoding (Chess960)
            rook_from = move.to_square
        else:                                              # e1g1-style encoding
            rook_from = rank + (7 if kingside else 0)
        king_to = rank + (6 if kingside else 2)
        rook_to = rank + (5 if kingside else 3)
        rook = (0 if mover.color == chess.WHITE else 8) + chess.ROOK
        return [(code, move.from_square, king_to), (rook, rook_from, rook_to)]
    out = []
    if move.promotion:
        out.append((code, move.from_square, NO_SQ))
        out.append(((code & 8) + move.promotion, NO_SQ, move.to_square))
    else:
        out.append((code, move.from_square, move.to_square))
    if board.is_en_passant(move):
        cap_sq = move.to_square + (-8 if mover.color == chess.WHITE else 8)
        out.append((piece_code(board.piece_at(cap_sq)), cap_sq, NO_SQ))
    elif board.piece_at(move.to_square) is not None:
        out.append((piece_code(board.piece_at(move.to_square)), move.to_square, NO_SQ))
    return out


def set_dirty(dirty: np.ndarray, ndirty: np.ndarray, ply: int, rows: list) -> None:
    """Store ``rows`` as the deltas of the move that led to ``ply``."""
    for i, (pc, fr, to) in enumerate(rows):
        dirty[ply, i, 0] = pc
        dirty[ply, i, 1] = fr
        dirty[ply, i, 2] = to
    ndirty[ply] = len(rows)
