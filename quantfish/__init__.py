"""Quantfish: a UCI chess engine in Python, with a Numba-compiled search and Stockfish-exact NNUE evaluation.

``from quantfish import Engine, perft`` gives the Python API (``quantfish.api``); it is imported on first use
of one of those names, so that ``import quantfish`` (the UCI start-up, ``quantfish perft``) stays cheap.

The packages are layers, each importing only those listed before it: ``runtime`` (Numba set-up, user
folders), ``core`` (board, moves, FEN, perft), ``nnue`` (nets, accumulators, layers, the C kernel),
``tablebase``, ``search``, then the offline tools ``data``, ``datagen``, ``train``, ``quant`` and ``match``,
and at the top ``api``, ``uci`` and ``cli``.
"""
from quantfish._version import __version__

__all__ = ["Engine", "perft", "__version__"]

_API_NAMES = frozenset({"Engine", "perft"})


def __getattr__(name: str):
    """``quantfish.api``'s public names, imported when first asked for."""
    if name in _API_NAMES:
        import importlib
        return getattr(importlib.import_module("quantfish.api"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | _API_NAMES)
