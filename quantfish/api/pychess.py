"""python-chess's types to and from the engine's: boards with their game history, moves, scores, limits.

The engine keeps a position in numpy arrays (``quantfish.core.fen.Board``) and moves as ints; ``quantfish.api.engine`` speaks
python-chess so that callers pass what they already hold and get back what python-chess's own engine
wrappers return. Everything goes through UCI text and FEN, as the UCI loop does, so the two cannot disagree.
"""
from __future__ import annotations

from typing import Union

import chess
import chess.engine

from quantfish.core.fen import STARTING_FEN, Board, parse_fen
from quantfish.core.notation import move_to_uci, parse_uci_move, push
from quantfish.search.driver import Limits, board_key, score_to_uci

FenOrBoard = Union[str, chess.Board]


def _check_standard(board: chess.Board) -> None:
    """Variants (atomic, crazyhouse, ...) subclass chess.Board; the engine plays standard chess and 960 only."""
    if not isinstance(board, chess.Board):
        raise TypeError(f"expected a chess.Board, got {type(board).__name__}")
    if board.uci_variant != chess.Board.uci_variant:
        raise ValueError(f"the engine plays standard chess (and Chess960) only, not {board.uci_variant}")


def position_of(position: FenOrBoard | None) -> Board:
    """The engine's Board for a FEN (``None``: the start position) or a chess.Board's current position.

    A bad FEN raises ``quantfish.core.fen.FenError`` (a ``ValueError``) with the parser's reason.
    """
    if position is None:
        return parse_fen(STARTING_FEN)
    if isinstance(position, str):
        return parse_fen(position)
    _check_standard(position)
    return parse_fen(position.fen(), position.chess960)


def game_of(board: chess.Board) -> tuple[Board, list[int]]:
    """The engine's Board for ``board`` and the game's Zobrist keys before it (for repetition draws).

    Replays ``board.move_stack`` from its root, as UCI's ``position fen ... moves ...`` does: the keys of the
    positions since the last capture or pawn move. ``board`` itself is not modified.
    """
    _check_standard(board)
    root = board.root()
    pos = parse_fen(root.fen(), board.chess960)
    keys: list[int] = []
    for move in board.move_stack:
        m = parse_uci_move(pos, move.uci(), board.chess960)
        keys.append(int(board_key(pos)))
        pos = push(pos, m)
        if pos.halfmove == 0:
            keys = []
    return pos, keys


def to_move(board: chess.Board, m: int) -> chess.Move:
    """The chess.Move of engine move ``m`` in ``board`` (raises ``chess.IllegalMoveError`` if not legal)."""
    return board.parse_uci(move_to_uci(m, board.chess960))


def to_pv(board: chess.Board, moves: list[int]) -> list[chess.Move]:
    """A principal variation as chess.Moves, each legal after the ones before it; cut at the first move that
    is not (python-chess's UCI wrapper treats a bad PV the same way)."""
    walk = board.copy(stack=False)
    pv: list[chess.Move] = []
    for m in moves:
        try:
            move = to_move(walk, m)
        except ValueError:
            break
        pv.append(move)
        walk.push(move)
    return pv


def to_score(value: int, turn: chess.Color) -> chess.engine.PovScore:
    """A search score (side to move's view, internal units) as UCI reports it: ``Cp`` or ``Mate``."""
    kind, n = score_to_uci(value).split()
    relative = chess.engine.Mate(int(n)) if kind == "mate" else chess.engine.Cp(int(n))
    return chess.engine.PovScore(relative, turn)


def _ms(seconds: float, what: str) -> int:
    if seconds < 0:
        raise ValueError(f"chess.engine.Limit {what} must not be negative, got {seconds}")
    return int(round(seconds * 1000))


def _positive(value, what: str) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"chess.engine.Limit {what} must be a positive integer, got {value!r}")
    return int(value)


def to_limits(limit: chess.engine.Limit, turn: chess.Color) -> Limits:
    """The search limits of a chess.engine.Limit (seconds become milliseconds).

    ``time`` is a fixed time per move; ``white_clock``/``black_clock`` (with increments and
    ``remaining_moves``) give the game clock to ``quantfish.search.timeman`` as UCI's ``wtime``/``btime`` do. A Limit
    that bounds nothing (no depth, nodes, time, mate, nor a clock for the side to move) raises ``ValueError``:
    the search would never end.
    """
    if not isinstance(limit, chess.engine.Limit):
        raise TypeError(f"expected a chess.engine.Limit, got {type(limit).__name__}")
    out = Limits()
    if limit.depth is not None:
        out.depth = _positive(limit.depth, "depth")
    if limit.nodes is not None:
        out.nodes = _positive(limit.nodes, "nodes")
    if limit.mate is not None:
        out.mate = _positive(limit.mate, "mate")
    if limit.time is not None:
        out.movetime = max(1, _ms(limit.time, "time"))
    if limit.white_clock is not None:
        out.wtime = _ms(limit.white_clock, "white_clock")
    if limit.black_clock is not None:
        out.btime = _ms(limit.black_clock, "black_clock")
    out.winc = _ms(limit.white_inc or 0, "white_inc")
    out.binc = _ms(limit.black_inc or 0, "black_inc")
    if limit.remaining_moves is not None:
        out.movestogo = _positive(limit.remaining_moves, "remaining_moves")
    own_clock = out.wtime if turn == chess.WHITE else out.btime
    if (out.depth, out.nodes, out.mate, out.movetime, own_clock) == (None,) * 5:
        raise ValueError("chess.engine.Limit bounds nothing: give depth, nodes, time, mate, or the clock of the "
                         "side to move")
    return out


__all__ = ["FenOrBoard", "position_of", "game_of", "to_move", "to_pv", "to_score", "to_limits"]
