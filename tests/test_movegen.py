"""Legal moves and FEN output agree with python-chess on suite positions and random games."""
import os
import random

import chess
import numpy as np
import pytest

from quantfish.core.epd import read_perft_suite
from quantfish.core.fen import parse_fen
from quantfish.core.position import ST_CASTLE, ST_EP, ST_FULLMOVE, ST_KEY, ST_KSQ, ST_RULE50, ST_SIDE
from quantfish.core.notation import legal_moves, move_to_uci, parse_uci_move, push
from tests.testdata import PERFT_DATA

DATA = str(PERFT_DATA)


def _suite_fens():
    fens = []
    for name in os.listdir(DATA):
        if name.endswith(".epd"):
            fens += [fen for fen, _ in read_perft_suite(os.path.join(DATA, name))]
    return fens


def _reference_moves(cb):
    return sorted(m.uci() for m in cb.legal_moves)


def _our_moves(board, chess960):
    return sorted(move_to_uci(m, chess960) for m in legal_moves(board))


def _count(board):
    """perft's bulk count of the last ply, which writes no moves."""
    from quantfish.core.movegen import count_legal
    from quantfish.core.tables import tables
    return int(count_legal(tables(), board.bb, board.board, board.st))


def _compare(board, cb):
    chess960 = cb.chess960
    assert _our_moves(board, chess960) == _reference_moves(cb), cb.fen()
    assert _count(board) == cb.legal_moves.count(), cb.fen()
    assert board.fen() == cb.fen(en_passant="xfen", shredder=False), cb.fen()


def test_suite_positions_match_python_chess():
    for fen in _suite_fens():
        cb = chess.Board(fen, chess960=True)
        board = parse_fen(fen, chess960=True)
        assert _our_moves(board, True) == _reference_moves(cb), fen
        assert _count(board) == cb.legal_moves.count(), fen


@pytest.mark.parametrize("seed", range(6))
def test_random_games_match_python_chess(seed):
    rng = random.Random(seed)
    positions = 0
    for game in range(25):
        if seed % 2:
            cb = chess.Board.from_chess960_pos(rng.randrange(960))
        else:
            cb = chess.Board()
        board = parse_fen(cb.fen(), chess960=cb.chess960)
        while not cb.is_game_over(claim_draw=False) and cb.ply() < 300:
            _compare(board, cb)
            positions += 1
            move = rng.choice(list(cb.legal_moves))
            ours = parse_uci_move(board, move.uci(), cb.chess960)
            board = push(board, ours)
            cb.push(move)
            # The incrementally updated position equals one parsed afresh (key included).
            fresh = parse_fen(cb.fen(), chess960=cb.chess960)
            fields = [ST_SIDE, ST_CASTLE, ST_EP, ST_RULE50, ST_FULLMOVE, ST_KEY, ST_KSQ, ST_KSQ + 1]
            assert (fresh.st[fields] == board.st[fields]).all() and (fresh.board == board.board).all(), cb.fen()
            assert (fresh.bb == board.bb).all()
    assert positions > 1000


def test_fen_round_trip_for_suite_positions():
    for fen in _suite_fens():
        board = parse_fen(fen, chess960=True)
        assert parse_fen(board.fen(), chess960=True).fen() == board.fen()
        cb = chess.Board(fen, chess960=True)
        assert board.fen() == cb.fen(en_passant="xfen"), fen


def test_illegal_uci_move_is_refused():
    board = parse_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    for text in ("e2e5", "e1g1", "zz", "e7e5", "a2a1q"):
        with pytest.raises(ValueError):
            parse_uci_move(board, text)


def test_tactical_moves_are_the_captures_and_queen_promotions():
    """Quiescence's generator: legal captures, en passant and queen promotions, or every evasion in check; given
    the position's checkers (``*_with``, as the search calls them), both generators give the same moves."""
    import numpy as np
    from quantfish.core.movegen import checkers, generate_legal_with, generate_tactical, generate_tactical_with
    from quantfish.core.position import MOVE_EP
    from quantfish.core.tables import tables
    rng = random.Random(99)
    T = tables()
    buf = np.empty(256, dtype=np.int32)
    checked = 0
    for game in range(30):
        cb = chess.Board()
        while not cb.is_game_over() and cb.ply() < 200:
            board = parse_fen(cb.fen())
            n = generate_tactical(T, board.bb, board.board, board.st, buf)
            got = sorted(int(m) for m in buf[:n])
            chk = np.uint64(checkers(T, board.bb, board.st))     # a uint64, as the search holds it
            n = generate_tactical_with(T, board.bb, board.board, board.st, buf, chk)  # as the search calls it
            assert sorted(int(m) for m in buf[:n]) == got
            n = generate_legal_with(T, board.bb, board.board, board.st, buf, chk)
            legal = legal_moves(board)
            assert sorted(int(m) for m in buf[:n]) == sorted(legal)
            if chk:
                want = sorted(legal)
            else:
                want = sorted(m for m in legal if board.board[(m >> 6) & 63] != 0 or m & MOVE_EP
                              or ((m >> 12) & 7 == 5 and board.board[(m >> 6) & 63] == 0)
                              or ((m >> 12) & 7 != 0 and board.board[(m >> 6) & 63] != 0))
                want = sorted(m for m in want if not (m >> 16) & 1)
            assert got == want, cb.fen()
            checked += 1
            cb.push(rng.choice(list(cb.legal_moves)))
    assert checked > 2000


def _check_gives_check(board, cb, T):
    """Both ways of deciding a check: from the move alone, and from the position's ``check_info``."""
    from quantfish.core.movegen import check_info, gives_check, gives_check_with
    info = tuple(np.uint64(x) for x in check_info(T, board.bb, board.st))   # as the search holds them
    for m in legal_moves(board):
        move = chess.Move.from_uci(move_to_uci(m, cb.chess960))
        want = cb.gives_check(move)
        assert bool(gives_check(T, board.bb, board.board, board.st, m)) == want, (cb.fen(), move.uci())
        assert bool(gives_check_with(T, board.bb, board.board, board.st, m, info)) == want, (cb.fen(), move.uci())


def test_gives_check_matches_python_chess():
    """The search decides checks before making a move: every legal move of the suites and of random games
    (standard and Chess960, so castling, en passant and promotions with discovered checks are covered)."""
    from quantfish.core.tables import tables
    T = tables()
    for fen in _suite_fens():
        _check_gives_check(parse_fen(fen, chess960=True), chess.Board(fen, chess960=True), T)
    rng = random.Random(7)
    checks = 0
    for game in range(40):
        cb = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 2 else chess.Board()
        board = parse_fen(cb.fen(), chess960=cb.chess960)
        while not cb.is_game_over(claim_draw=False) and cb.ply() < 250:
            _check_gives_check(board, cb, T)
            checks += sum(cb.gives_check(mv) for mv in cb.legal_moves)
            move = rng.choice(list(cb.legal_moves))
            board = push(board, parse_uci_move(board, move.uci(), cb.chess960))
            cb.push(move)
    assert checks > 1000
