"""Stockfish's evaluation formulas around the nets: 15.1 (docs/nnue-sf15.1.md sections 6-7) and 17.1 with two
nets (docs/nnue-sf17.1.md sections 6-7); the search reaches them through ``quantfish.nnue.evaluator``. The
formula follows the net's generation (``Net.arrays().params``).

Search API (compiled, side-to-move view):

* ``evaluate(net, acc, psqt, ply, side, board, rule50, optimism, scratch) -> int`` (after
  ``quantfish.nnue.stack.ensure_accumulator`` for ``ply``): for a 15.1 net the NNUE branch of Stockfish 15.1's
  ``Eval::evaluate``; for a single 17.1 (or 16.x) net, Stockfish 17.1's formula with that net only (no
  small-net shortcut). Piece counts and material are taken from ``board``.
* ``evaluate_counts(net, acc, psqt, ply, side, pieces, npm, rule50, optimism, psq_eg, scratch) -> int``:
  15.1 only, when the engine keeps counts itself. ``psq_eg`` is the classical endgame PSQ score (stm view);
  it only matters when optimism > 0; pass ``PSQ_EG_NONE`` to use the NNUE value in its place.
* Two nets, Stockfish 17.1's ``Eval::evaluate`` exactly::

      evaluate_pair(big_net, small_net, big_nn, small_nn, ply, board, bb, ksq_white, ksq_black,
                    side, rule50, optimism, scratch_big, scratch_small) -> int

  ``big_net``/``small_net`` are ``Net.arrays()`` of the pair; ``big_nn``/``small_nn`` are the stack tuples
  ``(acc, psqt, computed, dirty, ndirty)`` of ``accumulator.make_stack`` for each net's L1, best made by
  ``accumulator.make_pair_stacks(big_l1, small_l1, max_ply)``, which shares ``dirty``/``ndirty`` between
  them: the engine then fills the move deltas once and clears ``computed[ply + 1]`` of **both** stacks when
  it makes a move (same protocol as the 15.1 stack, see ``quantfish.nnue.accumulator``). ``board`` is the int8[64]
  mailbox and ``bb`` the uint64[16] bitboards (colour*8 + type; only types 1..6 and the colour
  occupancies 0 and 8 are read) of the position at ``ply``; ``ksq_white``/``ksq_black`` its king squares;
  ``side`` the side to move; ``rule50`` the halfmove clock; ``optimism`` the side to move's optimism;
  ``scratch_big``/``scratch_small`` come from ``inference.make_scratch(l1)`` of each net. It brings the
  accumulators of only the net(s) it evaluates up to date (lazily, incrementally): the small net when
  |simple_eval| > 962, the big net otherwise or when the small net's |nnue| < 236.
  ``evaluate_pair_counts(big_net, small_net, big_nn, small_nn, ply, board, ksq_white, ksq_black, side,
  pieces, simple_eval, material, rule50, optimism, scratch_big, scratch_small)`` is the same with the
  counts given (``material_17(board, side)`` / ``material_17_bb(bb, side)`` compute them).

The hybrid classical branch of 15.1 (taken when |psq_eg| > 1760 with more than 7 pieces) is not
implemented: Quantfish always uses the NNUE branch.

A Quantfish-format net's (psqt, positional) are on Stockfish's output scale (600 * 16 per unit of the float
output), so the 15.1 formulas apply to it unchanged; its ``nnue_raw`` in the report is its record's final
requantisation (``quantfish.nnue.requant.raw_scheme``), which rounds as the scheme does.

Python API: ``eval_report(net, board, side, rule50)`` (15.1) and ``eval_report_pair(big, small, board, side,
rule50, optimism)`` (17.1) give every integer of the reference data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.nnue.accumulator import make_stack
from quantfish.nnue.architecture import GEN_SF15_1, OUTPUT_SCALE
from quantfish.nnue.layers import bucket_of, forward_all, forward_any, make_scratch
from quantfish.nnue.intmath import popcount64 as popcount
from quantfish.nnue.intmath import tdiv, wrap32
from quantfish.core.types import colour_of, type_of
from quantfish.runtime.jit import njit
from quantfish.nnue.net import P_GENERATION, P_SCHEME
from quantfish.nnue.requant import raw_scheme
from quantfish.nnue.stack import net_output, refresh_ply

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
        npm += values[type_of(pc)]
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
    p, q = forward_any(net, acc, psqt, ply, side, bucket_of(pieces), scratch)
    return final_eval(nnue_adjusted(p, q, npm), nnue_complexity(p, q), psq_eg, npm, rule50, optimism)


@njit(cache=True, nogil=True)
def finish(net, p, q, board, side, rule50, optimism):
    """The evaluation formula of the net's generation applied to one bucket's (psqt, positional)."""
    if net.params[P_GENERATION] != GEN_SF15_1:
        pieces, simple, mat = material_17(board, side)
        p16, q16, nnue = nnue_17(p, q)
        return final_eval_17(nnue, p16, q16, mat, rule50, optimism)
    pieces, npm = material(board)
    return final_eval(nnue_adjusted(p, q, npm), nnue_complexity(p, q), PSQ_EG_NONE, npm, rule50, optimism)


@njit(cache=True, nogil=True)
def non_pawn_material_bb(bb):
    """Non-pawn material of both sides from bitboards (colour*8 + type)."""
    return (NPM_KNIGHT * (popcount(bb[2]) + popcount(bb[10])) + NPM_BISHOP * (popcount(bb[3]) + popcount(bb[11]))
            + NPM_ROOK * (popcount(bb[4]) + popcount(bb[12])) + NPM_QUEEN * (popcount(bb[5]) + popcount(bb[13])))


@njit(cache=True, nogil=True, inline="always")
def finish_bb(net, p, q, bb, side, rule50, optimism):
    """``finish`` with the material counted from bitboards: the search has them, and popcounts are cheaper
    than a pass over the 64 squares."""
    return finish_bb_gen(net.params[P_GENERATION], p, q, bb, side, rule50, optimism)


@njit(cache=True, nogil=True, inline="always")
def finish_bb_gen(generation, p, q, bb, side, rule50, optimism):
    """``finish_bb`` for a net of ``generation`` (``architecture.GEN_*``)."""
    if generation != GEN_SF15_1:
        pieces, simple, mat = material_17_bb(bb, side)
        p16, q16, nnue = nnue_17(p, q)
        return final_eval_17(nnue, p16, q16, mat, rule50, optimism)
    npm = non_pawn_material_bb(bb)
    return final_eval(nnue_adjusted(p, q, npm), nnue_complexity(p, q), PSQ_EG_NONE, npm, rule50, optimism)


@njit(cache=True, nogil=True)
def evaluate(net, acc, psqt, ply, side, board, rule50, optimism, scratch):
    """Search evaluation (stm view) with one net, by the net's generation; counts material on ``board``."""
    pieces, npm = material(board)
    p, q = forward_any(net, acc, psqt, ply, side, bucket_of(pieces), scratch)
    return finish(net, p, q, board, side, rule50, optimism)


