"""The reference data of the tests, kept in ``tests/data`` (``tests/data/SOURCES.md`` gives each file's origin
and licence)."""
from pathlib import Path

import chess
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
NNUE_DATA = DATA / "nnue"
PERFT_DATA = DATA / "perft"
TACTICS = DATA / "tactics"
ENDGAME = DATA / "endgame"
EVAL_DATA = DATA / "eval"
SYZYGY34 = ENDGAME / "syzygy34"          # the 3-4 man Syzygy tables (WDL and DTZ)
ENDGAME_EPDS = ("python-chess_endgame_wdl_dtz.epd", "python-chess_endgame-dm-4.epd")
KBNK = "8/8/8/2K5/4B3/8/7N/4k3 w - - 0 1"       # DTZ 38
KRK = "8/8/8/8/8/2k5/1R6/K7 w - - 0 1"           # DTZ 31; Rb3+ and Rc2+ hang the rook


def require(path):
    """``path``, or a test failure naming it when it is missing: the data is part of the repository."""
    path = Path(path)
    if not path.exists():
        pytest.fail(f"test data missing: {path}")
    return path


def perft_suite_fens(name="perftsuite_standard_128.epd"):
    """The positions of a perft suite as FENs with clocks 0 and 1: board positions for record files."""
    fens = []
    for line in open(require(PERFT_DATA / name)):
        fen = line.split(";")[0].strip()
        if fen and len(fen.split()) >= 4:
            fens.append(" ".join(fen.split()[:4]) + " 0 1")
    return fens


def endgame_positions():
    """Every position of the endgame EPDs that the 3-4 man tables cover (no castling rights), as
    ``pytest.param(fen)`` with the file's name in its id."""
    for name in ENDGAME_EPDS:
        with open(require(ENDGAME / name)) as fh:
            for line in fh:
                if line.strip() and not line.startswith("#"):
                    board, _ = chess.Board.from_epd(line)
                    if chess.popcount(board.occupied) <= 4 and not board.castling_rights:
                        yield pytest.param(board.fen(), id=f"{name}:{board.fen()}")
