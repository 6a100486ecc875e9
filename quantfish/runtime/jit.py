"""``njit`` for every compiled module of the project, with Numba's compiler made cheaper and its cache safe to share.

Numba types each call in compiled code by trying its overload templates (an array index alone tries seven),
and each try looks up a cache keyed by the compiler's flags. Numba 0.68 hashes and compares those flags by
building a dict of all ~40 options through one property call each, millions of times over the search's
typing: about a sixth of the install-time compile. ``faster_flag_comparison`` replaces the three methods
with ones that build the same dict from a per-class table of defaults. The values, the hash and the
equality are the same as Numba's (checked here on import and by ``tests/test_jit.py``), so the compiled code
and the cache keys do not change; a Numba whose flags no longer match this behaviour is left alone.

Numba's cache gives each function an index file (signature -> data file number) and numbered data files,
and saves a new entry by reading the index, picking a free number, writing the index, then the data. Two
processes compiling two signatures of one function at once (``make warm`` runs two; so do two engines of a
match starting on a cold cache) can both pick number 1, and the index can end up naming one signature's
machine code for the other. ``locked_cache_files`` makes each save (index and data) and each load hold an
exclusive lock on the cache directory's ``numba.lock``, so one process's entry is whole before another reads
or numbers one.

Numba sets up its whole typing and target context (importing and registering every implementation it has: NumPy,
linalg, typed containers, unicode...) before its first load from the cache, although a cached function needs only
the runtime (NRT) to be linked: about 0.2 s of every engine's start-up. ``lighter_cache_loads`` makes a load on
the CPU target set up the runtime alone; the first real compile in the process still sets up everything (Numba's
compiler refreshes the contexts itself).

Numba types a recursive call (the search calls itself at several places, as does the capture search) by
typing the whole function again, without its recursive calls, to find what it returns so far. It does that
at every recursive call site, and again in every round of its propagation until nothing changes: 27 retypings
of the search and the capture search, about 35 s of a 75 s compile. ``known_recursive_returns`` keeps the first
answer for the function's own recursive calls and checks it once propagation is done: if typing the function
again then gives another type, the answer is replaced and propagation resumed, as Numba's own rounds would have
done, until the two agree (a fixed point of Numba's own rounds). The types, and so the compiled code, are
Numba's; a call from another function being typed (mutual recursion) gets Numba's answer as it is.

Numba keys a cached function on its own source file only: when a function that others inline changes (a
helper in ``quantfish.core``, say), their cached machine code, which holds the old helper, would still load.
``layered_cache_folders`` puts each compiled function of the package into the user cache folder
(``quantfish.runtime.paths``), under a hash of the sources of its layer and every layer below it
(``quantfish.runtime.layers``): a change to a layer gives it and the layers above it new folders, so stale code
is never found, and nothing is deleted (old folders stay until ``quantfish cache clear``).

Compiled modules import ``njit`` from here, so these changes are made before anything is compiled or loaded.
"""
from __future__ import annotations

import hashlib
import os

from numba import njit  # noqa: F401  (re-exported)
from numba.core import caching, targetconfig, typeinfer

try:
    import fcntl
except ImportError:     # not POSIX: Numba's cache as it is
    fcntl = None

__all__ = ["njit", "faster_flag_comparison", "locked_cache_files", "lighter_cache_loads", "known_recursive_returns",
           "layered_cache_folders", "numba_cache_root"]

LOCK_NAME = "numba.lock"

NUMBA_OWN = (targetconfig.TargetConfig.values, targetconfig.TargetConfig.__hash__, targetconfig.TargetConfig.__eq__)
"""Numba's own ``values``, ``__hash__`` and ``__eq__``, as found before the replacement (the tests compare)."""


def _defaults(cls) -> dict:
    """Each option's default, per ``TargetConfig`` class (a class's options never change once it is made)."""
    table = cls.__dict__.get("_quantfish_defaults")
    if table is None:
        table = {name: option.default for name, option in cls.options.items()}
        setattr(cls, "_quantfish_defaults", table)
    return table


def _flag_values(self) -> dict:
    """Every option's value: what ``TargetConfig.values`` returns, without a property call per option."""
    out = dict(_defaults(type(self)))
    for name, value in self._values.items():
        if name in out:
            out[name] = value
    return out


