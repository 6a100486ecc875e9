"""The search's one way into the net: the evaluation of the position at a ply of the search stack.

Whatever the net and the kernel (one net on the C kernel in one call, one net on the Numba path, a
Quantfish-format net by its scheme, a Stockfish 17.1 pair), the search calls ``evaluate``; it also tells the
evaluator when a move makes a new ply (``new_child``), so that the child's accumulators are brought up to date
when, and only if, it is evaluated, and when a search starts from a new root (``new_root``).

The search hands over its state by reference (one pointer: the search's fields are many); the evaluator reads
these fields of it, and no others (``EVALUATOR_FIELDS``):

* ``eval_mode``: int64[MODE_SIZE], which path evaluates (``M_*``), set by whoever builds the state;
* ``net``, ``small_net``: ``quantfish.nnue.netdir`` directories of the net (a pair's big net) and of a pair's small
  net (``netdir.unused()`` without one);
* ``nn``: the net's ``AccumulatorStack``; ``small_computed``: the small net's computed flags (its feature changes
  are ``nn``'s);
* ``kf``: the kernel's functions (``quantfish.nnue.kernel.loader.KernelFuncs``); ``cx``: the one-call context
  (``quantfish.nnue.kernel.ceval``);
* ``eval_cache``: int64[entries, 2], the one net's outputs by Zobrist key;
* ``tap``, ``tap_boards``, ``tap_rows``: the evaluation tap (``new_tap``), off unless asked for.

The tap keeps a sample of the positions the net evaluates, with the net's raw output: what a smaller net is
trained to reproduce (data generation's ``--sample``), taken exactly where the search needs the net. A
position is kept when a hash of its key and the tap's seed falls in one of ``keep_one_in`` slots, so the sample
is deterministic and a position evaluated twice is kept both times or neither (duplicates are dropped by the
reader of the tap). Only one net evaluated by Stockfish's arithmetic is tapped (not a pair, not a scheme).
"""
import numpy as np

from quantfish.core.bitops import popcount
from quantfish.core.position import ST_CASTLE, ST_EP, ST_FULLMOVE, ST_KEY, ST_KSQ, ST_RULE50, ST_SIDE
from quantfish.core.types import BLACK, BLACK_PIECES, WHITE, WHITE_PIECES
from quantfish.nnue.accumulator import AccumulatorStack
from quantfish.nnue.formulas import evaluate_pair_counts, finish_bb, finish_bb_gen, material_17_bb, nnue_raw
from quantfish.nnue.kernel.ceval import evaluate_c
from quantfish.nnue.layers import bucket_of
from quantfish.nnue.netdir import unpack as unpack_net
from quantfish.nnue.stack import net_output, net_output_scheme
from quantfish.runtime.intrinsics import prefetch
from quantfish.runtime.jit import njit

EVALUATOR_FIELDS = ("eval_mode", "net", "small_net", "nn", "small_computed", "kf", "cx", "eval_cache", "tap",
                    "tap_boards", "tap_rows")

M_USE_C = 0          # 1: the C kernel evaluates, 0: the Numba path
M_PAIR = 1           # 1: a Stockfish 17.1 pair evaluates (big net ``net``, small ``small_net``)
M_SCHEME = 2         # 1: ``net`` is a Quantfish-format net (its scheme's forward pass)
M_ONE_CALL = 3       # 1: one net on the C kernel, evaluated in one kernel call (``cx``)
M_GENERATION = 4     # that net's generation (quantfish.nnue.architecture GEN_*), for the final formula
MODE_SIZE = 5
CACHE_ENTRY_BYTES = 2 * 8
LOW_32 = 0xFFFFFFFF

# The tap's settings and count (int64[TAP_SIZE]) and the columns of its rows (int64[capacity, TAP_COLUMNS]).
TAP_ON, TAP_MASK, TAP_SEED, TAP_COUNT = 0, 1, 2, 3
TAP_SIZE = 4
C_KEY, C_RAW, C_SIDE, C_CASTLE, C_EP, C_RULE50, C_FULLMOVE = 0, 1, 2, 3, 4, 5, 6
TAP_COLUMNS = 7


