"""Syzygy root ranking (``quantfish.tablebase.root``) against python-chess's own probes of the shared 3-4 man tables.

The reference is a separate ``chess.syzygy`` tablebase: every move's outcome is its child's WDL, its length the
child's DTZ plus the move itself (0 for a mate, 1 for a capture or pawn move, which restarts the clock).
"""
import os
import shutil

import chess
import chess.syzygy
import pytest

from quantfish.tablebase.root import TablebaseError, Tablebases
from tests.testdata import ENDGAME, KBNK, KRK, SYZYGY34 as TABLES, endgame_positions, require

KRKR_DRAW = "8/8/8/8/7R/8/7K/4rk2 w - - 0 1"     # drawn, yet several rook moves lose the rook
KBK_DRAW = "8/8/8/8/8/2k5/8/KB6 w - - 0 1"
KQK = "8/8/8/8/8/2k5/8/KQ6 w - - 0 1"
KQKR = "7k/8/8/8/2r5/8/2Q5/K7 w - - 0 1"           # Qxc4 leads to KQvK


@pytest.fixture(scope="module")
def tbs():
    t = Tablebases(str(require(TABLES)))
    yield t
    t.close()


@pytest.fixture(scope="module")
def oracle():
    with chess.syzygy.open_tablebase(str(TABLES)) as tb:
        yield tb


@pytest.fixture(scope="module")
def wdl_only_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("rtbw")
    for p in TABLES.glob("*.rtbw"):
        os.symlink(p, d / p.name)
    return d


def _child(board, move):
    child = board.copy(stack=False)
    child.push(move)
    return child


def _outcome(oracle, board, move):
    """The move's WDL for the mover (python-chess assumes the child's clock at zero)."""
    return -oracle.probe_wdl(_child(board, move))


def _plies(oracle, board, move):
    """Plies from the root to the next zeroing move (or mate) along ``move``."""
    child = _child(board, move)
    if child.is_checkmate():
        return 0
    if board.is_zeroing(move):
        return 1
    return abs(oracle.probe_dtz(child)) + 1


@pytest.mark.parametrize("fen", list(endgame_positions()))
def test_ranking_matches_python_chess(tbs, oracle, fen):
    board = chess.Board(fen)
    probe = tbs.rank_root(fen)
    if not any(board.legal_moves):
        assert probe is None
        return
    assert probe is not None and probe.by_dtz
    assert probe.wdl == oracle.probe_wdl(board)
    assert probe.dtz == oracle.probe_dtz(board)
    legal = {m.uci() for m in board.legal_moves}
    assert set(probe.ranks) == legal
    assert probe.moves and set(probe.moves) <= legal
    kept = [probe.ranks[m] for m in probe.moves]
    assert kept == sorted(kept, reverse=True)
    assert min(kept) >= max((probe.ranks[m] for m in legal - set(probe.moves)), default=min(kept))

    outcome = {m.uci(): _outcome(oracle, board, m) for m in board.legal_moves}
    assert all(outcome[m] == probe.wdl for m in probe.moves)
    assert max(outcome.values()) == probe.wdl                    # nothing left out does better
    for m, o in outcome.items():                                 # ranks order the outcomes; draws are 0
        assert (probe.ranks[m] > 0) == (o > 0) and (probe.ranks[m] < 0) == (o < 0)
    if probe.wdl == 0:
        assert set(probe.moves) == {m for m, o in outcome.items() if o == 0}
    else:                                                        # wins: fastest to zeroing; losses: slowest
        plies = {m.uci(): _plies(oracle, board, m) for m in board.legal_moves if outcome[m.uci()] == probe.wdl}
        target = min(plies.values()) if probe.wdl > 0 else max(plies.values())
        assert set(probe.moves) == {m for m, p in plies.items() if p == target}


@pytest.mark.parametrize("fen", [KBNK, KRK], ids=["KBNK", "KRK"])
def test_following_the_ranking_mates_within_fifty_moves(tbs, oracle, fen):
    board = chess.Board(fen)
    assert oracle.probe_wdl(board) == 2 and oracle.probe_dtz(board) > 30
    winner = board.turn
    while not board.is_game_over() and board.ply() < 200:
        probe = tbs.rank_root(board.fen())
        assert probe is not None and probe.wdl == (2 if board.turn == winner else -2), board.fen()
        board.push_uci(probe.moves[0])
        assert board.halfmove_clock < 100, board.fen()
    assert board.is_checkmate() and board.turn != winner, board.fen()


