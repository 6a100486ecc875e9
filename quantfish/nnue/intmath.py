"""C-style integer helpers: Stockfish divides with truncation toward zero, Python's ``//`` floors."""

import numpy as np

from quantfish.runtime.jit import njit


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


_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(cache=True, nogil=True)
def popcount64(x):
    """Set bits of a uint64 (SWAR; LLVM turns it into ``popcnt`` where available). Kept here rather than
    imported from ``quantfish.core.bitops`` so that this package's Numba cache depends on its own sources only."""
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))