def new_tap(capacity: int = 1, keep_one_in: int = 0, seed: int = 0) -> tuple:
    """(tap, boards int8[capacity, 64], rows int64[capacity, TAP_COLUMNS]): a tap keeping about one in
    ``keep_one_in`` (a power of two; 0: off) of the positions evaluated, up to ``capacity`` between resets."""
    if keep_one_in and keep_one_in & (keep_one_in - 1):
        raise ValueError(f"the tap keeps one in a power of two positions, not one in {keep_one_in}")
    tap = np.zeros(TAP_SIZE, np.int64)
    tap[TAP_ON] = keep_one_in > 0
    tap[TAP_MASK] = max(keep_one_in - 1, 0)
    tap[TAP_SEED] = np.int64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF).view(np.int64))
    return tap, np.zeros((capacity, 64), np.int8), np.zeros((capacity, TAP_COLUMNS), np.int64)


@njit(cache=True, nogil=True, inline="always")
def _mix(x):
    """splitmix64's finaliser: the bits of a key spread over every bit."""
    z = np.uint64(x)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _tap(E, key, raw, board, st):
    tap = E.tap
    if (_mix(key ^ tap[TAP_SEED]) & np.uint64(tap[TAP_MASK])) != np.uint64(0):
        return
    n = tap[TAP_COUNT]
    rows = E.tap_rows
    if n >= rows.shape[0]:
        return
    boards = E.tap_boards
    for sq in range(64):
        boards[n, sq] = board[sq]
    rows[n, C_KEY] = key
    rows[n, C_RAW] = raw
    rows[n, C_SIDE] = st[ST_SIDE]
    rows[n, C_CASTLE] = st[ST_CASTLE]
    rows[n, C_EP] = st[ST_EP]
    rows[n, C_RULE50] = st[ST_RULE50]
    rows[n, C_FULLMOVE] = st[ST_FULLMOVE]
    tap[TAP_COUNT] = n + 1


def new_mode(use_c: bool, pair: bool, scheme: bool, one_call: bool, generation: int) -> np.ndarray:
    mode = np.zeros(MODE_SIZE, np.int64)
    mode[M_USE_C], mode[M_PAIR], mode[M_SCHEME], mode[M_ONE_CALL] = use_c, pair, scheme, one_call
    mode[M_GENERATION] = generation
    return mode


