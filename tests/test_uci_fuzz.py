"""The UCI loop against what a GUI, a broken GUI or line noise may send (issue 16), through binary pipes into
the real ``python -m quantfish.cli.main``: one test for each fault found by fuzzing, each failing without its fix."""
import os
import threading
import time

import chess
import pytest

from tests.ucipipe import Engine, output_problem


# ---------------------------------------------------------------------------------------------------------
# The faults the fuzzer found, one test each (each fails without its fix)


@pytest.fixture(scope="module")
def engine():
    engine = Engine().start()
    yield engine
    engine.kill()


def _info_strings(lines):
    return [raw.decode("utf-8") for raw in lines if raw.startswith(b"info string")]


def _legal_bestmove(lines, moves=""):
    """The bestmove at the end of ``lines``, checked legal after ``position startpos moves <moves>``."""
    board = chess.Board()
    for m in moves.split():
        board.push_uci(m)
    move = chess.Move.from_uci(lines[-1].split()[1].decode())
    assert move in board.legal_moves, lines[-5:]
    return move


def _clean(lines):
    assert [(raw, why) for raw in lines if (why := output_problem(raw))] == []


@pytest.mark.parametrize("encoding", ["utf-8:strict", "ascii:strict"])
def test_undecodable_input_gets_an_info_string(encoding):
    """Fault: stdin was read in the locale's encoding, strictly under a UTF-8 locale such as en_US.UTF-8 (or
    cp1252 / ASCII elsewhere): one invalid byte raised UnicodeDecodeError and ended the loop, and a non-ASCII
    character echoed in an info string could not be encoded. Now stdin is UTF-8 with replacement, stdout UTF-8."""
    engine = Engine(env=dict(os.environ, PYTHONIOENCODING=encoding)).start()
    try:
        engine.send(b"\xff\xfe\x00junk\nsetoption name \xe2\x99\x9e value 1\nposition startpos moves e2e4 \xc3\n")
        lines = engine.sync()
        _clean(lines)
        strings = _info_strings(lines)
        assert len(strings) == 3, lines
        assert "unknown command: \ufffd\ufffd\\x00junk" in strings[0]
        assert "unknown option: \u265e" in strings[1] and "illegal move \ufffd" in strings[2]
        engine.send(b"go depth 2\n")
        _legal_bestmove(engine.until(b"bestmove", prefix=True))     # the position command was refused
        assert engine.quit() == 0
    finally:
        engine.kill()


def test_control_characters_are_not_echoed(engine):
    """Fault: an unknown command was echoed byte for byte in its info string, NUL, escape sequences and
    invalid UTF-8 included (what a GUI then shows or chokes on). Now they are written escaped."""
    engine.send(b"x\x00y\x1b[31mz\x0b\x7f \xff\n")
    lines = engine.sync()
    _clean(lines)
    assert _info_strings(lines) == ["info string unknown command: x\\x00y\\x1b[31mz\\x0b\\x7f \ufffd"]


@pytest.mark.parametrize("command,words", [
    (b"go perft \xc2\xb2", "go perft depth must be an integer, got '\u00b2'"),
    (b"go perft 1000000000000000000000000000000", "go perft depth must be between 0 and 20"),
    (b"bench \xc2\xb2", "bench depth must be an integer, got '\u00b2'"),
    (b"bench 9223372036854775808", "bench depth must be between 1 and 60"),
])
def test_depths_that_are_not_plain_integers(engine, command, words):
    """Fault: ``go perft`` and ``bench`` took a depth that str.isdigit() accepts but int() does not (the
    superscript two) and a perft depth of any size: ValueError, or an OverflowError from the compiled perft,
    reached the loop's last-resort guard (``info string error: ...`` and a traceback on stderr). A bench of any
    depth (found by the generated fuzz) searched to the search's depth limit in the loop's own thread, where no
    stop can reach it: the loop was blocked for hours. Its depth is now 1..60, as ``quantfish bench``'s."""
    engine.send(b"position startpos\n" + command + b"\n")
    lines = engine.sync()
    _clean(lines)
    strings = _info_strings(lines)
    assert len(strings) == 1 and strings[0].startswith(f"info string {words}"), lines
    engine.send(b"go perft 2\n")
    assert engine.until(b"Nodes searched", prefix=True)[-1] == b"Nodes searched: 400"


def test_bench_during_a_search_is_refused(engine):
    """Fault: ``bench`` ran while a search was running, both searching with the one searcher: the search
    answered a move of a bench position (illegal in the game), or the engine died (segmentation fault)."""
    engine.send(b"position startpos moves e2e4\ngo infinite\nbench 1\n")
    lines = engine.sync()
    _clean(lines)
    assert [s for s in _info_strings(lines) if "NNUE evaluation using" not in s] == [
        "info string already searching; send stop first"]
    engine.send(b"stop\n")
    _legal_bestmove(engine.until(b"bestmove", prefix=True), "e2e4")
    engine.send(b"bench 1\n")                                  # and after the search it runs
    lines = engine.until(b"Nodes/second", prefix=True, timeout=60)
    _clean(lines)
    assert sum(raw.startswith(b"Position: ") for raw in lines) == 41


HUGE = str(10**30).encode()


