"""Games as PGN, appended to a file as they finish so an interrupted match keeps what it played."""
from __future__ import annotations

import datetime
import threading

import chess
import chess.pgn

from quantfish.match.game import GameRecord, MoveRecord


def _comment(move: MoveRecord) -> str:
    """cutechess-style ``+0.31/12 0.214s`` (score in pawns from the mover's side, depth, time)."""
    parts = []
    if move.score_text:
        kind, _, value = move.score_text.partition(" ")
        if kind == "mate":
            number = int(value)
            parts.append(f"{'+' if number > 0 else '-'}M{abs(number)}")
        else:
            parts.append(f"{int(value) / 100:+.2f}")
        if move.depth is not None:
            parts[-1] += f"/{move.depth}"
    parts.append(f"{move.seconds:.3f}s")
    return " ".join(parts)


def game_to_pgn(record: GameRecord, *, event: str = "quantfish match", time_control: str = "-",
                date: datetime.date | None = None) -> str:
    """The PGN text of one played game, with its opening FEN, result and termination."""
    game = chess.pgn.Game()
    board = chess.Board(record.fen)
    game.setup(board)
    headers = game.headers
    headers["Event"] = event
    headers["Site"] = "?"
    headers["Date"] = (date or datetime.date.today()).strftime("%Y.%m.%d")
    headers["Round"] = f"{record.pair + 1}.{record.game + 1}"
    headers["White"] = record.white
    headers["Black"] = record.black
    headers["Result"] = record.result
    headers["TimeControl"] = time_control
    headers["Termination"] = record.termination
    headers["TerminationDetails"] = record.reason
    headers["BookPosition"] = str(record.opening + 1)
    headers["PlyCount"] = str(len(record.moves))
    node = game
    for move in record.moves:
        node = node.add_variation(chess.Move.from_uci(move.uci), comment=_comment(move))
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return game.accept(exporter) + "\n\n"


class PgnWriter:
    """Appends games to a file, one whole game at a time, from any thread."""

    def __init__(self, path, *, event: str = "quantfish match", time_control: str = "-"):
        self.path = path
        self.event = event
        self.time_control = time_control
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8")

    def write(self, record: GameRecord) -> None:
        text = game_to_pgn(record, event=self.event, time_control=self.time_control)
        with self._lock:
            self._file.write(text)
            self._file.flush()

    def close(self) -> None:
        """Closes the file; a failure to flush was already raised by ``write``."""
        with self._lock:
            try:
                self._file.close()
            except OSError:
                pass
