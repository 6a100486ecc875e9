"""``generate``: self-play data into one record file, by one process or one per core.

Worker ``w`` of ``W`` plays the games of stream (seed, w) until it has its share of the positions (the last
game is cut to fit). The parent appends games to the output in a fixed order, game k of worker 0, of worker
1, ..., then game k + 1, so a run is reproducible for a given seed and worker count, whatever the timing.
Every write is whole records of whole games, so the file is valid at any moment; an existing file is
appended to (refused when it is not a whole number of records).

Ctrl-C: no new game starts; the games under way finish (a fraction of a second at small budgets; a game
is one compiled call, which a signal cannot cut short), are written, and ``generate`` returns with
``interrupted`` set. With worker processes a second Ctrl-C stops them at once, writing what has arrived.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import signal
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

from quantfish.data.openings import Openings
from quantfish.datagen.selfplay import REASONS
from quantfish.datagen.config import GenConfig
from quantfish.datagen.shard import Game, ShardPlayer
from quantfish.runtime.progress import progress_bar
from quantfish.data.records import count_records, write_all


def default_workers() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def shares(positions: int, workers: int) -> list[int]:
    """Positions per worker, as even as possible."""
    return [positions // workers + (1 if w < positions % workers else 0) for w in range(workers)]


@dataclass
class Summary:
    """What a run produced."""

    positions: int = 0
    games: int = 0
    results: Counter = field(default_factory=Counter)     # "1-0", "1/2-1/2", "0-1"
    reasons: Counter = field(default_factory=Counter)     # selfplay.REASONS
    seconds: float = 0.0
    cpu_seconds: float = 0.0                              # this process and its workers
    interrupted: bool = False

    def add(self, game: Game) -> None:
        self.positions += game.records
        self.games += 1
        self.results[("0-1", "1/2-1/2", "1-0")[game.white_result]] += 1
        self.reasons[REASONS[game.reason]] += 1

    @property
    def rate(self) -> float:
        return self.positions / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_rate(self) -> float:
        """Positions per CPU-second: the rate per core, whatever else loads the machine."""
        return self.positions / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


class Progress:
    """The job's progress bar (``quantfish.runtime.progress``): positions written, games, rate, time left."""

    def __init__(self, total: int, stream: Optional[TextIO] = sys.stderr):
        self.start = time.perf_counter()
        self.bar = progress_bar(total, "gendata", "pos", stream=stream, enabled=stream is not None)

    def update(self, summary: Summary) -> None:
        summary.seconds = time.perf_counter() - self.start
        self.bar.set_postfix_str(f"games {summary.games:,}", refresh=False)
        self.bar.update(summary.positions - self.bar.n)

    def close(self) -> None:
        self.bar.close()


class _Interrupts:
    """SIGINT sets flags instead of raising, so no write or queue operation is cut in half."""

    def __init__(self):
        self.count = 0
        self._old = None

    def __enter__(self):
        try:
            self._old = signal.signal(signal.SIGINT, self._handle)
        except ValueError:          # not the main thread: no handler, Ctrl-C is the caller's business
            self._old = None
        return self

    def _handle(self, signum, frame):
        self.count += 1

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


