"""Lookup tables of the move generator, all in one uint64 array ``T``.

Compiled functions take ``T`` as an argument (Numba freezes global arrays into the code and
cannot cache them); the offsets below are plain ints, which Numba folds in as constants.
"""
import numpy as np

from quantfish.core.bitops import U0, U1, popcount
from quantfish.core.sliders import BISHOP_DIRS, ROOK_DIRS, relevant_mask, slide_attacks, subsets
from quantfish.core.magics import BISHOP_MAGICS, ROOK_MAGICS
from quantfish.core.types import BISHOP, COLOUR_STRIDE, KING, KNIGHT, ROOK, SQUARE_NB
from quantfish.runtime.jit import njit

OFF_KNIGHT = 0
OFF_KING = 64
OFF_PAWN = 128          # + colour * 64 + square: squares a pawn of that colour attacks
OFF_BETWEEN = 256       # + a * 64 + b: squares strictly between a and b on a line, else 0
OFF_LINE = 4352         # + a * 64 + b: the whole line through a and b, else 0
OFF_RMASK = 8448
OFF_RMAGIC = 8512
OFF_RSHIFT = 8576
OFF_ROFF = 8640
OFF_BMASK = 8704
OFF_BMAGIC = 8768
OFF_BSHIFT = 8832
OFF_BOFF = 8896
OFF_ZPIECE = 8960       # + piece * 64 + square
OFF_ZSIDE = 9984
OFF_ZCASTLE = 9985      # + castling-rights mask (0..15)
OFF_ZEP = 10001         # + file
OFF_SLIDERS = 10240
ROOK_TABLE_SIZE = 102400
BISHOP_TABLE_SIZE = 5248
# Upcoming-repetition detection (Stockfish's cuckoo tables, after Marcel van Kervinck's method): every
# reversible move of a non-pawn piece on an empty board, found by the key difference it makes (the piece's two
# squares and the side) in two cuckoo-hashed slots: keys at OFF_CUCKOO_KEY, moves (from | to <<
# CUCKOO_TO_SHIFT) at OFF_CUCKOO_MOVE.
CUCKOO_SIZE = 8192
CUCKOO_MASK = CUCKOO_SIZE - 1
CUCKOO_SECOND_SHIFT = 16
CUCKOO_TO_SHIFT = 6
OFF_CUCKOO_KEY = OFF_SLIDERS + ROOK_TABLE_SIZE + BISHOP_TABLE_SIZE
OFF_CUCKOO_MOVE = OFF_CUCKOO_KEY + CUCKOO_SIZE
TABLE_SIZE = OFF_CUCKOO_MOVE + CUCKOO_SIZE

KNIGHT_STEPS = np.array([[1, 2], [2, 1], [2, -1], [1, -2], [-1, -2], [-2, -1], [-2, 1], [-1, 2]], dtype=np.int64)
KING_STEPS = np.array([[1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1]], dtype=np.int64)


@njit(cache=True)
def _steps(sq, steps):
    r0, f0 = sq // 8, sq % 8
    b = U0
    for i in range(steps.shape[0]):
        r, f = r0 + steps[i, 0], f0 + steps[i, 1]
        if 0 <= r < 8 and 0 <= f < 8:
            b |= U1 << np.uint64(r * 8 + f)
    return b


@njit(cache=True)
def _fill_magic(T, off_mask, off_magic, off_shift, off_off, start, magics, dirs):
    pos = start
    for sq in range(64):
        mask = relevant_mask(sq, dirs)
        bits = popcount(mask)
        magic = magics[sq]
        shift = np.uint64(64 - bits)
        T[off_mask + sq] = mask
        T[off_magic + sq] = magic
        T[off_shift + sq] = shift
        T[off_off + sq] = np.uint64(pos)
        occs = subsets(mask)
        for i in range(occs.shape[0]):
            idx = np.int64((occs[i] * magic) >> shift)
            T[pos + idx] = slide_attacks(sq, occs[i], dirs)
        pos += 1 << bits
    return pos


