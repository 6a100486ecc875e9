"""Chess core and search, compiled with Numba; and the Python API (``from engine import Engine, perft``).

The API lives in ``engine.api`` and is imported on first use of one of its names, so that ``import engine``
(``quantfish perft``, the UCI start-up) costs no more than the cache check below.
"""
import importlib as _importlib
import sys as _sys
import types as _types
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


class _Package(_types.ModuleType):
    """``engine.perft`` is both a submodule (the compiled perft) and the API's ``perft()``; the attribute means
    the function. Python binds a submodule to its package's attribute when it is first imported, which
    would make ``from engine import perft`` give the module whenever ``engine.perft`` was imported before;
    this property ignores that binding (the submodule stays importable: ``from engine.perft import ...``)."""

    @property
    def perft(self):
        value = self.__dict__.get("perft")
        if value is None or isinstance(value, _types.ModuleType):
            return __getattr__("perft")
        return value                     # set explicitly (e.g. unittest.mock.patch)

    @perft.setter
    def perft(self, value):
        self.__dict__["perft"] = value

    @perft.deleter
    def perft(self):
        self.__dict__.pop("perft", None)


_sys.modules[__name__].__class__ = _Package
