"""Syzygy WDL probes inside the search: compiled code over the table files, mapped by Python.

The search probes a position right after a capture or a pawn move (clock at zero, no castling rights) when it
has few enough pieces, and takes a won, drawn or lost result as a bound instead of searching on. A probe runs
without Python: the material picks the table through a small hash, the pieces' squares are put in the
table's order and folded by its symmetries into an index (``_encode_piece``, ``_encode_pawn``), and the
value is decompressed from the block holding that index (``_decompress``). Captures come first
(``_probe_ab``), because a table's stored value is only meaningful when no capture does better; en passant
is tried after (``probe_wdl``). This follows the Syzygy format as described by its author and as python-chess
reads it; ``quantfish.tablebase.load`` parses the headers (in Python, once) into the arrays of ``TbArrays``, and the
tests compare every probe with python-chess's.

Values are those of python-chess's ``probe_wdl``: 2 win, 1 cursed win (a win the 50-move rule spoils),
0 draw, -1 blessed loss, -2 loss, for the side to move; ``TB_FAIL`` when no table covers the position.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.core.bitops import U0, lsb, pop_lsb, popcount
from quantfish.runtime.intrinsics import peek_u8
from quantfish.core.movegen import generate_legal
from quantfish.core.position import MOVE_CASTLE, MOVE_EP, ST_EP, ST_SIDE, make_move
from quantfish.runtime.jit import njit
from quantfish.core.types import COLOUR_STRIDE, NO_SQUARE, colour_of, file_of, type_of
from quantfish.core.position import move_to

TB_FAIL = 99
TB_PIECES = 7               # the most pieces a Syzygy table holds; ``TbScratch`` positions have room for them

# Per table (``TbArrays.tables`` rows).
TF_NUM = 0                  # pieces in the table
TF_PAWNS = 1                # 1: a table with pawns (encoded from the leading pawn's file)
TF_PAWNS0 = 2               # leading pawns (of one colour), then the other colour's pawns
TF_PAWNS1 = 3
TF_ENC = 4                  # pawnless encoding: 0 three or more unique pieces, 2 two (the kings)
TF_SYMMETRIC = 5            # 1: the same material for both colours (KRvKR)
TF_ADDR = 6                 # address of the mapped file
TF_LEN = 7                  # its length in bytes
TF_SIZE = 8

# Per (table, file * 2 + side) slot (``TbArrays.slots``): one compressed value block of the file.
SL_PRESENT = 0
SL_INDEX = 1                # file offsets of its index table, size table, data, symbol offsets, symbol patterns
SL_SIZES = 2
SL_DATA = 3
SL_OFFSET = 4               # less 2 * min_len, so that a code length indexes it directly
SL_SYMPAT = 5
SL_BLOCKSIZE = 6            # log2 of the block size
SL_IDXBITS = 7              # 0: every value is SL_MINLEN
SL_MINLEN = 8
SL_SYMLEN = 9               # start of its symbol lengths in TbArrays.symlen
SL_BASE = 10                # start of its canonical-code bases in TbArrays.base
SL_INDEX_END = 11           # bounds a damaged file cannot make the probe read past: end of the index table,
SL_SIZES_COUNT = 12         # entries of the size table, data blocks, symbols and code bases
SL_BLOCKS = 13
SL_SYMS = 14
SL_BASES = 15
SL_PIECES = 16              # TB_PIECES piece codes (colour * COLOUR_STRIDE + type) in the table's order
SL_NORM = SL_PIECES + TB_PIECES       # group sizes
SL_FACTOR = SL_NORM + TB_PIECES       # group multipliers of the index
SL_SIZE = SL_FACTOR + TB_PIECES

# Rows of TbArrays.squares: the square maps of the encoding.
SQ_TRIANGLE = 0
SQ_DIAG = 1
SQ_LOWER = 2
SQ_FLAP = 3
SQ_PTWIST = 4
SQ_FILE = 5                 # file to the pawn table's file (a-d), in the first 8 columns


class TbArrays(NamedTuple):
    """The parsed tables (``quantfish.tablebase.load``), read-only and shared by every search thread."""
    tables: np.ndarray      # int64[n, TF_SIZE]
    slots: np.ndarray       # int64[n, 8, SL_SIZE]
    symlen: np.ndarray      # int64[...] symbol lengths of every slot
    base: np.ndarray        # uint64[...] canonical-code bases of every slot
    hash_keys: np.ndarray   # int64[H] material code + 1 (0: empty), H a power of two
    hash_vals: np.ndarray   # int64[H] table index * 2 + 1 when the material is the table's mirrored
    squares: np.ndarray     # int64[6, 64] square maps (SQ_*)
    kk_idx: np.ndarray      # int64[10, 64] the two kings' index
    pawn_idx: np.ndarray    # int64[5, 24] the leading pawns' index base
    binom: np.ndarray       # int64[65, 8] binomial coefficients


# Rows of TbScratch.frames: each capture-search node's window and its place in its move list.
F_ALPHA = 0
F_BETA = 1
F_COUNT = 2
F_NEXT = 3


class TbScratch(NamedTuple):
    """Per-thread scratch of a probe."""
    pos: np.ndarray         # int64[TB_PIECES + 1] the squares being encoded
    dirty: np.ndarray       # int32[3, 3] make_move's changed pieces (unused here)
    frames: np.ndarray      # int64[4, TB_PIECES + 1] the capture search's nodes (F_*), one per capture made


def new_scratch() -> TbScratch:
    return TbScratch(np.zeros(TB_PIECES + 1, np.int64), np.zeros((3, 3), np.int32),
                     np.zeros((4, TB_PIECES + 1), np.int64))


@njit(cache=True, nogil=True, inline="always")
def material_code(bb):
    """Counts of pawns..queens of each colour, 3 bits each: which table a position needs (0: bare kings)."""
    code = 0
    for colour in range(2):
        for t in range(1, 6):
            code |= popcount(bb[colour * COLOUR_STRIDE + t]) << (3 * (colour * 5 + t - 1))
    return code


@njit(cache=True, nogil=True, inline="always")
def _byte(a):
    return np.int64(peek_u8(a))


@njit(cache=True, nogil=True, inline="always")
def _u16(a):
    return _byte(a) | (_byte(a + 1) << 8)


@njit(cache=True, nogil=True, inline="always")
def _u32(a):
    return _u16(a) | (_u16(a + 2) << 16)


@njit(cache=True, nogil=True, inline="always")
def _u32be(a):
    return (_byte(a) << 24) | (_byte(a + 1) << 16) | (_byte(a + 2) << 8) | _byte(a + 3)


@njit(cache=True, nogil=True, inline="always")
def _u64be(a):
    return (np.uint64(_u32be(a)) << np.uint64(32)) | np.uint64(_u32be(a + 4))


@njit(cache=True, nogil=True)
def _decompress(TB, t, s, idx):
    """The stored value at ``idx`` of slot ``s`` of table ``t``: find its block, then walk the block's
    canonical Huffman codes to the symbol holding it, and that symbol's pair tree down to the value."""
    sl = TB.slots[t, s]
    if sl[SL_IDXBITS] == 0:
        return sl[SL_MINLEN]
    addr = TB.tables[t, TF_ADDR]
    idxbits = sl[SL_IDXBITS]
    main = idx >> idxbits
    lit = (idx & ((1 << idxbits) - 1)) - (1 << (idxbits - 1))
    entry = sl[SL_INDEX] + 6 * main
    if main < 0 or entry + 6 > sl[SL_INDEX_END]:
        return -1
    entry += addr
    block = _u32(entry)
    lit += _u16(entry + 4)
    sizes = addr + sl[SL_SIZES]
    n_sizes = sl[SL_SIZES_COUNT]
    if block >= n_sizes:
        return -1
    if lit < 0:
        while lit < 0 and block > 0:
            block -= 1
            lit += _u16(sizes + 2 * block) + 1
    else:
        while block < n_sizes and lit > _u16(sizes + 2 * block):
            lit -= _u16(sizes + 2 * block) + 1
            block += 1
    if lit < 0 or block >= sl[SL_BLOCKS]:
        return -1                       # a damaged file: the walk left the table
    ptr = addr + sl[SL_DATA] + (block << sl[SL_BLOCKSIZE])
    end = addr + TB.tables[t, TF_LEN]   # the code is read ahead, past its block's end at times
    min_len = sl[SL_MINLEN]
    base = sl[SL_BASE] - min_len
    top = min_len + sl[SL_BASES]        # code lengths run from min_len below top
    symlen = sl[SL_SYMLEN]
    syms = sl[SL_SYMS]
    offset = addr + sl[SL_OFFSET]
    code = _u64be(ptr)
    ptr += 8
    bits = 0                            # bits of ``code`` consumed since it was last refilled
    while True:
        length = min_len
        while length < top and code < TB.base[base + length]:
            length += 1
        if length >= top:
            return -1
        sym = _u16(offset + 2 * length) + np.int64((code - TB.base[base + length]) >> np.uint64(64 - length))
        if sym < 0 or sym >= syms:
            return -1
        if lit < TB.symlen[symlen + sym] + 1:
            break
        lit -= TB.symlen[symlen + sym] + 1
        code = code << np.uint64(length)
        bits += length
        if bits >= 32:
            if ptr + 4 > end:
                return -1
            bits -= 32
            code |= np.uint64(_u32be(ptr)) << np.uint64(bits)
            ptr += 4
    sympat = addr + sl[SL_SYMPAT]
    while TB.symlen[symlen + sym] != 0:
        w = sympat + 3 * sym
        left = ((_byte(w + 1) & 0xF) << 8) | _byte(w)
        if left >= syms:
            return -1
        if lit < TB.symlen[symlen + left] + 1:
            sym = left
        else:
            lit -= TB.symlen[symlen + left] + 1
            sym = (_byte(w + 2) << 4) | (_byte(w + 1) >> 4)
        if sym >= syms:
            return -1
    return _byte(sympat + 3 * sym)


