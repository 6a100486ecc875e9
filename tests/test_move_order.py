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


# Positions with a piece of each kind attacked by a lesser one, for either side, and a middlegame.
THREAT_FENS = [
    "4k3/8/2n5/8/3Q4/8/8/4K3 w - - 0 1",          # a queen attacked by a knight
    "4k3/8/8/2b5/8/R7/8/4K3 w - - 0 1",           # a rook attacked by a bishop
    "4k3/8/8/3p4/4N3/8/8/4K3 w - - 0 1",          # a knight attacked by a pawn
    "4k3/8/8/3q4/8/2N5/8/4K3 b - - 0 1",          # Black's queen attacked by a knight
    "4k3/8/8/4n3/3P4/8/8/4K3 b - - 0 1",          # Black's knight attacked by a pawn
    "4k3/8/8/8/8/8/8/R3K3 w - - 0 1",             # no threat; the rook checks from the eighth rank or the e-file
    "r3k2r/1b3ppp/p1n1pn2/1p1q4/3P4/1BN1PN2/PP3PPP/R2QR1K1 b kq - 0 1",
    FEN,
]


def reference_quiet_bonus(board, move):
    """Stockfish 15.1's ordering bonus of a quiet move, worked out with python-chess: 50000 / 25000 / 15000 for
    a queen / rook / other piece attacked by a lesser piece that moves where no lesser piece attacks (a
    queen to a square only rooks attack counts as the other pieces), and 16384 for a square from which the
    piece would check the king (the board's occupancy as it is before the move)."""
    import chess
    us, them = board.turn, not board.turn
    attacks = {pt: 0 for pt in chess.PIECE_TYPES}
    for pt in (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK):
        for sq in board.pieces(pt, them):
            attacks[pt] |= board.attacks_mask(sq)
    by_pawn = attacks[chess.PAWN]
    by_minor = by_pawn | attacks[chess.KNIGHT] | attacks[chess.BISHOP]
    by_rook = by_minor | attacks[chess.ROOK]
    pt = board.piece_type_at(move.from_square)
    attacker_of = {chess.QUEEN: by_rook, chess.ROOK: by_minor, chess.KNIGHT: by_pawn, chess.BISHOP: by_pawn}
    to = chess.BB_SQUARES[move.to_square]
    bonus = 0
    if pt in attacker_of and attacker_of[pt] & chess.BB_SQUARES[move.from_square]:
        if pt == chess.QUEEN and not by_rook & to:
            bonus = 50000
        elif pt == chess.ROOK and not by_minor & to:
            bonus = 25000
        elif not by_pawn & to:
            bonus = 15000
    king = board.king(them)
    occ = board.occupied
    diagonal = chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occ]
    straight = (chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occ]
                | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occ])
    checks = {chess.PAWN: chess.BB_PAWN_ATTACKS[them][king], chess.KNIGHT: chess.BB_KNIGHT_ATTACKS[king],
              chess.BISHOP: diagonal, chess.ROOK: straight, chess.QUEEN: diagonal | straight, chess.KING: 0}[pt]
    if checks & to:
        bonus += 16384
    return bonus


def test_quiet_bonus_against_python_chess():
    import chess
    from quantfish.core.movegen import check_info, generate_legal
    from quantfish.core.notation import move_to_uci
    from quantfish.core.position import ST_SIDE
    from quantfish.core.tables import tables
    from quantfish.search.movepick import is_quiet, quiet_bonus, threats
    T = tables()
    seen = set()
    for fen in THREAT_FENS:
        b = parse_fen(fen)
        board = chess.Board(fen)
        moves = np.zeros(256, dtype=np.int32)
        n = generate_legal(T, b.bb, b.board, b.st, moves)
        # as the search holds them: unsigned words (Python gives back plain integers)
        threat = tuple(np.uint64(x) for x in threats(T, b.bb, b.st[ST_SIDE]))
        info = tuple(np.uint64(x) for x in check_info(T, b.bb, b.st))
        for m in moves[:n]:
            move = chess.Move.from_uci(move_to_uci(int(m)))
            if not is_quiet(b.board, m) or board.is_castling(move):
                continue
            want = reference_quiet_bonus(board, move)
            assert quiet_bonus(b.board, m, threat, info) == want, (fen, move.uci())
            seen.add(want)
    # every kind of bonus occurred, alone and with a check
    assert {0, 15000, 25000, 50000, 16384, 15000 + 16384, 50000 + 16384} <= seen, seen
