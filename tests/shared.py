"""Where the team's shared reference data lives: ``../shared`` beside the repository (as CI places it), else
/work/shared. Exactness tests must not pass without their data, so a missing file fails (``require``)."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = next((p for p in (ROOT.parent / "shared", Path("/work/shared")) if p.is_dir()), ROOT.parent / "shared")
NNUE_DATA = SHARED / "data" / "nnue"
PERFT_DATA = SHARED / "data" / "perft"
TOOLS = SHARED / "tools"


def require(path):
    """``path``, or a test failure naming it when it is missing."""
    path = Path(path)
    if not path.exists():
        pytest.fail(f"reference data missing: {path} (the shared folder belongs beside the repository)")
    return path
