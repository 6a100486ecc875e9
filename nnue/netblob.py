"""One net's search-time arrays as a single array of the search tuple: packed into a byte buffer, or listed
by address in a directory.

Why: every array in the search tuple ``S`` is passed (some 8 words) on each call of the compiled functions
that take ``S`` (search and quiescence are called once per node), so each array added to ``S`` slows every
node, whatever net is loaded. When the search still counted references, adding Stockfish 17.1's small net as
some 30 separate arrays cost the 15.1 search about a quarter of its speed. Packed, the small net is one array
in ``S``; ``unpack`` rebuilds the views (no copy) when the small net is evaluated.

Layout: a header of ``N_ENTRIES`` rows of int64 ``(byte offset, d0, d1, d2, d3)`` (unused dimensions are 1),
then each array at a 64-byte aligned offset (the buffer itself is 64-byte aligned, as the C kernel wants).
Entries: the 11 arrays of ``Net.arrays()`` (``E_NET + netfile slot``), the 10 of ``ckernel.CNet``
(``E_CNET + field``), the stack's ``acc``/``psqt`` (its ``computed`` flags stay a separate array: the
make-move code clears them; ``dirty``/``ndirty`` are the main stack's), the refresh cache and the scratch.

A ``directory`` lists the same entries by address instead of copying them (``unpack_directory`` reads it),
for the main net, whose arrays the search already owns; it costs nothing to build and reads back faster.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nnue.ckernel import CNet, aligned_zeros
from nnue.rawview import array_view

ALIGN = 64
MAX_DIMS = 4
ROW = 1 + MAX_DIMS
E_NET = 0            # 11 entries: Net.arrays()
E_CNET = 11          # 10 entries: CNet
E_ACC = 21           # stack acc int16[ply, 2, L1]
E_PSQT = 22          # stack psqt int32[ply, 2, nb]
E_CACHE = 23         # 3 entries: refresh cache (acc, psqt, boards)
E_SCRATCH = 26       # 3 entries: (x, nnz, work)
N_ENTRIES = 29
HEADER_BYTES = -(-N_ENTRIES * ROW * 8 // ALIGN) * ALIGN

_DTYPES = ([np.int16, np.int16, np.int32, np.int32, np.int8, np.int8, np.int32, np.int8, np.int32, np.int8, np.int32]
           + [np.int16, np.int16, np.int32, np.int32, np.int8, np.int32, np.int8, np.int64, np.int8, np.int64]
           + [np.int16, np.int32] + [np.int16, np.int32, np.int8] + [np.uint8, np.int32, np.int32])
_NDIMS = [1, 2, 2, 2, 3, 3, 2, 3, 1, 2, 1] + [1, 2, 2, 2, 4, 2, 4, 1, 2, 1] + [3, 3] + [3, 3, 3] + [1, 1, 1]


def _entries(arrays, cnet, acc, psqt, cache, scratch, what):
    items = list(arrays) + list(cnet) + [acc, psqt] + list(cache) + list(scratch)
    if len(items) != N_ENTRIES:
        raise ValueError(f"netblob.{what}: {len(items)} arrays, expected {N_ENTRIES}")
    for k, a in enumerate(items):
        if a.dtype != _DTYPES[k] or a.ndim != _NDIMS[k]:
            raise ValueError(f"netblob.{what}: entry {k} is {a.dtype}[{a.ndim}d], expected "
                             f"{np.dtype(_DTYPES[k])}[{_NDIMS[k]}d]")
    return items


def pack(arrays, cnet, acc, psqt, cache, scratch) -> np.ndarray:
    """The uint8 buffer holding copies of ``arrays`` (``Net.arrays()``), ``cnet``, the stack's ``acc`` and
    ``psqt``, the refresh ``cache`` and ``scratch`` (their dtypes and ndims are checked)."""
    items = _entries(arrays, cnet, acc, psqt, cache, scratch, "pack")
    offsets = []
    size = HEADER_BYTES
    for k, a in enumerate(items):
        offsets.append(size)
        size += -(-a.nbytes // ALIGN) * ALIGN
    blob = aligned_zeros(size, np.uint8)
    header = blob[:HEADER_BYTES].view(np.int64)
    for k, a in enumerate(items):
        row = header[k * ROW:(k + 1) * ROW]
        row[0] = offsets[k]
        row[1:] = 1
        row[1:1 + a.ndim] = a.shape
        blob[offsets[k]:offsets[k] + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    return blob


def directory(arrays, cnet, acc, psqt, cache, scratch) -> np.ndarray:
    """The same entries without copying: int64[N_ENTRIES, ROW] rows ``(address, d0, d1, d2, d3)``, read back
    by ``unpack_directory``. The arrays must stay alive (and unmoved) as long as the directory is used: the
    caller keeps references to them."""
    items = _entries(arrays, cnet, acc, psqt, cache, scratch, "directory")
    d = np.ones((N_ENTRIES, ROW), np.int64)
    for k, a in enumerate(items):
        if not a.flags.c_contiguous:
            raise ValueError(f"netblob.directory: entry {k} is not C-contiguous")
        d[k, 0] = a.ctypes.data
        d[k, 1:1 + a.ndim] = a.shape
    return d


def dummy() -> np.ndarray:
    """A minimal buffer of the same Numba type (a uint8 array) for when there is no second net."""
    return aligned_zeros(HEADER_BYTES, np.uint8)


@njit(cache=True, nogil=True, inline="always")
def _bytes(blob, h, k, itemsize):
    o = h[k * ROW]
    n = h[k * ROW + 1] * h[k * ROW + 2] * h[k * ROW + 3] * h[k * ROW + 4]
    return blob[o:o + n * itemsize]


@njit(cache=True, nogil=True, inline="always")
def _d(h, k, i):
    return h[k * ROW + 1 + i]


@njit(cache=True, nogil=True)
def unpack(blob):
    """(net arrays, cnet, acc, psqt, cache, scratch): views into ``blob`` of the types of the originals."""
    h = blob[:HEADER_BYTES].view(np.int64)
    k = E_NET
    net = (_bytes(blob, h, k, 2).view(np.int16),
           _bytes(blob, h, k + 1, 2).view(np.int16).reshape((_d(h, k + 1, 0), _d(h, k + 1, 1))),
           _bytes(blob, h, k + 2, 4).view(np.int32).reshape((_d(h, k + 2, 0), _d(h, k + 2, 1))),
           _bytes(blob, h, k + 3, 4).view(np.int32).reshape((_d(h, k + 3, 0), _d(h, k + 3, 1))),
           _bytes(blob, h, k + 4, 1).view(np.int8).reshape((_d(h, k + 4, 0), _d(h, k + 4, 1), _d(h, k + 4, 2))),
           _bytes(blob, h, k + 5, 1).view(np.int8).reshape((_d(h, k + 5, 0), _d(h, k + 5, 1), _d(h, k + 5, 2))),
           _bytes(blob, h, k + 6, 4).view(np.int32).reshape((_d(h, k + 6, 0), _d(h, k + 6, 1))),
           _bytes(blob, h, k + 7, 1).view(np.int8).reshape((_d(h, k + 7, 0), _d(h, k + 7, 1), _d(h, k + 7, 2))),
           _bytes(blob, h, k + 8, 4).view(np.int32),
           _bytes(blob, h, k + 9, 1).view(np.int8).reshape((_d(h, k + 9, 0), _d(h, k + 9, 1))),
           _bytes(blob, h, k + 10, 4).view(np.int32))
    k = E_CNET
    cnet = CNet(_bytes(blob, h, k, 2).view(np.int16),
                _bytes(blob, h, k + 1, 2).view(np.int16).reshape((_d(h, k + 1, 0), _d(h, k + 1, 1))),
                _bytes(blob, h, k + 2, 4).view(np.int32).reshape((_d(h, k + 2, 0), _d(h, k + 2, 1))),
                _bytes(blob, h, k + 3, 4).view(np.int32).reshape((_d(h, k + 3, 0), _d(h, k + 3, 1))),
                _bytes(blob, h, k + 4, 1).view(np.int8).reshape((_d(h, k + 4, 0), _d(h, k + 4, 1),
                                                                 _d(h, k + 4, 2), _d(h, k + 4, 3))),
                _bytes(blob, h, k + 5, 4).view(np.int32).reshape((_d(h, k + 5, 0), _d(h, k + 5, 1))),
                _bytes(blob, h, k + 6, 1).view(np.int8).reshape((_d(h, k + 6, 0), _d(h, k + 6, 1),
                                                                 _d(h, k + 6, 2), _d(h, k + 6, 3))),
                _bytes(blob, h, k + 7, 8).view(np.int64),
                _bytes(blob, h, k + 8, 1).view(np.int8).reshape((_d(h, k + 8, 0), _d(h, k + 8, 1))),
                _bytes(blob, h, k + 9, 8).view(np.int64))
    k = E_ACC
    acc = _bytes(blob, h, k, 2).view(np.int16).reshape((_d(h, k, 0), _d(h, k, 1), _d(h, k, 2)))
    k = E_PSQT
    psqt = _bytes(blob, h, k, 4).view(np.int32).reshape((_d(h, k, 0), _d(h, k, 1), _d(h, k, 2)))
    k = E_CACHE
    cache = (_bytes(blob, h, k, 2).view(np.int16).reshape((_d(h, k, 0), _d(h, k, 1), _d(h, k, 2))),
             _bytes(blob, h, k + 1, 4).view(np.int32).reshape((_d(h, k + 1, 0), _d(h, k + 1, 1), _d(h, k + 1, 2))),
             _bytes(blob, h, k + 2, 1).view(np.int8).reshape((_d(h, k + 2, 0), _d(h, k + 2, 1), _d(h, k + 2, 2))))
    k = E_SCRATCH
    scratch = (_bytes(blob, h, k, 1).view(np.uint8), _bytes(blob, h, k + 1, 4).view(np.int32),
               _bytes(blob, h, k + 2, 4).view(np.int32))
    return net, cnet, acc, psqt, cache, scratch


@njit(cache=True, nogil=True)
def unpack_directory(d):
    """``unpack`` for a ``directory``: the same tuple of views, rebuilt from addresses (no checks, no owner)."""
    k = E_NET
    net = (array_view(d, k, np.int16, 1), array_view(d, k + 1, np.int16, 2), array_view(d, k + 2, np.int32, 2),
           array_view(d, k + 3, np.int32, 2), array_view(d, k + 4, np.int8, 3), array_view(d, k + 5, np.int8, 3),
           array_view(d, k + 6, np.int32, 2), array_view(d, k + 7, np.int8, 3), array_view(d, k + 8, np.int32, 1),
           array_view(d, k + 9, np.int8, 2), array_view(d, k + 10, np.int32, 1))
    k = E_CNET
    cnet = CNet(array_view(d, k, np.int16, 1), array_view(d, k + 1, np.int16, 2), array_view(d, k + 2, np.int32, 2),
                array_view(d, k + 3, np.int32, 2), array_view(d, k + 4, np.int8, 4),
                array_view(d, k + 5, np.int32, 2), array_view(d, k + 6, np.int8, 4), array_view(d, k + 7, np.int64, 1),
                array_view(d, k + 8, np.int8, 2), array_view(d, k + 9, np.int64, 1))
    acc = array_view(d, E_ACC, np.int16, 3)
    psqt = array_view(d, E_PSQT, np.int32, 3)
    k = E_CACHE
    cache = (array_view(d, k, np.int16, 3), array_view(d, k + 1, np.int32, 3), array_view(d, k + 2, np.int8, 3))
    k = E_SCRATCH
    scratch = (array_view(d, k, np.uint8, 1), array_view(d, k + 1, np.int32, 1), array_view(d, k + 2, np.int32, 1))
    return net, cnet, acc, psqt, cache, scratch
