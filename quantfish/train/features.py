"""Trainer inputs of a batch of records: HalfKAv2_hm feature indices of both perspectives, compiled.

The indices come from ``quantfish.nnue.features.active_features``, the function the engine's accumulators use, so a
net trained on them reads the board exactly as the engine will. Each row lists one position's active
features in ascending order (what a coalesced sparse tensor wants), padded with -1 to ``MAX_ACTIVE``.
Records must be valid (``records.read_records`` checks them); nothing here imports the engine or torch.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import prange

from quantfish.nnue.architecture import MAX_ACTIVE, NUM_FEATURES
from quantfish.nnue.features import active_features, king_square
from quantfish.runtime.jit import njit
from quantfish.data.codec import STM_AT, is_raw_label, record_result, record_score, unpack_board
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
from quantfish.data.records import as_bytes, read_records

__all__ = ["Batch", "MAX_ACTIVE", "NUM_FEATURES", "batch_features", "training_arrays"]


class Batch(NamedTuple):
    """What a trainer needs per position (n positions)."""

    white: np.ndarray    # int32[n, 32] White's perspective feature indices, ascending, padded with -1
    black: np.ndarray    # int32[n, 32] Black's perspective
    count: np.ndarray    # int32[n] active features per perspective (the number of pieces)
    stm: np.ndarray      # uint8[n] side to move, 0 White, 1 Black
    score: np.ndarray    # float32[n] teacher score, centipawns, side to move's view
    result: np.ndarray   # float32[n] game result, side to move's view: 0 loss, 0.5 draw, 1 win


@njit(cache=True, nogil=True, inline="always")
def _sorted_row(row, n):
    """Insertion sort of ``row[:n]`` (at most 32 entries), then -1 padding."""
    for i in range(1, n):
        v = row[i]
        j = i - 1
        while j >= 0 and row[j] > v:
            row[j + 1] = row[j]
            j -= 1
        row[j + 1] = v
    for i in range(n, row.shape[0]):
        row[i] = -1


DECODE_CHUNK = 1024     # records a thread decodes at a time


@njit(cache=True, nogil=True, parallel=True)
def fill_batch(data, white, black, count, stm, score, result):
    """Fill the batch arrays from ``data`` (uint8[n, 32] records), in chunks shared between Numba's threads
    (one thread took 13.5 ms for a batch of 16384 on a 2-core Xeon, a tenth of a training step)."""
    n = data.shape[0]
    for c in prange((n + DECODE_CHUNK - 1) // DECODE_CHUNK):
        board = np.zeros(64, np.int8)
        for i in range(c * DECODE_CHUNK, min(n, (c + 1) * DECODE_CHUNK)):
            _fill_one(data[i], board, white[i], black[i], count, stm, score, result, i)


@njit(cache=True, nogil=True, inline="always")
def _fill_one(row, board, white_row, black_row, count, stm, score, result, i):
    """Record ``row`` into entry ``i`` of the batch arrays (``board`` is scratch)."""
    unpack_board(row, board)
    nw = active_features(0, king_square(board, 0), board, white_row)
    nb = active_features(1, king_square(board, 1), board, black_row)
    _sorted_row(white_row, nw)
    _sorted_row(black_row, nb)
    count[i] = nw
    stm[i] = row[STM_AT]
    # A raw-output label (internal units) is put in centipawns, the unit of search-score labels.
    score[i] = record_score(row) * (100.0 / PAWN_VALUE_NORMALIZE) if is_raw_label(row) else record_score(row)
    result[i] = 0.5 * record_result(row)


def batch_features(records: np.ndarray) -> Batch:
    """The ``Batch`` of a records array (``records.RECORD_DTYPE``)."""
    n = len(records)
    batch = Batch(np.empty((n, MAX_ACTIVE), np.int32), np.empty((n, MAX_ACTIVE), np.int32),
                  np.empty(n, np.int32), np.empty(n, np.uint8), np.empty(n, np.float32), np.empty(n, np.float32))
    if n:
        fill_batch(as_bytes(records), *batch)
    return batch


def training_arrays(path) -> dict:
    """A data file as the trainer's arrays (``quantfish.train.data.FIELDS``): feature indices of both perspectives,
    side to move, layer-stack bucket ``(pieces - 1) // 4``, score (centipawns) and result, both from the side to
    move's view. The whole file is held in memory (about 270 bytes a position)."""
    b = batch_features(read_records(path))
    return {"white_idx": b.white, "black_idx": b.black, "stm": b.stm, "bucket": (b.count - 1) // 4,
            "score": b.score, "result": b.result}
