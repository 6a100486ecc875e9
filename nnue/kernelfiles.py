"""Where the C kernel's source and library live, and the hash of the source.

Shared by the loader (``nnue.ckernel``, at run time) and the build tool (``nnue.tools.build_kernel``), so
the engine never imports a tool to find its library or to tell a stale one from a current one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent / "kernel"
SOURCE = KERNEL_DIR / "qfkernel.c"
LIBRARY = KERNEL_DIR / "libqfkernel.so"


def source_bytes() -> bytes:
    """Every ``.c``/``.h`` file of the kernel directory, named and concatenated in a fixed order."""
    return b"".join(f.name.encode() + b"\0" + f.read_bytes() for f in sorted(KERNEL_DIR.glob("*.[ch]")))


def source_id() -> str:
    """Hash of the kernel sources only (the loader compares it with the library's build id prefix)."""
    return hashlib.sha256(source_bytes()).hexdigest()[:12]
