"""The compiled Syzygy WDL probe (quantfish.tablebase.probe over quantfish.tablebase.load) against python-chess's ``probe_wdl``.

Every shared 3-4 man position and several thousand random ones (pawns, both sides to move, en passant and
captures that lead into smaller tables among them) must give python-chess's value exactly; a position no table
covers must fail, not guess.
"""
import random

import chess
import chess.syzygy
import numpy as np
import pytest

from quantfish.core.fen import parse_fen
from quantfish.core.movegen import MAX_MOVES
from quantfish.core.position import ST_SIZE
from quantfish.core.tables import tables
from quantfish.tablebase.load import CompiledTables, empty_arrays
from quantfish.tablebase.probe import TB_FAIL, TB_PIECES, new_scratch, probe_wdl
from tests.testdata import SYZYGY34 as TABLES, endgame_positions, require


@pytest.fixture(scope="module")
def compiled():
    return CompiledTables([str(require(TABLES))])


@pytest.fixture(scope="module")
def oracle():
    with chess.syzygy.open_tablebase(str(require(TABLES))) as tb:
        yield tb


class _Prober:
    """One probe's stacks, as the search holds them (row 0 the position, later rows the captures)."""

    def __init__(self, arrays):
        self.arrays, self.T, self.scratch = arrays, tables(), new_scratch()
        self.bbs = np.zeros((16, 16), np.uint64)
        self.boards = np.zeros((16, 64), np.int8)
        self.sts = np.zeros((16, ST_SIZE), np.int64)
        self.moves = np.zeros((16, MAX_MOVES), np.int32)

    def __call__(self, fen):
        p = parse_fen(fen)
        self.bbs[0], self.boards[0], self.sts[0] = p.bb, p.board, p.st
        return int(probe_wdl(self.T, self.arrays, self.bbs, self.boards, self.sts, self.moves, 0, self.scratch))


def test_loads_every_table(compiled):
    assert len(compiled) == 35 and compiled.max_pieces == 4     # 35 WDL files of 3 and 4 men are shared


def test_shared_positions_equal_python_chess(compiled, oracle):
    probe = _Prober(compiled.arrays)
    fens = [param.values[0] for param in endgame_positions()]
    assert len(fens) > 200
    wrong = [(fen, oracle.probe_wdl(chess.Board(fen)), probe(fen)) for fen in fens
             if probe(fen) != oracle.probe_wdl(chess.Board(fen))]
    assert wrong == []


