"""One game between two started engines, refereed with python-chess.

The referee owns the clocks (an engine's time runs from ``go`` to the arrival of ``bestmove``), checks every
move for legality, ends the game by the rules (mate, stalemate, repetition, fifty moves, insufficient material)
or by adjudication, and turns an engine's fault into its loss with the reason recorded.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import chess

from quantfish.match.config import MatchConfig
from quantfish.match.uci import EngineCrash, EngineError, EngineTimeout, SearchResult, UciEngine

PLAYED, UNPLAYED, ABORTED = "played", "unplayed", "aborted"
FAULT_KINDS = ("crash", "illegal", "time", "hang", "start")
FAULT_LABELS = {"crash": "crash", "illegal": "illegal move", "time": "time loss", "hang": "hang",
                "start": "failed start"}

_RULE_REASONS = {
    chess.Termination.CHECKMATE: "checkmate",
    chess.Termination.STALEMATE: "stalemate",
    chess.Termination.INSUFFICIENT_MATERIAL: "insufficient material",
    chess.Termination.SEVENTYFIVE_MOVES: "75-move rule",
    chess.Termination.FIVEFOLD_REPETITION: "fivefold repetition",
}


@dataclass
class MoveRecord:
    """One move as played: UCI text, the engine's last score (centipawns, mover's view) and depth, and the
    seconds it took."""
    uci: str
    seconds: float
    score: int | None = None
    score_text: str | None = None
    depth: int | None = None


@dataclass
class GameRecord:
    """A finished (or unplayed, or aborted) game. ``result`` is PGN's ``1-0``/``0-1``/``1/2-1/2``/``*``;
    ``reason`` says why in words; ``fault``/``fault_engine`` name the fault that decided it, if one did."""
    pair: int
    game: int
    opening: int
    fen: str
    white: str
    black: str
    status: str = PLAYED
    result: str = "*"
    reason: str = ""
    termination: str = "normal"
    fault: str | None = None
    fault_engine: str | None = None
    moves: list[MoveRecord] = field(default_factory=list)

    @property
    def played(self) -> bool:
        return self.status == PLAYED

    @property
    def ending(self) -> str:
        """The kind of ending, for counting: the fault when one decided the game, else the reason."""
        return FAULT_LABELS[self.fault] if self.fault else self.reason

    def points(self, name: str) -> float | None:
        """The points ``name`` scored, None unless played."""
        if not self.played:
            return None
        if self.result == "1/2-1/2":
            return 0.5
        winner = self.white if self.result == "1-0" else self.black
        return 1.0 if winner == name else 0.0


class _Adjudicator:
    """Scores seen so far, White's view, one per ply (None where the engine gave none)."""

    def __init__(self, rules):
        self.rules = rules
        self.white_scores: list[int | None] = []

    def add(self, mover_white: bool, score: int | None) -> None:
        self.white_scores.append(None if score is None else (score if mover_white else -score))

    def verdict(self, full_moves: int) -> tuple[str, str] | None:
        """(result, reason) when the scores end the game."""
        rules = self.rules
        if rules.resign and rules.resign_count > 0:
            last = self.white_scores[-2 * rules.resign_count:]
            if len(last) == 2 * rules.resign_count and None not in last:
                if all(s >= rules.resign_score for s in last):
                    return "1-0", "adjudication: Black resigns"
                if all(s <= -rules.resign_score for s in last):
                    return "0-1", "adjudication: White resigns"
        if rules.draw and rules.draw_count > 0 and full_moves >= rules.draw_move:
            last = self.white_scores[-2 * rules.draw_count:]
            if len(last) == 2 * rules.draw_count and None not in last and \
                    all(abs(s) <= rules.draw_score for s in last):
                return "1/2-1/2", "adjudication: draw"
        return None


def _go_command(limits, clocks) -> str:
    parts = ["go"]
    if limits.clock:
        parts += ["wtime", str(max(1, round(clocks[chess.WHITE] * 1000))),
                  "btime", str(max(1, round(clocks[chess.BLACK] * 1000))),
                  "winc", str(round(limits.inc * 1000)), "binc", str(round(limits.inc * 1000))]
    if limits.movetime is not None:
        parts += ["movetime", str(max(1, round(limits.movetime * 1000)))]
    if limits.nodes is not None:
        parts += ["nodes", str(limits.nodes)]
    if limits.depth is not None:
        parts += ["depth", str(limits.depth)]
    return " ".join(parts)