def _flag_hash(self) -> int:
    # Numba hashes ``sorted(self.values())``: the sorted option names, the same for every instance of a class.
    return hash(tuple(sorted(_defaults(type(self)))))


def _flag_eq(self, other):
    if isinstance(other, targetconfig.TargetConfig):
        return _flag_values(self) == _flag_values(other)
    return NotImplemented


def _agrees_with(original_values, original_hash, original_eq) -> bool:
    """Whether the replacements give what Numba's own methods give, on default and on set flags."""
    from numba.core.compiler import Flags
    try:
        plain, changed = Flags(), Flags()
        changed.nrt = True
        changed.boundscheck = True
        changed.error_model = "numpy"
        same_values = all(_flag_values(f) == original_values(f) for f in (plain, changed))
        same_hash = all(_flag_hash(f) == original_hash(f) for f in (plain, changed))
        same_eq = all(_flag_eq(a, b) == original_eq(a, b) for a, b in ((plain, changed), (plain, Flags())))
    except Exception:   # a Numba whose flags are built differently: keep its own methods
        return False
    return same_values and same_hash and same_eq


def faster_flag_comparison() -> bool:
    """Installs the cheaper ``values``, ``__hash__`` and ``__eq__`` on Numba's ``TargetConfig``; True if in place."""
    cls = targetconfig.TargetConfig
    if cls.values is _flag_values:
        return True
    if cls.values.__qualname__ != "TargetConfig.values" or not _agrees_with(*NUMBA_OWN):
        return False
    cls.values, cls.__hash__, cls.__eq__ = _flag_values, _flag_hash, _flag_eq
    return True


class _DirectoryLock:
    """An exclusive ``flock`` on ``directory/numba.lock`` (blocking; released on exit or if the process dies)."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, LOCK_NAME)

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:     # a read-only cache directory: nothing is saved there, nothing to guard
            self.fd = None
            return self
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)   # closing the only descriptor releases the lock


def _locked(method):
    def under_lock(self, *args):
        with _DirectoryLock(self._cache_path):
            return method(self, *args)
    under_lock.__name__ = method.__name__
    under_lock.__qualname__ = f"locked {method.__qualname__}"
    under_lock.unlocked = method
    return under_lock


def locked_cache_files() -> bool:
    """Makes ``IndexDataCacheFile.save`` and ``load`` hold the cache directory's lock; True if in place."""
    cls = caching.IndexDataCacheFile
    if fcntl is None:
        return False
    if hasattr(cls.save, "unlocked"):
        return True
    if not (hasattr(cls, "load") and hasattr(cls, "save") and hasattr(cls, "_load_index")):
        return False
    cls.save, cls.load = _locked(cls.save), _locked(cls.load)
    return True


NUMBA_LOAD_OVERLOAD = caching.Cache.load_overload
"""Numba's own ``Cache.load_overload``, as found before the replacement."""


def _load_without_refresh(self, sig, target_context):
    """``Cache.load_overload`` with only the runtime set up on the CPU target (Numba's own elsewhere)."""
    from numba.core.cpu import CPUContext
    from numba.core.runtime.nrt import rtsys
    if not isinstance(target_context, CPUContext):
        return NUMBA_LOAD_OVERLOAD(self, sig, target_context)
    rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)


def lighter_cache_loads() -> bool:
    """Installs ``_load_without_refresh`` as ``Cache.load_overload``; True if in place. A Numba whose method does
    anything but refresh the context and load (its names differ from 0.68's) is left alone."""
    cls = caching.Cache
    if cls.load_overload is _load_without_refresh:
        return True
    names = set(cls.load_overload.__code__.co_names)
    if names != {"refresh", "_guard_against_spurious_io_errors", "_load_overload"}:
        return False
    cls.load_overload = _load_without_refresh
    return True


NUMBA_PARTIAL = typeinfer.TypeInferer.return_types_from_partial
NUMBA_PROPAGATE = typeinfer.TypeInferer.propagate
"""Numba's own ``TypeInferer.return_types_from_partial`` and ``propagate``, as found before the replacement."""


def _kept_partial_return(self):
    """The return type found so far for the function this inferer types, computed once for its own recursive
    calls. Asked from another function's typing (mutual recursion), Numba's answer of the moment."""
    stack = self.context.callstack
    if len(stack) == 0 or stack[0].typeinfer is not self:
        return NUMBA_PARTIAL(self)
    kept = self.__dict__.get("_quantfish_partial")
    if kept is None:
        kept = NUMBA_PARTIAL(self)
        if kept is not None:
            self._quantfish_partial = kept
    return kept


