"""Generated UCI input against one running engine (issue 16): bursts of command lines drawn by ``hypothesis``
from UCI's grammar (valid commands with random arguments, long ``position`` commands, ``go`` before
``position``, ``stop``/``ponderhit`` at random moments, ``setoption`` during a search) and from damage to it
(truncated lines, shuffled and repeated tokens, numbers out of range or not numbers, binary garbage, lines of
100,000 characters, NULs and bare carriage returns).

After each burst the engine must still be alive, answer ``stop``/``isready``, have written only lines that
``tests.ucipipe.output_problem`` accepts (no traceback, no last-resort guard's error, nothing that is not UCI),
and still play a legal move in a known position: garbage must not have damaged its state.

The run is derandomised (the same bursts every time) and bounded: ``QF_UCI_FUZZ_BURSTS`` bursts (default 500).
The number of bursts, lines and bytes sent is printed to stderr.
"""
import collections
import os
import random
import sys

import chess
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis (the test extra) is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.ucipipe import Engine, command_lines, output_problem  # noqa: E402

BURSTS = int(os.environ.get("QF_UCI_FUZZ_BURSTS", "500"))

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",      # perft's "kiwipete"
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1",
    "8/8/8/8/8/8/6k1/4K2R w K - 0 1",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",                                            # stalemate: no legal move
    "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1",                                            # checkmate: no legal move
    "4k3/1P6/8/8/8/8/6p1/4K3 w - - 0 1",                                         # promotions both ways
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",          # Chess960 (Shredder castling)
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 99 200",
]
OPTION_VALUES = {
    "Hash": ["1", "2", "16", "64", "0", "-5", "16385", "99999999999999999999", "abc", "", "1.5"],
    "MultiPV": ["1", "2", "3", "256", "0", "257", "-1", "x"],
    "Move Overhead": ["0", "10", "100", "5000", "5001", "-1", "ten"],
    "Ponder": ["true", "false", "TRUE", "yes", "", "1"],
    "UCI_Chess960": ["true", "false", "maybe"],
    "Threads": ["1", "2", "0", "-1", "64"],
    "NNUE Path": ["auto", "c", "numba", "cuda", ""],
    "EvalFile": ["/nonexistent/nn-000000000000.nnue", "README.md", "", "/", "a" * 300],
    "EvalFileSmall": ["/nonexistent/small.nnue", "Makefile"],
    "Clear Hash": [None],
    "No Such Option": ["1", None],
}
GO_NUMBERS = {
    "depth": ["1", "2", "3"], "nodes": ["1", "100", "2000"], "movetime": ["0", "1", "10", "40"],
    "wtime": ["-100", "0", "1", "5", "50", "100", "300"], "btime": ["-100", "0", "1", "5", "50", "100", "300"],
    "winc": ["0", "5", "20"], "binc": ["0", "5", "20"], "movestogo": ["1", "2", "40"], "mate": ["1", "2"],
}
BAD_NUMBERS = ["-1", "0", "-9223372036854775809", "9223372036854775808", str(10 ** 40), "1e9", "0x10", "NaN",
               "", "²", "٣", "1_000", "+5", " "]


def _playout(fen, seed, plies):
    """Up to ``plies`` random legal moves from ``fen`` (fewer if the game ends), as UCI text."""
    board = chess.Board(fen, chess960="HFhf" in fen)
    rng = random.Random(seed)
    moves = []
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        move = rng.choice(legal)
        moves.append(board.uci(move, chess960=board.chess960))
        board.push(move)
    return moves


@st.composite
def position_lines(draw):
    fen = draw(st.sampled_from(FENS))
    moves = _playout(fen, draw(st.integers(0, 2**32)), draw(st.sampled_from([0, 1, 2, 7, 40, 150, 400])))
    head = "position startpos" if fen == chess.STARTING_FEN and draw(st.booleans()) else f"position fen {fen}"
    return f"{head} moves {' '.join(moves)}" if moves or draw(st.booleans()) else head


@st.composite
def go_lines(draw):
    words = ["go"]
    for name in draw(st.lists(st.sampled_from(sorted(GO_NUMBERS)), max_size=4, unique=True)):
        words += [name, draw(st.sampled_from(GO_NUMBERS[name]))]
    flags = draw(st.lists(st.sampled_from(["infinite", "ponder", "searchmoves"]), max_size=2, unique=True))
    for flag in flags:
        words.append(flag)
        if flag == "searchmoves":
            words += draw(st.lists(st.sampled_from(["e2e4", "d2d4", "g1f3", "a7a8q", "e1g1", "h7h8n"]), max_size=3))
    if len(words) == 1 and not draw(st.booleans()):
        words += ["depth", "1"]
    return " ".join(words)


@st.composite
def setoption_lines(draw):
    name = draw(st.sampled_from(sorted(OPTION_VALUES)))
    value = draw(st.sampled_from(OPTION_VALUES[name]))
    name = draw(st.sampled_from([name, name.lower(), name.upper()]))
    return f"setoption name {name}" + ("" if value is None else f" value {value}")


