"""Chess core and search, compiled with Numba; and the Python API (``from engine import Engine, perft``).

The API lives in ``engine.api`` and is imported on first use of one of its names, so that ``import engine``
(``quantfish perft``, the UCI start-up) costs no more than the cache check below.
"""
import importlib as _importlib
from pathlib import Path as _Path

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

# The search inlines NNUE code: a change there must also drop this package's cached machine code.
_invalidate_if_changed(_Path(__file__).parent, depends_on=[_Path(__file__).parent.parent / "nnue"])

_API_NAMES = frozenset({"Engine", "perft"})


def __getattr__(name: str):
    """``engine.api``'s public names, imported when first asked for."""
    if name in _API_NAMES:
        return getattr(_importlib.import_module("engine.api"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | _API_NAMES)
