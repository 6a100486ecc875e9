"""Time management: the allocation never spends what the clock lacks, and the engine answers in time."""
import sys
import time

import pytest

from quantfish.search.driver import Limits
from quantfish.search.timeman import Clock, LagMeter, Progress

from tests.test_uci import Uci


def budget(remaining, inc=0, movestogo=None, overhead=10):
    clock = Clock.for_limits(Limits(wtime=remaining, btime=remaining, winc=inc, binc=inc, movestogo=movestogo),
                             0, overhead)
    return clock.soft * 1000, clock.hard * 1000


@pytest.mark.parametrize("remaining", [0, 1, 5, 20, 50, 100, 300, 1000, 5000, 60000])
@pytest.mark.parametrize("inc", [0, 10, 100, 1000])
@pytest.mark.parametrize("movestogo", [None, 1, 2, 10, 40])
def test_hard_limit_leaves_the_overhead_on_the_clock(remaining, inc, movestogo):
    soft, hard = budget(remaining, inc, movestogo)
    assert 0 <= soft <= hard
    # At most 70% of what the clock holds after the overhead, whatever the increment; 1 ms at the least.
    assert hard <= max(1.0, 0.7 * (remaining - 10)) + 1e-9


def test_negative_clock_is_a_floor_budget():
    soft, hard = budget(-500)
    assert soft == 0 and hard == 1.0


def simulate_sudden_death(base_ms, inc_ms, lag_ms, moves, spend):
    """A game's clock for one side: each move spends ``spend(soft, hard)`` plus ``lag_ms`` the engine never
    sees. Returns the least time left after any move."""
    remaining, least = base_ms, base_ms
    for _ in range(moves):
        soft, hard = budget(remaining, inc_ms)
        remaining -= spend(soft, hard) + lag_ms
        least = min(least, remaining)
        remaining += inc_ms
    return least


@pytest.mark.parametrize("base_ms", [1000, 2000, 5000])
def test_sudden_death_does_not_drain_the_clock(base_ms):
    # 200 moves a side (the soak's 400-ply limit), each one far over its target (an iteration started just
    # before the largest scaled target, 0.55 * MAX_FACTOR of soft, that lasts as long as all before it),
    # 2 ms of unseen lag a move: the clock holds.
    most = 2 * 0.55 * Progress.MAX_FACTOR
    least = simulate_sudden_death(base_ms, 0, 2.0, 200, lambda soft, hard: min(most * soft, hard))
    assert least > 0


def test_hard_deadlines_every_move_still_keep_a_reserve_with_increment():
    # The worst case with an increment: every move runs to its hard deadline, lag half of Move Overhead.
    least = simulate_sudden_death(1000, 10, 5.0, 300, lambda soft, hard: hard)
    assert least > 0


def test_lag_meter_learns_what_the_gui_charges():
    lag = LagMeter()
    assert lag.overhead(10) == 10
    # Our move: go at 1000 ms, we thought 20 ms; next go for the same side two plies later reads 950 ms.
    lag.before_search("startpos", 2, 0, 1000, 0)
    lag.after_search("startpos", 2, 0, 1000, 0, 20.0)
    lag.before_search("startpos", 4, 0, 950, 0)
    assert lag.overhead(10) == pytest.approx(30.0)
    assert lag.overhead(50) == 50
    # Another game, or a move not two plies later, teaches nothing.
    lag.after_search("startpos", 4, 0, 950, 0, 10.0)
    lag.before_search("other", 6, 0, 800, 0)
    lag.after_search("other", 6, 0, 800, 0, 10.0)
    lag.before_search("other", 9, 0, 700, 0)
    assert lag.overhead(10) == pytest.approx(30.0)
    # Old lags leave the window.
    for ply in range(10, 10 + 2 * (LagMeter.WINDOW + 1), 2):
        lag.after_search("g", ply, 1, 5000, 0, 5.0)
        lag.before_search("g", ply + 2, 1, 4994, 0)
    assert lag.overhead(0) == pytest.approx(1.0)


def timed_go(uci, command):
    uci.send(command)
    start = time.monotonic()
    lines = uci.expect("bestmove", timeout=30)
    return (time.monotonic() - start) * 1000, lines[-1]


