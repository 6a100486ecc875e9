"""The search's move picker: each pick is the first move of the highest score left, a good capture that loses
material is demoted when first picked, and the sequence of picks is the one a plain selection sort gives."""
import random

import numpy as np
import pytest

from quantfish.core.fen import parse_fen

# A middlegame position with captures of every kind (winning, even and losing ones) and many quiet moves.
FEN = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1B1PPP/R2QKB1R w KQ - 0 8"


def reference_order(see_ge, T, b, moves, scores):
    """Picks by a selection sort written plainly: the first best score, the lazy exchange test, the swap."""
    from quantfish.core.position import ST_SIDE
    from quantfish.search.movepick import CAPTURE_SPAN, GOOD_CAPTURE, TT_MOVE_SCORE
    moves, scores = list(moves), list(scores)
    out = []
    for start in range(len(moves)):
        while True:
            best = max(range(start, len(moves)), key=lambda i: (scores[i], -i))
            s = scores[best]
            if GOOD_CAPTURE - CAPTURE_SPAN <= s < TT_MOVE_SCORE and \
                    not see_ge(T, b.bb, b.board, b.st[ST_SIDE], moves[best], 0):
                scores[best] = s - 2 * GOOD_CAPTURE
                continue
            break
        moves[start], moves[best] = moves[best], moves[start]
        scores[start], scores[best] = scores[best], scores[start]
        out.append((moves[start], scores[start]))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_picks_follow_a_plain_selection_sort_with_ties_and_losing_captures(seed):
    from quantfish.core.movegen import generate_legal
    from quantfish.core.position import ST_SIDE
    from quantfish.search.movepick import GOOD_CAPTURE, TT_MOVE_SCORE, pick_move as _pick_move
    from quantfish.search.see import see_ge
    from quantfish.core.tables import tables
    T = tables()
    b = parse_fen(FEN)
    moves = np.zeros(256, dtype=np.int32)
    n = generate_legal(T, b.bb, b.board, b.st, moves)
    rng = random.Random(seed)
    scores = np.zeros(256, dtype=np.int32)
    for i in range(n):
        captures = b.board[(moves[i] >> 6) & 63] != 0
        if captures:
            # Good-capture scores, few distinct values so that ties are common.
            scores[i] = GOOD_CAPTURE + 16 * rng.choice((100, 300, 500))
        else:
            scores[i] = rng.choice((0, 0, 5, -3, 7, 7, 100))      # quiet histories, many equal
    scores[rng.randrange(n)] = TT_MOVE_SCORE
    want = reference_order(see_ge, T, b, moves[:n], scores[:n])
    got = []
    for start in range(n):
        m = _pick_move(T, b.bb, b.board, b.st[ST_SIDE], moves, scores, start, n)
        got.append((int(m), int(scores[start])))
    assert got == [(int(m), int(s)) for m, s in want]
    assert any(s < 0 for _, s in want) and any(s == 0 for _, s in want)   # a capture demoted; ties among quiets
    assert sorted(int(m) for m in moves[:n]) == sorted(m for m, _ in want)
