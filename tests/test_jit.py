"""``quantfish.runtime.jit``: the cheaper comparison of Numba's compiler flags gives what Numba's own gives; the cache's
entries stay whole when two savers race."""
import os
import random
import re
import subprocess
import sys
import threading

import numba
import pytest
from numba.core import caching, targetconfig
from numba.core.compiler import Flags

import quantfish.search.tree  # noqa: F401  (every compiled module imports njit from quantfish.runtime.jit)
from quantfish.runtime import jit
from tests.testdata import ROOT

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
from quantfish.runtime.jit import njit


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
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    want = sum(x * (i + 3) for i, x in enumerate(range(10)))
    runs = [subprocess.run([sys.executable, "-c", LOAD_THEN_COMPILE], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    first, second = (run.stdout.split() for run in runs)
    assert first[:2] == [str(want), "0"] and second[:2] == [str(want), "1"]     # compiled, then loaded
    assert second[2] == "False"
    assert float(second[3]) == 4.0 and float(first[3]) == 4.0


def test_recursive_typing_in_place():
    from numba.core import typeinfer
    if typeinfer.TypeInferer.propagate is not jit._propagate_to_agreement and not numba.__version__.startswith("0.68."):
        pytest.skip(f"Numba {numba.__version__}: its recursive calls are not typed as 0.68's, so it is left alone")
    assert typeinfer.TypeInferer.return_types_from_partial is jit._kept_partial_return
    assert typeinfer.TypeInferer.propagate is jit._propagate_to_agreement
    assert jit.known_recursive_returns()


def widening(n):
    """Returns an int until the result of its own recursive call, typed, adds a float: the first answer for the
    recursive call (int64) is not the function's type (float64)."""
    if n <= 0:
        return 1
    x = widening(n - 1)
    if n == 5:
        return x + 0.5
    return x


def many_calls(n, k):
    """Recursive at five places: Numba types the whole function again at each, in each round."""
    if n <= 1:
        return k
    a = many_calls(n - 1, k + 1)
    if a > 10:
        return a + many_calls(n - 2, k)
    b = many_calls(n - 2, k * 2) - many_calls(n - 1, k - 3)
    if b < 0:
        return -b + many_calls(n - 3, k)
    return a + b


def numbas_own_typing(monkeypatch, partial=None):
    """Numba's own recursive typing in place of ``known_recursive_returns``'s (until ``monkeypatch.undo``)."""
    from numba.core import typeinfer
    monkeypatch.setattr(typeinfer.TypeInferer, "return_types_from_partial", partial or jit.NUMBA_PARTIAL)
    monkeypatch.setattr(typeinfer.TypeInferer, "propagate", jit.NUMBA_PROPAGATE)


def new_dispatchers(*py_funcs):
    """New dispatchers of ``py_funcs``, calling one another (and themselves) through them, none compiled yet."""
    scope = {}
    for py_func in py_funcs:
        scope[py_func.__name__] = numba.njit(type(py_func)(py_func.__code__, scope, py_func.__name__))
    return scope


def compiled_with(monkeypatch, own_numba: bool, py_func):
    """A new dispatcher of ``py_func`` (recursing through itself) compiled for int64 arguments, with Numba's own
    recursive typing or with ``known_recursive_returns``'s."""
    if own_numba:
        numbas_own_typing(monkeypatch)
    dispatcher = new_dispatchers(py_func)[py_func.__name__]
    args = (5,) if py_func is widening else (7, 1)
    result = dispatcher(*args)
    monkeypatch.undo()
    typemap = dispatcher.overloads[dispatcher.signatures[0]].type_annotation.typemap
    # Every variable's type, the function's own (a dispatcher object of its own here) named by its kind.
    types_by_name = {name: type(ty).__name__ if isinstance(ty, (numba.core.types.Dispatcher,
                                                              numba.core.types.RecursiveCall)) else ty
                     for name, ty in typemap.items()}
    return result, dispatcher.nopython_signatures[0], types_by_name


@pytest.mark.parametrize("py_func", [widening, many_calls])
def test_recursive_typing_is_numbas(monkeypatch, py_func):
    """The same types (every variable's, the signature) and the same result as Numba's own recursive typing,
    including where the first answer for the recursive call is not the function's final type."""
    if not jit.known_recursive_returns():
        pytest.skip(f"Numba {numba.__version__}: recursive typing left as it is")
    own = compiled_with(monkeypatch, True, py_func)
    ours = compiled_with(monkeypatch, False, py_func)
    want = py_func(5) if py_func is widening else py_func(7, 1)
    assert own[0] == ours[0] == want
    assert own[1] == ours[1]
    assert own[2] == ours[2]
    if py_func is widening:
        assert str(ours[1].return_type) == "float64"


def test_recursive_typing_retypes_once(monkeypatch):
    """Numba retypes ``many_calls`` at each recursive call, in each round; kept, it is typed twice (the answer
    and its check)."""
    if not jit.known_recursive_returns():
        pytest.skip(f"Numba {numba.__version__}: recursive typing left as it is")
    counted = []
    own_partial = jit.NUMBA_PARTIAL

    def counting(self):
        counted.append(1)
        return own_partial(self)

    monkeypatch.setattr(jit, "NUMBA_PARTIAL", counting)
    compiled_with(monkeypatch, False, many_calls)
    ours = len(counted)
    counted.clear()
    numbas_own_typing(monkeypatch, counting)
    new_dispatchers(many_calls)["many_calls"](7, 1)
    monkeypatch.undo()
    own = len(counted)
    assert ours == 2 and own > 5, (ours, own)


def ping(n):
    if n <= 0:
        return 1
    if n == 3:
        return pong(n - 1) + 7
    return pong(n - 1) + ping(n - 2)


def pong(n):
    if n <= 0:
        return 2
    return ping(n - 1) * 2


def test_mutual_recursion_is_numbas(monkeypatch):
    """Two functions calling each other: each asks the other's typing for its type (Numba's answer of the
    moment, not a kept one), and the result is what Numba's own typing gives. (Numba itself can miscompile
    mutual recursion whose type widens late, `+ 0.25` here: it compiles ``pong`` with ``ping``'s type of the
    moment; that is left as it is.)"""
    if not jit.known_recursive_returns():
        pytest.skip(f"Numba {numba.__version__}: recursive typing left as it is")

    def run(own_numba):
        if own_numba:
            numbas_own_typing(monkeypatch)
        scope = new_dispatchers(ping, pong)
        result = scope["ping"](9)
        monkeypatch.undo()
        return result, [d.nopython_signatures for d in (scope["ping"], scope["pong"])]

    assert run(True) == run(False)
    assert run(False)[0] == ping(9)


def broken(n):
    if n <= 0:
        return 1
    return broken(n - 1) + "a"


def test_recursive_typing_errors_are_numbas(monkeypatch):
    """A recursive function that does not type fails as under Numba's own typing, with the same error."""
    if not jit.known_recursive_returns():
        pytest.skip(f"Numba {numba.__version__}: recursive typing left as it is")

    def error_of(own_numba):
        if own_numba:
            numbas_own_typing(monkeypatch)
        try:
            new_dispatchers(broken)["broken"](3)
        except Exception as e:      # noqa: BLE001  (the error itself is compared)
            return type(e), " ".join(re.sub(r"0x[0-9a-f]+", "", str(e)).split())     # addresses, indentation
        finally:
            monkeypatch.undo()
        return None

    own = error_of(True)
    assert own[0] is numba.core.errors.TypingError and "add(int64, Literal[str](a))" in own[1]
    assert error_of(False) == own
