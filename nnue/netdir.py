"""One net's search-time arrays as a single array of the search tuple: a directory of their addresses.

Why: every array in the search tuple ``S`` is passed (some 8 words) on each call of the compiled functions
that take ``S`` (search and quiescence are called once per node), so each array in ``S`` slows every node:
measured, 30 more arrays cost 14% of the nodes per second. A net's arrays (``Net.arrays()``, the kernel
layout ``ckernel.CNet``, the accumulator stack's ``acc``/``psqt``, the refresh cache and the scratch) are
only needed when that net evaluates, so ``S`` holds one ``directory`` per net and the evaluation rebuilds the
views with ``unpack`` (no copy, no checks, no reference counting: ``nnue.rawview``).

Layout: int64[N_ENTRIES, ROW], one row ``(address, d0, d1, d2, d3)`` per array (unused dimensions are 1), in
the order above: the 11 arrays of ``Net.arrays()`` (``E_NET + netfile slot``), the 10 of ``ckernel.CNet``
(``E_CNET + field``), the stack's ``acc``/``psqt`` (its ``computed`` flags stay a separate array: the
make-move code clears them; ``dirty``/``ndirty`` are the main stack's), the refresh cache and the scratch.
The arrays must stay alive, unmoved and C-contiguous while the directory is used: ``engine.searcher`` keeps
references to them next to ``S``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nnue.ckernel import CNet
from nnue.rawview import array_view

MAX_DIMS = 4
ROW = 1 + MAX_DIMS
E_NET = 0            # 11 entries: Net.arrays()
E_CNET = 11          # 10 entries: CNet
E_ACC = 21           # stack acc int16[ply, 2, L1]
E_PSQT = 22          # stack psqt int32[ply, 2, nb]
E_CACHE = 23         # 3 entries: refresh cache (acc, psqt, boards)
E_SCRATCH = 26       # 3 entries: (x, nnz, work)
N_ENTRIES = 29

_DTYPES = ([np.int16, np.int16, np.int32, np.int32, np.int8, np.int8, np.int32, np.int8, np.int32, np.int8, np.int32]
           + [np.int16, np.int16, np.int32, np.int32, np.int8, np.int32, np.int8, np.int64, np.int8, np.int64]
           + [np.int16, np.int32] + [np.int16, np.int32, np.int8] + [np.uint8, np.int32, np.int32])
_NDIMS = [1, 2, 2, 2, 3, 3, 2, 3, 1, 2, 1] + [1, 2, 2, 2, 4, 2, 4, 1, 2, 1] + [3, 3] + [3, 3, 3] + [1, 1, 1]


def _entries(arrays, cnet, acc, psqt, cache, scratch):
    items = list(arrays) + list(cnet) + [acc, psqt] + list(cache) + list(scratch)
    if len(items) != N_ENTRIES:
        raise ValueError(f"netdir.directory: {len(items)} arrays, expected {N_ENTRIES}")
    for k, a in enumerate(items):
        if a.dtype != _DTYPES[k] or a.ndim != _NDIMS[k]:
            raise ValueError(f"netdir.directory: entry {k} is {a.dtype}[{a.ndim}d], expected "
                             f"{np.dtype(_DTYPES[k])}[{_NDIMS[k]}d]")
    return items


def directory(arrays, cnet, acc, psqt, cache, scratch) -> np.ndarray:
    """The directory of ``arrays`` (``Net.arrays()``), ``cnet``, the stack's ``acc`` and ``psqt``, the refresh
    ``cache`` and ``scratch`` (their dtypes, ndims and contiguity are checked). Keep them alive while it is
    used."""
    items = _entries(arrays, cnet, acc, psqt, cache, scratch)
    d = np.ones((N_ENTRIES, ROW), np.int64)
    for k, a in enumerate(items):
        if not a.flags.c_contiguous:
            raise ValueError(f"netdir.directory: entry {k} is not C-contiguous")
        d[k, 0] = a.ctypes.data
        d[k, 1:1 + a.ndim] = a.shape
    return d


@njit(cache=True, nogil=True)
def unpack(d):
    """(net arrays, cnet, acc, psqt, cache, scratch): views of the arrays listed in directory ``d``."""
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


def unused() -> np.ndarray:
    """A directory of the same Numba type for a net slot that is never evaluated (no small net)."""
    return np.zeros((N_ENTRIES, ROW), np.int64)