@pytest.mark.parametrize("fen", [KRKR_DRAW, KBK_DRAW], ids=["KRvKR", "KBvK"])
def test_following_the_ranking_keeps_the_draw(tbs, oracle, fen):
    board = chess.Board(fen)
    first = tbs.rank_root(fen)
    if fen == KRKR_DRAW:
        assert min(first.ranks.values()) < 0              # there are losing moves to avoid
    for _ in range(24):
        probe = tbs.rank_root(board.fen())
        assert probe is not None and probe.wdl == 0 and oracle.probe_wdl(board) == 0, board.fen()
        board.push_uci(probe.moves[0])
    assert oracle.probe_wdl(board) == 0 or board.is_game_over()


def test_halfmove_clock_turns_wins_cursed(tbs, oracle):
    board = chess.Board(KRK)
    fresh = tbs.rank_root(KRK)
    board.halfmove_clock = 100 - oracle.probe_dtz(board) + 10   # the fastest conversion now comes too late
    cursed = tbs.rank_root(board.fen())
    assert fresh.wdl == 2 and cursed.wdl == 1
    assert cursed.moves == fresh.moves                          # still the fastest way: the opponent may err
    draws = [m for m in board.legal_moves if _outcome(oracle, board, m) == 0]
    wins = [m for m in board.legal_moves if _outcome(oracle, board, m) == 2]
    assert draws and wins
    assert min(cursed.ranks[m.uci()] for m in wins) > 0 == max(cursed.ranks[m.uci()] for m in draws)
    assert tbs.rank_root(board.fen(), rule50=False).wdl == 2

    board.push_uci(cursed.moves[0])                             # the defender: a blessed loss
    blessed = tbs.rank_root(board.fen())
    assert blessed.wdl == -1 and max(blessed.ranks.values()) < 0
    assert tbs.rank_root(board.fen(), rule50=False).wdl == -2


def test_mate_beats_the_fifty_move_rule_and_other_wins(tbs, oracle):
    board = chess.Board("k7/8/1K6/8/8/8/P7/7R w - - 0 1")   # Rh8# and, as fast to zeroing, winning pawn moves
    mates = {m.uci() for m in board.legal_moves if _child(board, m).is_checkmate()}
    zeroing_wins = [m for m in board.legal_moves if board.is_zeroing(m) and _outcome(oracle, board, m) == 2]
    assert mates and zeroing_wins
    assert set(tbs.rank_root(board.fen()).moves) == mates
    board.halfmove_clock = 99                                   # a quiet move now lets the opponent claim a draw
    probe = tbs.rank_root(board.fen())
    assert set(probe.moves) == mates and probe.wdl == 2
    assert all(probe.ranks[m.uci()] > 0 for m in zeroing_wins)
    quiet = {m.uci() for m in board.legal_moves if not board.is_zeroing(m)} - mates
    assert all(probe.ranks[m] == 0 for m in quiet)


def test_wdl_tables_only(oracle, wdl_only_dir):
    only = Tablebases(str(wdl_only_dir))
    try:
        assert only.dtz_tables == 0 and only.wdl_tables == len(list(TABLES.glob("*.rtbw")))
        mate_or_win = "k7/8/1K6/8/8/8/P7/7R w - - 0 1"         # a mate is best, but every win holds the WDL
        for fen in [mate_or_win] + [param.values[0] for param in list(endgame_positions())[::4]]:
            board = chess.Board(fen)
            probe = only.rank_root(board.fen())
            if not any(board.legal_moves):
                continue
            assert not probe.by_dtz and probe.dtz is None
            outcome = {m.uci(): _outcome(oracle, board, m) for m in board.legal_moves}
            best = max(outcome.values())
            assert probe.wdl == best == oracle.probe_wdl(board)
            assert set(probe.moves) == {m for m, o in outcome.items() if o == best}
            assert set(probe.ranks) == set(outcome)
            assert all(probe.ranks[a] > probe.ranks[b]
                       for a in outcome for b in outcome if outcome[a] > outcome[b])
            assert all(probe.ranks[m] == 0 for m, o in outcome.items() if o == 0)
    finally:
        only.close()


