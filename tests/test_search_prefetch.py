"""The key the search guesses for a child before making the move (to prefetch its TT bucket and evaluation-cache
entry early) is the child's real key for every ordinary move and capture. A wrong guess only wastes a prefetch,
so the search stays correct either way; this checks that the early prefetch lands where the child will look."""
import os
import random

from quantfish.core.epd import read_perft_suite
from quantfish.core.fen import parse_fen
from quantfish.core.notation import legal_moves, push
from quantfish.core.position import MOVE_CASTLE, MOVE_EP, ST_CASTLE, ST_EP, ST_KEY
from quantfish.search.tree import _child_key_guess
from quantfish.core.tables import tables
from tests.testdata import PERFT_DATA, require


def _positions():
    """The perft suites' positions and positions a few random moves past them."""
    require(PERFT_DATA)
    rng = random.Random(7)
    out = []
    for name in sorted(os.listdir(PERFT_DATA)):
        if name.endswith(".epd"):
            for fen, _ in read_perft_suite(os.path.join(PERFT_DATA, name)):
                board = parse_fen(fen, chess960=name.startswith("chess960"))
                out.append(board)
                for _ in range(6):
                    moves = legal_moves(board)
                    if not moves:
                        break
                    board = push(board, rng.choice(moves))
                    out.append(board)
    return out


def test_the_guess_is_the_childs_key_for_every_ordinary_move():
    T = tables()
    ordinary = special = 0
    for board in _positions():
        for m in legal_moves(board):
            child = push(board, m)
            guess = int(_child_key_guess(T, board.board, board.st, m))
            real = int(child.st[ST_KEY])
            plain = not (m & (MOVE_CASTLE | MOVE_EP | (7 << 12))) and child.st[ST_EP] == 64 \
                and child.st[ST_CASTLE] == board.st[ST_CASTLE]
            if plain:
                ordinary += 1
                assert guess == real, (board, m)
            else:
                special += 1
    assert ordinary > 10000 and special > 100
