"""Shared pytest fixtures.

NNUE: ``nnue_net`` loads Stockfish 15.1's net once per session from the default path
(``$QUANTFISH_NET`` or ``nets/``); tests that need it fail with a hint when it is absent.
Stockfish 17.1: ``nnue17_dir`` makes the two synthetic 17.1 nets once (cached in ``.cache/nnue17/``) and
``nnue17_pair`` loads them.
"""

import pytest
from tests.shared import TOOLS


@pytest.fixture(scope="session")
def nnue_net():
    from nnue.netfile import load_net
    from nnue.netpath import resolve_net_path
    path = resolve_net_path()
    if not path.is_file():
        pytest.fail(f"net {path} not found (run: make net)")
    return load_net(path)


@pytest.fixture(scope="session")
def nnue_arrays(nnue_net):
    return nnue_net.arrays()


# Stockfish 17.1 format: the two synthetic nets of ../shared/tools/synthetic_nets.py (about 80 MB, made from
# the 15.1 net), generated once into the git-ignored cache <repo>/.cache/nnue17/ and reused while their sha256
# matches. $QUANTFISH_NNUE17_DIR overrides the cache directory.
SYNTHETIC_TOOL = str(TOOLS / "synthetic_nets.py")
SYNTHETIC_SHA256 = {
    "synthetic_big.nnue": "f4259ea4516a6792b36b61339d12a8ab9071c308accb7927aa39146df36c63a8",
    "synthetic_small.nnue": "1e9d8355738ce490c302ddd1cf1020b4888665ff7dd97dd71eac5ff96e395218",
}


def _synthetic_ok(d):
    from nnue.netpath import sha256_of
    return all((d / n).is_file() and sha256_of(d / n) == h for n, h in SYNTHETIC_SHA256.items())


@pytest.fixture(scope="session")
def nnue17_dir():
    """Directory holding synthetic_big.nnue (L1 = 3072) and synthetic_small.nnue (L1 = 128)."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from nnue.netpath import repo_root, resolve_net_path
    d = Path(os.environ.get("QUANTFISH_NNUE17_DIR") or repo_root() / ".cache" / "nnue17")
    if _synthetic_ok(d):
        return d
    src = resolve_net_path()
    if not src.is_file():
        pytest.fail(f"net {src} not found (run: make net); it is the source of the synthetic 17.1 nets")
    if not os.path.isfile(SYNTHETIC_TOOL):
        pytest.fail(f"{SYNTHETIC_TOOL} not found: cannot make the synthetic 17.1 nets")
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        proc = subprocess.run([sys.executable, SYNTHETIC_TOOL, "--src", str(src), "--out", tmp],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"synthetic_nets.py failed:\n{proc.stdout}\n{proc.stderr}")
        for name in SYNTHETIC_SHA256:
            os.replace(Path(tmp) / name, d / name)      # atomic: a concurrent session sees whole files
    assert _synthetic_ok(d)
    return d


@pytest.fixture(scope="session")
def nnue17_pair(nnue17_dir):
    """The synthetic 17.1 pair as ``netpair.NetPair`` (big, small)."""
    from nnue.netpair import load_pair
    return load_pair(nnue17_dir / "synthetic_big.nnue", nnue17_dir / "synthetic_small.nnue")