@njit(cache=True, nogil=True, inline="always")
def _offdiag(sq):
    return (sq >> 3) - file_of(sq)


@njit(cache=True, nogil=True, inline="always")
def _flipdiag(sq):
    return ((sq >> 3) | (sq << 3)) & 63


@njit(cache=True, nogil=True, inline="always")
def _binom(TB, x, y):
    return TB.binom[x, y] if x >= 0 else 0


@njit(cache=True, nogil=True, inline="always")
def _sort_group(pos, start, end):
    for j in range(start, end):
        for k in range(j + 1, end):
            if pos[j] > pos[k]:
                pos[j], pos[k] = pos[k], pos[j]


@njit(cache=True, nogil=True)
def _encode_groups(TB, pos, i, n, norm, factor, idx, shift):
    """Adds the index of the groups of like pieces from ``i`` on: each group's squares, less the squares
    already taken below them, as a combination (``shift``: 8 for the second colour's pawns, which never stand
    on the first rank)."""
    while i < n:
        t = norm[i]
        _sort_group(pos, i, i + t)
        s = 0
        for m in range(i, i + t):
            p = pos[m]
            below = 0
            for k in range(i):
                if p > pos[k]:
                    below += 1
            s += _binom(TB, p - below - shift, m - i + 1)
        idx += s * factor[i]
        i += t
        shift = 0
    return idx


