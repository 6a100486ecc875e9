"""Drop stale Numba cache files when the sources they were compiled from change.

Numba keys a cached function on its own source file only. When a function in ``inference.py`` changes,
the cached machine code of callers in other files (which inlined the old version) is still loaded, so a
fix can silently not take effect. At import, this compares a hash of the package's ``.py`` files (plus any
``depends_on`` packages) with a stamp in ``__pycache__`` and deletes the package's ``.nbi``/``.nbc`` files
when it differs. Cost: reading ~100 kB of source, well under a millisecond.

Only the package's top-level ``*.py`` are hashed: a ``tools`` subpackage is outside the hash (editing a
benchmark keeps the engine's compiled code) and runs its own check from its ``__init__``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

STAMP = "numba_sources.sha256"


def sources_digest(dirs) -> str:
    # os.listdir rather than Path.glob: glob imports fnmatch and re, several milliseconds of every start-up.
    h = hashlib.sha256()
    for d in dirs:
        for name in sorted(n for n in os.listdir(d) if n.endswith(".py")):
            h.update(name.encode())
            with open(os.path.join(d, name), "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def invalidate_if_changed(package_dir, depends_on=()) -> bool:
    """Delete ``package_dir/__pycache__/*.nb[ic]`` if the sources changed since the last import; True if so."""
    package_dir = Path(package_dir)
    cache = package_dir / "__pycache__"
    digest = sources_digest([package_dir, *depends_on])
    stamp = cache / STAMP
    try:
        if stamp.read_text().strip() == digest:
            return False
    except OSError:
        pass
    try:
        cache.mkdir(exist_ok=True)
        for name in os.listdir(cache):
            if name.endswith((".nbi", ".nbc")):
                (cache / name).unlink(missing_ok=True)
        stamp.write_text(digest + "\n")
    except OSError:
        return False   # read-only install: nothing we can do, Numba will recompile in memory if needed
    return True
