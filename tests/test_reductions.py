"""Late-move reductions' base as Stockfish 15.1's search.cpp defines it, values worked out by hand:
Reductions[i] = int(20.26 ln i), r = Reductions[d] * Reductions[mn],
reduction = (r + 1642 - delta * 1024 / rootDelta) / 1024 + (!improving && r > 916)."""
import pytest

from quantfish.search.state import reduction_factors
from quantfish.search.tree import _base_reduction, _lmr_depth

FACTORS = reduction_factors()


def test_factors():
    # 20.26 ln 2 = 14.04, ln 3 22.26, ln 4 28.09, ln 5 32.61, ln 10 46.65; 1 has none.
    assert [int(FACTORS[i]) for i in (1, 2, 3, 4, 5, 10)] == [0, 14, 22, 28, 32, 46]


@pytest.mark.parametrize("depth, moves, improving, delta, root_delta, r", [
    (2, 2, True, 1, 20, 1),        # (196 + 1642 - 51) / 1024
    (3, 4, False, 1, 20, 2),       # 616 <= 916: no ply for not improving
    (5, 5, True, 1, 20, 2),        # (1024 + 1642 - 51) / 1024
    (5, 5, False, 1, 20, 3),       # ... and 1024 > 916
    (10, 10, True, 20, 20, 2),     # a PV node with the root's window: (2116 + 1642 - 1024) / 1024
    (10, 10, True, 1, 20, 3),      # the same move in a null window
    (1, 30, False, 1, 20, 1),      # depth 1 has no factor: (0 + 1642 - 51) / 1024
])
def test_base_reduction(depth, moves, improving, delta, root_delta, r):
    assert _base_reduction(FACTORS, depth, moves, improving, delta, root_delta) == r


def test_depth_and_move_number_capped():
    assert _base_reduction(FACTORS, 400, 300, False, 1, 20) == _base_reduction(FACTORS, 255, 255, False, 1, 20)


def test_lmr_depth_never_negative():
    assert _lmr_depth(FACTORS, 3, 40, False, 1, 20) == 0
    assert _lmr_depth(FACTORS, 10, 10, True, 1, 20) == 10 - 1 - 3
