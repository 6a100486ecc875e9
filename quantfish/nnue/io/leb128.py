"""Signed LEB128 blocks, the compressed FT storage of Stockfish 16+ nets (nnue-sf17.1.md section 1.1).

Compiled because a big net holds ~70 million values. 15.1 nets do not use this; it is here so that later
nets load through the same reader.
"""

import numpy as np

from quantfish.runtime.jit import njit


# Status codes of ``decode_checked``.
OK = 0
SHORT = 1          # the buffer ends inside a value
TOO_LONG = 2       # a value still has the continuation bit set after ceil(bits/7) bytes
OUT_OF_RANGE = 3   # a value does not fit the target width (Stockfish would silently wrap it)


@njit(cache=True, nogil=True)
def decode_checked(buf, count, bits, out):
    """Decode ``count`` signed LEB128 values of at most ``bits`` bits from uint8 ``buf`` into int64 ``out``.

    Returns ``(bytes consumed, status, index of the offending value)``; status is one of the codes above
    and decoding stops at the first problem.
    """
    pos = 0
    n = buf.shape[0]
    max_bytes = (bits + 6) // 7
    lo = -(np.int64(1) << (bits - 1))
    hi = (np.int64(1) << (bits - 1)) - 1
    for i in range(count):
        result = np.int64(0)
        shift = 0
        byte = np.int64(0x80)
        for _ in range(max_bytes):
            if pos >= n:
                return pos, SHORT, i
            byte = np.int64(buf[pos])
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if (byte & 0x80) == 0:
                break
        if (byte & 0x80) != 0:
            return pos, TOO_LONG, i
        if (byte & 0x40) != 0:
            result |= -(np.int64(1) << shift)
        if result < lo or result > hi:
            return pos, OUT_OF_RANGE, i
        out[i] = result
    return pos, OK, count


@njit(cache=True, nogil=True)
def decode(buf, count, bits, out):
    """Like ``decode_checked``; returns the number of bytes consumed, or -1 on any problem."""
    pos, status, _ = decode_checked(buf, count, bits, out)
    return pos if status == OK else -1


@njit(cache=True, nogil=True)
def encoded_size(values):
    """Bytes that ``encode`` will produce for the int64 ``values``."""
    total = 0
    for i in range(values.shape[0]):
        v = np.int64(values[i])
        while True:
            byte = v & 0x7F
            v >>= 7
            total += 1
            if ((byte & 0x40) == 0 and v == 0) or ((byte & 0x40) != 0 and v == -1):
                break
    return total


@njit(cache=True, nogil=True)
def encode(values, out):
    """Minimal signed LEB128 of the int64 ``values`` into uint8 ``out``; returns bytes written."""
    pos = 0
    for i in range(values.shape[0]):
        v = np.int64(values[i])
        while True:
            byte = v & 0x7F
            v >>= 7
            if ((byte & 0x40) == 0 and v == 0) or ((byte & 0x40) != 0 and v == -1):
                out[pos] = byte
                pos += 1
                break
            out[pos] = byte | 0x80
            pos += 1
    return pos