def _propagate_to_agreement(self, raise_errors=True):
    """Numba's propagation, then, where recursive calls were typed with a kept answer, that answer checked
    against the function's type now, and propagation resumed with the new one until they agree. Errors are
    raised (when asked) only there: one that a stale answer caused goes away with the new one, as in Numba's
    own rounds."""
    errors = NUMBA_PROPAGATE(self, False)
    while "_quantfish_partial" in self.__dict__:
        now = NUMBA_PARTIAL(self)
        if now is None or now == self._quantfish_partial:
            break
        self._quantfish_partial = now
        errors = NUMBA_PROPAGATE(self, False)
    if errors and raise_errors:
        return NUMBA_PROPAGATE(self, True)     # the same errors, raised as Numba raises them
    return errors


def known_recursive_returns() -> bool:
    """Installs ``_kept_partial_return`` and ``_propagate_to_agreement`` on Numba's ``TypeInferer``; True if in
    place. A Numba whose inferer lacks either method, or whose recursive calls are typed differently (the call
    site in ``resolve_call``), is left alone."""
    cls = typeinfer.TypeInferer
    if cls.return_types_from_partial is _kept_partial_return:
        return True
    resolve_names = set(cls.resolve_call.__code__.co_names)
    if not {"return_types_from_partial", "add_return_type", "RecursiveCall"} <= resolve_names:
        return False
    if "_skip_recursion" not in cls.copy.__code__.co_names:
        return False
    cls.return_types_from_partial, cls.propagate = _kept_partial_return, _propagate_to_agreement
    return True


def numba_cache_root():
    """The folder that holds every layer's compiled code: ``numba`` in the user cache folder."""
    from quantfish.runtime.paths import cache_dir
    return cache_dir() / "numba"


_layer_digests: dict = {}


def layer_digest(layer: str) -> str:
    """A hash of the ``.py`` sources of ``layer`` and of every layer below it (computed once a process)."""
    digest = _layer_digests.get(layer)
    if digest is None:
        from quantfish.runtime.layers import LAYERS
        from quantfish.runtime.paths import PACKAGE_DIR
        below = LAYERS[:LAYERS.index(layer) + 1] if layer in LAYERS else (layer,)
        h = hashlib.sha256()
        for name in below:
            top = os.path.join(PACKAGE_DIR, name)
            for folder, dirs, files in sorted(os.walk(top)):
                dirs.sort()
                for f in sorted(n for n in files if n.endswith(".py")):
                    path = os.path.join(folder, f)
                    h.update(os.path.relpath(path, PACKAGE_DIR).encode() + b"\0")
                    with open(path, "rb") as fh:
                        h.update(fh.read())
        digest = _layer_digests[layer] = h.hexdigest()[:16]
    return digest


class LayeredCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Numba's cache locator for the package's own functions: ``<user cache>/numba/<layer>-<digest>/<folder>``."""

    def __init__(self, py_func, py_file, cache_path):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = cache_path

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        from quantfish.runtime.paths import PACKAGE_DIR
        path = os.path.abspath(py_file)
        rel = os.path.relpath(path, PACKAGE_DIR)
        if rel.startswith(os.pardir) or os.path.isabs(rel) or not os.path.exists(path):
            return None          # not the package's: Numba's own locators
        folder = os.path.dirname(rel)
        layer = folder.split(os.sep)[0]
        self = cls(py_func, py_file, os.path.join(numba_cache_root(), f"{layer}-{layer_digest(layer)}", folder))
        try:
            self.ensure_cache_path()
        except OSError:
            return None          # an unwritable cache folder: Numba's own locators (or no cache)
        return self


def layered_cache_folders() -> bool:
    """Puts ``LayeredCacheLocator`` first among Numba's cache locators; True if in place."""
    classes = getattr(caching, "CacheImpl", None)
    if classes is None or not isinstance(getattr(classes, "_locator_classes", None), list):
        return False
    if LayeredCacheLocator not in classes._locator_classes:
        classes._locator_classes.insert(0, LayeredCacheLocator)
    return True


layered_cache_folders()
faster_flag_comparison()
locked_cache_files()
lighter_cache_loads()
known_recursive_returns()