def play_game(config: MatchConfig, white: UciEngine, black: UciEngine, record: GameRecord,
              stop: threading.Event | None = None) -> GameRecord:
    """Plays ``record``'s game from its FEN between two started engines and fills in ``record``.

    A fault ends the game as the faulty engine's loss; when ``stop`` is set the game ends as ``aborted``.
    Threefold repetition and the fifty-move rule end the game as soon as they have happened on the board
    (UCI engines cannot claim), not while a move could still claim them."""
    limits, rules = config.limits, config.adjudication
    board = chess.Board(record.fen)
    position_prefix = f"position fen {board.fen()}"
    moves: list[str] = []
    clocks = {chess.WHITE: limits.base or 0.0, chess.BLACK: limits.base or 0.0}
    adjudicator = _Adjudicator(rules)
    engines = {chess.WHITE: white, chess.BLACK: black}

    def finish(result, reason, termination="normal", fault=None, engine=None):
        if stop is not None and stop.is_set() and fault is not None:
            record.status, record.result, record.reason = ABORTED, "*", "aborted"
            return record
        record.result, record.reason, record.termination = result, reason, termination
        record.fault, record.fault_engine = fault, engine.name if engine is not None else None
        return record

    def lose(color, fault, reason, termination):
        return finish("0-1" if color == chess.WHITE else "1-0",
                      f"{'White' if color == chess.WHITE else 'Black'} {reason}", termination, fault,
                      engines[color])

    for color in (chess.WHITE, chess.BLACK):
        try:
            engines[color].new_game(config.hang_timeout)
        except EngineTimeout:
            return lose(color, "hang", "hangs (no readyok)", "abandoned")
        except EngineError as exc:
            return lose(color, "crash", f"crashes ({exc})", "abandoned")

    while True:
        if stop is not None and stop.is_set():
            record.status, record.result, record.reason = ABORTED, "*", "aborted"
            return record
        outcome = board.outcome()
        if outcome is not None:
            return finish(outcome.result(), _RULE_REASONS.get(outcome.termination, outcome.termination.name))
        if board.halfmove_clock >= 100:
            return finish("1/2-1/2", "50-move rule")
        if board.is_repetition(3):
            return finish("1/2-1/2", "threefold repetition")
        full_moves = len(moves) // 2
        verdict = adjudicator.verdict(full_moves)
        if verdict is not None:
            return finish(verdict[0], verdict[1], "adjudication")
        if rules.max_moves and full_moves >= rules.max_moves:
            return finish("1/2-1/2", f"adjudication: {rules.max_moves} moves", "adjudication")

        color = board.turn
        engine = engines[color]
        position = position_prefix + (" moves " + " ".join(moves) if moves else "")
        if limits.clock:
            allowed = clocks[color] + config.margin
        elif limits.movetime is not None:
            allowed = limits.movetime + config.margin
        else:
            allowed = config.hang_timeout
        try:
            result: SearchResult = engine.search(position, _go_command(limits, clocks),
                                                 time.monotonic() + allowed)
        except EngineTimeout:
            if limits.timed:
                return lose(color, "time", "loses on time (no move)", "time forfeit")
            return lose(color, "hang", f"hangs (no bestmove within {config.hang_timeout:g} s)", "abandoned")
        except EngineCrash as exc:
            return lose(color, "crash", f"crashes ({exc})", "abandoned")
        except EngineError as exc:
            return lose(color, exc.kind, str(exc), "abandoned")

        if limits.timed and result.seconds > allowed:
            return lose(color, "time", f"loses on time ({result.seconds:.3f} s)", "time forfeit")
        try:
            move = board.parse_uci(result.move) if result.move else None
        except ValueError:
            move = None
        if not move:
            return lose(color, "illegal", f"plays an illegal move ({result.move or 'none'})", "rules infraction")
        if limits.clock:
            clocks[color] = max(clocks[color] - result.seconds, 0.0) + limits.inc
        record.moves.append(MoveRecord(move.uci(), result.seconds, result.score, result.score_text, result.depth))
        adjudicator.add(color == chess.WHITE, result.score)
        moves.append(move.uci())
        board.push(move)