def test_missing_dtz_table_falls_back_to_wdl(tmp_path, wdl_only_dir):
    for p in wdl_only_dir.iterdir():
        os.symlink(p.resolve(), tmp_path / p.name)
    shutil.copy(TABLES / "KRvK.rtbz", tmp_path)
    t = Tablebases(str(tmp_path))
    try:
        assert t.rank_root(KRK).by_dtz
        assert not t.rank_root(KQK).by_dtz
    finally:
        t.close()


def test_a_damaged_table_is_named_and_decides_nothing(tmp_path):
    shutil.copy(TABLES / "KRvK.rtbw", tmp_path)
    (tmp_path / "KQvK.rtbw").write_bytes((TABLES / "KQvK.rtbw").read_bytes()[:-64])     # truncated
    t = Tablebases(str(tmp_path))
    try:
        t.compiled()
        assert "KQvK.rtbw" in t.describe() and "damaged" in t.describe()
        assert t.rank_root(KQK) is None                                      # no error: not decided
        assert t.rank_root(KRK) is not None
    finally:
        t.close()


def test_missing_tables_give_none(tbs, tmp_path):
    assert tbs.rank_root(KQK) is not None and tbs.rank_root(KQKR) is not None
    shutil.copy(TABLES / "KQvKR.rtbw", tmp_path)
    t = Tablebases(str(tmp_path))
    try:
        assert t.wdl_tables == 1 and t.max_pieces == 4
        assert t.rank_root(KQK) is None                                      # KQvK: no table
        assert t.rank_root(KQKR) is None                                     # KQvKR is there, KQvK not
    finally:
        t.close()


def test_positions_not_probed(tbs):
    with open(ENDGAME / "python-chess_endgame-dm-5.epd") as fh:
        five = next(line for line in fh if line.strip() and not line.startswith("#"))
    board, _ = chess.Board.from_epd(five)
    assert chess.popcount(board.occupied) == 5
    assert tbs.rank_root(board.fen()) is None
    assert tbs.rank_root("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1") is None            # castling rights
    assert tbs.rank_root("k7/8/1Q6/8/8/8/8/7K b - - 0 1") is None             # stalemate
    assert tbs.rank_root("k7/1Q6/1K6/8/8/8/8/8 b - - 0 1") is None            # checkmate
    assert tbs.rank_root(KBNK, probe_limit=3) is None
    assert tbs.rank_root(KBNK, probe_limit=4) is not None
    assert tbs.rank_root("4k3/8/8/8/8/8/8/R3K3 w - - 0 1") is not None        # the same without castling
    assert tbs.rank_root("8/8/8/8/8/2k5/1Q6/K7 w - - 0 1") is None            # invalid: side to move gives check


def test_found_tables_are_counted(tbs):
    names = {p.stem for p in TABLES.glob("*.rtbw")}
    assert tbs.paths == [str(TABLES)]
    assert tbs.wdl_tables == len(names) and tbs.dtz_tables == len(list(TABLES.glob("*.rtbz")))
    assert tbs.max_pieces == max(len(n) - 1 for n in names)
    assert str(TABLES) in tbs.describe() and f"{len(names)} WDL" in tbs.describe()
    twice = Tablebases(os.pathsep.join([str(TABLES), str(TABLES)]))
    try:
        assert twice.wdl_tables == tbs.wdl_tables and len(twice.paths) == 2
    finally:
        twice.close()


@pytest.mark.parametrize("path", ["", "<empty>", "  "])
def test_empty_path_means_no_tables(path):
    t = Tablebases(path)
    assert t.paths == [] and t.max_pieces == 0 and t.wdl_tables == t.dtz_tables == 0
    assert t.rank_root(KRK) is None
    assert "no Syzygy tables" in t.describe()
    t.close()


def test_bad_directories_are_named(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(TablebaseError, match="nowhere.*does not exist"):
        Tablebases(os.pathsep.join([str(TABLES), str(missing)]))
    a_file = TABLES / "KRvK.rtbw"
    with pytest.raises(TablebaseError, match="KRvK.rtbw.*not a directory"):
        Tablebases(str(a_file))
    assert issubclass(TablebaseError, ValueError)
