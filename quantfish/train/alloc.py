"""Keep freed memory in the process: a training step allocates and frees tens of MB of tensors (the
accumulators, the feature transformer's gradient), and glibc returns blocks that large to the system at once,
so every step faulted its pages in again, one at a time (measured: a third of a step on 2 threads at L1 = 256,
where the faults of one thread stall the other). PyTorch's CPU tuning guide recommends jemalloc or tcmalloc for
the same reason; telling glibc's own allocator to serve large blocks from its heap and not to trim that heap
needs no extra library.
"""
from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_done = False


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep what it frees (once per process); False where the C library is not glibc."""
    global _done
    if _done:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    # No block by mmap (each would be unmapped when freed), and never trim the heap's top.
    _done = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2 ** 31 - 1))
    return _done
