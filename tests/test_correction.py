"""The correction histories (quantfish.search.correction), with values worked out by hand from Stockfish 17.1's
rule: the correction is (7685 pawn + 7495 minor + 9144 (white non-pawn + black non-pawn) + 6469 continuation) /
131072 of the side to move's entries; a node's bonus is (score - static evaluation) * depth / 8 within +-256,
and each table takes its share of it (111, 146, 162 and 143 / 128), truncated toward zero, moving its entry
as every history moves (towards +-1024)."""
from typing import NamedTuple

import chess
import numpy as np
import pytest

from quantfish.core.fen import parse_fen
from quantfish.core.position import ST_KEY
from quantfish.nnue.evaluator import evaluate as static_eval
from quantfish.search.correction import (CORRECTION_MAX, EVAL_LIMIT, Rows, corrected, minor_index, non_pawn_index,
                                         pawn_index, update_correction)
from quantfish.search.driver import Limits
from quantfish.search.state import CONT_KEYS, CORRECTION_BITS, TTE_SIZE
from quantfish.search.tree import search_root
from quantfish.search.tt import tt_probe
from quantfish.search.values import INF

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8"
ROWS = Rows(11, 22, 33, 44, 55, 66)
NO_CONTINUATION = Rows(11, 22, 33, 44, 0, 66)


class Tables(NamedTuple):
    corr_pawn: np.ndarray
    corr_minor: np.ndarray
    corr_non_pawn: np.ndarray
    corr_cont: np.ndarray


def tables():
    size = 1 << CORRECTION_BITS
    return Tables(np.zeros((2, size), np.int16), np.zeros((2, size), np.int16), np.zeros((4, size), np.int16),
                  np.zeros((CONT_KEYS, CONT_KEYS), np.int16))


def entries(t, side, r):
    """The side to move's entries at rows ``r``: pawn, minor, white's and black's non-pawn, continuation."""
    return (int(t.corr_pawn[side, r.pawn]), int(t.corr_minor[side, r.minor]),
            int(t.corr_non_pawn[side, r.white_non_pawn]), int(t.corr_non_pawn[2 + side, r.black_non_pawn]),
            int(t.corr_cont[r.earlier_move, r.last_move]))


def set_entries(t, side, r, values):
    pawn, minor, white, black, cont = values
    t.corr_pawn[side, r.pawn] = pawn
    t.corr_minor[side, r.minor] = minor
    t.corr_non_pawn[side, r.white_non_pawn] = white
    t.corr_non_pawn[2 + side, r.black_non_pawn] = black
    t.corr_cont[r.earlier_move, r.last_move] = cont


@pytest.mark.parametrize("values, raw, expected", [
    ((0, 0, 0, 0, 0), 50, 50),
    ((1000, 0, 0, 0, 0), 50, 108),          # 7,685,000 / 131072 = 58.6
    ((-1000, 0, 0, 0, 0), 50, -8),          # -58.6 -> -58, truncated toward zero
    ((0, 1000, 0, 0, 0), 0, 57),            # 7,495,000 / 131072 = 57.2
    ((0, 0, 1000, 0, 0), 0, 69),            # 9,144,000 / 131072 = 69.8
    ((0, 0, 0, 1000, 0), 0, 69),
    ((0, 0, 0, 0, 1000), 0, 49),            # 6,469,000 / 131072 = 49.4
    ((1000, -1000, 500, 500, 0), 0, 71),    # (190,000 + 9,144,000) / 131072 = 71.2
    ((10, 0, 0, 0, 0), 0, 0),               # 76,850 / 131072 -> 0
])
def test_corrected(values, raw, expected):
    t = tables()
    set_entries(t, 1, ROWS, values)
    assert corrected(t, 1, ROWS, raw) == expected
    # The other side's entries are its own, but for the continuation's: its moves' pieces tell the side.
    assert corrected(t, 0, ROWS, raw) == raw + int(6469 * values[4] / 131072)


def test_no_continuation_entry_without_both_moves():
    t = tables()
    set_entries(t, 0, ROWS, (0, 0, 0, 0, 1000))
    t.corr_cont[0, 66] = 1000
    assert corrected(t, 0, NO_CONTINUATION, 0) == 0


def test_corrected_stays_below_proven_wins():
    t = tables()
    set_entries(t, 0, ROWS, (CORRECTION_MAX,) * 5)
    assert corrected(t, 0, ROWS, EVAL_LIMIT - 3) == EVAL_LIMIT
    set_entries(t, 0, ROWS, (-CORRECTION_MAX,) * 5)
    assert corrected(t, 0, ROWS, -EVAL_LIMIT + 3) == -EVAL_LIMIT


def run_update(entry, best, static_eval_, depth, captures=False, has_best=True, beta=INF, r=ROWS):
    t = tables()
    set_entries(t, 0, r, (entry,) * 5)
    update_correction(t, 0, r, best, static_eval_, depth, captures, has_best, beta)
    return entries(t, 0, r)


