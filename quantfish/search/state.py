"""The search's state: every array the compiled search reads or writes, each under its own name.

``SearchState`` is a NamedTuple passed into compiled code and read by field name (``S.killers``), so a field
cannot be taken for another of the same type, and adding one does not shift the others. ``Control`` is the
one record the search shares with the Python driver (node count, stop flag, limits, flags), also read by name
(``ctl.nodes``): a numpy structured array of one element, which compiled code sees as a record.

The compiled search receives the state through one pointer (``quantfish.runtime.intrinsics.state_ref``, made at the root
of each iteration), so a field costs nothing until it is read. Passed as a tuple, every array was copied (some
8 words) into each call, once per node: 30 more arrays cost 14% of the nodes per second, and the pointer made
the search 14% faster. A net's many arrays are reached through one directory of addresses (``quantfish.nnue.netdir``).

The fields the evaluation reads are ``quantfish.nnue.evaluator.EVALUATOR_FIELDS``: the search hands the whole state
to ``evaluator.evaluate``. ``new_state`` builds the state next to this declaration; ``quantfish.search.driver.Searcher`` owns it and keeps the
nets' arrays alive while their directories are in use.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from quantfish.core.movegen import MAX_MOVES
from quantfish.core.position import ST_SIZE
from quantfish.tablebase.probe import new_scratch
from quantfish.runtime.largepages import aligned_zeros

MAX_PLY = 120                 # deepest ply the search reaches (then it returns the static evaluation)
STACK = MAX_PLY + 8           # rows of every per-ply array
HISTORY_KEYS = 1024           # game positions before the root kept for repetition detection
TTE_SIZE = 6                  # a probed TT entry: (move, score, eval, depth, bound, PV flag)
REDUCTION_SIZE = 256          # the reduction factors are indexed by depth and by move number, each capped at 255
CONT_KEYS = 16 * 64           # continuation-history keys: moved piece (0..15) * 64 + to-square
CORRECTION_BITS = 15          # the correction histories have 2**15 rows a side (as Stockfish 17.1's)
# The net's outputs of this many positions (4 MB a thread, on huge pages: its entry is prefetched at every move
# and read at random), quantfish.nnue.evaluator.evaluate.
EVAL_CACHE_ENTRIES = 1 << 18

# The search's counters and flags, shared with the Python driver (which sets the limits and the stop flag).
CONTROL = np.dtype([
    ("now_s", np.int64),         # the clock, written here by quantfish.runtime.monoclock's clock_gettime: it writes
    ("now_ns", np.int64),        # (seconds, nanoseconds) at the record's address, so these two come first
    ("nodes", np.int64),         # nodes searched in this search
    ("stop", np.int64),          # set by the driver (time, stop command) or the node limit; polled
    ("seldepth", np.int64),      # deepest ply reached in this iteration
    ("max_nodes", np.int64),     # node limit, 0 for none
    ("root_index", np.int64),    # index of the root position in ``keys`` (the game history comes first)
    ("tt_gen", np.int64),        # transposition-table generation (age) of this search, 0..31
    ("root_depth", np.int64),    # depth of the current iteration
    ("n_root", np.int64),        # number of allowed root moves in ``root_moves`` (searchmoves, MultiPV)
    ("optimism_w", np.int64),    # optimism of each side, added by the evaluation formulas (0: none)
    ("optimism_b", np.int64),
    ("deadline", np.int64),      # stop when the clock (ns, quantfish.runtime.monoclock) passes this; 0 for none
    ("clock_id", np.int64),      # the clock_gettime clock the search reads (quantfish.runtime.monoclock.CLOCK_ID)
    ("best_changes", np.int64),  # times a root move other than the first became best (the driver resets it)
    ("tb_pieces", np.int64),     # Syzygy: probe positions of at most this many pieces (0: no tables)
    ("tb_depth", np.int64),      # ... and, with exactly that many, at this depth or deeper (SyzygyProbeDepth)
    ("tb_rule50", np.int64),     # 1: a cursed win or blessed loss counts as a draw (Syzygy50MoveRule)
    ("tb_hits", np.int64),       # positions the tables decided in this search
    ("root_delta", np.int64),    # the root's window width (beta - alpha) in this root search
])


class SearchState(NamedTuple):
    """Per-thread search arrays; rows are plies unless said otherwise."""

    bbs: np.ndarray             # uint64[STACK, 16] bitboards of the position at each ply
    boards: np.ndarray          # int8[STACK, 64] mailboxes
    sts: np.ndarray             # int64[STACK, ST_SIZE] scalar fields (quantfish.core.position ST_*)
    moves: np.ndarray           # int32[STACK, MAX_MOVES] generated moves
    scores: np.ndarray          # int32[STACK, MAX_MOVES] their ordering scores
    keys: np.ndarray            # uint64[HISTORY_KEYS + STACK] Zobrist keys: game history, then the search path
    tt: np.ndarray              # int64 transposition table (quantfish.search.tt), shared between searches
    pv_len: np.ndarray          # int64[STACK] end of the principal variation of each ply
    pv: np.ndarray              # int32[STACK, STACK] triangular principal-variation table
    killers: np.ndarray         # int32[STACK, 2] two killer moves per ply
    history: np.ndarray         # int16[2, 4096] butterfly history per side, from*64 + to (|h| <= 7183)
    cont_history: np.ndarray    # int16[CONT_KEYS, CONT_KEYS] continuation history: [earlier move][this move],
                                # each keyed by moved piece * 64 + to (row 0: no earlier move, never written)
    capture_history: np.ndarray # int16[CONT_KEYS, 8] capture history: [moved piece * 64 + to][captured type]
    counters: np.ndarray        # int32[16 * 64] counter-move per (piece, to) of the previous move
    cur_move: np.ndarray        # int32[STACK] move made at each ply (MOVE_NULL for a null move)
    excluded: np.ndarray        # int32[STACK] the move a singular-extension search leaves out at a ply, else 0
    double_ext: np.ndarray      # int32[STACK] double extensions on the path up to and including each ply's move
    ctl: np.ndarray             # CONTROL[1] counters and flags
    nn: tuple                   # the net's accumulator stack (quantfish.nnue.accumulator.AccumulatorStack)
    net: np.ndarray             # quantfish.nnue.netdir directory of the net (or the pair's big net)
    tte: np.ndarray             # int64[STACK, TTE_SIZE] the TT entry probed at each ply
    root_moves: np.ndarray      # int32[MAX_MOVES] root moves allowed (ctl.n_root of them)
    evals: np.ndarray           # int64[STACK] static evaluation at each ply (VALUE_NONE in check)
    quiets: np.ndarray          # int32[STACK, 64] quiet moves tried at each ply, for history maluses
    captures: np.ndarray        # int32[STACK, 32] captures and promotions tried at each ply, likewise
    lmr: np.ndarray             # int32[REDUCTION_SIZE] late-move reduction factors (``reduction_factors``)
    kf: tuple                   # quantfish.nnue.kernel.loader.KernelFuncs (placeholders of the same types on the Numba path)
    small_net: np.ndarray       # quantfish.nnue.netdir directory of a 17.1 pair's small net, else netdir.unused()
    small_computed: np.ndarray  # uint8[STACK, 2] the small net's computed flags (its moves are ``nn``'s)
    clock: object               # quantfish.runtime.monoclock.clock_gettime, called with (ctl.clock_id, ctl's address)
    cx: np.ndarray              # int64 evaluation context of ``net`` for the C kernel (quantfish.nnue.kernel.ceval), in the one-call mode
    tb: tuple                   # quantfish.tablebase.probe.TbArrays of the Syzygy tables (shared, read-only), or empty ones
    tb_scratch: tuple           # quantfish.tablebase.probe.TbScratch of this thread's probes
    eval_cache: np.ndarray      # int64[EVAL_CACHE_ENTRIES, 2] (Zobrist key, the one net's (psqt, positional)
                                # packed); (0, 0) is empty. Cleared with the histories; one net's, so a new
                                # net gets a new state.
    eval_mode: np.ndarray       # int64[MODE_SIZE]: which path evaluates (quantfish.nnue.evaluator M_*)
    tap: np.ndarray             # the evaluation tap (quantfish.nnue.evaluator.new_tap): settings and count,
    tap_boards: np.ndarray      # ... the positions it kept,
    tap_rows: np.ndarray        # ... and their keys, fields and the net's raw output
    corr_pawn: np.ndarray       # int16[2, 2**CORRECTION_BITS] correction histories (quantfish.search.correction):
                                # [side to move][pawn structure],
    corr_minor: np.ndarray      # int16[2, 2**CORRECTION_BITS] ... [side to move][knights and bishops],
    corr_non_pawn: np.ndarray   # int16[4, 2**CORRECTION_BITS] ... [colour * 2 + side to move][colour's other pieces],
    corr_cont: np.ndarray       # int16[CONT_KEYS, CONT_KEYS] ... [move two plies back][move one ply back]


def reduction_factors() -> np.ndarray:
    """Stockfish 15.1's late-move reduction factors, 20.26 ln i (its one-thread value); a move's reduction grows
    with the product of its depth's and its move number's (quantfish.search.tree._base_reduction)."""
    t = np.zeros(REDUCTION_SIZE, dtype=np.int32)
    for i in range(1, REDUCTION_SIZE):
        t[i] = int(20.26 * math.log(i))
    return t


def new_control() -> np.ndarray:
    return np.zeros(1, CONTROL)


def new_state(tt, ctl, nn, net, kf, small_net, small_computed, clock, cx, tb, eval_mode, tap) -> SearchState:
    """A state with fresh per-ply arrays around the given shared parts (see the field comments)."""
    return SearchState(
        bbs=np.zeros((STACK, 16), np.uint64), boards=np.zeros((STACK, 64), np.int8),
        sts=np.zeros((STACK, ST_SIZE), np.int64),
        moves=np.zeros((STACK, MAX_MOVES), np.int32), scores=np.zeros((STACK, MAX_MOVES), np.int32),
        keys=np.zeros(HISTORY_KEYS + STACK, np.uint64), tt=tt,
        pv_len=np.zeros(STACK, np.int64), pv=np.zeros((STACK, STACK), np.int32),
        killers=np.zeros((STACK, 2), np.int32), history=np.zeros((2, 4096), np.int16),
        cont_history=aligned_zeros((CONT_KEYS, CONT_KEYS), np.int16, 64),
        capture_history=np.zeros((CONT_KEYS, 8), np.int16),
        counters=np.zeros(16 * 64, np.int32), cur_move=np.zeros(STACK, np.int32),
        excluded=np.zeros(STACK, np.int32), double_ext=np.zeros(STACK, np.int32),
        ctl=ctl, nn=nn, net=net, tte=np.zeros((STACK, TTE_SIZE), np.int64),
        root_moves=np.zeros(MAX_MOVES, np.int32), evals=np.zeros(STACK, np.int64),
        quiets=np.zeros((STACK, 64), np.int32),
        captures=np.zeros((STACK, 32), np.int32), lmr=reduction_factors(), kf=kf,
        small_net=small_net, small_computed=small_computed, clock=clock, cx=cx, tb=tb, tb_scratch=new_scratch(),
        eval_cache=aligned_zeros((EVAL_CACHE_ENTRIES, 2), np.int64, 64), eval_mode=eval_mode, tap=tap[0],
        tap_boards=tap[1], tap_rows=tap[2], corr_pawn=np.zeros((2, 1 << CORRECTION_BITS), np.int16),
        corr_minor=np.zeros((2, 1 << CORRECTION_BITS), np.int16),
        corr_non_pawn=np.zeros((4, 1 << CORRECTION_BITS), np.int16),
        corr_cont=aligned_zeros((CONT_KEYS, CONT_KEYS), np.int16, 64))