@pytest.mark.parametrize("go", [b"go nodes " + HUGE, b"go movetime " + HUGE, b"go wtime " + HUGE + b" btime 1",
                                b"go wtime 1000 btime 1000 winc " + HUGE, b"go depth " + HUGE + b" mate " + HUGE,
                                b"go wtime " + HUGE + b" movestogo " + HUGE])
def test_huge_go_numbers_are_capped(engine, go):
    """Fault: a number too large for the engine's types reached it: ``go nodes 10**30`` raised OverflowError in
    the search thread (info string search error, bestmove 0000 from the start position), a huge movetime or
    clock one in the deadline timer's thread (on stderr; that search then had no deadline). Now go's numbers
    are capped (times at 2**31 - 1 ms, nodes at 2**62)."""
    before = engine.stderr
    engine.send(b"position startpos\n" + go + b"\n")
    time.sleep(0.3)
    engine.send(b"stop\n")
    lines = engine.until(b"bestmove", prefix=True)
    lines += engine.sync()
    _clean(lines)
    assert [s for s in _info_strings(lines) if "NNUE evaluation using" not in s] == []
    assert sum(raw.startswith(b"bestmove") for raw in lines) == 1
    _legal_bestmove([raw for raw in lines if raw.startswith(b"bestmove")])
    assert engine.stderr == before


def test_fen_counters_beyond_32_bits_are_refused(engine):
    """Fault: a FEN's halfmove clock or fullmove number beyond int64 raised OverflowError while the position was
    built (the loop's last-resort guard). Now FEN counters above 2**31 - 1 (Stockfish's int) are a bad FEN;
    up to that, the position is searched and evaluated."""
    fen = b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - "
    engine.send(b"position fen " + fen + b"0 " + HUGE + b"\nposition fen " + fen + HUGE + b" 1\n")
    lines = engine.sync()
    _clean(lines)
    assert _info_strings(lines) == ["info string bad FEN, position unchanged: halfmove clock and fullmove number "
                                    "must be at most 2147483647"] * 2
    engine.send(b"position fen " + fen + b"2147483647 2147483647\nd\neval\ngo depth 3\n")
    lines = engine.until(b"bestmove", prefix=True)
    _clean(lines)
    assert b"Fen: " + fen + b"2147483647 2147483647" in lines
    _legal_bestmove(lines)


def _slow_to_set_up(searcher, monkeypatch, delay=0.3):
    """The search thread as a loaded machine may run it: ``delay`` seconds between the go (or the clock's
    start) and the search's own set-up."""
    real = searcher.think

    def think(*args, **kwargs):
        time.sleep(delay)
        return real(*args, **kwargs)
    monkeypatch.setattr(searcher, "think", think)


@pytest.mark.parametrize("go", ["go infinite", "go movetime 40", "go ponder"])
def test_a_stop_before_the_search_sets_up_is_kept(go, monkeypatch):
    """Fault: the search cleared its stop flag when it set up, so a ``stop`` (or the movetime deadline's timer)
    that came between ``go`` and that set-up was lost: ``go infinite`` + ``stop`` hung the loop in stop (it
    waits for the search, which searched on), and ``go movetime`` searched past its time (to the depth limit,
    minutes). The fuzzer hit it with ``go wtime <huge>`` then ``stop``, the timer's failure slowing the search
    thread. Now the loop clears the stop flag when it queues the search, and the search keeps a stop since."""
    from quantfish.uci.protocol import UciEngine
    out = []
    uci = UciEngine(out=out.append)
    uci.handle("isready")
    searcher = uci.state.searcher
    _slow_to_set_up(searcher, monkeypatch)
    try:
        uci.handle("position startpos")
        uci.handle(go)
        if go != "go movetime 40":
            stopper = threading.Thread(target=uci.handle, args=("stop",), daemon=True)
            stopper.start()
            stopper.join(timeout=5)
            assert not stopper.is_alive(), "stop did not return: the search did not stop"
        deadline = time.monotonic() + 5
        while not any(line.startswith("bestmove") for line in out) and time.monotonic() < deadline:
            time.sleep(0.01)
        bestmoves = [line for line in out if line.startswith("bestmove")]
        assert len(bestmoves) == 1, out[-5:]
        assert chess.Move.from_uci(bestmoves[0].split()[1]) in chess.Board().legal_moves
    finally:
        while not uci.search._idle.wait(0.05):          # without the fix: end the search that did not stop
            searcher.stop()
            uci._ponder_release.set()


def test_evalfilesmall_after_an_unusable_evalfile_path(engine):
    """Fault: after ``setoption name EvalFile value <300 characters>`` (refused; the option keeps its value),
    ``setoption name EvalFileSmall ...`` probed that path outside the loader's guard: OSError (file name too
    long) reached the loop's last-resort guard. Now it is refused like any net that does not load."""
    engine.send(b"setoption name EvalFile value " + b"a" * 300 + b"\nsetoption name EvalFileSmall value x.nnue\n")
    lines = engine.sync()
    _clean(lines)
    strings = _info_strings(lines)
    assert len(strings) == 2 and all("not loaded, keeping the previous net" in s for s in strings), strings
    assert "File name too long" in strings[1]
    engine.send(b"setoption name EvalFile value nn-ad9b42354671.nnue\nsetoption name EvalFileSmall value "
                b"nn-37f18f62d772.nnue\n")
    lines = engine.sync()
    _clean(lines)
    assert _info_strings(lines)[0].startswith("info string NNUE evaluation using")
