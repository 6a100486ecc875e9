"""Bit tricks on uint64 bitboards that Numba lacks as builtins.

Numba promotes uint64 mixed with int64 to float64, so every constant used against a
bitboard is a uint64 scalar from this module.
"""
import numpy as np
from numba import types
from numba.extending import intrinsic
from numba.cpython.unsafe.numbers import trailing_zeros

from quantfish.runtime.jit import njit

U0 = np.uint64(0)
U1 = np.uint64(1)
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@intrinsic
def _ctpop(typingctx, x):
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, [args[0]])

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def popcount(x):
    return np.int64(_ctpop(np.uint64(x)))


@njit(cache=True, nogil=True, inline="always")
def lsb(x):
    """Index of the lowest set bit (x must be nonzero)."""
    return np.int64(trailing_zeros(np.uint64(x)))


@njit(cache=True, nogil=True, inline="always")
def bit(sq):
    return U1 << np.uint64(sq)


@njit(cache=True, nogil=True, inline="always")
def pop_lsb(x):
    """The bitboard with its lowest set bit cleared."""
    return x & (x - U1)
