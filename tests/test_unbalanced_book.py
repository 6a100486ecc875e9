"""tools.unbalanced_book keeps the positions the engine scores within the window for one side, and only
those, whichever side is ahead; bad input stops it with a message."""
import sys

import pytest

from tools import unbalanced_book

BALANCED = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
WHITE_UP_A_QUEEN = "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
BLACK_UP_A_QUEEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR b KQkq -"
ILLEGAL = "8/8/8/8/8/8/8/8 w - -"           # no kings: skipped, not scored


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "book.epd"
    path.write_text("\n".join(["# a comment", BALANCED, WHITE_UP_A_QUEEN, ILLEGAL, "", BLACK_UP_A_QUEEN]) + "\n")
    return path


def _pick(book, tmp_path, window, capsys, *more):
    out = tmp_path / "out.epd"
    assert unbalanced_book.main([str(book), str(out), "--depth", "3", "--window", window, *more]) == 0
    return out.read_text().splitlines(), capsys.readouterr().out


def test_keeps_both_sides_unbalanced_positions(book, tmp_path, capsys):
    kept, report = _pick(book, tmp_path, "500,100000", capsys)
    assert sorted(kept) == sorted([WHITE_UP_A_QUEEN, BLACK_UP_A_QUEEN])
    assert "scored 3, kept 2" in report


def test_keeps_the_balanced_position_only(book, tmp_path, capsys):
    kept, report = _pick(book, tmp_path, "0,100", capsys)
    assert kept == [BALANCED]
    assert "scored 3, kept 1" in report


def test_sample_limits_the_positions_scored(tmp_path, capsys):
    book = tmp_path / "book.epd"
    book.write_text("\n".join([BALANCED, WHITE_UP_A_QUEEN, BLACK_UP_A_QUEEN]) + "\n")
    kept, report = _pick(book, tmp_path, "0,100000", capsys, "--sample", "2")
    assert len(kept) == 2 and set(kept) <= {BALANCED, WHITE_UP_A_QUEEN, BLACK_UP_A_QUEEN}
    assert "scored 2, kept 2" in report


@pytest.mark.parametrize("args, message", [
    (["--window", "120,80"], "0 <= LO <= HI"),
    (["--window", "a,b"], "LO,HI"),
])
def test_bad_window_is_refused(book, tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as e:
        unbalanced_book.main([str(book), str(tmp_path / "out.epd"), *args])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_book_and_engine_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        unbalanced_book.main([str(tmp_path / "none.epd"), str(tmp_path / "out.epd")])
    assert "cannot read" in capsys.readouterr().err
    book = tmp_path / "book.epd"
    book.write_text(BALANCED + "\n")
    with pytest.raises(SystemExit):
        unbalanced_book.main([str(book), str(tmp_path / "out.epd"), "--engine", str(tmp_path / "no-such-engine")])
    assert "cannot start the engine" in capsys.readouterr().err


def test_an_engine_that_dies_mid_run_is_reported(tmp_path, capsys):
    """A UCI engine that answers the handshake and exits on its first ``go``: a message, no traceback."""
    fake = tmp_path / "dies.py"
    fake.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    cmd = line.split()[0] if line.split() else ''\n"
        "    if cmd == 'uci':\n"
        "        print('id name dies\\noption name Hash type spin default 1 min 1 max 64\\nuciok', flush=True)\n"
        "    elif cmd == 'isready': print('readyok', flush=True)\n"
        "    elif cmd == 'go': sys.exit(3)\n")
    book = tmp_path / "book.epd"
    book.write_text(BALANCED + "\n")
    out = tmp_path / "out.epd"
    status = unbalanced_book.main([str(book), str(out), "--engine", f"{sys.executable} {fake}"])
    assert status == 1
    assert "the engine failed" in capsys.readouterr().err
    assert out.read_text() == ""


def test_an_unwritable_output_is_reported(book, tmp_path, capsys):
    status = unbalanced_book.main([str(book), str(tmp_path / "no-such-dir" / "out.epd"), "--depth", "1"])
    assert status == 1
    assert "cannot write" in capsys.readouterr().err
