"""Stockfish 15.1's evaluation formulas around the net (docs/nnue-sf15.1.md sections 6-7).

Search API (compiled, side-to-move view, after ``accumulator.ensure_accumulator`` for ``ply``):

* ``evaluate(net, acc, psqt, ply, side, board, rule50, optimism, scratch) -> int``: the NNUE branch of
  Stockfish 15.1's ``Eval::evaluate``; piece count and non-pawn material are taken from ``board``.
* ``evaluate_counts(net, acc, psqt, ply, side, pieces, npm, rule50, optimism, psq_eg, scratch) -> int``:
  the same when the engine keeps counts itself. ``psq_eg`` is the classical endgame PSQ score (stm view);
  it only matters when optimism > 0; pass ``PSQ_EG_NONE`` to use the NNUE value in its place.

The hybrid classical branch of 15.1 (taken when |psq_eg| > 1760 with more than 7 pieces) is not
implemented: Quantfish always uses the NNUE branch.

Python API: ``eval_report(net, board, side, rule50)`` gives every integer of the reference data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from nnue.accumulator import refresh_ply
from nnue.inference import bucket_of, forward, forward_all, make_scratch
from nnue.intmath import tdiv

OUTPUT_SCALE = 16
PAWN_VALUE_NORMALIZE = 361          # NormalizeToPawnValue: internal units per pawn for display
VALUE_MAX_EVAL = 31507              # |final eval| < VALUE_TB_WIN_IN_MAX_PLY
PSQ_EG_NONE = 1 << 30               # "no classical PSQ score available"

# Middle-game piece values for non-pawn material: -, P, N, B, R, Q, K.
NPM_KNIGHT, NPM_BISHOP, NPM_ROOK, NPM_QUEEN = 781, 825, 1276, 2538


@njit(cache=True, nogil=True)
def material(board):
    """(number of pieces incl. kings, non-pawn material of both sides) of a mailbox (branch-free)."""
    values = (0, 0, NPM_KNIGHT, NPM_BISHOP, NPM_ROOK, NPM_QUEEN, 0, 0)
    pieces = 0
    npm = 0
    for sq in range(64):
        pc = board[sq]
        pieces += pc != 0
        npm += values[pc & 7]
    return pieces, npm


@njit(cache=True, nogil=True)
def nnue_raw(psqt, positional):
    """NNUE::evaluate(adjusted=false)."""
    return tdiv(psqt + positional, OUTPUT_SCALE)


@njit(cache=True, nogil=True)
def nnue_adjusted(psqt, positional, npm):
    """NNUE::evaluate(adjusted=true): positional weighted up by delta/1024, delta = 24 - npm/9560."""
    delta = 24 - tdiv(npm, 9560)
    return tdiv((1024 - delta) * np.int64(psqt) + (1024 + delta) * np.int64(positional), 1024 * OUTPUT_SCALE)


@njit(cache=True, nogil=True)
def nnue_complexity(psqt, positional):
    return tdiv(abs(np.int64(psqt) - np.int64(positional)), OUTPUT_SCALE)


@njit(cache=True, nogil=True)
def final_eval(nnue, complexity, psq_eg, npm, rule50, optimism):
    """The NNUE branch of Eval::evaluate: optimism blend, material scale, rule-50 damping, clamp."""
    if psq_eg == PSQ_EG_NONE:
        psq_eg = nnue
    scale = 1064 + tdiv(106 * npm, 5120)
    cplx = tdiv(416 * complexity + 424 * abs(psq_eg - nnue)
                + (optimism * (psq_eg - nnue) if optimism > 0 else 0), 1024)
    opt = tdiv(optimism * (269 + cplx), 256)
    v = tdiv(nnue * scale + opt * (scale - 754), 1024)
    v = tdiv(v * (195 - rule50), 211)
    return min(max(v, -VALUE_MAX_EVAL), VALUE_MAX_EVAL)


@njit(cache=True, nogil=True)
def evaluate_counts(net, acc, psqt, ply, side, pieces, npm, rule50, optimism, psq_eg, scratch):
    """Search evaluation (stm view) from the accumulators at ``ply`` and material counts."""
    p, q = forward(net, acc, psqt, ply, side, bucket_of(pieces), scratch)
    return final_eval(nnue_adjusted(p, q, npm), nnue_complexity(p, q), psq_eg, npm, rule50, optimism)


@njit(cache=True, nogil=True)
def evaluate(net, acc, psqt, ply, side, board, rule50, optimism, scratch):
    """Search evaluation (stm view); counts pieces and non-pawn material on ``board``."""
    pieces, npm = material(board)
    return evaluate_counts(net, acc, psqt, ply, side, pieces, npm, rule50, optimism, PSQ_EG_NONE, scratch)


@njit(cache=True, nogil=True)
def _report(net, board, side, acc, psqt, computed, psqt_out, pos_out, scratch):
    refresh_ply(net, acc, psqt, computed, 0, board)
    forward_all(net, acc, psqt, 0, side, psqt_out, pos_out, scratch)


class EvalReport(NamedTuple):
    """All integers of one static evaluation, side-to-move view (as the reference data)."""

    bucket: int
    psqt: list
    positional: list
    nnue_raw: int
    nnue_adjusted: int
    complexity: int
    final: int
    pieces: int
    npm: int


def eval_report(net, board, side: int, rule50: int, optimism: int = 0) -> EvalReport:
    """Evaluate a mailbox from scratch, all 8 buckets; ``net`` is ``Net`` or ``Net.arrays()``."""
    arrays = net.arrays() if hasattr(net, "arrays") else net
    l1 = arrays[0].shape[0]
    nb = arrays[2].shape[1]
    board = np.ascontiguousarray(board, dtype=np.int8)
    acc = np.zeros((1, 2, l1), np.int16)
    psqt = np.zeros((1, 2, nb), np.int32)
    computed = np.zeros((1, 2), np.uint8)
    psqt_out = np.zeros(nb, np.int64)
    pos_out = np.zeros(nb, np.int64)
    _report(arrays, board, side, acc, psqt, computed, psqt_out, pos_out, make_scratch(l1))
    pieces, npm = material(board)
    b = int(bucket_of(pieces))
    p, q = int(psqt_out[b]), int(pos_out[b])
    adj = int(nnue_adjusted(p, q, npm))
    cplx = int(nnue_complexity(p, q))
    return EvalReport(b, [int(v) for v in psqt_out], [int(v) for v in pos_out], int(nnue_raw(p, q)), adj, cplx,
                      int(final_eval(adj, cplx, PSQ_EG_NONE, npm, rule50, optimism)), int(pieces), int(npm))