@njit(cache=True, nogil=True, _nrt=False)
def evaluate(E, ply, bb, board, st, optimism):
    """NNUE evaluation of the position at ``ply`` (side to move's view), by the path ``E.eval_mode`` names.

    One net: the formula of its generation (``quantfish.nnue.formulas.finish_bb``); on the C kernel (``M_ONE_CALL``)
    the kernel brings the accumulators up to date and runs the net in one call (``quantfish.nnue.kernel.ceval``).
    A 17.1 pair (``M_PAIR``): ``quantfish.nnue.formulas.evaluate_pair_counts``, which takes the pair decision (small
    net when |simple_eval| is large, the big net otherwise or when the small net's result is small). Otherwise
    each net's accumulators are brought up to date lazily (``quantfish.nnue.stack``), through the refresh caches,
    on the path ``M_USE_C`` names. One net's outputs are kept in the evaluation cache: about a fifth of the
    bench's evaluations are of positions evaluated before, whose table entry holds no evaluation (a node cut
    before it stored one, or an entry replaced since).
    """
    mode = E.eval_mode
    kf = E.kf
    side = st[ST_SIDE]
    rule50 = st[ST_RULE50]
    ksq_w = st[ST_KSQ + WHITE]
    ksq_b = st[ST_KSQ + BLACK]
    if mode[M_PAIR]:
        # Which net of a pair evaluates depends on the small net's result: nothing is cached.
        big = unpack_net(E.net)
        pieces, simple, mat = material_17_bb(bb, side)
        small = unpack_net(E.small_net)
        nn = E.nn
        s_nn = AccumulatorStack(small.acc, small.psqt, E.small_computed, nn.dirty, nn.ndirty)
        if mode[M_USE_C] != 0:
            return evaluate_pair_counts(big.net, small.net, nn, s_nn, ply, board, ksq_w, ksq_b, side, pieces, simple,
                                        mat, rule50, optimism, big.scratch, small.scratch, big.cache, small.cache, kf,
                                        big.cnet, small.cnet)
        return evaluate_pair_counts(big.net, small.net, nn, s_nn, ply, board, ksq_w, ksq_b, side, pieces, simple,
                                    mat, rule50, optimism, big.scratch, small.scratch, big.cache, small.cache)
    # One net: its (psqt, positional) depend on the pieces and the side to move only, so a position met again
    # (in the next iteration, by a transposition) takes them from the evaluation cache instead of the net. They
    # are the net's own values, so the tree is the same with the cache as without it.
    key = st[ST_KEY]
    ec = E.eval_cache
    e = key & (ec.shape[0] - 1)
    w = ec[e, 1]
    if ec[e, 0] == key and w != 0:
        p, q = w >> 32, np.int64(np.int32(w & LOW_32))
    else:
        bucket = bucket_of(popcount(bb[WHITE_PIECES] | bb[BLACK_PIECES]))
        if mode[M_ONE_CALL]:
            p, q = evaluate_c(kf, E.cx, ply, board, ksq_w, ksq_b, side, bucket)
        else:
            # The Numba path (or a Quantfish-format net's scheme on it).
            views = unpack_net(E.net)
            if mode[M_SCHEME]:
                p, q = net_output_scheme(views.net, E.nn, ply, board, ksq_w, ksq_b, side, bucket, views.scratch,
                                         views.cache)
            else:
                p, q = net_output(views.net, E.nn, ply, board, ksq_w, ksq_b, side, bucket, views.scratch, views.cache)
        ec[e, 0] = key
        ec[e, 1] = (np.int64(p) << 32) | (np.int64(q) & LOW_32)
        if E.tap[TAP_ON] != 0 and mode[M_SCHEME] == 0:
            _tap(E, key, nnue_raw(p, q), board, st)
    if mode[M_ONE_CALL]:
        return finish_bb_gen(mode[M_GENERATION], p, q, bb, side, rule50, optimism)
    return finish_bb(unpack_net(E.net).net, p, q, bb, side, rule50, optimism)


@njit(cache=True, nogil=True, inline="always")
def prefetch_cached(E, key):
    """Asks for the evaluation cache's entry of ``key`` when the move to it is made: ``evaluate`` reads it later,
    so its memory latency overlaps other work. Unprefetched, the cache's misses cost about what its hits saved."""
    ec = E.eval_cache
    prefetch(ec.ctypes.data + (key & (ec.shape[0] - 1)) * CACHE_ENTRY_BYTES)


@njit(cache=True, nogil=True, inline="always")
def new_child(E, ply, changed):
    """A move made from ``ply`` (``changed`` pieces, their feature changes already in ``E.nn.dirty[ply + 1]``, 0
    for a null move): the child's accumulators of both nets are not computed yet."""
    nn = E.nn
    nn.ndirty[ply + 1] = changed
    nn.computed[ply + 1, WHITE] = 0
    nn.computed[ply + 1, BLACK] = 0
    E.small_computed[ply + 1, WHITE] = 0
    E.small_computed[ply + 1, BLACK] = 0


@njit(cache=True, nogil=True)
def new_root(E):
    """A search from a new root: no accumulator of the stack is valid."""
    E.nn.computed[:] = 0
    E.small_computed[:] = 0
