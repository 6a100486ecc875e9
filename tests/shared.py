"""Where the team's shared reference data lives: ``../shared`` beside the repository (as CI places it), else
/work/shared. Exactness tests must not pass without their data, so a missing file fails (``require``)."""
from pathlib import Path

import chess
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = next((p for p in (ROOT.parent / "shared", Path("/work/shared")) if p.is_dir()), ROOT.parent / "shared")
NNUE_DATA = SHARED / "data" / "nnue"
PERFT_DATA = SHARED / "data" / "perft"
TOOLS = SHARED / "tools"
ENDGAME = SHARED / "data" / "endgame"
SYZYGY34 = ENDGAME / "syzygy34"          # the 3-4 man Syzygy tables (WDL and DTZ)
ENDGAME_EPDS = ("python-chess_endgame_wdl_dtz.epd", "python-chess_endgame-dm-4.epd")
KBNK = "8/8/8/2K5/4B3/8/7N/4k3 w - - 0 1"       # DTZ 38
KRK = "8/8/8/8/8/2k5/1R6/K7 w - - 0 1"           # DTZ 31; Rb3+ and Rc2+ hang the rook


def require(path):
    """``path``, or a test failure naming it when it is missing."""
    path = Path(path)
    if not path.exists():
        pytest.fail(f"reference data missing: {path} (the shared folder belongs beside the repository)")
    return path


def endgame_positions():
    """Every position of the shared endgame EPDs that the 3-4 man tables cover (no castling rights), as
    ``pytest.param(fen)`` with the file's name in its id."""
    for name in ENDGAME_EPDS:
        with open(require(ENDGAME / name)) as fh:
            for line in fh:
                if line.strip() and not line.startswith("#"):
                    board, _ = chess.Board.from_epd(line)
                    if chess.popcount(board.occupied) <= 4 and not board.castling_rights:
                        yield pytest.param(board.fen(), id=f"{name}:{board.fen()}")
