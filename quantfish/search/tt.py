"""The transposition table: one int64 array of buckets of two entries, each entry (key XOR data, data), so a bucket
is 32 bytes and one probe touches one cache line (the array is 64-byte aligned).

A data word packs the move (17 bits), the score and the evaluation (16 bits each), the depth + 16 (7 bits), the
PV flag (1), the bound (2) and the search's generation (5). Entries are written with no lock by every Lazy SMP
thread: an entry torn by two writers fails its key check (``tt_probe``) instead of giving another position's
move. Mate scores are stored from the node (``score_to_tt``) and read back from the root (``score_from_tt``).
"""
import numpy as np

from quantfish.runtime.jit import njit
from quantfish.search.values import MATE_IN_MAX

BOUND_UPPER = 1
BOUND_LOWER = 2
BOUND_EXACT = 3
TT_PV = 4          # or-ed into a stored bound: the position is or was on a principal variation
TT_DEPTH_MAX = 111  # a stored depth is capped to fit its 7 bits (depth + 16)
TT_BUCKET = 4      # int64 words per bucket
MOVE_BITS = 0x1FFFF


@njit(cache=True, nogil=True, inline="always")
def _tt_pack(move, score, ev, depth, bound, gen):
    """One data word: move (17 bits), score and eval (16 each), depth + 16 (7), the PV flag (1), bound (2),
    generation (5)."""
    return (np.int64(move) | (np.int64(score + 32768) << 17) | (np.int64(ev + 32768) << 33)
            | (np.int64(min(depth, TT_DEPTH_MAX) + 16) << 49) | (np.int64((bound >> 2) & 1) << 56)
            | (np.int64(bound & 3) << 57) | (np.int64(gen & 31) << 59))


@njit(cache=True, nogil=True, inline="always")
def _tt_depth(d):
    """The depth stored in data word ``d`` (its 7-bit field holds depth + 16)."""
    return ((d >> 49) & 0x7F) - 16


@njit(cache=True, nogil=True, inline="always")
def tt_bucket(tt, key):
    """Index in ``tt`` of the bucket of ``key`` (the Zobrist key as int64 bits)."""
    return (key & (tt.shape[0] // TT_BUCKET - 1)) * TT_BUCKET


@njit(cache=True, nogil=True)
def tt_probe(tt, key, out):
    """Fills out = (move, score, eval, depth, bound, PV flag) and returns True on a hit.

    An entry is (key XOR data, data), so that an entry torn by two threads writing it at once (Lazy SMP; the
    words are written one at a time, with no lock) fails the key check instead of giving another position's
    move: the data word is read once, and checked and decoded from that one read."""
    i = tt_bucket(tt, key)
    for j in range(0, TT_BUCKET, 2):
        d = tt[i + j + 1]
        if tt[i + j] ^ d == key:
            out[0] = d & MOVE_BITS
            out[1] = ((d >> 17) & 0xFFFF) - 32768
            out[2] = ((d >> 33) & 0xFFFF) - 32768
            out[3] = _tt_depth(d)
            out[4] = (d >> 57) & 3
            out[5] = (d >> 56) & 1
            return True
    return False


@njit(cache=True, nogil=True)
def tt_store(tt, key, move, score, ev, depth, bound, gen):
    """Stores an entry; ``bound`` may carry ``TT_PV``."""
    i = tt_bucket(tt, key)
    slot = -1
    for j in range(0, TT_BUCKET, 2):
        if tt[i + j] ^ tt[i + j + 1] == key:
            slot = i + j
            break
    if slot < 0:
        # Replace the shallower entry, preferring entries from older searches.
        best = 1 << 30
        for j in range(0, TT_BUCKET, 2):
            d = tt[i + j + 1]
            age = (gen - ((d >> 59) & 31)) & 31
            worth = _tt_depth(d) - 8 * age
            if d == 0:
                worth = -(1 << 20)
            if worth < best:
                best = worth
                slot = i + j
    else:
        old = tt[slot + 1]
        if move == 0:
            move = old & MOVE_BITS
        old_depth = _tt_depth(old)
        old_gen = (old >> 59) & 31
        if (bound & 3) != BOUND_EXACT and depth < old_depth - 3 and old_gen == (gen & 31):
            return
    data = _tt_pack(move, score, ev, depth, bound, gen)
    tt[slot] = key ^ data
    tt[slot + 1] = data


@njit(cache=True, nogil=True)
def tt_hashfull(tt, gen):
    """Permille of the first thousand entries used by the current search."""
    used = 0
    n = min(1000, tt.shape[0] // 2)
    for e in range(n):
        d = tt[2 * e + 1]
        if d != 0 and ((d >> 59) & 31) == (gen & 31):
            used += 1
    return used * 1000 // n


@njit(cache=True, nogil=True, inline="always")
def score_to_tt(s, ply):
    if s >= MATE_IN_MAX:
        return s + ply
    if s <= -MATE_IN_MAX:
        return s - ply
    return s


@njit(cache=True, nogil=True, inline="always")
def score_from_tt(s, ply):
    if s >= MATE_IN_MAX:
        return s - ply
    if s <= -MATE_IN_MAX:
        return s + ply
    return s
