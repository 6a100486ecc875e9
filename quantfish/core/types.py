"""Shared encodings of squares, colours and pieces.

Every array in the engine and the NNUE code uses these numbers, so they live in one place.
Squares: A1 = 0, B1 = 1, ..., H8 = 63 (as python-chess). A piece code is ``colour * 8 + type``;
0 is an empty square.
"""

WHITE = 0
BLACK = 1

NO_PIECE_TYPE = 0
PAWN = 1
KNIGHT = 2
BISHOP = 3
ROOK = 4
QUEEN = 5
KING = 6

NO_SQUARE = 64
EMPTY = 0

PIECE_LETTERS = " PNBRQK  pnbrqk"

