"""Legal moves and FEN output agree with python-chess on suite positions and random games."""
import os
import random

import chess
import pytest

from engine.epd import read_perft_suite
from engine.fen import parse_fen
from engine.position import ST_CASTLE, ST_EP, ST_FULLMOVE, ST_KEY, ST_KSQ, ST_RULE50, ST_SIDE
from engine.notation import legal_moves, move_to_uci, parse_uci_move, push

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "perft")


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


def _compare(board, cb):
    chess960 = cb.chess960
    assert _our_moves(board, chess960) == _reference_moves(cb), cb.fen()
    assert board.fen() == cb.fen(en_passant="xfen", shredder=False), cb.fen()


def test_suite_positions_match_python_chess():
    for fen in _suite_fens():
        cb = chess.Board(fen, chess960=True)
        board = parse_fen(fen, chess960=True)
        assert _our_moves(board, True) == _reference_moves(cb), fen


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