def test_answers_within_a_tenth_of_a_second(uci):
    uci.send("uci")
    uci.expect("uciok")
    uci.send("isready")
    uci.expect("readyok", timeout=300)
    moves = []
    import chess
    board = chess.Board()
    worst = 0.0
    for _ in range(16):
        uci.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        spent, line = timed_go(uci, "go wtime 100 btime 100")
        worst = max(worst, spent)
        move = chess.Move.from_uci(line.split()[1])
        assert move in board.legal_moves
        board.push(move)
        moves.append(move.uci())
    assert worst < 100, f"a move took {worst:.0f} ms with 100 ms on the clock"
    for command in ("go wtime 0 btime 0", "go wtime -50 btime -50", "go wtime 30 btime 30 movestogo 1",
                    "go wtime 1 btime 1 winc 0 binc 0"):
        spent, line = timed_go(uci, command)
        assert line.split()[1] != "0000" and spent < 100, (command, spent)


def test_ponderhit_with_little_time_left(uci):
    uci.send("uci")
    uci.expect("uciok")
    uci.send("setoption name Ponder value true")
    uci.send("isready")
    uci.expect("readyok", timeout=300)
    uci.send("position startpos moves e2e4 e7e5")
    uci.send("go ponder wtime 60 btime 60")
    time.sleep(0.3)          # pondering, however long it is, costs nothing: the clock starts at ponderhit
    spent, line = timed_go(uci, "ponderhit")
    assert line.startswith("bestmove ") and line.split()[1] != "0000"
    assert spent < 60, f"{spent:.0f} ms after ponderhit with 60 ms on the clock"


def compiled_signatures():
    """Every Numba dispatcher of the engine and nnue packages, with the signatures this process holds."""
    from numba.core.registry import CPUDispatcher
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("engine", "nnue")):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher):
                found[f"{name}.{attr}"] = set(value.signatures)
    return found


GAME_COMMANDS = ["ucinewgame", "position startpos moves e2e4 e7e5 g1f3", "go wtime 1000 btime 1000", "stop",
                 "setoption name MultiPV value 2", "go depth 4", "stop",
                 "position fen 4k3/1P6/8/8/8/8/8/4K2R w K - 0 1 moves b7b8q e8d7 e1g1", "go nodes 2000", "stop",
                 "setoption name Ponder value true", "go ponder wtime 500 btime 500", "ponderhit", "stop"]
REPORT_COMMANDS = ["d", "eval", "go perft 2"]


def test_nothing_compiles_after_readyok():
    """Every compiled function a game needs is in memory before readyok: one first met during a game costs
    seconds on the first move if it compiles (a fresh install lost its first bullet games on time), and its load
    from the cache counts on the clock too. The reports (`d`, `eval`, `go perft`) are loaded from the cache when
    first asked for (readyok no longer waits for them), but must not compile either."""
    from tests.compiles import counting_compiles
    from quantfish.uci.protocol import UciEngine
    out = []
    engine = UciEngine(out=out.append)
    engine.handle("isready")
    assert out[-1] == "readyok"
    before = compiled_signatures()
    with counting_compiles() as compiles:
        for command in GAME_COMMANDS:
            engine.handle(command)
        assert sum(line.startswith("bestmove") for line in out) == 4
        after = compiled_signatures()
        new = {name: after[name] - before.get(name, set()) for name in after
               if after[name] - before.get(name, set())}
        assert not new, f"compiled or loaded during a game after readyok: {new}"
        for command in REPORT_COMMANDS:
            engine.handle(command)
        assert any("Final evaluation" in line or "NNUE" in line for line in out)
        assert any(line.startswith("Nodes searched") for line in out)
    assert not compiles, f"compiled after readyok: {compiles}"


