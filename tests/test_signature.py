"""The bench signature, as Stockfish's signature.sh: `quantfish bench` searches exactly the pinned tree.

``quantfish.search.bench.run_bench`` is what `quantfish bench` and the UCI ``bench`` command run; here it runs with that
command's defaults (depth 13, 16 MB hash, the default net) on each evaluation path. Both paths give the same
integers, so they must search the same nodes.
"""
import pytest

from quantfish.search.bench import DEFAULT_DEPTH, run_bench
from quantfish.search.driver import Searcher
from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.locate import DEFAULT_NET_SHA256, sha256_of

# Total nodes of `quantfish bench` (depth 13, 16 MB hash, nn-ad9b42354671.nnue). A change that alters the search
# tree (pruning, reductions, move ordering, evaluation, hashing) changes it: update this number in the same
# commit, and report there the match result that shows the change is an improvement.
BENCH_SIGNATURE = 4337757
BENCH_HASH_MB = 16       # `quantfish bench --hash` default

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default_net(sf_net):
    if sha256_of(sf_net.path) != DEFAULT_NET_SHA256:
        pytest.fail(f"the signature is pinned for the default net, not {sf_net.path} ($QUANTFISH_NET)")
    return sf_net


def _bench_nodes(net, mode):
    searcher = Searcher(net, BENCH_HASH_MB, mode)
    nodes, _ = run_bench(searcher, DEFAULT_DEPTH, send=lambda line: None)
    return searcher.kernel, nodes


def test_signature_numba_path(default_net):
    kernel, nodes = _bench_nodes(default_net, "numba")
    assert kernel.status == "numba"
    assert nodes == BENCH_SIGNATURE, f"bench signature {nodes}, pinned {BENCH_SIGNATURE}"


def test_signature_c_kernel(default_net):
    try:
        ckernel.load_kernel("c", require=True)
    except ckernel.KernelUnavailable as exc:
        pytest.skip(f"C kernel unavailable: {exc}")
    kernel, nodes = _bench_nodes(default_net, "c")
    assert kernel.is_c, kernel.reason
    assert nodes == BENCH_SIGNATURE, f"bench signature {nodes}, pinned {BENCH_SIGNATURE} ({kernel.status})"
