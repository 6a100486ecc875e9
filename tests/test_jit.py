"""``nnue.jit``: the cheaper comparison of Numba's compiler flags gives what Numba's own gives; the cache's
entries stay whole when two savers race."""
import os
import random
import subprocess
import sys
import threading

import numba
import pytest
from numba.core import caching, targetconfig
from numba.core.compiler import Flags

import engine.search  # noqa: F401  (every compiled module imports njit from nnue.jit)
from nnue import jit
from nnue.netpath import repo_root

own_values, own_hash, own_eq = jit.NUMBA_OWN


def random_flags(rng: random.Random) -> Flags:
    """Flags with a random subset of options set, each to its default or to another value of its type."""
    flags = Flags()
    for name, option in Flags.options.items():
        if rng.random() < 0.3:
            default = option.default
            if isinstance(default, bool):
                setattr(flags, name, rng.random() < 0.5)
            elif isinstance(default, int):
                setattr(flags, name, rng.choice([default, default + 1, 0]))
            elif isinstance(default, str) and name == "error_model":
                setattr(flags, name, rng.choice(["python", "numpy"]))
    return flags


def test_in_place_with_this_numba():
    if targetconfig.TargetConfig.values is not jit._flag_values and not numba.__version__.startswith("0.68."):
        pytest.skip(f"Numba {numba.__version__}: its flags are not built as 0.68's, so they are left alone")
    # In place from the import alone (looked at before calling anything that would install it).
    assert targetconfig.TargetConfig.values is jit._flag_values
    assert Flags.__hash__ is jit._flag_hash and Flags.__eq__ is jit._flag_eq
    assert jit.faster_flag_comparison()


def test_values_hash_and_equality_are_numbas():
    rng = random.Random(7)
    flags = [Flags()] + [random_flags(rng) for _ in range(300)]
    differing = 0
    for a in flags:
        assert jit._flag_values(a) == own_values(a)
        assert jit._flag_hash(a) == own_hash(a)
    for _ in range(3000):
        a, b = rng.choice(flags), rng.choice(flags)
        if rng.random() < 0.2:
            b = a.copy()
        assert jit._flag_eq(a, b) == own_eq(a, b)
        differing += not own_eq(a, b)
    assert 100 < differing < 3000     # both outcomes were compared
    assert jit._flag_eq(Flags(), 3) is NotImplemented


def test_flags_as_dictionary_keys():
    """What Numba does with them: a cache keyed by flags finds an equal instance and tells unequal ones apart."""
    a, b = Flags(), Flags()
    a.nrt = True
    b.nrt = True
    cache = {a: "a"}
    assert cache[b] == "a"
    b.nrt = False
    assert b not in cache
    b.nrt = Flags.options["nrt"].default    # set to the default: equal to the unset default
    assert b == Flags() and b in {Flags(): 1}


def test_cache_lock_in_place():
    if jit.fcntl is None:
        pytest.skip("no fcntl here: Numba's cache is left as it is")
    # In place from the import alone (looked at before calling anything that would install it).
    assert hasattr(caching.IndexDataCacheFile.save, "unlocked") and hasattr(caching.IndexDataCacheFile.load, "unlocked")
    assert jit.locked_cache_files()


def test_concurrent_saves_keep_each_entry_whole(tmp_path, monkeypatch):
    """Two savers of one function's index (two processes in life; two threads, each with its own lock
    descriptor, here): while the first is between reading the index and writing it, the second waits, so
    they cannot both take data file number 1."""
    if jit.fcntl is None:
        pytest.skip("no fcntl here: Numba's cache is left as it is")
    first = caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", (1.0, 10))
    second = caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", (1.0, 10))
    inside, go_on = threading.Event(), threading.Event()
    save_index = caching.IndexDataCacheFile._save_index

    def paused_save_index(self, overloads):
        if self is first:
            inside.set()
            go_on.wait(10)
        save_index(self, overloads)

    monkeypatch.setattr(caching.IndexDataCacheFile, "_save_index", paused_save_index)
    a = threading.Thread(target=first.save, args=("signature A", "code A"))
    a.start()
    assert inside.wait(10)
    b = threading.Thread(target=second.save, args=("signature B", "code B"))
    b.start()
    b.join(0.3)
    waited = b.is_alive()
    go_on.set()
    a.join(10)
    b.join(10)
    assert waited, "the second save went ahead while the first was between its index read and write"
    assert first.load("signature A") == "code A"
    assert second.load("signature B") == "code B"
    assert sorted(p.name for p in tmp_path.glob("*.nbc")) == ["f-1.py311.1.nbc", "f-1.py311.2.nbc"]


LIGHT_MODULE = '''
import numpy as np
from nnue.jit import njit


@njit(cache=True)
def weighted(a, k):
    total = 0
    for i in range(a.shape[0]):
        total += a[i] * (i + k)
    return total
'''

LOAD_THEN_COMPILE = '''
import sys
import numpy as np
import lightmod
print(lightmod.weighted(np.arange(10, dtype=np.int64), 3))
print(sum(lightmod.weighted.stats.cache_hits.values()))
print("numba.np.linalg" in sys.modules)        # imported by the context set-up a cache load skips
from numba import njit
print(njit(lambda a: np.sum(np.abs(a)) + np.sort(a)[0])(np.array([4.0, -3.0])))   # a real compile afterwards
'''


def test_cache_loads_set_up_only_the_runtime(tmp_path):
    if caching.Cache.load_overload is not jit._load_without_refresh and not numba.__version__.startswith("0.68."):
        pytest.skip(f"Numba {numba.__version__}: its cache load is not 0.68's, so it is left alone")
    # In place from the import alone; then, in new processes: the first compiles and saves, the second loads the
    # cached code without Numba's whole context set-up, runs it right, and can still compile something new.
    assert caching.Cache.load_overload is jit._load_without_refresh and jit.lighter_cache_loads()
    (tmp_path / "lightmod.py").write_text(LIGHT_MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(repo_root())]))
    want = sum(x * (i + 3) for i, x in enumerate(range(10)))
    runs = [subprocess.run([sys.executable, "-c", LOAD_THEN_COMPILE], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    first, second = (run.stdout.split() for run in runs)
    assert first[:2] == [str(want), "0"] and second[:2] == [str(want), "1"]     # compiled, then loaded
    assert second[2] == "False"
    assert float(second[3]) == 4.0 and float(first[3]) == 4.0