def test_position_replays_only_the_new_moves(monkeypatch):
    """A GUI resends the game before every move; replaying a long game each time cost 7 ms at ply 130."""
    import chess

    import quantfish.core.notation
    from quantfish.uci.protocol import UciEngine
    engine_ = UciEngine(out=lambda line: None)
    engine_.handle("isready")
    board, moves = chess.Board(), []
    for _ in range(60):
        move = sorted(board.legal_moves, key=lambda m: m.uci())[len(moves) % board.legal_moves.count()]
        board.push(move)
        moves.append(move.uci())
    engine_.handle("position startpos moves " + " ".join(moves[:-2]))
    pushes = []
    real_push = quantfish.core.notation.push
    monkeypatch.setattr(quantfish.core.notation, "push", lambda b, m: pushes.append(m) or real_push(b, m))
    engine_.handle("position startpos moves " + " ".join(moves))
    assert len(pushes) == 2
    assert engine_.state.board.fen().split()[:4] == board.fen().split()[:4]
    # Taking back a move (a ponder miss) replays from the common prefix.
    engine_.handle("position startpos moves " + " ".join(moves[:-1]))
    assert len(pushes) == 2
    fresh = UciEngine(out=lambda line: None)
    fresh.handle("isready")
    fresh.handle("position startpos moves " + " ".join(moves[:-1]))
    assert fresh.state.game_keys == engine_.state.game_keys and fresh.state.board.fen() == engine_.state.board.fen()


@pytest.fixture
def uci():
    engine = Uci()
    yield engine
    engine.close()


@pytest.mark.parametrize("go", ["go ponder wtime 1000 btime 1000\nstop", "go infinite\nstop",
                                "go ponder wtime 100 btime 100\nponderhit"])
def test_stop_right_after_go_ends_the_search(uci, go):
    """A stop that arrives before the search thread has begun must still end that search (it used to be
    cleared when the search began: the engine pondered forever and never answered again)."""
    uci.send("uci")
    uci.send("isready")
    uci.expect("readyok", timeout=300)
    uci.send("position startpos moves e2e4")
    for _ in range(40):
        uci.send(go)
        uci.expect("bestmove", timeout=5)
    uci.send("isready")
    uci.expect("readyok", timeout=5)


def test_move_overhead_is_kept_back(uci):
    """With most of the clock claimed by Move Overhead the engine moves at once; movetime gives up the
    overhead too."""
    uci.send("uci")
    uci.send("setoption name Move Overhead value 1000")
    uci.send("isready")
    uci.expect("readyok", timeout=300)
    uci.send("position startpos")
    spent, _ = timed_go(uci, "go wtime 1500 btime 1500")
    assert spent < 0.7 * (1500 - 1000) + 100, spent      # hard limit: 70% of what the overhead leaves
    spent, _ = timed_go(uci, "go movetime 1400")
    assert spent < 1400 - 1000 + 100, spent


def progress_after(iterations):
    """``Progress`` fed (score, best-move changes, best move's nodes, nodes) per iteration, in pawns of 100."""
    progress = Progress(pawn=100)
    for it in iterations:
        progress.record(*it)
    return progress.factor()


def test_a_changing_best_move_earns_time_and_a_settled_one_saves_it():
    settled = progress_after([(20, 0, 600, 1000)] * 6)
    changing = progress_after([(20, 0, 600, 1000)] * 5 + [(20, 2, 600, 1000)])
    assert changing > 1.0 > settled
    # Changes decay: the same two changes five iterations back count for much less.
    earlier = progress_after([(20, 2, 600, 1000)] + [(20, 0, 600, 1000)] * 5)
    assert settled < earlier < changing


def test_a_falling_score_earns_time_and_a_rising_one_saves_it():
    level = progress_after([(20, 0, 600, 1000)] * 6)
    falling = progress_after([(20, 0, 600, 1000)] * 5 + [(-40, 0, 600, 1000)])
    rising = progress_after([(20, 0, 600, 1000)] * 5 + [(80, 0, 600, 1000)])
    assert rising < level < falling


def test_a_dominant_best_move_saves_time():
    shared = progress_after([(20, 1, 600, 1000)] * 6)
    dominant = progress_after([(20, 1, 600, 1000)] * 5 + [(20, 1, 990, 1000)])
    assert dominant < shared


@pytest.mark.parametrize("iterations", [[], [(0, 0, 0, 0)], [(0, 9, 1, 1)] * 9, [(30000, 0, 1, 1), (-30000, 40, 0, 5)]])
def test_the_factor_stays_within_its_bounds(iterations):
    assert Progress.MIN_FACTOR <= progress_after(iterations) <= Progress.MAX_FACTOR


def test_the_clock_scales_its_target_by_the_factor():
    clock = Clock(soft_ms=1000, hard_ms=5000, started_ns=time.monotonic_ns())
    clock.started_ns -= int(0.7e9)        # 700 ms spent: past 0.55 of the target, inside 0.55 of twice it
    assert not clock.should_continue(1.0)
    assert clock.should_continue(2.0)
