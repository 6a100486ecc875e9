"""One net loader (``quantfish.nnue.loader.load_nets``) behind UCI, ``quantfish eval`` and ``quantfish bench``: they
resolve names the same way and take the same pair decision, here on a Stockfish 16-style net (LEB128 feature
transformer, L1 = 256), which evaluates alone everywhere."""

import numpy as np
import pytest
from click.testing import CliRunner

from quantfish.nnue.architecture import GEN_SF15_1, GEN_SF16, Architecture
from quantfish.nnue.net import Net
from quantfish.nnue.io.stockfish import net_bytes, write_net
from quantfish.nnue.loader import NetPair, NetPairError, load_nets
from tests.test_uci import Uci

FEN = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"


def _random_net(arch, seed):
    rng = np.random.default_rng(seed)
    ns = arch.layer_stacks
    net = Net(arch, b"synthetic Stockfish 16-style test net",
              rng.integers(-40, 40, arch.l1, dtype=np.int16),
              rng.integers(-8, 8, (arch.num_features, arch.l1), dtype=np.int16),
              rng.integers(-500, 500, (arch.num_features, arch.psqt_buckets), dtype=np.int32),
              rng.integers(-1000, 1000, (ns, arch.fc0_out), dtype=np.int32),
              rng.integers(-20, 20, (ns, arch.fc0_out, arch.fc0_in_padded), dtype=np.int8),
              rng.integers(-1000, 1000, (ns, arch.fc1_out), dtype=np.int32),
              rng.integers(-20, 20, (ns, arch.fc1_out, arch.fc1_in_padded), dtype=np.int8),
              rng.integers(-1000, 1000, ns, dtype=np.int32),
              rng.integers(-20, 20, (ns, arch.fc2_in_padded), dtype=np.int8))
    return net


@pytest.fixture(scope="module")
def sf16_net(tmp_path_factory):
    """A small random net in Stockfish 16's format (weights small enough that nothing saturates)."""
    arch = Architecture(l1=256, compressed_ft=True)
    assert arch.generation == GEN_SF16
    path = tmp_path_factory.mktemp("sf16") / "sf16.nnue"
    write_net(_random_net(arch, 16), path)
    return path


def test_a_raw_net_of_another_width_keeps_15_1_arithmetic(tmp_path):
    """Quantfish's own nets: Stockfish 15.1's raw layout at L1 = 256 (or 128) reads back as itself, evaluated with
    15.1's arithmetic and alone (an L1 = 128 net is not taken for half of a 17.1 pair)."""
    for l1 in (256, 128):
        net = _random_net(Architecture(l1=l1, compressed_ft=False), l1)
        path = tmp_path / f"raw{l1}.nnue"
        write_net(net, path)
        back = load_nets(path)
        assert not isinstance(back, NetPair) and back.arch == net.arch and back.arch.generation == GEN_SF15_1
        assert np.array_equal(back.ft_weights, net.ft_weights) and path.read_bytes() == net_bytes(back)


def test_a_16_net_loads_alone(sf16_net):
    net = load_nets(sf16_net)
    assert not isinstance(net, NetPair) and net.arch.generation == GEN_SF16 and net.arch.l1 == 256


def test_a_small_net_given_with_a_lone_net(sf16_net, nnue17_dir):
    small = nnue17_dir / "synthetic_small.nnue"
    with pytest.raises(NetPairError, match="pairs only with a Stockfish 17.1 big net"):
        load_nets(sf16_net, small)
    assert load_nets(sf16_net, small, ignore_unpaired_small=True).arch.l1 == 256


def test_eval_and_bench_take_a_16_net(sf16_net):
    from quantfish.cli.bench import bench_command
    from quantfish.cli.eval import eval_command
    res = CliRunner().invoke(eval_command, ["--json", "--net", str(sf16_net), FEN])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(bench_command, ["--depth", "2", "--net", str(sf16_net), "--kernel", "numba"])
    assert res.exit_code == 0 and "Nodes searched" in res.output, res.output


def test_uci_takes_a_16_net(sf16_net):
    uci = Uci()
    try:
        uci.send("uci")
        uci.expect("uciok")
        uci.send(f"setoption name EvalFile value {sf16_net}")
        uci.send("isready")
        lines = uci.expect("readyok", timeout=300)     # a cold Numba cache compiles first
        assert any("NNUE evaluation using" in line and "sf16.nnue" in line for line in lines), lines
        uci.send("position startpos moves e2e4")
        uci.send("go depth 3")
        assert uci.expect("bestmove")[-1].split()[1] != "0000"
    finally:
        uci.close()


def test_own_net_is_the_fallback_and_intact(tmp_path, monkeypatch):
    """With no Stockfish net where the engine looks, it plays with Quantfish's own committed net."""
    from quantfish.nnue.locate import OWN_NET_NAME, OWN_NET_SHA256, package_nets_dir, sha256_of
    own = package_nets_dir() / OWN_NET_NAME
    assert sha256_of(own) == OWN_NET_SHA256
    lone = tmp_path / "nets"
    lone.mkdir()
    (lone / OWN_NET_NAME).symlink_to(own)
    monkeypatch.setenv("QUANTFISH_NET", str(lone))
    net = load_nets()
    assert not isinstance(net, NetPair) and net.path.endswith(OWN_NET_NAME)
    assert net.arch.l1 == 512 and net.arch.generation == GEN_SF15_1
    monkeypatch.delenv("QUANTFISH_NET")
    assert load_nets(OWN_NET_NAME).path == str(own)        # EvalFile by name: a bare name found in nets/
