"""What the trainer reads: batches of numpy arrays, and the small protocol a data reader plugs in with.

A batch is a ``TrainingArrays``: ``white_idx``/``black_idx`` int[n, 32] (HalfKAv2_hm indices of each
perspective, -1 padding), ``stm`` [n] (0 White, 1 Black to move), ``bucket`` [n] ((pieces - 1) // 4),
``score`` [n] (centipawns, side to move's view), ``result`` [n] (1 / 0.5 / 0, side to move's view).

A data source is any object with ``batches(batch_size, shuffle, seed)`` yielding such batches, one pass per
call (an epoch); one whose ``batches`` also takes ``skip`` (leave out the first batches unread) lets a run
resume in the middle of an epoch at no cost; ``split(fraction, seed) -> (train, validation)`` is optional and lets the trainer hold back
a validation split itself. ``as_source`` also accepts plain arrays (a ``TrainingArrays``, a mapping with those
keys, a 6-tuple) or a list of batches, kept in memory as an ``ArraySource``. Data files (32-byte records) are
streamed by ``quantfish.train.stream`` (``load_data_files``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator, NamedTuple, Protocol, runtime_checkable

import numpy as np

FIELDS = ("white_idx", "black_idx", "stm", "bucket", "score", "result")


def share(n: int, rank: int, world: int) -> tuple[int, int]:
    """The rows [lo, hi) of a batch of ``n`` that rank ``rank`` of ``world`` trains on in a distributed run
    (``quantfish.train.ddp``); the shares differ by one row at most and cover the batch."""
    return n * rank // world, n * (rank + 1) // world


class DataError(ValueError):
    """Training data that cannot be read or does not have the expected shape."""


class TrainingArrays(NamedTuple):
    """One batch (or a whole in-memory set) of training positions."""

    white_idx: np.ndarray
    black_idx: np.ndarray
    stm: np.ndarray
    bucket: np.ndarray
    score: np.ndarray
    result: np.ndarray

    @property
    def size(self) -> int:
        return int(np.shape(self.stm)[0])

    def take(self, rows) -> "TrainingArrays":
        return TrainingArrays(*(np.asarray(a)[rows] for a in self))


@runtime_checkable
class DataSource(Protocol):
    """Anything that yields batches of ``TrainingArrays`` (one pass over its data per call)."""

    def batches(self, batch_size: int, shuffle: bool, seed: int) -> Iterator[TrainingArrays]: ...


def to_arrays(obj) -> TrainingArrays:
    """A ``TrainingArrays`` from a ``TrainingArrays``, a mapping with its keys, or a 6-sequence of arrays."""
    if isinstance(obj, TrainingArrays):
        arrays = obj
    elif isinstance(obj, Mapping):
        missing = [k for k in FIELDS if k not in obj]
        if missing:
            raise DataError(f"training arrays lack {', '.join(missing)} (need {', '.join(FIELDS)})")
        arrays = TrainingArrays(*(obj[k] for k in FIELDS))
    elif isinstance(obj, (tuple, list)) and len(obj) == len(FIELDS) and all(hasattr(a, "shape") for a in obj):
        arrays = TrainingArrays(*obj)
    else:
        raise DataError(f"not training arrays: {type(obj).__name__} (need {', '.join(FIELDS)})")
    arrays = TrainingArrays(*(np.asarray(a) for a in arrays))
    n = arrays.size
    for name, a in zip(FIELDS, arrays):
        if a.shape[0] != n:
            raise DataError(f"training arrays disagree on the number of positions: {name} has {a.shape[0]}, "
                            f"stm has {n}")
    for name in ("white_idx", "black_idx"):
        a = getattr(arrays, name)
        if a.ndim != 2:
            raise DataError(f"{name} must be [positions, max active features], got shape {a.shape}")
    return arrays


def concatenate(parts) -> TrainingArrays:
    parts = [to_arrays(p) for p in parts]
    width = max(p.white_idx.shape[1] for p in parts)
    pad = lambda a: np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=-1)
    return TrainingArrays(np.concatenate([pad(p.white_idx) for p in parts]),
                          np.concatenate([pad(p.black_idx) for p in parts]),
                          *(np.concatenate([getattr(p, f) for p in parts]) for f in FIELDS[2:]))


class ArraySource:
    """An in-memory data source: shuffled mini-batches and a reproducible validation split."""

    def __init__(self, arrays):
        self.arrays = to_arrays(arrays)

    def __len__(self) -> int:
        return self.arrays.size

    def batches(self, batch_size: int, shuffle: bool = True, seed: int = 0, skip: int = 0,
                part: tuple[int, int] = (0, 1)) -> Iterator[TrainingArrays]:
        """Shuffled batches; with ``part=(rank, world)`` only that rank's share of each."""
        n = len(self)
        order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
        for start in range(skip * batch_size, n, batch_size):
            rows = order[start:start + batch_size]
            lo, hi = share(len(rows), *part)
            yield self.arrays.take(rows[lo:hi])

    def split(self, fraction: float, seed: int = 0) -> tuple["ArraySource", "ArraySource"]:
        """(train, validation): a fixed random ``fraction`` of the positions held back (at least one)."""
        n = len(self)
        n_val = min(n - 1, max(1, int(round(n * fraction)))) if fraction > 0 else 0
        order = np.random.default_rng(seed ^ 0x5EED).permutation(n)
        train, val = np.sort(order[n_val:]), np.sort(order[:n_val])
        return ArraySource(self.arrays.take(train)), ArraySource(self.arrays.take(val))


class ChainSource:
    """Several sources read one after another (several data files)."""

    def __init__(self, sources):
        self.sources = list(sources)

    def batches(self, batch_size: int, shuffle: bool = True, seed: int = 0) -> Iterator[TrainingArrays]:
        for i, s in enumerate(self.sources):
            yield from s.batches(batch_size, shuffle, seed + i)

    def split(self, fraction: float, seed: int = 0):
        if not all(hasattr(s, "split") for s in self.sources):
            raise DataError("one of the data sources cannot hold back a validation split (no split method)")
        pairs = [s.split(fraction, seed + i) for i, s in enumerate(self.sources)]
        return ChainSource(p[0] for p in pairs), ChainSource(p[1] for p in pairs)


def as_source(obj) -> DataSource:
    """A data source from a reader's object, arrays, or a list of batches (see the module docstring)."""
    if hasattr(obj, "batches"):
        return obj
    if isinstance(obj, list) and obj and not hasattr(obj[0], "shape"):
        return ArraySource(concatenate(obj))
    return ArraySource(obj)