# ---------------------------------------------------------------------------------------------------------
# Stockfish 17.1 (nnue-sf17.1.md sections 6-7)

PAWN_VALUE_17 = 208                 # PawnValue, for simple_eval
SMALLNET_THRESHOLD = 962            # |simple_eval| above this: the small net
REEVAL_THRESHOLD = 236              # small net's |nnue| below this: re-evaluate with the big net
BLEND_PSQT, BLEND_POS, BLEND_DIV = 125, 131, 128
OPTIMISM_DIV = 468
COMPLEXITY_DIV = 18000
MATERIAL_PAWN = 535
MATERIAL_BASE = 77777
OPTIMISM_BASE = 7777
RULE50_DIV = 212
VALUE_MAX_EVAL_17 = 31506


@njit(cache=True, nogil=True)
def material_17(board, side):
    """(pieces incl. kings, simple_eval from ``side``'s view, 535 * pawns + npm of both sides) of a mailbox."""
    values = (0, PAWN_VALUE_17, NPM_KNIGHT, NPM_BISHOP, NPM_ROOK, NPM_QUEEN, 0, 0)
    pieces = 0
    simple = 0
    pawns = 0
    npm = 0
    for sq in range(64):
        pc = board[sq]
        pt = type_of(pc)
        v = values[pt]
        pieces += pc != 0
        simple += v if colour_of(pc) == side else -v
        is_pawn = pt == 1
        pawns += is_pawn
        npm += 0 if is_pawn else v
    return pieces, simple, MATERIAL_PAWN * pawns + npm


@njit(cache=True, nogil=True)
def material_17_bb(bb, side):
    """``material_17`` from the bitboards (colour*8 + type; colour occupancies at 0 and 8)."""
    pieces = popcount(bb[0] | bb[8])
    us = side * 8
    them = 8 - us
    dp = popcount(bb[us + 1]) - popcount(bb[them + 1])
    dn = popcount(bb[us + 2]) - popcount(bb[them + 2])
    db = popcount(bb[us + 3]) - popcount(bb[them + 3])
    dr = popcount(bb[us + 4]) - popcount(bb[them + 4])
    dq = popcount(bb[us + 5]) - popcount(bb[them + 5])
    simple = PAWN_VALUE_17 * dp + NPM_KNIGHT * dn + NPM_BISHOP * db + NPM_ROOK * dr + NPM_QUEEN * dq
    pawns = popcount(bb[1]) + popcount(bb[9])
    return pieces, simple, MATERIAL_PAWN * pawns + non_pawn_material_bb(bb)


