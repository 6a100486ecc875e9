"""Opening books for self-play and matches: an EPD or FEN file, one position a line (``#`` comments and blank
lines skipped). The default is the book shipped in the package, ``books/8moves_v3.epd`` (34,700 balanced
positions eight moves deep, from Stockfish's testing books; ``books/SOURCES.md``). Lines are parsed when a game
uses them, so a large book opens at once."""
from __future__ import annotations

from pathlib import Path

from quantfish.core.fen import Board, FenError, parse_fen

DEFAULT_BOOK = Path(__file__).resolve().parent / "books" / "8moves_v3.epd"


class OpeningsError(ValueError):
    """A missing, empty or malformed openings file."""


def default_openings_path() -> Path:
    return DEFAULT_BOOK


class Openings:
    """The positions of one file, by index."""

    def __init__(self, path=None):
        self.path = Path(path) if path else default_openings_path()
        try:
            text = self.path.read_text()
        except OSError as exc:
            raise OpeningsError(f"openings file {self.path}: {exc.strerror or exc}") from None
        self._lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1)
                       if line.strip() and not line.lstrip().startswith("#")]
        self._boards: dict[int, Board] = {}
        if not self._lines:
            raise OpeningsError(f"openings file {self.path} holds no positions")

    def __len__(self) -> int:
        return len(self._lines)

    def board(self, index: int) -> Board:
        """The position of line ``index`` (EPD operations after the fourth field are ignored), parsed once:
        parsing costs a few percent of a short game."""
        if index not in self._boards:
            self._boards[index] = self._parse(index)
        return self._boards[index]

    def line(self, index: int) -> str:
        """Line ``index`` as the file has it (stripped)."""
        return self._lines[index][1]

    def fen(self, index: int) -> str:
        """The FEN of line ``index``: its first four fields, with the move counters when the line has them."""
        fields = self.line(index).split(";")[0].split()
        return " ".join(fields[:6] if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit()
                        else fields[:4])

    def _parse(self, index: int) -> Board:
        number = self._lines[index][0]
        try:
            return parse_fen(self.fen(index))
        except FenError as exc:
            raise OpeningsError(f"{self.path}:{number}: {exc}") from None
