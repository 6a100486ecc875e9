"""NNUE tools (kernel build, net download, benchmarks): kept out of the ``nnue`` compile-cache hash.

``nnue/__init__`` hashes only the top-level ``nnue/*.py``, so editing a tool keeps the engine's compiled
code. The benchmarks here have compiled loops that inline ``nnue`` code, so their own cache is dropped when
either this directory or ``nnue`` changes.
"""
from pathlib import Path as _Path

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

_invalidate_if_changed(_Path(__file__).parent, depends_on=[_Path(__file__).parent.parent])
