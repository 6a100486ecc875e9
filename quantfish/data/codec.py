"""One training record packed and unpacked in compiled code (the byte layout is ``quantfish.data.records``).

Compiled so that the generator packs positions inside its self-play loop and the feature extractor
unpacks a batch with no Python work per position. Boards are int8[64] mailboxes of ``quantfish.core.types``
piece codes (colour * 8 + type), the codes ``quantfish.nnue.features`` takes.
"""
import numpy as np

from quantfish.runtime.jit import njit

RECORD_SIZE = 32
PIECES_AT = 8          # 16 bytes of 4-bit piece codes, in ascending square order, low nibble first
SCORE_AT = 24          # int16, little-endian
STM_AT = 26
RESULT_AT = 27
RESULT_MASK = 3           # bits 0-1 of the result byte: 0 loss, 1 draw, 2 win
RAW_LABEL = 0x80          # bit 7 of the result byte: the score is a net's raw output (internal units), not cp
RIGHTS_AT = 28         # castling rights in bits 0-3, en passant file + 1 in bits 4-7 (0: none)
HALFMOVE_AT = 29
FULLMOVE_AT = 30       # uint16, little-endian
NO_SQUARE = 64

# Error codes of ``record_error`` (``quantfish.data.records.ERRORS`` has the messages).
OK = 0
BAD_SIDE = 1
BAD_RESULT = 2
BAD_COUNT = 3
BAD_PIECE = 4
BAD_PADDING = 5
BAD_KINGS = 6
BAD_PAWN = 7
BAD_EP = 8
BAD_FULLMOVE = 9
BAD_SCORE = 10


@njit(cache=True, nogil=True)
def pack_record(board, side, castling, ep, halfmove, fullmove, score, result, out):
    """Write one position into ``out`` (uint8[32]).

    ``ep`` is the en passant square or 64; ``score`` (centipawns) and ``result`` (0 loss, 1 draw, 2 win)
    are from the side to move's view. The halfmove clock is capped at 255 and the move number at 65535,
    the score at +-32767.
    """
    for i in range(RECORD_SIZE):
        out[i] = 0
    occ = np.uint64(0)
    n = 0
    for sq in range(64):
        pc = board[sq]
        if pc != 0:
            occ |= np.uint64(1) << np.uint64(sq)
            if n < 32:
                b = PIECES_AT + (n >> 1)
                out[b] |= np.uint8((pc & 15) << (4 * (n & 1)))
            n += 1
    for i in range(8):
        out[i] = np.uint8((occ >> np.uint64(8 * i)) & np.uint64(255))
    s = min(max(score, -32767), 32767) & 0xFFFF
    out[SCORE_AT] = np.uint8(s & 255)
    out[SCORE_AT + 1] = np.uint8(s >> 8)
    out[STM_AT] = np.uint8(side)
    out[RESULT_AT] = np.uint8(result)
    out[RIGHTS_AT] = np.uint8((castling & 15) | ((0 if ep >= 64 else (ep & 7) + 1) << 4))
    out[HALFMOVE_AT] = np.uint8(min(max(halfmove, 0), 255))
    f = min(max(fullmove, 1), 65535)
    out[FULLMOVE_AT] = np.uint8(f & 255)
    out[FULLMOVE_AT + 1] = np.uint8(f >> 8)


@njit(cache=True, nogil=True, inline="always")
def occupancy(row):
    occ = np.uint64(0)
    for i in range(8):
        occ |= np.uint64(row[i]) << np.uint64(8 * i)
    return occ


@njit(cache=True, nogil=True, inline="always")
def record_score(row):
    """The score field as stored: centipawns, or a net's raw output when ``is_raw_label``."""
    s = np.int64(row[SCORE_AT]) | (np.int64(row[SCORE_AT + 1]) << 8)
    return s - 65536 if s >= 32768 else s


@njit(cache=True, nogil=True, inline="always")
def record_result(row):
    """The game result, side to move's view: 0 loss, 1 draw, 2 win."""
    return row[RESULT_AT] & RESULT_MASK


@njit(cache=True, nogil=True, inline="always")
def is_raw_label(row):
    """True when the score is the teacher net's raw output (``NNUE::evaluate`` before any scaling, internal
    units) rather than a search score in centipawns."""
    return (row[RESULT_AT] & RAW_LABEL) != 0


@njit(cache=True, nogil=True)
def unpack_board(row, board):
    """Fill ``board`` (int8[64]) from record ``row``; returns the number of pieces (at most 32 are read)."""
    for sq in range(64):
        board[sq] = 0
    occ = occupancy(row)
    n = 0
    for sq in range(64):
        if (occ >> np.uint64(sq)) & np.uint64(1):
            if n < 32:
                board[sq] = (row[PIECES_AT + (n >> 1)] >> (4 * (n & 1))) & 15
            n += 1
    return n


@njit(cache=True, nogil=True)
def ep_square(row):
    """The en passant square of a record, 64 if none."""
    f = row[RIGHTS_AT] >> 4
    if f == 0:
        return NO_SQUARE
    return (40 if row[STM_AT] == 0 else 16) + (f - 1)


@njit(cache=True, nogil=True)
def record_error(row, board):
    """``OK`` or the first problem of one record (``board`` is int8[64] scratch, left holding the pieces)."""
    if row[STM_AT] > 1:
        return BAD_SIDE
    if (row[RESULT_AT] & RESULT_MASK) > 2 or (row[RESULT_AT] & ~(RESULT_MASK | RAW_LABEL)) != 0:
        return BAD_RESULT
    n = unpack_board(row, board)
    if n < 2 or n > 32:
        return BAD_COUNT
    for i in range(32):
        pc = (row[PIECES_AT + (i >> 1)] >> (4 * (i & 1))) & 15
        if i >= n and pc != 0:
            return BAD_PADDING
        if i < n and (pc & 7 == 0 or pc & 7 == 7):
            return BAD_PIECE
    kings_w = 0
    kings_b = 0
    for sq in range(64):
        pc = board[sq]
        if pc == 0:
            continue
        pt = pc & 7
        if pt == 6:
            if pc == 6:
                kings_w += 1
            else:
                kings_b += 1
        if pt == 1 and (sq < 8 or sq >= 56):
            return BAD_PAWN
    if kings_w != 1 or kings_b != 1:
        return BAD_KINGS
    f = row[RIGHTS_AT] >> 4
    if f > 8:
        return BAD_EP
    if f != 0:
        ep = ep_square(row)
        pawn = ep - 8 if row[STM_AT] == 0 else ep + 8
        them_pawn = 9 if row[STM_AT] == 0 else 1
        if board[ep] != 0 or board[pawn] != them_pawn:
            return BAD_EP
    if row[FULLMOVE_AT] == 0 and row[FULLMOVE_AT + 1] == 0:
        return BAD_FULLMOVE
    if record_score(row) == -32768:
        return BAD_SCORE
    return OK


@njit(cache=True, nogil=True)
def first_error(data):
    """(index, code) of the first bad record of ``data`` (uint8[n, 32]), or (-1, OK)."""
    board = np.zeros(64, np.int8)
    for i in range(data.shape[0]):
        e = record_error(data[i], board)
        if e != OK:
            return i, e
    return -1, OK


@njit(cache=True, nogil=True)
def unpack_boards(data, boards):
    """Mailboxes of a batch: ``boards`` is int8[n, 64]."""
    for i in range(data.shape[0]):
        unpack_board(data[i], boards[i])
