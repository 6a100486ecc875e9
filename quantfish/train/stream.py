"""Training data larger than memory: record files read in blocks and shuffled through a buffer.

The files (shards of 32-byte records, ``quantfish.data.records``) are mapped, not loaded. Each epoch the
blocks of ``BLOCK`` consecutive records of every file are taken in an order drawn from the epoch's seed; a
buffer holds ``shuffle_buffer`` records of consecutive blocks of that order, is shuffled as a whole, and is cut
into batches, whose HalfKAv2_hm features are computed as they are needed (``features.batch_features``). Records
written together (one game's positions) thus end up spread over a buffer's worth of others. A buffer as large as
the data is a full shuffle; the memory used is about the buffer (32 bytes a record) plus one batch's features.

The order is a function of the seed alone, so ``batches(..., skip=k)`` gives the same batches as the first
call after its first ``k``, reading none of those: a training run stopped in the middle of an epoch resumes
exactly there. ``split`` holds back a fixed random set of blocks for validation.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from quantfish.data.records import DataFileError, read_records
from quantfish.train.data import DataError, TrainingArrays, share

BLOCK = 4096                    # records read together: a block is one random read
DEFAULT_SHUFFLE_BUFFER = 1 << 22  # 4M records, 128 MB


class RecordStream:
    """Batches from record files, streamed (see the module docstring). ``blocks`` chooses a subset of the
    files' blocks, as (file index, first record) pairs; by default all of them."""

    def __init__(self, paths: Sequence, shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER, blocks=None, files=None):
        if not paths:
            raise DataError("no training data given")
        if shuffle_buffer < 1:
            raise DataError(f"the shuffle buffer must hold at least one record, not {shuffle_buffer}")
        self.paths = [str(p) for p in paths]
        self.files = files if files is not None else [_open(p) for p in self.paths]
        self.shuffle_buffer = shuffle_buffer
        if blocks is None:
            blocks = np.array([(f, start) for f, records in enumerate(self.files)
                               for start in range(0, len(records), BLOCK)], np.int64).reshape(-1, 2)
        self.blocks = blocks
        if len(self) == 0:
            raise DataError(f"no positions in {', '.join(Path(p).name for p in self.paths)}")

    def _block_size(self, block) -> int:
        f, start = block
        return min(BLOCK, len(self.files[f]) - start)

    def __len__(self) -> int:
        return int(sum(self._block_size(b) for b in self.blocks))

    def split(self, fraction: float, seed: int = 0) -> tuple["RecordStream", "RecordStream"]:
        """(train, validation): a fixed random ``fraction`` of the blocks held back (at least one block)."""
        n = len(self.blocks)
        n_val = min(n - 1, max(1, int(round(n * fraction)))) if fraction > 0 else 0
        if n_val == 0:
            return self, None
        order = np.random.default_rng(seed ^ 0x5EED).permutation(n)
        val, train = np.sort(order[:n_val]), np.sort(order[n_val:])
        return tuple(RecordStream(self.paths, self.shuffle_buffer, self.blocks[rows], self.files)
                     for rows in (train, val))

    def batches(self, batch_size: int, shuffle: bool = True, seed: int = 0, skip: int = 0,
                part: tuple[int, int] = (0, 1)) -> Iterator[TrainingArrays]:
        """One pass over the data in batches of ``batch_size`` (the last of each buffer may be smaller),
        leaving out the first ``skip`` batches unread. With ``part=(rank, world)``, only that rank's share of
        each batch (``data.share``), the only records whose features it computes; the batches, and so the
        whole run, are the same for every rank."""
        from quantfish.train.features import batch_features
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self.blocks)) if shuffle else np.arange(len(self.blocks))
        sizes = np.array([self._block_size(self.blocks[i]) for i in order], np.int64)
        k = 0
        while k < len(order):
            # The next buffer: consecutive blocks of the order, up to shuffle_buffer records (at least one block).
            end, total = k, 0
            while end < len(order) and (end == k or total + sizes[end] <= self.shuffle_buffer):
                total += sizes[end]
                end += 1
            perm = rng.permutation(total) if shuffle else np.arange(total)
            n_batches = -(-total // batch_size)
            if skip >= n_batches:
                skip -= n_batches
            else:
                buffer = np.concatenate([self._read(self.blocks[i]) for i in order[k:end]])[perm]
                for b in range(skip, n_batches):
                    rows = buffer[b * batch_size:(b + 1) * batch_size]
                    lo, hi = share(len(rows), *part)
                    yield _arrays(batch_features(rows[lo:hi]))
                skip = 0
            k = end

    def _read(self, block) -> np.ndarray:
        f, start = block
        return np.array(self.files[f][start:start + BLOCK])


def _open(path) -> np.ndarray:
    try:
        return read_records(path, mmap=True)
    except OSError as exc:
        raise DataError(f"cannot read training data {path}: {exc.strerror or exc}") from None
    except DataFileError as exc:
        raise DataError(str(exc)) from None


def _arrays(b) -> TrainingArrays:
    return TrainingArrays(b.white, b.black, b.stm, (b.count - 1) // 4, b.score, b.result)


def load_data_files(paths, shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER) -> RecordStream:
    """Data files of 32-byte records (``quantfish.data.records``) as one stream."""
    return RecordStream(list(paths), shuffle_buffer)
