"""`make bench`'s position-by-position measure against Stockfish (``tools.bench_all.interleaved_nps``)."""
import pytest

from quantfish.search.bench import run_bench
from quantfish.search.bench_positions import BENCH_FENS
from quantfish.search.driver import Searcher
from tools.bench_all import Stockfish, interleaved_nps
from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.io import load_net
from quantfish.nnue.loader import resolve_main_path
from tools.nnue_bench import stockfish_for_comparison

FENS = BENCH_FENS[:3]
DEPTH = 5


@pytest.fixture(scope="module")
def stockfish():
    from tests.conftest import skip_without_sf_net
    skip_without_sf_net()           # Quantfish is measured against Stockfish with Stockfish's own net
    path, _ = stockfish_for_comparison()
    if path is None:
        pytest.skip("no Stockfish installed (apt-get install stockfish, or set STOCKFISH=...)")
    with Stockfish(path) as sf:
        yield sf


def test_interleaved_searches_what_quantfish_bench_searches(stockfish):
    """Each path searches each position as `quantfish bench` does (the same node count, position by position),
    and every round gives a ratio to Stockfish."""
    kernel = ckernel.load_kernel("numba")
    counts, ratios = interleaved_nps(stockfish, DEPTH, 2, kernels=[kernel], fens=FENS)
    per_position = []
    run_bench(Searcher(load_net(resolve_main_path()), 16, kernel=kernel), DEPTH,
              lambda line: per_position.append(int(line.split()[-2])) if line.startswith("Position:") else None,
              FENS)
    assert counts == {kernel.status: per_position}
    assert len(ratios[kernel.status]) == 2 and all(r > 0 for r in ratios[kernel.status])


def test_stockfish_search_reports_its_nodes(stockfish):
    """Stockfish's nodes and time are read from its last `info` line: a deeper search counts more nodes."""
    shallow, _ = stockfish.search(FENS[0], 4)
    deep, seconds = stockfish.search(FENS[0], 8)
    assert 0 < shallow < deep and seconds > 0