VALID = st.one_of(
    st.sampled_from(["uci", "isready", "ucinewgame", "d", "eval", "stop", "ponderhit", "debug on", "debug off",
                     "go perft 1", "go perft 2", "bench 1", "register later", "flip"]),
    position_lines(), go_lines(), setoption_lines())


@st.composite
def damaged_lines(draw):
    """A valid line, then damaged."""
    words = draw(VALID).split()
    how = draw(st.sampled_from(["truncate", "shuffle", "repeat", "drop", "number", "case"]))
    if how == "truncate":
        text = " ".join(words)
        return text[:draw(st.integers(0, max(0, len(text) - 1)))]
    if how == "shuffle":
        draw(st.randoms(use_true_random=False)).shuffle(words)
    elif how == "repeat":
        i = draw(st.integers(0, len(words) - 1))
        words.insert(i, words[i])
    elif how == "drop" and len(words) > 1:
        del words[draw(st.integers(0, len(words) - 1))]
    elif how == "number":
        words.append(draw(st.sampled_from(BAD_NUMBERS)))
        if len(words) > 2:
            words[draw(st.integers(1, len(words) - 1))] = draw(st.sampled_from(BAD_NUMBERS))
    elif how == "case":
        words = [w.upper() for w in words]
    return " ".join(words)


GARBAGE = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", errors="replace")),
    st.sampled_from([b"x" * 100_000, b"position startpos moves " + b"e2e4 " * 20_000, b"go " + b"depth " * 30_000,
                     b"\x00" * 500, b"\r" * 50, b"setoption name " + b"Hash " * 5000 + b"value 1",
                     b"position fen " + b"/" * 50_000, "♞♛ ünïcödé \u202e\ufeff".encode()]),
)
LINE = st.one_of(VALID.map(str.encode), VALID.map(str.encode), damaged_lines().map(str.encode), GARBAGE)


@st.composite
def bursts(draw):
    lines = draw(st.lists(LINE, min_size=1, max_size=30))
    ends = draw(st.lists(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]), min_size=len(lines), max_size=len(lines)))
    data = b"".join(line + end for line, end in zip(lines, ends))
    # Nothing in a burst may end the engine: quit (or a line the engine reads as quit) is left out.
    hypothesis.assume(all(not words or words[0] != "quit" for words in command_lines(data)))
    return data


@pytest.fixture(scope="module")
def engine():
    engine = Engine().start()
    engine.counts = {"bursts": 0, "lines": 0, "bytes": 0}
    engine.history = collections.deque(maxlen=3)     # the last bursts and what came back, for a failure's message
    yield engine
    print(f"\nUCI fuzz: {engine.counts['bursts']} bursts, {engine.counts['lines']} command lines, "
          f"{engine.counts['bytes']} bytes", file=sys.stderr)
    assert engine.quit() == 0, engine.stderr[-3000:]


def _history(engine):
    return "\n".join(f"burst {i}: {burst[:1500]!r}\n  answered: {[raw[:200] for raw in out]}"
                     for i, (burst, out) in enumerate(engine.history))


def _check(engine, lines, burst):
    engine.history[-1][1].extend(lines)
    for raw in lines:
        problem = output_problem(raw)
        assert problem is None, f"{problem}: {raw[:300]!r}; the last bursts:\n{_history(engine)}"


CHECK_MOVES = ["e2e4", "e7e5", "g1f3", "b8c6"]


@settings(max_examples=BURSTS, derandomize=True, deadline=None, database=None, print_blob=True,
          suppress_health_check=list(HealthCheck))
@given(burst=bursts())
def test_generated_bursts(engine, burst):
    engine.counts["bursts"] += 1
    engine.counts["lines"] += len(command_lines(burst))
    engine.counts["bytes"] += len(burst)
    engine.history.append((burst, []))
    engine.send(burst)
    # The burst may have left a search running (go infinite, go ponder, a long clock): stop ends it. Each
    # isready in the burst has its readyok, then comes ours.
    engine.send(b"\nstop\n")
    out = engine.sync(timeout=60)
    for _ in range(sum(1 for words in command_lines(burst) if words[:1] == ["isready"])):
        out += engine.until(b"readyok", timeout=60)
    _check(engine, out, burst)
    # The state is whole: options may have changed (MultiPV, Chess960, Ponder), but a move is played.
    engine.send(f"setoption name UCI_Chess960 value false\nposition startpos moves {' '.join(CHECK_MOVES)}\n"
                f"go depth 2\n".encode())
    out = engine.until(b"bestmove", timeout=60, prefix=True)
    _check(engine, out, burst)
    board = chess.Board()
    for text in CHECK_MOVES:
        board.push_uci(text)
    best = out[-1].decode().split()[1]
    assert chess.Move.from_uci(best) in board.legal_moves, f"bestmove {best}; the last bursts:\n{_history(engine)}"
    _check(engine, engine.sync(timeout=60), burst)
    assert engine.alive()
