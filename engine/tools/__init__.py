"""Engine tools (benchmarks, magic search, suites, cache warm-up): kept out of the engine compile-cache hash.

``engine/__init__`` hashes only the top-level ``engine/*.py`` (and ``nnue/*.py``), so editing a tool keeps
the engine's compiled code. Compiled functions here call engine code, so their own cache is dropped when
this directory, ``engine`` or ``nnue`` changes.
"""
from pathlib import Path as _Path

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

_HERE = _Path(__file__).parent
_invalidate_if_changed(_HERE, depends_on=[_HERE.parent, _HERE.parent.parent / "nnue"])