@njit(cache=True)
def _fill_tables(T, rook_magics, bishop_magics, zobrist, knight_steps, king_steps, rook_dirs, bishop_dirs):
    for sq in range(64):
        T[OFF_KNIGHT + sq] = _steps(sq, knight_steps)
        T[OFF_KING + sq] = _steps(sq, king_steps)
        r, f = sq // 8, sq % 8
        w = U0
        b = U0
        for df in (-1, 1):
            if 0 <= f + df < 8:
                if r < 7:
                    w |= U1 << np.uint64(sq + 8 + df)
                if r > 0:
                    b |= U1 << np.uint64(sq - 8 + df)
        T[OFF_PAWN + sq] = w
        T[OFF_PAWN + 64 + sq] = b
    end = _fill_magic(T, OFF_RMASK, OFF_RMAGIC, OFF_RSHIFT, OFF_ROFF, OFF_SLIDERS, rook_magics, rook_dirs)
    _fill_magic(T, OFF_BMASK, OFF_BMAGIC, OFF_BSHIFT, OFF_BOFF, end, bishop_magics, bishop_dirs)
    for a in range(64):
        for b2 in range(64):
            if a == b2:
                continue
            ba = U1 << np.uint64(a)
            bb2 = U1 << np.uint64(b2)
            for dirs in (rook_dirs, bishop_dirs):
                if slide_attacks(a, U0, dirs) & bb2:
                    T[OFF_BETWEEN + a * 64 + b2] = slide_attacks(a, bb2, dirs) & slide_attacks(b2, ba, dirs)
                    T[OFF_LINE + a * 64 + b2] = (slide_attacks(a, U0, dirs) & slide_attacks(b2, U0, dirs)) | ba | bb2
    for i in range(zobrist.shape[0]):
        T[OFF_ZPIECE + i] = zobrist[i]


@njit(cache=True, nogil=True, inline="always")
def cuckoo_first(key):
    """The first cuckoo slot of a key difference."""
    return np.int64(key & np.uint64(CUCKOO_MASK))


@njit(cache=True, nogil=True, inline="always")
def cuckoo_second(key):
    """The second cuckoo slot of a key difference."""
    return np.int64((key >> np.uint64(CUCKOO_SECOND_SHIFT)) & np.uint64(CUCKOO_MASK))


@njit(cache=True)
def _fill_cuckoo(T, rook_dirs, bishop_dirs):
    """Every move of a knight, bishop, rook, queen or king of either colour between two squares (one entry for
    both directions) into the cuckoo slots; returns how many (3,668)."""
    count = 0
    for colour in range(2):
        for piece_type in range(KNIGHT, KING + 1):
            pc = colour * COLOUR_STRIDE + piece_type
            for s1 in range(64):
                if piece_type == KNIGHT:
                    reach = T[OFF_KNIGHT + s1]
                elif piece_type == KING:
                    reach = T[OFF_KING + s1]
                else:
                    reach = U0
                    if piece_type != BISHOP:
                        reach |= slide_attacks(s1, U0, rook_dirs)
                    if piece_type != ROOK:
                        reach |= slide_attacks(s1, U0, bishop_dirs)
                for s2 in range(s1 + 1, 64):
                    if not reach & (U1 << np.uint64(s2)):
                        continue
                    key = T[OFF_ZPIECE + pc * SQUARE_NB + s1] ^ T[OFF_ZPIECE + pc * SQUARE_NB + s2] ^ T[OFF_ZSIDE]
                    move = np.uint64(s1 | s2 << CUCKOO_TO_SHIFT)
                    slot = cuckoo_first(key)
                    # Cuckoo insertion: take the slot, and move what was there to its other slot, until an
                    # empty one is found.
                    while True:
                        old_key = T[OFF_CUCKOO_KEY + slot]
                        old_move = T[OFF_CUCKOO_MOVE + slot]
                        T[OFF_CUCKOO_KEY + slot] = key
                        T[OFF_CUCKOO_MOVE + slot] = move
                        if old_move == U0:
                            break
                        key = old_key
                        move = old_move
                        slot = cuckoo_second(key) if slot == cuckoo_first(key) else cuckoo_first(key)
                    count += 1
    return count


def zobrist_keys():
    """Fixed pseudo-random keys: pieces x squares, side, castling masks, ep files."""
    rng = np.random.Generator(np.random.PCG64(20221203))
    keys = rng.integers(0, 2**64 - 1, size=OFF_ZEP + 8 - OFF_ZPIECE, dtype=np.uint64, endpoint=True)
    # Castling keys are xor-combinations of four base keys so that the mask indexes them directly.
    base = keys[OFF_ZCASTLE - OFF_ZPIECE: OFF_ZCASTLE - OFF_ZPIECE + 4].copy()
    for mask in range(16):
        k = np.uint64(0)
        for r in range(4):
            if mask >> r & 1:
                k ^= base[r]
        keys[OFF_ZCASTLE - OFF_ZPIECE + mask] = k
    # Empty squares (piece code 0) never contribute.
    keys[:64] = 0
    return keys


_TABLES = None


def tables():
    """The table array, built once per process (a few milliseconds once compiled)."""
    global _TABLES
    if _TABLES is None:
        T = np.zeros(TABLE_SIZE, dtype=np.uint64)
        _fill_tables(T, np.array(ROOK_MAGICS, dtype=np.uint64), np.array(BISHOP_MAGICS, dtype=np.uint64),
                     zobrist_keys(), KNIGHT_STEPS, KING_STEPS, ROOK_DIRS, BISHOP_DIRS)
        _fill_cuckoo(T, ROOK_DIRS, BISHOP_DIRS)
        _TABLES = T
    return _TABLES
