"""Upcoming repetitions: the cuckoo tables of reversible piece moves, and the test of whether the side to move
can return to an earlier position of the path in one move (Stockfish's ``has_game_cycle``)."""
import numpy as np

from quantfish.core.fen import parse_fen
from quantfish.core.notation import legal_moves, parse_uci_move, push
from quantfish.core.position import MOVE_CASTLE, ST_CASTLE, ST_RULE50, move_from, move_promo, move_to
from quantfish.core.tables import (BISHOP_DIRS, CUCKOO_SIZE, CUCKOO_TO_SHIFT, OFF_CUCKOO_KEY, OFF_CUCKOO_MOVE,
                                   ROOK_DIRS, _fill_cuckoo, cuckoo_first, cuckoo_second, tables)
from quantfish.core.types import EMPTY, PAWN, SQUARE_MASK, type_of
from quantfish.search.driver import board_key
from quantfish.search.rules import upcoming_repetition

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def test_cuckoo_holds_every_reversible_piece_move():
    # 3,668 is the number of (piece, square pair) moves on an empty board that Stockfish asserts it stores.
    T = tables()
    keys = T[OFF_CUCKOO_KEY:OFF_CUCKOO_KEY + CUCKOO_SIZE]
    assert np.count_nonzero(keys) == 3668
    fresh = T.copy()
    fresh[OFF_CUCKOO_KEY:OFF_CUCKOO_MOVE + CUCKOO_SIZE] = 0
    assert _fill_cuckoo(fresh, ROOK_DIRS, BISHOP_DIRS) == 3668


def _cuckoo_move(T, diff):
    for slot in (cuckoo_first(diff), cuckoo_second(diff)):
        if T[OFF_CUCKOO_KEY + slot] == diff:
            return int(T[OFF_CUCKOO_MOVE + slot])
    return None


def test_cuckoo_finds_the_key_difference_of_real_moves():
    # Every quiet non-pawn move of these positions changes the key by an entry of the table naming its squares.
    T = tables()
    checked = 0
    for fen in (START, "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
                "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", "4k3/8/8/3q4/8/8/8/3QK3 b - - 0 1"):
        board = parse_fen(fen)
        for m in legal_moves(board):
            if type_of(board.board[move_from(m)]) == PAWN or board.board[move_to(m)] != EMPTY \
                    or m & MOVE_CASTLE or move_promo(m):
                continue
            child = push(board, m)
            if child.st[ST_CASTLE] != board.st[ST_CASTLE]:     # castling rights lost: not reversible
                continue
            found = _cuckoo_move(T, board_key(board) ^ board_key(child))
            assert found is not None
            assert {found & SQUARE_MASK, found >> CUCKOO_TO_SHIFT} == {move_from(m), move_to(m)}
            checked += 1
    assert checked > 50


def _line(fen, moves):
    """The boards of a game from ``fen`` through ``moves``, and their keys."""
    boards = [parse_fen(fen)]
    for text in moves:
        boards.append(push(boards[-1], parse_uci_move(boards[-1], text)))
    keys = np.array([board_key(b) for b in boards], dtype=np.uint64)
    return boards, keys


def _cycle(boards, keys, root_index):
    b = boards[-1]
    idx = len(boards) - 1
    return upcoming_repetition(tables(), keys, b.bb, b.board, b.st, idx, idx - root_index)


def test_a_return_after_the_root_is_found():
    # After 1 e4 e5 2 Nf3 Nf6 3 Ng1, Black can play Ng8 and be back where 2 Nf3 was played.
    boards, keys = _line(START, ["e2e4", "e7e5", "g1f3", "g8f6", "f3g1"])
    assert _cycle(boards, keys, root_index=1)      # that position is after the root
    assert not _cycle(boards, keys, root_index=2)  # it is the root, and stood only once


def test_a_return_before_the_root_needs_a_repeated_position():
    boards, keys = _line(START, ["e2e4", "e7e5", "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"])
    # Ng8 returns to the position after 2 Nf3 Nf6 3 Ng1 Ng8 4 ..., which stood twice: before the root it counts.
    assert _cycle(boards, keys, root_index=len(boards) - 1)
    # Without the first round trip it stood once: no draw to claim.
    boards2, keys2 = _line(START, ["e2e4", "e7e5", "g1f3", "g8f6", "f3g1"])
    assert not _cycle(boards2, keys2, root_index=len(boards2) - 1)


def test_a_blocked_return_is_not_a_cycle():
    # The black rook went a4-e4 through c4 while the white bishop was away; the bishop's return to c4 blocks the
    # rook's way back, though the key difference is a single rook move.
    blocked, keys = _line("8/7k/8/8/r1B5/8/8/6K1 b - - 0 1", ["h7h8", "c4b3", "a4e4", "b3c4"])
    assert not _cycle(blocked, keys, root_index=0)
    # The same with the bishop off the rook's rank: the way back is clear.
    clear, keys = _line("8/7k/8/2B5/r7/8/8/6K1 b - - 0 1", ["h7h8", "c5b6", "a4e4", "b6c5"])
    assert _cycle(clear, keys, root_index=0)


def test_the_search_for_cycles_stops_at_the_last_irreversible_move():
    boards, keys = _line(START, ["e2e4", "e7e5", "g1f3", "g8f6", "f3g1"])
    b = boards[-1]
    assert b.st[ST_RULE50] == 3
    st = b.st.copy()
    st[ST_RULE50] = 2      # as if the position three plies back were before a capture or a pawn move
    assert not upcoming_repetition(tables(), keys, b.bb, b.board, st, len(boards) - 1, len(boards) - 1)
    assert upcoming_repetition(tables(), keys, b.bb, b.board, b.st, len(boards) - 1, len(boards) - 1)
