"""Time management: the allocation never spends what the clock lacks, and the engine answers in time."""
import sys
import time

import pytest

from quantfish.search.driver import Limits
from quantfish.search.timeman import Carry, Clock, LagMeter, Progress

from tests.test_uci import Uci


def budget(remaining, inc=0, movestogo=None, overhead=10, ply=0):
    clock = Clock.for_limits(Limits(wtime=remaining, btime=remaining, winc=inc, binc=inc, movestogo=movestogo),
                             0, overhead, ply=ply)
    return clock.optimum * 1000, clock.hard * 1000


@pytest.mark.parametrize("remaining", [0, 1, 5, 20, 50, 100, 300, 1000, 5000, 60000])
@pytest.mark.parametrize("inc", [0, 10, 100, 1000])
@pytest.mark.parametrize("movestogo", [None, 1, 2, 10, 40])
@pytest.mark.parametrize("ply", [0, 40, 300])
def test_hard_limit_leaves_the_overhead_on_the_clock(remaining, inc, movestogo, ply):
    optimum, hard = budget(remaining, inc, movestogo, ply=ply)
    assert 0 <= optimum <= hard
    # At most 80% of the clock less the overhead, whatever the increment; 1 ms at the least.
    assert hard <= max(1.0, 0.8 * remaining - 10) + 1e-9
    # The target: a fifth of the clock at most in sudden death (1.12 times that with an increment).
    assert optimum <= (0.2 * 1.12 if movestogo is None else 0.88) * remaining + 1e-9


# Stockfish 15.1's budgets (timeman.cpp), worked out by hand: (remaining, inc, movestogo, ply) -> (optimum, hard).
# 60000+0 at ply 0: pool 60000 - 10*52 = 59480, scale 0.0120 + 3^0.45 * 0.0039 = 0.018394, hard 4 optimum.
# 5000+50 at ply 16: pool 5000 + 50*49 - 520 = 6930, scale (0.0120 + 19^0.45 * 0.0039) * 1.12 = 0.029873,
# hard (4 + 16/12) optimum. 10000 in 20 moves at ply 30: pool 10000 - 10*22 = 9780, scale (0.88 + 30/116.4)/20
# = 0.056890, hard (1.5 + 0.11*20) optimum.
STOCKFISH_BUDGETS = [((60000, 0, None, 0), (1094.1, 4376.3)), ((5000, 50, None, 16), (207.0, 1104.2)),
                     ((10000, 0, 20, 30), (556.4, 2058.6))]


@pytest.mark.parametrize("limits, expected", STOCKFISH_BUDGETS)
def test_the_budget_is_stockfish_15_1s(limits, expected):
    remaining, inc, movestogo, ply = limits
    optimum, hard = budget(remaining, inc, movestogo, ply=ply)
    assert optimum == pytest.approx(expected[0], abs=0.5) and hard == pytest.approx(expected[1], abs=2)


def test_pondering_spends_a_quarter_more_with_the_same_deadline():
    limits = Limits(wtime=60000, btime=60000)
    plain = Clock.for_limits(limits, 0, 10, ply=20)
    ponder = Clock.for_limits(limits, 0, 10, ply=20, ponder=True)
    assert ponder.optimum == pytest.approx(1.25 * plain.optimum) and ponder.hard == plain.hard


def test_the_target_grows_as_the_game_goes_on():
    targets = [budget(60000, ply=ply)[0] for ply in (0, 20, 40, 80)]
    assert targets == sorted(targets) and targets[-1] > 1.5 * targets[0]


def test_negative_clock_is_a_floor_budget():
    optimum, hard = budget(-500)
    assert optimum == 0 and hard == 1.0


def simulate_sudden_death(base_ms, inc_ms, lag_ms, moves, spend):
    """A game's clock for one side from ply 16 on: each move spends ``spend(optimum, hard)`` plus ``lag_ms``
    the engine never sees. Returns the least time left after any move."""
    remaining, least = base_ms, base_ms
    for move in range(moves):
        optimum, hard = budget(remaining, inc_ms, ply=16 + 2 * move)
        remaining -= spend(optimum, hard) + lag_ms
        least = min(least, remaining)
        remaining += inc_ms
    return least


@pytest.mark.parametrize("base_ms", [1000, 2000, 5000])
def test_sudden_death_does_not_drain_the_clock(base_ms):
    # 200 moves a side (the soak's 400-ply limit), 2 ms of unseen lag a move, each move far over its target:
    # an iteration that ends at twice the target scaled by the falling score and the stable move at their
    # largest (1.5 * 1.98). The clock holds.
    most = 2 * 1.5 * 1.98
    assert simulate_sudden_death(base_ms, 0, 2.0, 200, lambda optimum, hard: min(most * optimum, hard)) > 0