class _OrderedOutput:
    """Writes workers' games round-robin (game k of every worker before game k + 1 of any)."""

    def __init__(self, workers: int, write: Callable[[Game], None]):
        self.pending = [deque() for _ in range(workers)]
        self.done = [False] * workers
        self.active = list(range(workers))
        self.turn = 0
        self.write = write

    def add(self, worker: int, game: Game) -> None:
        self.pending[worker].append(game)
        self._drain()

    def finish(self, worker: int) -> None:
        self.done[worker] = True
        self._drain()

    @property
    def finished(self) -> bool:
        return not self.active

    def _drain(self) -> None:
        while self.active:
            w = self.active[self.turn]
            if self.pending[w]:
                self.write(self.pending[w].popleft())
                self.turn = (self.turn + 1) % len(self.active)
            elif self.done[w]:
                self.active.pop(self.turn)
                self.turn = self.turn % len(self.active) if self.active else 0
            else:
                return

    def flush(self) -> None:
        """Write everything received, keeping the order as far as it goes (after an interruption)."""
        self.done = [True] * len(self.done)
        self._drain()


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children."""
    try:
        import resource
    except ImportError:
        return time.process_time()
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _check_output(path) -> None:
    """Refuse a file that is not whole records, before any work; make its folder if it has none yet."""
    if os.path.exists(path):
        count_records(path)           # DataFileError when not a whole number of records
    else:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


def generate(out_path, positions: int, seed: int = 0, workers: int = 1, config: GenConfig = GenConfig(),
             openings_path=None, net=None, progress: Optional[TextIO] = sys.stderr) -> Summary:
    """Append ``positions`` labelled positions to ``out_path``; see the module docstring."""
    config.check()
    if positions < 1 or workers < 1:
        raise ValueError("positions and workers must be at least 1")
    _check_output(out_path)
    openings = Openings(openings_path)
    if net is None:
        from quantfish.nnue.loader import load_nets
        net = load_nets()
    workers = min(workers, positions)
    summary = Summary()
    bar = Progress(positions, progress)
    cpu_start = _cpu_seconds()

    def write(game: Game) -> None:
        write_all(out_path, game.data)
        summary.add(game)
        bar.update(summary)

    with _Interrupts() as interrupts:
        if workers == 1:
            _run_here(write, positions, seed, config, openings, net, interrupts)
        else:
            _run_workers(write, positions, seed, workers, config, openings, net, interrupts, bar, summary)
        summary.interrupted = interrupts.count > 0
    summary.cpu_seconds = _cpu_seconds() - cpu_start
    bar.update(summary)
    bar.close()
    return summary


def _run_here(write, positions, seed, config, openings, net, interrupts) -> None:
    player = ShardPlayer(net, config, openings, seed, 0)
    made = 0
    while made < positions and not interrupts.count:
        game = player.play().first(positions - made)
        write(game)
        made += game.records


def _worker(worker, share, seed, config, openings, net, results, stop) -> None:
    """One process: games of stream (seed, worker) onto ``results`` until ``share`` positions or ``stop``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the parent decides when to stop
    try:
        player = ShardPlayer(net, config, openings, seed, worker)
        made = 0
        while made < share and not stop.is_set():
            game = player.play().first(share - made)
            results.put(("game", worker, game))
            made += game.records
        results.put(("done", worker, None))
    except Exception as exc:          # reported by the parent as one line
        results.put(("error", worker, f"{type(exc).__name__}: {exc}"))


class WorkerError(RuntimeError):
    """A worker process failed; the message says which and why."""


def _run_workers(write, positions, seed, workers, config, openings, net, interrupts, bar, summary) -> None:
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    results = ctx.Queue()
    stop = ctx.Event()
    procs = [ctx.Process(target=_worker, args=(w, share, seed, config, openings, net, results, stop), daemon=True)
             for w, share in enumerate(shares(positions, workers))]
    for p in procs:
        p.start()
    output = _OrderedOutput(workers, write)
    error = None
    try:
        while not output.finished:
            if interrupts.count and not stop.is_set():
                stop.set()
            if interrupts.count > 1:
                break
            try:
                kind, w, payload = results.get(timeout=0.2)
            except queue_module.Empty:
                for w, p in enumerate(procs):
                    if not output.done[w] and p.exitcode is not None and results.empty():
                        error = error or f"worker {w} exited with status {p.exitcode}"
                        stop.set()
                        output.finish(w)
                bar.update(summary)
                continue
            if kind == "game":
                output.add(w, payload)
            else:
                if kind == "error":
                    error = error or f"worker {w}: {payload}"
                    stop.set()
                output.finish(w)
    finally:
        output.flush()
        for p in procs:
            if interrupts.count > 1 or error:
                p.terminate()
            p.join(timeout=5)
    if error:
        raise WorkerError(error)
