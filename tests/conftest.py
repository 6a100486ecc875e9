"""Shared pytest fixtures: the nets the tests run on.

* ``nnue_net`` / ``nnue_arrays``: the net the engine loads by default, Stockfish 15.1's when it is installed
  (``quantfish net get``), else Quantfish's own, shipped in the package. Tests that do not compare with
  Stockfish's integers use it, so they run anywhere.
* ``sf_net`` / ``sf_arrays`` / ``sf_net_path``: Stockfish 15.1's net, for the tests that compare with Stockfish's
  integers (``tests/data/nnue``) or with figures measured with that net; they are skipped, naming the file,
  when it is not installed.
* ``nnue17_dir`` / ``nnue17_pair``: the two synthetic Stockfish 17.1 nets (``tests/synthetic_nets.py``), made
  from Stockfish 15.1's net once into the user cache folder and reused while their sha256 matches; skipped
  without Stockfish 15.1's net. ``$QUANTFISH_NNUE17_DIR`` names another folder.
* ``searcher``: a search on ``nnue_net`` with a 16 MB table, one per test module (its tests clear it as they
  need); a module wanting another size defines its own.
"""
import os
from pathlib import Path

import pytest

SF_NET_MISSING = ("Stockfish 15.1's net {name} is not installed (run: quantfish net get, or set QUANTFISH_NET); "
                  "this test compares with Stockfish's own integers")


def sf_net_file():
    """The path of Stockfish 15.1's net where the engine would find it, or None when it is not there."""
    from quantfish.nnue.locate import DEFAULT_NET_NAME, resolve_net_path
    path = resolve_net_path(name=DEFAULT_NET_NAME)
    return path if path.is_file() else None


def skip_without_sf_net():
    """Skips the calling test, naming the file, when Stockfish 15.1's net is not installed."""
    from quantfish.nnue.locate import DEFAULT_NET_NAME
    if sf_net_file() is None:
        pytest.skip(SF_NET_MISSING.format(name=DEFAULT_NET_NAME))


@pytest.fixture(scope="session")
def sf_net_path():
    skip_without_sf_net()
    return sf_net_file()


@pytest.fixture(scope="session")
def sf_net(sf_net_path):
    from quantfish.nnue.io import load_net
    return load_net(sf_net_path)


@pytest.fixture(scope="session")
def sf_arrays(sf_net):
    return sf_net.arrays()


@pytest.fixture(scope="session")
def nnue_net():
    from quantfish.nnue.io import load_net
    from quantfish.nnue.loader import resolve_main_path
    return load_net(resolve_main_path())


@pytest.fixture(scope="module")
def searcher(nnue_net):
    from quantfish.search.driver import Searcher
    return Searcher(nnue_net, 16)


@pytest.fixture(scope="session")
def nnue_arrays(nnue_net):
    return nnue_net.arrays()


def _synthetic_ok(d):
    from quantfish.nnue.locate import sha256_of
    from tests.synthetic_nets import SHA256
    return all((d / n).is_file() and sha256_of(d / n) == h for n, h in SHA256.items())


@pytest.fixture(scope="session")
def nnue17_dir(sf_net_path):
    """Directory holding synthetic_big.nnue (L1 = 3072) and synthetic_small.nnue (L1 = 128)."""
    import tempfile

    from quantfish.runtime.paths import cache_dir
    from tests.synthetic_nets import SHA256, write_synthetic_nets
    d = Path(os.environ.get("QUANTFISH_NNUE17_DIR") or cache_dir() / "test-nets" / "sf17.1-synthetic")
    if _synthetic_ok(d):
        return d
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        digests = write_synthetic_nets(sf_net_path, tmp)
        assert digests == SHA256, f"the synthetic 17.1 nets came out different: {digests}"
        for name in SHA256:
            os.replace(Path(tmp) / name, d / name)      # atomic: a concurrent run sees whole files
    assert _synthetic_ok(d)
    return d


@pytest.fixture(scope="session")
def nnue17_pair(nnue17_dir):
    """The synthetic 17.1 pair as ``quantfish.nnue.loader.NetPair`` (big, small)."""
    from quantfish.nnue.loader import load_pair
    return load_pair(nnue17_dir / "synthetic_big.nnue", nnue17_dir / "synthetic_small.nnue")
