"""Buffers for the FT weights and the hash table: zeroed, aligned, writable, on huge pages where Linux gives them."""
import mmap
import re
import sys

import numpy as np
import pytest

from quantfish.nnue.kernel import loader as ckernel

from quantfish.runtime import largepages


@pytest.mark.parametrize("nbytes", [64, 4096, largepages.MIN_BYTES - 1, largepages.MIN_BYTES, 5 * largepages.MIN_BYTES + 12])
def test_zeros_is_zeroed_aligned_and_writable(nbytes):
    buf = largepages.zeros(nbytes, 64)
    assert buf.dtype == np.uint8 and buf.shape == (nbytes,)
    assert buf.ctypes.data % 64 == 0
    assert not buf.any()
    buf[:] = 7
    assert int(buf.sum()) == 7 * nbytes


def test_large_buffers_start_on_a_huge_page_boundary():
    buf = largepages.zeros(largepages.MIN_BYTES, 64)
    owner = buf.base.base
    if not isinstance(owner, memoryview) or not isinstance(owner.obj, mmap.mmap):
        pytest.skip("no anonymous mmap here: the heap fallback was used")
    assert buf.ctypes.data % largepages.HUGE_PAGE == 0


def test_aligned_zeros_keeps_shape_and_dtype_of_a_large_table():
    tt = ckernel.aligned_zeros((1 << 19, 4), np.int64)   # 16 MB, as the search's default hash table
    assert tt.shape == (1 << 19, 4) and tt.dtype == np.int64 and tt.flags.c_contiguous
    assert tt.ctypes.data % ckernel.ALIGN == 0 and not tt.any()


def _anon_huge_kb():
    with open("/proc/self/smaps") as fh:
        return sum(int(k) for k in re.findall(r"AnonHugePages:\s+(\d+) kB", fh.read()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="transparent huge pages are a Linux feature")
def test_huge_pages_are_used_when_the_system_offers_them():
    try:
        mode = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        pytest.skip("this kernel has no transparent huge pages")
    if "[never]" in mode:
        pytest.skip(f"transparent huge pages are off here ({mode.strip()})")
    before = _anon_huge_kb()
    buf = largepages.zeros(16 * largepages.HUGE_PAGE, 64)
    buf[::4096] = 1                       # touch every 4 KB page
    # The kernel may be short of free 2 MB blocks, so ask for some, not all, of the 32 MB.
    assert _anon_huge_kb() - before >= 4 * 1024


def test_the_search_tables_read_at_random_start_on_huge_pages(nnue_net):
    """The evaluation cache and the continuation histories are read at random addresses every node (the cache
    entry prefetched at each move): on 4 KB pages nearly each read also missed the TLB."""
    from quantfish.search.driver import Searcher
    if not isinstance(largepages.zeros(largepages.MIN_BYTES, 64).base.base, memoryview):
        pytest.skip("no anonymous mmap here: the heap fallback was used")
    S = Searcher(nnue_net, 16).S
    for name in ("eval_cache", "cont_history", "tt"):
        table = getattr(S, name)
        assert table.nbytes >= largepages.MIN_BYTES, name
        assert table.ctypes.data % largepages.HUGE_PAGE == 0, f"{name} is not on a huge-page boundary"
