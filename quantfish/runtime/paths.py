"""The user's folders that Quantfish writes: a cache (compiled code, the C kernel) and a data folder (nets).

``$QUANTFISH_CACHE_DIR`` and ``$QUANTFISH_DATA_DIR`` override them; otherwise they are the platform's own
(``~/.cache/quantfish`` and ``~/.local/share/quantfish`` on Linux, by ``platformdirs``). Nothing is written
inside the installed package, so an install in a read-only site-packages works, and two checkouts share one
cache without mixing their code (each compiled layer sits under a hash of its sources,
``quantfish.runtime.jit``).
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "QUANTFISH_CACHE_DIR"
DATA_ENV = "QUANTFISH_DATA_DIR"
PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The ``quantfish`` package folder (read-only as far as Quantfish is concerned)."""


def cache_dir() -> Path:
    """Where compiled code and the built C kernel go: may be deleted at any time, it is remade."""
    value = os.environ.get(CACHE_ENV)
    if value:
        return Path(value).expanduser()
    import platformdirs
    return Path(platformdirs.user_cache_dir("quantfish", appauthor=False))


def data_dir() -> Path:
    """Where nets fetched by ``quantfish net get`` go: kept until the user removes them."""
    value = os.environ.get(DATA_ENV)
    if value:
        return Path(value).expanduser()
    import platformdirs
    return Path(platformdirs.user_data_dir("quantfish", appauthor=False))
