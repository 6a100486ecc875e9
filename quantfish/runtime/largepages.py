"""Zeroed buffers backed by transparent huge pages, for the arrays the search reads at random.

Why: the feature transformer's weights (46 MB for Stockfish 15.1's net) and the transposition table are read
at random addresses, one row or bucket at a time; with 4 KB pages nearly every such read also misses the TLB
and walks the page tables. Stockfish allocates both with large pages for this reason. On Linux with
transparent huge pages in ``madvise`` mode (the common default), anonymous memory asked for with
``MADV_HUGEPAGE`` and aligned to 2 MB is mapped with 2 MB pages. Elsewhere (or when the advice is refused)
the buffer is ordinary zeroed memory and nothing else changes.
"""
from __future__ import annotations

import mmap

import numpy as np

HUGE_PAGE = 2 << 20
# Below this a buffer is not worth a mapping of its own (and its rounding up to 2 MB).
MIN_BYTES = HUGE_PAGE


def zeros(nbytes: int, align: int) -> np.ndarray:
    """uint8[nbytes] of zeros starting on an ``align``-byte boundary (and on a 2 MB one when huge pages are
    used, for buffers of at least ``MIN_BYTES``)."""
    if nbytes < MIN_BYTES or not hasattr(mmap, "MAP_ANONYMOUS"):
        return _heap_zeros(nbytes, align)
    try:
        region = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, ValueError):
        return _heap_zeros(nbytes, align)
    advise = getattr(region, "madvise", None)
    if advise is not None and hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            advise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass   # no transparent huge pages here: small pages, as any other buffer
    buf = np.frombuffer(region, np.uint8)     # keeps the mapping alive as long as the array
    off = (-buf.ctypes.data) % max(HUGE_PAGE, align)
    return buf[off:off + nbytes]


def aligned_zeros(shape, dtype, align: int) -> np.ndarray:
    """C-contiguous zeroed array of ``shape`` and ``dtype`` whose data starts on an ``align``-byte boundary
    (``zeros`` viewed as that array)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return zeros(nbytes, align).view(dtype).reshape(shape)


def _heap_zeros(nbytes: int, align: int) -> np.ndarray:
    buf = np.zeros(nbytes + align, np.uint8)
    off = (-buf.ctypes.data) % align
    return buf[off:off + nbytes]
