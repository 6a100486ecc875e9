"""Where Quantfish writes: the user cache folder (compiled code, the C kernel) and the user data folder (nets),
never the package; compiled code is keyed by the sources of its layer and the layers below it; nothing is
deleted by an import."""
import os
import shutil
import subprocess
import sys

from quantfish.runtime import jit, paths
from tests.testdata import ROOT

PROBE = """
import numpy as np
from quantfish.core.bitops import popcount
print(int(popcount(np.uint64(7))))
"""


def test_the_folders_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "c"))
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "d"))
    assert paths.cache_dir() == tmp_path / "c" and paths.data_dir() == tmp_path / "d"
    from quantfish.nnue.kernel.files import library_path
    from quantfish.nnue.locate import user_nets_dir
    assert user_nets_dir() == tmp_path / "d" / "nets"
    assert library_path().parent == tmp_path / "c" / "kernel"


def test_compiled_code_goes_to_the_cache_folder_by_layer_and_nothing_is_deleted(tmp_path):
    cache = tmp_path / "cache"
    stale = cache / "numba" / "core-0000000000000000" / "core" / "old.nbi"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"a file of another version of the sources")
    env = dict(os.environ, QUANTFISH_CACHE_DIR=str(cache))
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=tmp_path,
                             timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip() == "3"
    folders = sorted(p.name for p in (cache / "numba").iterdir())
    assert f"core-{jit.layer_digest('core')}" in folders
    assert any(p.suffix == ".nbc" for p in (cache / "numba" / f"core-{jit.layer_digest('core')}" / "core").iterdir())
    assert stale.exists(), "an import deleted a cache file"
    assert not list((ROOT / "quantfish").rglob("*.nbi")), "compiled code was written into the package"


def test_a_layers_key_covers_it_and_the_layers_below_only(tmp_path, monkeypatch):
    package = tmp_path / "quantfish"
    for layer in ("runtime", "core", "search"):
        shutil.copytree(ROOT / "quantfish" / layer, package / layer, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(paths, "PACKAGE_DIR", package)
    monkeypatch.setattr(jit, "_layer_digests", {})

    def digest(layer):
        jit._layer_digests.clear()
        return jit.layer_digest(layer)

    core, search = digest("core"), digest("search")
    with open(package / "search" / "tree.py", "a") as fh:      # above core: core's key stays
        fh.write("\n# changed\n")
    assert digest("core") == core and digest("search") != search
    search = digest("search")
    with open(package / "runtime" / "jit.py", "a") as fh:      # below both: both change
        fh.write("\n# changed\n")
    assert digest("core") != core and digest("search") != search
