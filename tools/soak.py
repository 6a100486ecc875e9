"""Soak test: many games of Quantfish against itself and the installed engines, counting every fault.

Run on demand (``make soak``), not by ``make test``. Each stage plays games at one time control with some
number of games at once; the default plan covers bullet and blitz with and without increment, sudden death,
more games at once than cores, Ponder, MultiPV above 1, Chess960 and option changes between games. The
report counts, per engine: crashes, illegal moves, time losses, hangs, and the least time left on any clock.

A time loss is strict: the time from writing ``go`` (or ``ponderhit``) to reading ``bestmove`` exceeds the
clock, with no margin unless ``--margin-ms`` gives one. A hang is no ``bestmove`` within the clock plus
``--hang-s`` seconds, or no ``readyok`` within ``--hang-s`` seconds.

Every finished game is appended at once to the JSON-lines log (``--log``), so Ctrl-C keeps what was played;
the summary of the finished games is printed either way.

Examples::

    python tests/soak.py --plan default --log soak.jsonl
    python tests/soak.py --tc 1+0 --opponent self --games 100 --concurrency 4 --ponder --multipv 3
    python tests/soak.py --plan default --scale 0.1          # a tenth of each stage, as a smoke run
"""
from __future__ import annotations

import argparse
import json
import os
import multiprocessing
import queue
import random
import select
import signal
import shutil
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parent.parent
OPENINGS = ROOT.parent / "shared" / "data" / "openings" / "8moves_v3.epd"

# Installed opponents: name -> (command, options). Threads=1 everywhere: the machine has two cores.
OPPONENTS = {
    "glaurung": (["/usr/games/glaurung"], {"Threads": "1"}),
    "toga2": (["/usr/games/toga2"], {}),
    "ethereal": (["/usr/games/ethereal-chess"], {"Threads": "1"}),
    "gnuchess": (["/usr/games/gnuchess", "--uci"], {}),
    "stockfish": (["/usr/games/stockfish"], {"Threads": "1"}),
}

# The default plan: (time control, opponent, games, games at once, extras). 2,040 games in all; on two cores
# it takes about an hour.
DEFAULT_PLAN = [
    dict(tc="1+0", opponent="self", games=300, concurrency=2),
    dict(tc="1+0", opponent="self", games=200, concurrency=4),
    dict(tc="1+0", opponent="self", games=100, concurrency=4, ponder=True),
    dict(tc="2+0", opponent="self", games=150, concurrency=4, multipv=3),
    dict(tc="2+0", opponent="glaurung", games=100, concurrency=2),
    dict(tc="1+0", opponent="glaurung", games=100, concurrency=3),
    dict(tc="5+0", opponent="self", games=80, concurrency=3, chess960=True),
    dict(tc="5+0", opponent="self", games=60, concurrency=2, ponder=True),
    dict(tc="1+0.01", opponent="self", games=300, concurrency=4, shuffle=True),
    dict(tc="1+0.01", opponent="toga2", games=100, concurrency=2),
    dict(tc="1+0.01", opponent="ethereal", games=100, concurrency=2, ponder=True),
    dict(tc="1+0.01", opponent="self", games=100, concurrency=2, chess960=True, ponder=True),
    dict(tc="3+0.03", opponent="self", games=150, concurrency=3, ponder=True, multipv=2),
    dict(tc="3+0.03", opponent="gnuchess", games=60, concurrency=2),
    dict(tc="3+0.03", opponent="stockfish", games=60, concurrency=2),
    dict(tc="10+0.1", opponent="self", games=40, concurrency=2),
    dict(tc="10+0.1", opponent="glaurung", games=40, concurrency=4, shuffle=True),
]


class EngineDied(Exception):
    """The engine's process ended (a crash)."""


class EngineSilent(Exception):
    """The engine did not answer in time (a hang)."""


