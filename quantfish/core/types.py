"""Shared encodings of squares, colours and pieces, and the compiled accessors of their fields.

Every array in the engine and the NNUE code uses these numbers, so they live in one place. Squares: A1 = 0,
B1 = 1, ..., H8 = 63 (as python-chess). A piece code is ``colour * 8 + type``; 0 is an empty square. The
bitboard array of a position is indexed by piece code, and ``bb[colour * 8]`` (type 0) holds all of that
colour's pieces. Numba folds these module constants into the compiled code, so a name costs nothing.
"""
from quantfish.runtime.jit import njit

WHITE = 0
BLACK = 1

NO_PIECE_TYPE = 0
PAWN = 1
KNIGHT = 2
BISHOP = 3
ROOK = 4
QUEEN = 5
KING = 6

COLOUR_STRIDE = 8          # piece code = colour * COLOUR_STRIDE + type
COLOUR_SHIFT = 3
TYPE_MASK = 7

ALL_PIECES = 0             # the type slot of bb[colour * 8]: every piece of that colour
WHITE_PIECES, BLACK_PIECES = 0, 8
W_PAWN, W_KNIGHT, W_BISHOP, W_ROOK, W_QUEEN, W_KING = 1, 2, 3, 4, 5, 6
B_PAWN, B_KNIGHT, B_BISHOP, B_ROOK, B_QUEEN, B_KING = 9, 10, 11, 12, 13, 14

SQUARE_NB = 64
NO_SQUARE = 64
EMPTY = 0
SQUARE_MASK = 63
FILE_MASK = 7
RANK_SHIFT = 3

PIECE_LETTERS = " PNBRQK  pnbrqk"


@njit(cache=True, nogil=True, inline="always")
def type_of(piece):
    """The piece type (PAWN..KING) of a piece code, 0 for an empty square."""
    return piece & TYPE_MASK


@njit(cache=True, nogil=True, inline="always")
def colour_of(piece):
    return piece >> COLOUR_SHIFT


@njit(cache=True, nogil=True, inline="always")
def make_piece(colour, piece_type):
    return colour * COLOUR_STRIDE + piece_type


@njit(cache=True, nogil=True, inline="always")
def file_of(square):
    return square & FILE_MASK


@njit(cache=True, nogil=True, inline="always")
def rank_of(square):
    return square >> RANK_SHIFT
