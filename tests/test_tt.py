"""The transposition table's entry: every field survives a store and a probe, the PV flag included."""
import numpy as np

from quantfish.search.tt import BOUND_EXACT, BOUND_LOWER, BOUND_UPPER, TT_BUCKET, TT_DEPTH_MAX, TT_PV, tt_probe, tt_store
from quantfish.search.state import TTE_SIZE


def _round_trip(move, score, ev, depth, bound):
    tt = np.zeros(64 * TT_BUCKET, np.int64)
    key = np.int64(0x5DEECE66D12345)
    tt_store(tt, key, move, score, ev, depth, bound, 7)
    out = np.zeros(TTE_SIZE, np.int64)
    assert tt_probe(tt, key, out)
    return tuple(int(v) for v in out)


def test_fields_and_the_pv_flag_round_trip():
    for bound in (BOUND_UPPER, BOUND_LOWER, BOUND_EXACT):
        for pv in (0, 1):
            for move, score, ev, depth in ((0x1FFFF, 32000, -32000, -1), (1234, -5, 17, 0), (77, 1, 2, 100)):
                got = _round_trip(move, score, ev, depth, bound | (TT_PV if pv else 0))
                assert got == (move, score, ev, depth, bound, pv)


def test_a_depth_beyond_the_field_is_capped_not_wrapped():
    assert _round_trip(5, 10, 20, TT_DEPTH_MAX + 9, BOUND_EXACT)[3] == TT_DEPTH_MAX
