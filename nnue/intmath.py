"""C-style integer helpers: Stockfish divides with truncation toward zero, Python's ``//`` floors."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def tdiv(a, b):
    """C++ ``a / b`` on integers (truncates toward zero)."""
    a = np.int64(a)
    b = np.int64(b)
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


@njit(cache=True, nogil=True)
def wrap32(v):
    """Reduce an int64 to the int32 a C++ ``int`` computation would hold."""
    v = np.int64(v) & np.int64(0xFFFFFFFF)
    return v - np.int64(0x100000000) if v >= np.int64(0x80000000) else v


@njit(cache=True, nogil=True)
def clamp(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)