@njit(cache=True, nogil=True)
def nnue_17(psqt, positional):
    """Network::evaluate (each term / 16, truncated separately) and the blend: (psqt16, pos16, nnue)."""
    p = tdiv(psqt, OUTPUT_SCALE)
    q = tdiv(positional, OUTPUT_SCALE)
    return p, q, tdiv(BLEND_PSQT * p + BLEND_POS * q, BLEND_DIV)


@njit(cache=True, nogil=True)
def final_eval_17(nnue, psqt16, pos16, material, rule50, optimism):
    """The rest of 17.1's Eval::evaluate: complexity damping, material scaling, optimism, rule 50, clamp.

    ``psqt16``/``pos16`` are the terms of the net whose ``nnue`` is used. Products wrap to int32 as in C++.
    """
    complexity = abs(psqt16 - pos16)
    optimism = optimism + tdiv(wrap32(np.int64(optimism) * complexity), OPTIMISM_DIV)
    nnue = nnue - tdiv(wrap32(np.int64(nnue) * complexity), COMPLEXITY_DIV)
    v = tdiv(wrap32(np.int64(nnue) * (MATERIAL_BASE + material) + np.int64(optimism) * (OPTIMISM_BASE + material)),
             MATERIAL_BASE)
    v = v - tdiv(wrap32(v * rule50), RULE50_DIV)
    return min(max(v, -VALUE_MAX_EVAL_17), VALUE_MAX_EVAL_17)


@njit(cache=True, nogil=True)
def net_terms_17(net, nn, ply, board, ksq_white, ksq_black, side, bucket, scratch, cache=None, kf=None, cnet=None):
    """One net's accumulators at ``ply`` brought up to date, ``bucket`` evaluated: (psqt16, pos16, nnue).
    ``cache``/``kf``/``cnet`` choose the path as in ``quantfish.nnue.stack``."""
    p, q = net_output(net, nn, ply, board, ksq_white, ksq_black, side, bucket, scratch, cache, kf, cnet)
    return nnue_17(p, q)


@njit(cache=True, nogil=True)
def evaluate_pair_counts(big_net, small_net, big_nn, small_nn, ply, board, ksq_white, ksq_black, side,
                         pieces, simple_eval, material, rule50, optimism, scratch_big, scratch_small,
                         cache_big=None, cache_small=None, kf=None, cnet_big=None, cnet_small=None):
    """Stockfish 17.1's Eval::evaluate with both nets, material counts given (see the module docstring): the one
    statement of the pair decision, for ``evaluate_pair``, the reports and the search. The optional arguments
    choose the evaluation path for each net as in ``quantfish.nnue.stack`` (refresh caches, C kernel)."""
    bucket = bucket_of(pieces)
    if abs(simple_eval) > SMALLNET_THRESHOLD:
        p, q, nnue = net_terms_17(small_net, small_nn, ply, board, ksq_white, ksq_black, side, bucket,
                                  scratch_small, cache_small, kf, cnet_small)
        if abs(nnue) >= REEVAL_THRESHOLD:
            return final_eval_17(nnue, p, q, material, rule50, optimism)
    p, q, nnue = net_terms_17(big_net, big_nn, ply, board, ksq_white, ksq_black, side, bucket, scratch_big,
                              cache_big, kf, cnet_big)
    return final_eval_17(nnue, p, q, material, rule50, optimism)


@njit(cache=True, nogil=True)
def evaluate_pair(big_net, small_net, big_nn, small_nn, ply, board, bb, ksq_white, ksq_black, side, rule50,
                  optimism, scratch_big, scratch_small):
    """Stockfish 17.1's Eval::evaluate with both nets (stm view); see the module docstring."""
    pieces, simple, mat = material_17_bb(bb, side)
    return evaluate_pair_counts(big_net, small_net, big_nn, small_nn, ply, board, ksq_white, ksq_black, side,
                                pieces, simple, mat, rule50, optimism, scratch_big, scratch_small)


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
    l1 = arrays.ft_bias.shape[0]
    nb = arrays.ft_psqt.shape[1]
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
    raw = int(raw_scheme(p, q, arrays.qscheme[b]) if arrays.params[P_SCHEME] else nnue_raw(p, q))
    return EvalReport(b, [int(v) for v in psqt_out], [int(v) for v in pos_out], raw, adj, cplx,
                      int(final_eval(adj, cplx, PSQ_EG_NONE, npm, rule50, optimism)), int(pieces), int(npm))