@njit(cache=True, nogil=True)
def _encode_piece(TB, enc, n, pos, norm, factor):
    """Index of a pawnless position: mirror the first piece into the a1-d1-d4 triangle, then (enc 0) the
    first three unique pieces or (enc 2) the two kings together, then the other groups."""
    sqm = TB.squares
    if pos[0] & 0x04:
        for i in range(n):
            pos[i] ^= 0x07
    if pos[0] & 0x20:
        for i in range(n):
            pos[i] ^= 0x38
    first = 0
    while first < n and _offdiag(pos[first]) == 0:
        first += 1
    if first < (3 if enc == 0 else 2) and _offdiag(pos[first]) > 0:
        for i in range(n):
            pos[i] = _flipdiag(pos[i])
    if enc == 0:
        i = 1 if pos[1] > pos[0] else 0
        j = (1 if pos[2] > pos[0] else 0) + (1 if pos[2] > pos[1] else 0)
        if _offdiag(pos[0]) != 0:
            idx = sqm[SQ_TRIANGLE, pos[0]] * 63 * 62 + (pos[1] - i) * 62 + (pos[2] - j)
        elif _offdiag(pos[1]) != 0:
            idx = 6 * 63 * 62 + sqm[SQ_DIAG, pos[0]] * 28 * 62 + sqm[SQ_LOWER, pos[1]] * 62 + pos[2] - j
        elif _offdiag(pos[2]) != 0:
            idx = (6 * 63 * 62 + 4 * 28 * 62 + sqm[SQ_DIAG, pos[0]] * 7 * 28 + (sqm[SQ_DIAG, pos[1]] - i) * 28
                   + sqm[SQ_LOWER, pos[2]])
        else:
            idx = (6 * 63 * 62 + 4 * 28 * 62 + 4 * 7 * 28 + sqm[SQ_DIAG, pos[0]] * 7 * 6
                   + (sqm[SQ_DIAG, pos[1]] - i) * 6 + (sqm[SQ_DIAG, pos[2]] - j))
        start = 3
    else:
        idx = TB.kk_idx[sqm[SQ_TRIANGLE, pos[0]], pos[1]]
        start = 2
    return _encode_groups(TB, pos, start, n, norm, factor, idx * factor[0], 0)


