"""One net's search-time arrays packed into a single byte buffer, for a second net in the search tuple.

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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nnue.ckernel import CNet, aligned_zeros

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


def pack(arrays, cnet, acc, psqt, cache, scratch) -> np.ndarray:
    """The uint8 buffer holding copies of ``arrays`` (``Net.arrays()``), ``cnet``, the stack's ``acc`` and
    ``psqt``, the refresh ``cache`` and ``scratch`` (their dtypes and ndims are checked)."""
    items = list(arrays) + list(cnet) + [acc, psqt] + list(cache) + list(scratch)
    if len(items) != N_ENTRIES:
        raise ValueError(f"netblob.pack: {len(items)} arrays, expected {N_ENTRIES}")
    offsets = []
    size = HEADER_BYTES
    for k, a in enumerate(items):
        if a.dtype != _DTYPES[k] or a.ndim != _NDIMS[k]:
            raise ValueError(f"netblob.pack: entry {k} is {a.dtype}[{a.ndim}d], expected "
                             f"{np.dtype(_DTYPES[k])}[{_NDIMS[k]}d]")
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
