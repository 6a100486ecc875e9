"""One net's search-time arrays as a single array of the search tuple: a directory of their addresses.

Why: every array in the search tuple ``S`` is passed (some 8 words) on each call of the compiled functions
that take ``S`` (search and quiescence are called once per node), so each array in ``S`` slows every node:
measured, 30 more arrays cost 14% of the nodes per second. A net's arrays (``Net.arrays()``, the kernel
layout ``ckernel.CNet``, the accumulator stack's ``acc``/``psqt``, the refresh cache and the scratch) are
only needed when that net evaluates, so ``S`` holds one ``directory`` per net and the evaluation rebuilds the
views with ``unpack`` (no copy, no checks, no reference counting: ``quantfish.runtime.rawview``).

Layout: int64[N_ENTRIES, ROW], one row ``(address, d0, d1, d2, d3)`` per array (unused dimensions are 1), in
the order above: the fields of ``netfile.NetArrays`` (from ``E_NET``), those of ``ckernel.CNet`` (from
``E_CNET``), the stack's ``acc``/``psqt`` (its ``computed`` flags stay a separate array: the make-move code
clears them; ``dirty``/``ndirty`` are the main stack's), the refresh cache and the scratch. Every entry's dtype
and ndim comes from ``SPEC``, which is made of ``netfile.NET_ARRAYS_SPEC`` and ``ckernel.CNET_SPEC`` and the
specs below; ``directory`` checks against it and ``unpack`` is typed by it. The arrays must stay alive,
unmoved and C-contiguous while the directory is used: ``quantfish.search.driver`` keeps references to them next to
``S``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.nnue.kernel.loader import CNET_SPEC
from quantfish.runtime.jit import njit
from quantfish.nnue.net import NET_ARRAYS_SPEC
from quantfish.runtime.rawview import ArraySpec, views

MAX_DIMS = 4
ROW = 1 + MAX_DIMS

STACK_SPEC = (ArraySpec(np.int16, 3), ArraySpec(np.int32, 3))       # acc[ply, 2, L1], psqt[ply, 2, nb]
CACHE_SPEC = (ArraySpec(np.int16, 3), ArraySpec(np.int32, 3), ArraySpec(np.int8, 3))   # refresh cache
SCRATCH_SPEC = (ArraySpec(np.uint8, 1), ArraySpec(np.int32, 1), ArraySpec(np.int32, 1))  # (x, nnz, work)

E_NET = 0
E_CNET = E_NET + len(NET_ARRAYS_SPEC)
E_ACC = E_CNET + len(CNET_SPEC)
E_PSQT = E_ACC + 1
E_CACHE = E_ACC + len(STACK_SPEC)
E_SCRATCH = E_CACHE + len(CACHE_SPEC)
SPEC = tuple(NET_ARRAYS_SPEC) + tuple(CNET_SPEC) + STACK_SPEC + CACHE_SPEC + SCRATCH_SPEC
N_ENTRIES = len(SPEC)
assert max(s.ndim for s in SPEC) <= MAX_DIMS, "netdir: an array has more dimensions than a row holds"

_net_views = views(NET_ARRAYS_SPEC)
_cnet_views = views(CNET_SPEC)
_stack_views = views(STACK_SPEC)
_cache_views = views(CACHE_SPEC)
_scratch_views = views(SCRATCH_SPEC)


def _entries(arrays, cnet, acc, psqt, cache, scratch):
    items = list(arrays) + list(cnet) + [acc, psqt] + list(cache) + list(scratch)
    if len(items) != N_ENTRIES:
        raise ValueError(f"netdir.directory: {len(items)} arrays, expected {N_ENTRIES}")
    for k, a in enumerate(items):
        if not SPEC[k].matches(a):
            raise ValueError(f"netdir.directory: entry {k} is {a.dtype}[{a.ndim}d], expected {SPEC[k].describe()}")
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


class NetViews(NamedTuple):
    """One net's arrays as ``unpack`` gives them back (owner-less views)."""
    net: tuple          # quantfish.nnue.net.NetArrays
    cnet: tuple         # quantfish.nnue.kernel.loader.CNet
    acc: object         # the stack's accumulators, int16[ply, 2, L1]
    psqt: object        # ... and PSQT sums, int32[ply, 2, buckets]
    cache: tuple        # the refresh cache
    scratch: tuple      # (x, nnz, work)


@njit(cache=True, nogil=True, inline="always")
def unpack(d):
    """``NetViews`` of the arrays listed in directory ``d``."""
    acc, psqt = _stack_views(d, E_ACC)
    return NetViews(_net_views(d, E_NET), _cnet_views(d, E_CNET), acc, psqt, _cache_views(d, E_CACHE),
                    _scratch_views(d, E_SCRATCH))


def unused() -> np.ndarray:
    """A directory of the same Numba type for a net slot that is never evaluated (no small net)."""
    return np.zeros((N_ENTRIES, ROW), np.int64)