@njit(cache=True, nogil=True)
def _encode_pawn(TB, n, pawns0, pawns1, pos, norm, factor):
    """Index of a position with pawns: the leading pawns (already on files a-d), then the other colour's
    pawns, then the other groups."""
    sqm = TB.squares
    if pos[0] & 0x04:
        for i in range(n):
            pos[i] ^= 0x07
    for i in range(1, pawns0):
        for j in range(i + 1, pawns0):
            if sqm[SQ_PTWIST, pos[i]] < sqm[SQ_PTWIST, pos[j]]:
                pos[i], pos[j] = pos[j], pos[i]
    t = pawns0 - 1
    idx = TB.pawn_idx[t, sqm[SQ_FLAP, pos[0]]]
    for i in range(t, 0, -1):
        idx += _binom(TB, sqm[SQ_PTWIST, pos[i]], t - i + 1)
    idx *= factor[0]
    if pawns1 > 0:
        idx = _encode_groups(TB, pos, pawns0, pawns0 + pawns1, norm, factor, idx, 8)
    return _encode_groups(TB, pos, pawns0 + pawns1, n, norm, factor, idx, 0)


@njit(cache=True, nogil=True)
def _find(TB, code):
    """Table index * 2 + mirrored of a material code, -1 when no table has it."""
    mask = TB.hash_keys.shape[0] - 1
    h = (code * 0x9E3779B1) & mask
    while TB.hash_keys[h] != 0:
        if TB.hash_keys[h] == code + 1:
            return TB.hash_vals[h]
        h = (h + 1) & mask
    return -1


@njit(cache=True, nogil=True)
def _fill(bb, sl, i, n, cmirror, mirror, pos):
    """Puts the squares of the pieces ``sl`` lists from ``i`` on into ``pos``; False if one is missing."""
    while i < n:
        pc = sl[SL_PIECES + i]
        b = bb[colour_of(pc ^ cmirror) * COLOUR_STRIDE + type_of(pc)]
        if b == U0:
            return False
        while b != U0 and i < n:
            pos[i] = lsb(b) ^ mirror
            b = pop_lsb(b)
            i += 1
    return True


@njit(cache=True, nogil=True)
def probe_table(TB, bb, side, pos):
    """The table's value of the position (bitboards ``bb``, ``side`` to move), captures not considered."""
    code = material_code(bb)
    if code == 0:
        return 0                        # bare kings
    found = _find(TB, code)
    if found < 0:
        return TB_FAIL
    t = found >> 1
    tf = TB.tables[t]
    if tf[TF_SYMMETRIC]:
        cmirror, mirror, bside = 8 * side, 0x38 * side, 0
    elif found & 1:
        cmirror, mirror, bside = 8, 0x38, 1 - side
    else:
        cmirror, mirror, bside = 0, 0, side
    n = tf[TF_NUM]
    if tf[TF_PAWNS] == 0:
        sl = TB.slots[t, bside]
        if sl[SL_PRESENT] == 0 or not _fill(bb, sl, 0, n, cmirror, 0, pos):
            return TB_FAIL
        idx = _encode_piece(TB, tf[TF_ENC], n, pos, sl[SL_NORM:SL_NORM + TB_PIECES],
                            sl[SL_FACTOR:SL_FACTOR + TB_PIECES])
        v = _decompress(TB, t, bside, idx)
        return TB_FAIL if v < 0 else v - 2
    # The leading pawns decide the file, which decides the slot and the other pieces' order.
    pawns0 = tf[TF_PAWNS0]
    lead = TB.slots[t, 0, SL_PIECES] ^ cmirror
    b = bb[colour_of(lead) * COLOUR_STRIDE + type_of(lead)]
    i = 0
    while b != U0 and i < pawns0:
        pos[i] = lsb(b) ^ mirror
        b = pop_lsb(b)
        i += 1
    if i != pawns0:
        return TB_FAIL
    sqm = TB.squares
    for k in range(1, pawns0):
        if sqm[SQ_FLAP, pos[0]] > sqm[SQ_FLAP, pos[k]]:
            pos[0], pos[k] = pos[k], pos[0]
    s = 2 * sqm[SQ_FILE, pos[0] & 7] + bside
    sl = TB.slots[t, s]
    if sl[SL_PRESENT] == 0 or not _fill(bb, sl, pawns0, n, cmirror, mirror, pos):
        return TB_FAIL
    idx = _encode_pawn(TB, n, pawns0, tf[TF_PAWNS1], pos, sl[SL_NORM:SL_NORM + TB_PIECES],
                       sl[SL_FACTOR:SL_FACTOR + TB_PIECES])
    v = _decompress(TB, t, s, idx)
    return TB_FAIL if v < 0 else v - 2


