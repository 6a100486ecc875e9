"""Signed LEB128 blocks, the compressed FT storage of Stockfish 16+ nets (nnue-sf17.1.md section 1.1).

Compiled because a big net holds ~70 million values. 15.1 nets do not use this; it is here so that later
nets load through the same reader.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def decode(buf, count, bits, out):
    """Decode ``count`` signed LEB128 values of at most ``bits`` bits from uint8 ``buf`` into int64 ``out``.

    Returns the number of bytes consumed, or -1 if ``buf`` ends early.
    """
    pos = 0
    n = buf.shape[0]
    max_bytes = (bits + 6) // 7
    for i in range(count):
        result = np.int64(0)
        shift = 0
        byte = 0
        for _ in range(max_bytes):
            if pos >= n:
                return -1
            byte = np.int64(buf[pos])
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if (byte & 0x80) == 0:
                break
        if shift < bits and (byte & 0x40) != 0:
            result |= -(np.int64(1) << shift)
        # Store into the target width, wrapping like a C++ integer conversion.
        mask = (np.int64(1) << bits) - 1
        result &= mask
        if result >= (np.int64(1) << (bits - 1)):
            result -= np.int64(1) << bits
        out[i] = result
    return pos


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
