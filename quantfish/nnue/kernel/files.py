"""Where the C kernel's sources and its built library live, and the hash that ties one to the other.

The sources (``qfkernel.c``, ``qfkernel.h``) ship inside the package; the architecture header ``qfarch.h`` is
generated from ``quantfish.nnue.architecture`` at build time. The library is built into the user cache
folder under the hash of all three (``library_path``), so a changed source or architecture never loads an old
library, and the package folder is never written. Shared by the loader (at run time) and the build, so the
two agree on names and hashes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from quantfish.nnue.architecture import C_HEADER_NAME, c_header
from quantfish.runtime.paths import cache_dir

KERNEL_DIR = Path(__file__).resolve().parent
SOURCE = KERNEL_DIR / "qfkernel.c"


def source_bytes() -> bytes:
    """The kernel's sources, named and concatenated in a fixed order, with the generated header's text."""
    files = sorted(f for f in KERNEL_DIR.glob("*.[ch]") if f.name != C_HEADER_NAME)
    return (b"".join(f.name.encode() + b"\0" + f.read_bytes() for f in files)
            + C_HEADER_NAME.encode() + b"\0" + c_header().encode())


def source_id() -> str:
    """Hash of the kernel sources only (the loader compares it with the library's build id prefix)."""
    return hashlib.sha256(source_bytes()).hexdigest()[:12]


def library_path() -> Path:
    """Where the library of these sources is (or will be) built: the user cache folder."""
    return cache_dir() / "kernel" / f"libqfkernel-{source_id()}.so"