@njit(cache=True, nogil=True, _nrt=False)
def _probe_ab(T, TB, bbs, boards, sts, moves, r0, scratch, alpha, beta):
    """The value of the position in row ``r0`` with its captures (not en passant) tried first, within
    (alpha, beta): an alpha-beta search of captures down to the table values, rows after ``r0`` holding its
    positions. Written as a loop over ``scratch.frames`` rather than by recursion: Numba's cache cannot load a
    recursive function that another cached function calls."""
    fr = scratch.frames
    fr[F_ALPHA, 0], fr[F_BETA, 0] = alpha, beta
    fr[F_COUNT, 0], fr[F_NEXT, 0] = generate_legal(T, bbs[r0], boards[r0], sts[r0], moves[r0]), 0
    d = 0
    while True:
        r = r0 + d
        board = boards[r]
        descended = False
        while fr[F_NEXT, d] < fr[F_COUNT, d]:
            m = moves[r, fr[F_NEXT, d]]
            fr[F_NEXT, d] += 1
            if m & (MOVE_EP | MOVE_CASTLE) or board[move_to(m)] == 0:
                continue
            make_move(T, bbs[r], board, sts[r], bbs[r + 1], boards[r + 1], sts[r + 1], m, scratch.dirty)
            d += 1
            fr[F_ALPHA, d], fr[F_BETA, d] = -fr[F_BETA, d - 1], -fr[F_ALPHA, d - 1]
            fr[F_COUNT, d] = generate_legal(T, bbs[r + 1], boards[r + 1], sts[r + 1], moves[r + 1])
            fr[F_NEXT, d] = 0
            descended = True
            break
        if descended:
            continue
        # Every capture of this node is searched: its value is the table's unless a capture did better.
        v = probe_table(TB, bbs[r], sts[r][ST_SIDE], scratch.pos)
        if v == TB_FAIL:
            return TB_FAIL
        value = max(fr[F_ALPHA, d], v)
        # Back up to the parents; a cutoff ends the parent too.
        while True:
            if d == 0:
                return value
            d -= 1
            v = -value
            if v > fr[F_ALPHA, d]:
                if v >= fr[F_BETA, d]:
                    value = v
                    continue
                fr[F_ALPHA, d] = v
            break


@njit(cache=True, nogil=True, _nrt=False)
def probe_wdl(T, TB, bbs, boards, sts, moves, r, scratch):
    """The WDL value (-2..2) of the position in row ``r`` of the stacks, ``TB_FAIL`` when the tables do not
    cover it or a position a capture leads to. Rows ``r + 1`` to ``r + TB_PIECES`` are overwritten. A position
    of more than ``TB_PIECES`` pieces fails at once: its captures would run past the scratch's frames."""
    if popcount(bbs[r][0] | bbs[r][8]) > TB_PIECES:
        return TB_FAIL
    v = _probe_ab(T, TB, bbs, boards, sts, moves, r, scratch, -2, 2)
    if v == TB_FAIL or sts[r][ST_EP] == NO_SQUARE:
        return v
    # En passant: the table assumes it away, so a legal one is tried as a move of its own.
    bb, board, st = bbs[r], boards[r], sts[r]
    n = generate_legal(T, bb, board, st, moves[r])
    best_ep = -3
    only_ep = True
    for k in range(n):
        m = moves[r, k]
        if not m & MOVE_EP:
            only_ep = False
            continue
        make_move(T, bb, board, st, bbs[r + 1], boards[r + 1], sts[r + 1], m, scratch.dirty)
        v0 = _probe_ab(T, TB, bbs, boards, sts, moves, r + 1, scratch, -2, 2)
        if v0 == TB_FAIL:
            return TB_FAIL
        best_ep = max(best_ep, -v0)
    if best_ep > -3:
        if best_ep >= v:
            v = best_ep
        elif v == 0 and only_ep:        # stalemate but for the en passant capture, which must be played
            v = best_ep
    return v