def _random_board(rng):
    """A legal position of 3 or 4 men, a quarter of them just after a double pawn push that can be taken en
    passant; or None."""
    board = chess.Board(None)
    board.turn = rng.random() < 0.5
    if rng.random() < 0.25:
        # The side not to move has just pushed a pawn two squares, next to a pawn of the side to move.
        pusher = not board.turn
        file = rng.randrange(8)
        rank = 3 if pusher == chess.WHITE else 4
        side_file = file + rng.choice((-1, 1))
        if not 0 <= side_file < 8:
            return None
        board.set_piece_at(chess.square(file, rank), chess.Piece(chess.PAWN, pusher))
        board.set_piece_at(chess.square(side_file, rank), chess.Piece(chess.PAWN, board.turn))
        board.ep_square = chess.square(file, rank - 1 if pusher == chess.WHITE else rank + 1)
        free = [sq for sq in range(64) if board.piece_at(sq) is None
                and sq not in (board.ep_square, chess.square(file, 1 if pusher == chess.WHITE else 6))]
        kings = rng.sample(free, 2)
        board.set_piece_at(kings[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(kings[1], chess.Piece(chess.KING, chess.BLACK))
        return board if board.is_valid() else None
    squares = rng.sample(range(64), 4)
    board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
    board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
    for sq in squares[2:2 + rng.choice((1, 2))]:
        piece_type = rng.choice((chess.PAWN, chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN))
        if piece_type == chess.PAWN and chess.square_rank(sq) in (0, 7):
            return None
        board.set_piece_at(sq, chess.Piece(piece_type, rng.random() < 0.5))
    return board if board.is_valid() else None


def test_random_positions_equal_python_chess(compiled, oracle):
    probe = _Prober(compiled.arrays)
    rng = random.Random(2026)
    checked = with_ep = with_capture = 0
    wrong = []
    while checked < 6000:
        board = _random_board(rng)
        if board is None:
            continue
        checked += 1
        with_ep += board.has_legal_en_passant()
        with_capture += any(board.generate_legal_captures())
        want, got = oracle.probe_wdl(board), probe(board.fen())
        if got != want:
            wrong.append((board.fen(), want, got))
    assert wrong == []
    assert with_ep > 50 and with_capture > 1000         # the paths that resolve captures were exercised


def test_positions_no_table_covers_fail(compiled):
    probe = _Prober(compiled.arrays)
    assert probe("8/5p2/8/4k3/8/2KQ4/3P4/8 w - - 0 1") == TB_FAIL      # five men
    assert probe("8/8/8/4k3/8/2K5/8/8 w - - 0 1") == 0                 # bare kings: drawn without a table
    assert _Prober(empty_arrays())("8/8/8/8/8/2k5/8/KQ6 w - - 0 1") == TB_FAIL


@pytest.mark.parametrize("tables_", ["empty", "loaded"])
def test_a_position_of_more_pieces_than_a_table_holds_fails_without_writing_past_the_scratch(tables_):
    # The probe's capture search keeps one frame and one stack row per capture made, room for TB_PIECES of them;
    # a crowded position (here 28 pieces, captures everywhere) must fail before it starts. Rows past the
    # promised ones carry a marker that must survive: without the check they were written over, and the frames
    # past their end (heap memory) with them.
    arrays = empty_arrays() if tables_ == "empty" else CompiledTables([str(require(TABLES))]).arrays
    probe = _Prober(arrays)
    probe.bbs[1:] = 0x5A5A
    probe.sts[1:] = 77
    assert probe("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1") == TB_FAIL
    assert (probe.bbs[TB_PIECES + 1:] == 0x5A5A).all() and (probe.sts[TB_PIECES + 1:] == 77).all()


def test_damaged_or_foreign_files_are_skipped(tmp_path):
    (tmp_path / "KQvK.rtbw").write_bytes(b"\x00" * 80)                # wrong magic and size
    (tmp_path / "notes.txt").write_text("not a table")
    real = require(TABLES) / "KRvK.rtbw"
    (tmp_path / "KRvK.rtbw").write_bytes(real.read_bytes())
    tables_ = CompiledTables([str(tmp_path)])
    assert len(tables_) == 1
    probe = _Prober(tables_.arrays)
    assert probe("8/8/8/8/8/2k5/1R6/K7 w - - 0 1") == 2
    assert probe("8/8/8/8/8/2k5/8/KQ6 w - - 0 1") == TB_FAIL


def test_truncated_and_scrambled_files_never_crash_the_probe(tmp_path):
    real = (require(TABLES) / "KRPvK.rtbw").read_bytes()
    # Truncated by 64 bytes: the size still looks like a table's, but its blocks run past the end.
    (tmp_path / "KRPvK.rtbw").write_bytes(real[:-64])
    cut = CompiledTables([str(tmp_path)])
    assert len(cut) == 0 and cut.skipped == ["KRPvK.rtbw"]
    # Whole, but every byte after the header scrambled: each probe gives a value in range or fails.
    rng = random.Random(7)
    scrambled = bytearray(real)
    for i in range(600, len(scrambled)):
        scrambled[i] = rng.randrange(256)
    (tmp_path / "KRPvK.rtbw").write_bytes(bytes(scrambled))
    tables_ = CompiledTables([str(tmp_path)])
    probe = _Prober(tables_.arrays)
    seen = set()
    for _ in range(3000):
        board = chess.Board(None)
        wk, bk, rook, pawn = rng.sample(range(8, 56), 4)
        for sq, piece in ((wk, "K"), (bk, "k"), (rook, "R"), (pawn, "P")):
            board.set_piece_at(sq, chess.Piece.from_symbol(piece))
        board.turn = rng.random() < 0.5
        if board.is_valid():
            seen.add(probe(board.fen()))
    assert seen <= {-2, -1, 0, 1, 2, TB_FAIL} and seen
