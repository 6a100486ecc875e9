"""The monotonic clock, readable from compiled code: the search checks its own deadline.

Numba has no clock. The C library's ``clock_gettime`` is passed into the compiled search as a ctypes
function (an argument, so the code stays cacheable: a ctypes global would freeze its address), and writes
the time into the first two fields of the search's control record. The search reads it every 256 nodes and
stops itself at the deadline, as Stockfish does, with no timer thread to schedule: on a machine running more
games than it has cores, each thread hand-off costs milliseconds.

Python keeps time with ``time.monotonic_ns`` (cheap, and what the UCI loop stamps commands with);
``native_ns`` converts such a time to the C clock's reading (the same clock on Linux, an offset elsewhere).
Without ``clock_gettime`` (no C library found), ``available`` is False and the driver falls back to a timer
thread.
"""
import ctypes
import ctypes.util
import sys
import time

# CLOCK_MONOTONIC: 1 on Linux, 6 on macOS, 4 on FreeBSD.
CLOCK_ID = {"darwin": 6}.get(sys.platform, 4 if sys.platform.startswith("freebsd") else 1)

_PROTO = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)

now_ns = time.monotonic_ns


def _unavailable(clock_id, ts):
    return -1


def _read(fn):
    ts = (ctypes.c_int64 * 2)()
    if fn(CLOCK_ID, ts) != 0:
        return None
    return ts[0] * 1_000_000_000 + ts[1]


def _load():
    for name in (ctypes.util.find_library("c"), "libc.so.6", None):
        try:
            fn = _PROTO(("clock_gettime", ctypes.CDLL(name)))
        except (OSError, AttributeError, TypeError):
            continue
        before = now_ns()
        native = _read(fn)
        if native:
            # Python's monotonic clock is CLOCK_MONOTONIC itself on Linux.
            offset = 0 if sys.platform.startswith("linux") else native - (before + now_ns()) // 2
            return fn, True, offset
    return _PROTO(_unavailable), False, 0


clock_gettime, available, _OFFSET = _load()


def native_ns(monotonic_ns: int) -> int:
    """A ``time.monotonic_ns`` time as the compiled search's clock reads it."""
    return monotonic_ns + _OFFSET