class PairReport(NamedTuple):
    """All integers of one 17.1 two-net evaluation, side-to-move view (as sf17.1_reference.tsv)."""

    bucket: int
    big_psqt: list            # raw, before / 16, all 8 buckets
    big_positional: list
    small_psqt: list
    small_positional: list
    simple_eval: int
    use_smallnet: bool        # |simple_eval| > 962
    reeval_big: bool          # the small net's |nnue| < 236, so the big net decided
    used_net: str             # "big" or "small"
    big_nnue: int             # big net's blend tdiv(125 psqt16 + 131 pos16, 128)
    big_raw: int              # big net's psqt16 + pos16 (the eval command's "NNUE evaluation" line)
    nnue: int                 # blended value of the used net
    complexity: int
    material: int
    final: int                # Eval::evaluate with ``optimism`` (compiled evaluate_pair)
    pieces: int


@njit(cache=True, nogil=True)
def _report_pair(big, small, board, bb, side, rule50, optimism, big_nn, small_nn, sb, ss,
                 big_p, big_q, small_p, small_q):
    refresh_ply(big, big_nn.acc, big_nn.psqt, big_nn.computed, 0, board)
    forward_all(big, big_nn.acc, big_nn.psqt, 0, side, big_p, big_q, sb)
    refresh_ply(small, small_nn.acc, small_nn.psqt, small_nn.computed, 0, board)
    forward_all(small, small_nn.acc, small_nn.psqt, 0, side, small_p, small_q, ss)
    # The final value through the search entry point, from fresh stacks (ply 0 refreshed lazily).
    big_nn.computed[:] = 0
    small_nn.computed[:] = 0
    ksq_w = 64
    ksq_b = 64
    for sq in range(64):
        if board[sq] == 6:
            ksq_w = sq
        elif board[sq] == 14:
            ksq_b = sq
    return evaluate_pair(big, small, big_nn, small_nn, 0, board, bb, ksq_w, ksq_b, side, rule50, optimism, sb, ss)


def bitboards(board) -> np.ndarray:
    """uint64[16] bitboards of a mailbox (colour*8 + type; colour occupancies at 0 and 8)."""
    bb = np.zeros(16, np.uint64)
    for sq in np.flatnonzero(board):
        pc = int(board[sq])
        bb[pc] |= np.uint64(1 << int(sq))
        bb[pc & 8] |= np.uint64(1 << int(sq))
    return bb


def eval_report_pair(big, small, board, side: int, rule50: int, optimism: int = 0) -> PairReport:
    """Evaluate a mailbox from scratch with a 17.1 pair, all 8 buckets of both nets; ``big``/``small`` are
    ``Net`` or ``Net.arrays()``."""
    big = big.arrays() if hasattr(big, "arrays") else big
    small = small.arrays() if hasattr(small, "arrays") else small
    board = np.ascontiguousarray(board, dtype=np.int8)
    nb = big.ft_psqt.shape[1]
    big_l1, small_l1 = big.ft_bias.shape[0], small.ft_bias.shape[0]
    outs = [np.zeros(nb, np.int64) for _ in range(4)]
    final = _report_pair(big, small, board, bitboards(board), side, rule50, optimism,
                         make_stack(big_l1, 1, nb), make_stack(small_l1, 1, nb),
                         make_scratch(big_l1), make_scratch(small_l1), *outs)
    big_p, big_q, small_p, small_q = ([int(v) for v in o] for o in outs)
    pieces, simple, mat = (int(v) for v in material_17(board, side))
    b = int(bucket_of(pieces))
    use_small = abs(simple) > SMALLNET_THRESHOLD
    p, q, nnue = nnue_17(small_p[b], small_q[b]) if use_small else nnue_17(big_p[b], big_q[b])
    reeval = use_small and abs(nnue) < REEVAL_THRESHOLD
    if reeval:
        p, q, nnue = nnue_17(big_p[b], big_q[b])
    bp, bq, bn = nnue_17(big_p[b], big_q[b])
    return PairReport(b, big_p, big_q, small_p, small_q, simple, use_small, reeval,
                      "small" if use_small and not reeval else "big", int(bn), int(bp + bq), int(nnue),
                      int(abs(p - q)),
                      mat, int(final), pieces)