@pytest.mark.parametrize("entry, best, static_eval_, depth, expected", [
    # bonus (40 * 4) / 8 = 20: shares 20 * 111 / 128 = 17.3, 20 * 146 / 128 = 22.8, 20 * 162 / 128 = 25.3,
    # 20 * 143 / 128 = 22.3
    (0, 60, 20, 4, (17, 22, 25, 25, 22)),
    (0, 20, 60, 4, (-17, -22, -25, -25, -22)),          # truncated toward zero
    (0, 20, 23, 5, (0, -1, -1, -1, -1)),                # -15 / 8 -> -1: 111 / 128 of it -> 0, 146 / 128 -> -1
    (0, 1000, 0, 10, (222, 292, 324, 324, 286)),        # 1250, held at 256: 256 * 111 / 128 = 222, ...
    (512, 60, 20, 4, (521, 523, 525, 525, 523)),        # 512 + 17 - 512 * 17 / 1024 (8.5 -> 8), ...
])
def test_update(entry, best, static_eval_, depth, expected):
    assert run_update(entry, best, static_eval_, depth) == expected


def test_no_update_for_a_best_capture():
    assert run_update(0, 60, 20, 4, captures=True) == (0,) * 5


def test_no_update_for_a_fail_high_at_or_below_the_evaluation():
    assert run_update(0, 120, 150, 4, beta=100) == (0,) * 5            # only says the score is at least 120
    assert run_update(0, 120, 100, 4, beta=100)[0] == 8                # (20 * 4) / 8 = 10; 10 * 111 / 128 = 8.7


def test_no_update_for_a_fail_low_at_or_above_the_evaluation():
    assert run_update(0, 40, 20, 4, has_best=False) == (0,) * 5        # only says the score is at most 40
    assert run_update(0, 10, 20, 4, has_best=False)[0] == -4           # -40 / 8 = -5; -5 * 111 / 128 = -4.3


def test_no_continuation_update_without_both_moves():
    t = tables()
    update_correction(t, 0, NO_CONTINUATION, 60, 20, 4, False, True, INF)
    assert not np.count_nonzero(t.corr_cont)
    assert t.corr_pawn[0, 11] == 17


def test_pawn_index_reads_only_the_pawns():
    start = parse_fen(chess.STARTING_FEN)
    no_knights = parse_fen("r1bqkb1r/pppppppp/8/8/8/8/PPPPPPPP/R1BQKB1R w KQkq - 0 1")
    assert pawn_index(start.bb) == pawn_index(no_knights.bb)
    rows = {pawn_index(start.bb)}
    board = chess.Board()
    for move in list(board.legal_moves):
        if board.piece_type_at(move.from_square) == chess.PAWN:
            board.push(move)
            rows.add(pawn_index(parse_fen(board.fen()).bb))
            board.pop()
    assert len(rows) == 17, "two of the start position's 17 pawn structures share a row"
    assert all(0 <= r < 1 << CORRECTION_BITS for r in rows)


def test_minor_and_non_pawn_rows_read_their_pieces():
    start = parse_fen(chess.STARTING_FEN)
    knight = parse_fen("rnbqkbnr/pppppppp/8/8/8/5N2/PPPPPPPP/RNBQKB1R b KQkq - 1 1")     # Nf3
    rook = parse_fen("rnbqkbnr/1ppppppp/8/p7/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")        # a pawn: only its row
    queen = parse_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1")        # no white queen
    assert minor_index(knight.bb) != minor_index(start.bb)
    assert non_pawn_index(knight.bb, 0) != non_pawn_index(start.bb, 0)
    assert non_pawn_index(knight.bb, 1) == non_pawn_index(start.bb, 1)
    assert pawn_index(knight.bb) == pawn_index(start.bb)
    assert (minor_index(rook.bb), non_pawn_index(rook.bb, 0), non_pawn_index(rook.bb, 1)) == \
        (minor_index(start.bb), non_pawn_index(start.bb, 0), non_pawn_index(start.bb, 1))
    assert minor_index(queen.bb) == minor_index(start.bb)
    assert non_pawn_index(queen.bb, 0) != non_pawn_index(start.bb, 0)


def test_search_learns_within_bounds_and_clear_forgets(searcher):
    searcher.clear()
    searcher.think(parse_fen(MIDDLEGAME), [], Limits(depth=10))
    S = searcher.S
    for name in Tables._fields:
        table = getattr(S, name)
        assert np.count_nonzero(table), f"{name} learnt nothing"
        assert np.abs(table.astype(np.int32)).max() <= CORRECTION_MAX
    searcher.clear()
    for name in Tables._fields:
        assert not np.count_nonzero(getattr(S, name)), f"clear() left {name}"


def test_rules_read_the_corrected_evaluation_and_the_table_keeps_the_nets(searcher):
    board = parse_fen(MIDDLEGAME)
    searcher.clear()
    searcher._setup(board, [])
    S = searcher.S
    raw = int(static_eval(S, 0, S.bbs[0], S.boards[0], S.sts[0], 0))
    S.corr_pawn[:] = 1000
    S.corr_minor[:] = 1000
    search_root(searcher.T, S, 3, -INF, INF)
    assert int(S.evals[0]) == raw + 115          # (7685 + 7495) * 1000 / 131072 = 115.8 (no move before the root)
    out = np.zeros(TTE_SIZE, np.int64)
    assert tt_probe(S.tt, np.int64(board.st[ST_KEY]), out)
    assert int(out[2]) == raw