def test_hard_deadlines_every_move_still_keep_a_reserve_with_increment():
    # The worst case with an increment: every move runs to its hard deadline, lag half of Move Overhead.
    assert simulate_sudden_death(1000, 10, 5.0, 300, lambda optimum, hard: hard) > 0


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
    assert spent < 0.8 * 1500 - 1000 + 100, spent      # hard limit: 80% of the clock less the overhead
    spent, _ = timed_go(uci, "go movetime 1400")
    assert spent < 1400 - 1000 + 100, spent


def progress_after(iterations, carry=None):
    """``Progress`` fed (depth, score, best move, best-move changes) per iteration; returns it."""
    progress = Progress(carry)
    for it in iterations:
        progress.record(*it)
    return progress


def scale_after(iterations, carry=None):
    return progress_after(iterations, carry if carry is not None else Carry(score=20, average=20.0)).scale()


def steady(n, score=20, move=7, changes=0, first_depth=1):
    return [(first_depth + k, score, move, changes) for k in range(n)]


def test_a_changing_best_move_earns_time_and_a_settled_one_saves_it():
    settled = scale_after(steady(6))
    changing = scale_after(steady(5) + [(6, 20, 8, 2)])
    assert changing > 2 * settled
    # Changes decay: the same two changes five iterations back count for much less.
    earlier = scale_after([(1, 20, 7, 2)] + steady(5, first_depth=2))
    assert settled < earlier < changing


def test_a_falling_score_earns_time_and_a_rising_one_saves_it():
    # The previous move's average was 60; this search has settled at 20, then drops to 0 or climbs to 30.
    carry = Carry(score=60, average=60.0)
    level = scale_after(steady(6), carry)
    falling = scale_after(steady(5) + [(6, 0, 7, 0)], carry)
    rising = scale_after(steady(5) + [(6, 30, 7, 0)], carry)
    assert rising < level < falling
    # Stockfish's weights: 12 per unit below the previous move's average, 6 below the score 4 iterations ago.
    assert falling / level == pytest.approx((71 + 12 * 60 + 6 * 20) / (71 + 12 * 40))
    assert rising / level == pytest.approx((71 + 12 * 30 - 6 * 10) / (71 + 12 * 40))


def test_the_first_move_of_a_game_is_as_long_as_a_falling_score():
    assert scale_after(steady(3), Carry()) == pytest.approx(scale_after(steady(2) + [(3, -3000, 7, 0)]))


def test_a_move_best_for_ten_depths_saves_time_and_leaves_it_to_the_next_move():
    young = progress_after(steady(10), Carry(score=20, average=20.0))
    old = progress_after(steady(11), Carry(score=20, average=20.0))
    assert old.scale() == pytest.approx(young.scale() * 0.65 / 1.37)
    old.finish()
    young.finish()
    assert old.carry.reduction == 1.37 and young.carry.reduction == 0.65
    assert old.carry.score == 20 and old.carry.average == pytest.approx(20.0)
    # The move after a stable one may take more: (1.4 + 1.37) against (1.4 + 0.65).
    after_stable = scale_after(steady(4), Carry(score=20, average=20.0, reduction=1.37))
    after_unstable = scale_after(steady(4), Carry(score=20, average=20.0, reduction=0.65))
    assert after_stable / after_unstable == pytest.approx(2.77 / 2.05)


def spent_clock(optimum_ms, spent_ms):
    clock = Clock(optimum_ms=optimum_ms, hard_ms=10 * optimum_ms, started_ns=time.monotonic_ns())
    clock.started_ns -= int(spent_ms * 1e6)
    clock.budget_ns = clock.started_ns
    return clock


def test_the_search_stops_past_the_scaled_optimum_and_repeats_its_depth_past_half_of_it():
    progress = progress_after(steady(6), Carry(score=20, average=20.0))
    total = 1000 * progress.scale()
    assert not progress.decide(spent_clock(1000, 1.05 * total))
    assert progress.decide(spent_clock(1000, 0.4 * total)) and progress.increase
    assert progress.decide(spent_clock(1000, 0.7 * total)) and not progress.increase
    # Stockfish repeats one iteration at a time: the next goes deeper again.
    assert progress.decide(spent_clock(1000, 0.8 * total)) and progress.increase
    # No clock, or one without a target (movetime, infinite): never stopped here.
    assert progress.decide(None) and progress.decide(Clock(None, 1000))


def test_one_legal_move_takes_half_a_second_at_most():
    progress = progress_after(steady(6), Carry(score=20, average=20.0))
    assert progress.decide(spent_clock(100_000, 400), single_move=True)
    assert not progress.decide(spent_clock(100_000, 600), single_move=True)