class UciProcess:
    """One engine process, read without threads: ``expect`` waits on the pipes with ``select`` and stamps
    each line with the time it was read, so the referee's own scheduling does not count against an engine."""

    def __init__(self, name, command, options, stderr_path):
        self.name, self.command, self.base_options = name, command, dict(options)
        self.stderr_path = stderr_path
        self.declared = {}
        self.proc = None
        self.pending = deque()
        self.buffer = b""

    def start(self, hang_s):
        err = open(self.stderr_path, "ab")
        # A session of its own: Ctrl-C at the terminal stops the soak, not the engines mid-game.
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                     bufsize=0, start_new_session=True)
        err.close()
        self.pending, self.buffer = deque(), b""
        self.send("uci")
        self.declared = {}
        deadline = time.monotonic() + hang_s + 10
        while True:
            line, _ = self.expect(lambda text: True, deadline)
            if line == "uciok":
                break
            if line.startswith("option name "):
                self._declare(line)
        for name, value in self.base_options.items():
            self.set_option(name, value)
        self.ready(hang_s + 10)

    def _declare(self, line):
        words = line.split()
        i = words.index("type") if "type" in words else len(words)
        name = " ".join(words[2:i])
        spec = {"type": words[i + 1] if i + 1 < len(words) else ""}
        for key in ("min", "max", "default"):
            if key in words[i:]:
                j = words.index(key, i)
                spec[key] = words[j + 1] if j + 1 < len(words) else ""
        self.declared[name.lower()] = spec

    def fileno(self):
        return self.proc.stdout.fileno()

    def ingest(self, stamp):
        """Reads what the pipe holds into stamped lines (None at end of file)."""
        data = os.read(self.fileno(), 1 << 16)
        if not data:
            self.pending.append((None, stamp))
            return
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for raw in lines:
            self.pending.append((raw.decode("utf-8", "replace").rstrip("\r"), stamp))

    def send(self, text):
        try:
            self.proc.stdin.write((text + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise EngineDied(f"{self.name}: pipe closed") from None

    def expect(self, wanted, deadline, others=()):
        """The first line for which ``wanted`` is true, with its time; ``EngineSilent`` at the deadline.
        ``others`` (engines of the same game) are read meanwhile so that none blocks on a full pipe."""
        while True:
            while self.pending:
                line, stamp = self.pending.popleft()
                if line is None:
                    self.pending.appendleft((None, stamp))
                    raise EngineDied(f"{self.name}: process ended (exit {self.proc.wait()})")
                if "Traceback" in line or line.startswith('  File "'):
                    raise EngineDied(f"{self.name}: traceback on stdout: {line}")
                if wanted(line):
                    return line, stamp
            left = deadline - time.monotonic()
            if left <= 0:
                raise EngineSilent(f"{self.name}: no answer")
            readers = [self] + [o for o in others if o is not self and o.proc is not None and o.proc.poll() is None]
            ready, _, _ = select.select(readers, [], [], left)
            stamp = time.monotonic()
            for engine in ready:
                engine.ingest(stamp)

    def ready(self, hang_s):
        self.send("isready")
        self.expect(lambda text: text == "readyok", time.monotonic() + hang_s)

    def has_option(self, name):
        return name.lower() in self.declared

    def set_option(self, name, value):
        if self.has_option(name):
            self.send(f"setoption name {name} value {value}")

    def spin_range(self, name):
        spec = self.declared.get(name.lower(), {})
        try:
            return int(spec["min"]), int(spec["max"])
        except (KeyError, ValueError):
            return None

    def stop_process(self):
        if self.proc is None:
            return
        try:
            self.send("quit")
            self.proc.wait(timeout=2)
        except (EngineDied, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@dataclass
class Tally:
    """Faults and results of one engine."""
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    crashes: int = 0
    illegal: int = 0
    time_losses: int = 0
    hangs: int = 0
    min_clock_ms: float = float("inf")

    def add(self, other):
        for key in ("games", "wins", "draws", "losses", "crashes", "illegal", "time_losses", "hangs"):
            setattr(self, key, getattr(self, key) + getattr(other, key))
        self.min_clock_ms = min(self.min_clock_ms, other.min_clock_ms)

    def faults(self):
        return self.crashes + self.illegal + self.time_losses + self.hangs


@dataclass
class Stage:
    tc: str
    opponent: str
    games: int
    concurrency: int
    ponder: bool = False
    multipv: int = 1
    chess960: bool = False
    shuffle: bool = False
    tallies: dict = field(default_factory=dict)

    def label(self):
        extras = [k for k, on in (("ponder", self.ponder), ("960", self.chess960), ("shuffle", self.shuffle)) if on]
        if self.multipv > 1:
            extras.append(f"multipv {self.multipv}")
        return f"{self.tc} vs {self.opponent}, {self.concurrency} at once" + (f" ({', '.join(extras)})" if extras else "")

    def clock(self):
        base, _, inc = self.tc.partition("+")
        return float(base) * 1000, float(inc or 0) * 1000


class Referee:
    """Plays one stage's games, one after another, in a process of its own (no GIL shared with other games)."""

    def __init__(self, args, stop):
        self.args = args
        self.stop = stop
        self.openings = [line.split(" c0")[0].split(";")[0].strip() for line in OPENINGS.read_text().splitlines()
                         if line.strip()]
        self.logdir = Path(args.stderr_dir)

    # -- engines -------------------------------------------------------------------------------

    def quantfish(self, tag):
        options = dict(o.split("=", 1) for o in self.args.option)
        return UciProcess(f"quantfish-{tag}", self.args.quantfish.split(), options,
                          self.logdir / f"quantfish-{tag}.stderr")

    def engines_for(self, stage, worker):
        if stage.opponent == "self":
            return [self.quantfish(f"{worker}a"), self.quantfish(f"{worker}b")]
        command, options = OPPONENTS[stage.opponent]
        return [self.quantfish(f"{worker}"),
                UciProcess(stage.opponent, command, options, self.logdir / f"{stage.opponent}-{worker}.stderr")]

    def prepare(self, engine, stage, rng):
        """Starts the engine if needed, then sets this game's options."""
        if engine.proc is None or engine.proc.poll() is not None:
            engine.start(self.args.hang_s)
        engine.set_option("Ponder", "true" if stage.ponder else "false")
        engine.set_option("MultiPV", stage.multipv)
        engine.set_option("UCI_Chess960", "true" if stage.chess960 else "false")
        if stage.shuffle:
            hash_range = engine.spin_range("Hash")
            if hash_range:
                engine.set_option("Hash", rng.choice([h for h in (1, 2, 4, 8, 16, 32, 64, 128)
                                                      if hash_range[0] <= h <= hash_range[1]] or [hash_range[0]]))
            threads = engine.spin_range("Threads")
            if threads and engine.name.startswith("quantfish"):
                engine.set_option("Threads", rng.randint(threads[0], min(threads[1], 4)))
            if rng.random() < 0.3:
                engine.set_option("Clear Hash", "")
        engine.send("ucinewgame")
        engine.ready(self.args.hang_s)

    # -- one game ------------------------------------------------------------------------------

    def start_board(self, stage, rng, index):
        if stage.chess960:   # both games of a pair start from the same position
            return chess.Board.from_chess960_pos(random.Random(self.args.seed * 100003 + index // 2).randrange(960))
        return chess.Board(self.openings[(index // 2) % len(self.openings)])

    def play(self, stage, engines, index, rng):
        """Plays one game; returns (result for white '1-0'/'0-1'/'1/2-1/2', reason, fault tallies by engine)."""
        white, black = (engines[0], engines[1]) if index % 2 == 0 else (engines[1], engines[0])
        tallies = {e.name: Tally(games=1) for e in engines}
        for e in engines:
            try:
                self.prepare(e, stage, rng)
            except EngineDied:
                tallies[e.name].crashes += 1
                e.proc = None
                return None, f"{e.name} crashed before the game", tallies
            except EngineSilent:
                tallies[e.name].hangs += 1
                e.stop_process()
                e.proc = None
                return None, f"{e.name} hung before the game", tallies
        board = self.start_board(stage, rng, index)
        start_fen = board.fen()
        base, inc = stage.clock()
        clock = {chess.WHITE: base, chess.BLACK: base}
        pondering = {}   # engine name -> expected move while it ponders
        moves = []

        def position_command(extra=()):
            text = f"position fen {start_fen}"
            all_moves = moves + list(extra)
            return text + (" moves " + " ".join(all_moves) if all_moves else "")

        def go_command(ponder=False):
            return ("go ponder " if ponder else "go ") + \
                f"wtime {int(clock[chess.WHITE])} btime {int(clock[chess.BLACK])} winc {int(inc)} binc {int(inc)}"

        def finish_ponder(engine):
            """The engine pondered a move that was not played: stop it and drain its bestmove."""
            if pondering.pop(engine.name, None) is not None:
                engine.send("stop")
                engine.expect(lambda t: t.startswith("bestmove"), time.monotonic() + self.args.hang_s, engines)

        result, reason = None, ""
        while result is None and not self.stop.is_set():
            side = board.turn
            mover = white if side == chess.WHITE else black
            try:
                expected = pondering.get(mover.name)
                if expected is not None and moves and moves[-1] == expected:
                    pondering.pop(mover.name)
                    mover.send("ponderhit")
                    sent = time.monotonic()
                else:
                    finish_ponder(mover)
                    mover.send(position_command())
                    mover.send(go_command())
                    sent = time.monotonic()
                line, stamp = mover.expect(lambda t: t.startswith("bestmove"),
                                           sent + clock[side] / 1000 + self.args.hang_s, engines)
            except EngineDied as exc:
                tallies[mover.name].crashes += 1
                mover.proc = None
                result, reason = ("0-1" if side == chess.WHITE else "1-0"), str(exc)
                break
            except EngineSilent as exc:
                tallies[mover.name].hangs += 1
                mover.stop_process()
                mover.proc = None
                result, reason = ("0-1" if side == chess.WHITE else "1-0"), str(exc)
                break
            elapsed = (stamp - sent) * 1000
            left = clock[side] - elapsed
            tallies[mover.name].min_clock_ms = min(tallies[mover.name].min_clock_ms, left)
            if left < -self.args.margin_ms:
                tallies[mover.name].time_losses += 1
                result, reason = ("0-1" if side == chess.WHITE else "1-0"), \
                    f"{mover.name} lost on time at ply {len(moves)}: {elapsed:.0f} ms used of {clock[side]:.0f}"
                break
            clock[side] = left + inc
            words = line.split()
            try:
                move = board.parse_uci(words[1])
            except (IndexError, ValueError):
                tallies[mover.name].illegal += 1
                result, reason = ("0-1" if side == chess.WHITE else "1-0"), \
                    f"{mover.name} played an illegal move: {line!r} in {board.fen()}"
                break
            board.push(move)
            moves.append(move.uci())
            if board.is_game_over(claim_draw=True):
                result, reason = board.result(claim_draw=True), "rules"
                break
            if len(moves) >= self.args.max_plies:
                result, reason = "1/2-1/2", "ply limit"
                break
            # Pondering: the mover thinks on the move it expects while the other side thinks.
            if stage.ponder and len(words) >= 4 and words[2] == "ponder" and mover.has_option("Ponder"):
                try:
                    predicted = board.parse_uci(words[3])
                except ValueError:
                    predicted = None
                if predicted is not None:
                    pondering[mover.name] = predicted.uci()
                    mover.send(position_command([predicted.uci()]))
                    mover.send(go_command(ponder=True))
        for e in engines:  # the game is over: no engine may still be pondering
            if e.proc is not None and e.name in pondering:
                try:
                    finish_ponder(e)
                except (EngineDied, EngineSilent):
                    tallies[e.name].hangs += 1
                    e.stop_process()
                    e.proc = None
        if result is None:
            return None, "interrupted", tallies
        for e, colour in ((white, "1-0"), (black, "0-1")):
            t = tallies[e.name]
            if result == "1/2-1/2":
                t.draws += 1
            elif result == colour:
                t.wins += 1
            else:
                t.losses += 1
        return result, reason, tallies

    # -- running -------------------------------------------------------------------------------

    def run(self, stage, worker, jobs, results):
        rng = random.Random(self.args.seed * 7919 + worker)
        engines = self.engines_for(stage, worker)
        try:
            while not self.stop.is_set():
                try:
                    index = jobs.get_nowait()
                except queue.Empty:
                    return
                began = time.monotonic()
                result, reason, tallies = self.play(stage, engines, index, rng)
                if result is None and reason == "interrupted":
                    return
                results.put((index, result, reason, tallies, time.monotonic() - began))
        finally:
            for e in engines:
                e.stop_process()


def referee_main(args, stage, worker, jobs, results, stop):
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent handles Ctrl-C and sets ``stop``
    try:
        Referee(args, stop).run(stage, worker, jobs, results)
    finally:
        results.put(None)


class Soak:
    """Runs the stages, records every game as it ends, and reports."""

    def __init__(self, args):
        self.args = args
        self.stop = multiprocessing.Event()
        self.log = open(args.log, "a") if args.log else None
        self.played = 0
        self.started = time.monotonic()
        self.logdir = Path(args.stderr_dir)
        self.logdir.mkdir(parents=True, exist_ok=True)

    def record(self, stage, index, result, reason, tallies, seconds):
        for name, t in tallies.items():
            key = "quantfish" if name.startswith("quantfish") else name
            stage.tallies.setdefault(key, Tally()).add(t)
        self.played += 1
        if self.log:
            self.log.write(json.dumps({
                "stage": stage.label(), "game": index, "result": result, "reason": reason,
                "seconds": round(seconds, 2),
                "engines": {n: dict(vars(t)) for n, t in tallies.items()}}) + "\n")
            self.log.flush()
        faults = sum(t.faults() for t in tallies.values())
        if faults or not self.args.quiet:
            print(f"[{self.played} games, {time.monotonic() - self.started:.0f} s] {stage.label()} "
                  f"game {index}: {result} {reason}", flush=True)

    def run_stage(self, stage):
        jobs, results = multiprocessing.Queue(), multiprocessing.Queue()
        for i in range(stage.games):
            jobs.put(i)
        time.sleep(0.1)   # let the queue's feeder thread hand the jobs over before the referees look
        referees = [multiprocessing.Process(target=referee_main, args=(self.args, stage, w, jobs, results, self.stop))
                    for w in range(stage.concurrency)]
        for r in referees:
            r.start()
        running = len(referees)
        try:
            while running:
                try:
                    item = results.get(timeout=0.5)
                except queue.Empty:
                    if not any(r.is_alive() for r in referees):
                        break
                    continue
                if item is None:
                    running -= 1
                else:
                    self.record(stage, *item)
        except KeyboardInterrupt:
            self.stop.set()   # referees end their game at the next move and close their engines
            deadline = time.monotonic() + self.args.hang_s
            while running and time.monotonic() < deadline:
                try:
                    item = results.get(timeout=0.5)
                except queue.Empty:
                    continue
                if item is None:
                    running -= 1
                else:
                    self.record(stage, *item)
            raise
        finally:
            for r in referees:
                r.join(1)
                if r.is_alive():
                    r.terminate()

    def report(self, stages):
        rows = []
        total = {}
        for stage in stages:
            for name, t in sorted(stage.tallies.items()):
                rows.append((stage.label(), name, t))
                total.setdefault(name, Tally()).add(t)
        header = f"{'stage':58} {'engine':10} {'games':>5} {'W':>4} {'D':>4} {'L':>4} {'crash':>5} " \
                 f"{'illegal':>7} {'time':>5} {'hang':>5} {'least clock':>11}"
        print(header)
        for label, name, t in rows + [("all stages", n, t) for n, t in sorted(total.items())]:
            least = "-" if t.min_clock_ms == float("inf") else f"{t.min_clock_ms:.0f} ms"
            print(f"{label:58} {name:10} {t.games:5} {t.wins:4} {t.draws:4} {t.losses:4} {t.crashes:5} "
                  f"{t.illegal:7} {t.time_losses:5} {t.hangs:5} {least:>11}")
        tracebacks = sum(p.read_text(errors="replace").count("Traceback") for p in self.logdir.glob("quantfish-*"))
        print(f"Quantfish stderr tracebacks: {tracebacks} (logs in {self.logdir})")
        return total


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plan", choices=["default"], help="run the default plan of stages")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every stage's game count (plan only)")
    p.add_argument("--tc", default="1+0", help="time control BASE+INC in seconds (single stage)")
    p.add_argument("--opponent", default="self", choices=["self", *OPPONENTS])
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--ponder", action="store_true")
    p.add_argument("--multipv", type=int, default=1)
    p.add_argument("--chess960", action="store_true")
    p.add_argument("--shuffle", action="store_true", help="random Hash/Threads/Clear Hash before each game")
    p.add_argument("--quantfish", default=str(ROOT / ".venv" / "bin" / "quantfish"), help="Quantfish's command")
    p.add_argument("--option", action="append", default=[], help="NAME=VALUE, a Quantfish UCI option")
    p.add_argument("--margin-ms", type=float, default=0.0, help="overrun allowed before a time loss")
    p.add_argument("--hang-s", type=float, default=10.0, help="silence beyond the clock that counts as a hang")
    p.add_argument("--max-plies", type=int, default=400, help="a game this long is a draw")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", default=None, help="append every game as a JSON line here")
    p.add_argument("--stderr-dir", default=str(ROOT / "build" / "soak"), help="engines' stderr logs")
    p.add_argument("--quiet", action="store_true", help="print only faulty games and the summary")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.plan:
        stages = [Stage(**{**s, "games": max(2, int(round(s["games"] * args.scale / 2)) * 2)}) for s in DEFAULT_PLAN]
    else:
        stages = [Stage(args.tc, args.opponent, args.games, args.concurrency, args.ponder, args.multipv,
                        args.chess960, args.shuffle)]
    for stage in stages:
        if stage.opponent != "self" and not os.access(OPPONENTS[stage.opponent][0][0], os.X_OK):
            print(f"skipping {stage.label()}: {OPPONENTS[stage.opponent][0][0]} is not installed "
                  f"(apt-get install it)", flush=True)
            stage.games = 0
    soak = Soak(args)
    if not shutil.which(args.quantfish.split()[0]) and not Path(args.quantfish.split()[0]).exists():
        sys.exit(f"Quantfish command not found: {args.quantfish}")
    try:
        for stage in stages:
            if stage.games and not soak.stop.is_set():
                print(f"== {stage.label()}: {stage.games} games", flush=True)
                soak.run_stage(stage)
    except KeyboardInterrupt:
        soak.stop.set()
        print("interrupted: finishing the report with the games played so far", flush=True)
    total = soak.report([s for s in stages if s.tallies])
    faults = sum(t.faults() for name, t in total.items() if name == "quantfish")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
