"""Generation cut into chunks, so that any number of processes or machines make the same bytes.

Chunk ``i`` of a run is the games of stream (seed, i) until it holds its ``positions`` records (the last game
cut to fit): it depends on the seed, its number, the settings, the openings and the net, and on nothing else,
so whoever plays it, whenever, and however often it is retried, it is the same bytes. Each chunk is written
into the run's chunk folder under a temporary name and renamed when whole; a run started again finds the
finished chunks there and skips them. When every chunk is there they are appended to the output in order and
the folder is removed.

``run_chunk`` is what a worker runs (``quantfish.datagen.cluster`` hands the chunks to a Dask cluster);
``generate_chunked`` runs them here, one after another. A worker process loads the net and the openings once
(kept in this module) and reuses them for every chunk it is given.
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TextIO

from quantfish.data.openings import Openings
from quantfish.data.records import RECORD_SIZE, write_all
from quantfish.datagen.config import GenConfig
from quantfish.datagen.selfplay import REASONS
from quantfish.datagen.shard import ShardPlayer

DEFAULT_CHUNK_POSITIONS = 1_000_000
FOLDER_SUFFIX = ".chunks"


@dataclass(frozen=True)
class ChunkJob:
    """One chunk: everything a worker needs (paths, not loaded objects: it may be another machine)."""

    seed: int
    index: int
    positions: int
    config: GenConfig
    folder: str
    openings: Optional[str] = None      # None: the book shipped with Quantfish
    net: Optional[str] = None           # None: the net the engine loads

    @property
    def path(self) -> Path:
        return Path(self.folder) / f"chunk-{self.index:06d}.bin"

    @property
    def key(self) -> str:
        return f"gendata-{self.seed}-{self.index}-{self.positions}"


@dataclass
class ChunkResult:
    index: int
    positions: int
    games: int
    results: Counter        # "1-0", "1/2-1/2", "0-1"
    reasons: Counter
    skipped: bool           # found finished from an earlier run
    seconds: float


def plan(out_path, positions: int, seed: int, config: GenConfig, chunk_positions: int = DEFAULT_CHUNK_POSITIONS,
         openings=None, net=None) -> list[ChunkJob]:
    """The chunks of a run of ``positions`` positions (the last one smaller when it does not divide)."""
    if positions < 1 or chunk_positions < 1:
        raise ValueError("positions and chunk positions must be at least 1")
    config.check()
    folder = str(Path(str(out_path) + FOLDER_SUFFIX))
    openings = str(Path(openings).resolve()) if openings else None
    net = str(Path(net).resolve()) if net else None
    return [ChunkJob(seed, i, min(chunk_positions, positions - start), config, folder, openings, net)
            for i, start in enumerate(range(0, positions, chunk_positions))]


def finished(job: ChunkJob) -> bool:
    try:
        return job.path.stat().st_size == job.positions * RECORD_SIZE
    except OSError:
        return False


_LOADED: dict = {}


def _resources(job: ChunkJob):
    """The net and openings of a job, loaded once per process."""
    key = (job.net, job.openings)
    if key not in _LOADED:
        from quantfish.nnue.loader import load_nets
        _LOADED[key] = (load_nets(job.net), Openings(job.openings))
    return _LOADED[key]


def warm(net_path: Optional[str] = None, openings: Optional[str] = None) -> None:
    """Load the net and openings of this process and the generator's compiled code (a game of a few plies
    in each mode), so that the first chunk's time is play, not loading."""
    key = (net_path, openings)
    if key not in _LOADED:
        from quantfish.nnue.loader import load_nets
        _LOADED[key] = (load_nets(net_path), Openings(openings))
    net, book = _LOADED[key]
    for sample in (0, 1):
        ShardPlayer(net, GenConfig(depth=1, nodes=64, max_plies=4, sample=sample), book, 0, 0).play()


def run_chunk(job: ChunkJob) -> ChunkResult:
    """Play chunk ``job`` into its file (temporary name, renamed when whole); nothing to do if it is there."""
    t0 = time.perf_counter()
    if finished(job):
        return ChunkResult(job.index, job.positions, 0, Counter(), Counter(), True, 0.0)
    net, openings = _resources(job)
    player = ShardPlayer(net, job.config, openings, job.seed, job.index)
    Path(job.folder).mkdir(parents=True, exist_ok=True)
    tmp = job.path.with_name(f"{job.path.name}.tmp-{os.getpid()}")
    made, games, results, reasons = 0, 0, Counter(), Counter()
    try:
        with open(tmp, "wb") as fh:
            while made < job.positions:
                game = player.play().first(job.positions - made)
                fh.write(game.data)
                made += game.records
                games += 1
                results[("0-1", "1/2-1/2", "1-0")[game.white_result]] += 1
                reasons[REASONS[game.reason]] += 1
        os.replace(tmp, job.path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return ChunkResult(job.index, made, games, results, reasons, False, time.perf_counter() - t0)


def assemble(jobs: list[ChunkJob], out_path) -> int:
    """Append every chunk, in order, to ``out_path``, then remove them and their folder; returns the records
    written. Refuses (``FileNotFoundError``) if a chunk is missing, writing nothing. A new output is written
    under a temporary name and renamed when whole, so that an output that exists is never one cut short (a
    stop while assembling leaves the chunks, and the same command finishes the job)."""
    missing = [j.index for j in jobs if not finished(j)]
    if missing:
        raise FileNotFoundError(f"chunks not finished: {missing[:10]}{' ...' if len(missing) > 10 else ''}")
    out_path = Path(out_path)
    target = out_path if out_path.exists() else out_path.with_name(out_path.name + ".assembling")
    if target != out_path:
        target.unlink(missing_ok=True)
    total = 0
    for job in jobs:
        write_all(target, job.path.read_bytes())
        total += job.positions
    if target != out_path:
        os.replace(target, out_path)
    for job in jobs:
        job.path.unlink()
    try:
        Path(jobs[0].folder).rmdir()
    except OSError:
        pass            # something else in it: left alone
    return total


def generate_chunked(out_path, jobs: list[ChunkJob], progress: Optional[TextIO] = sys.stderr,
                     workers: int = 1) -> list[ChunkResult]:
    """Every chunk here, on ``workers`` processes (each takes the next unfinished chunk), then ``assemble``.
    A chunk's bytes depend on its job alone, so the output is the same whatever the number of workers.
    Ctrl-C stops the run: the finished chunks stay in the folder, the ones under way are dropped, and a later
    run with the same arguments takes up from them."""
    from quantfish.runtime.progress import progress_bar
    bar = progress_bar(sum(j.positions for j in jobs), "gendata", "pos", stream=progress,
                       enabled=progress is not None)
    out = []
    try:
        if workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                out.append(run_chunk(job))
                bar.update(job.positions)
        else:
            out = _run_in_pool(jobs, workers, bar)
    finally:
        bar.close()
    assemble(jobs, out_path)
    return out


_IN_CHUNK = False


def _on_interrupt(signum, frame):
    """A pool worker's Ctrl-C: the chunk under way stops (its temporary file removed); an idle worker leaves."""
    if _IN_CHUNK:
        raise KeyboardInterrupt
    os._exit(130)


def _pool_init() -> None:
    import signal
    signal.signal(signal.SIGINT, _on_interrupt)


def _pool_chunk(job: ChunkJob) -> Optional[ChunkResult]:
    """``run_chunk`` in a pool worker; None when interrupted."""
    global _IN_CHUNK
    _IN_CHUNK = True
    try:
        return run_chunk(job)
    except KeyboardInterrupt:
        return None
    finally:
        _IN_CHUNK = False


def _run_in_pool(jobs: list[ChunkJob], workers: int, bar) -> list[ChunkResult]:
    """``run_chunk`` of every job on a pool of processes (forked where the system can; each loads the net and
    the openings once and keeps them for the chunks it is given), results in the jobs' order. On Ctrl-C the
    workers are interrupted too (also when the signal reached this process alone) and ``KeyboardInterrupt`` is
    raised here."""
    import multiprocessing as mp
    import signal
    from concurrent.futures import ProcessPoolExecutor, as_completed
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    results: dict[int, ChunkResult] = {}
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx, initializer=_pool_init)
    try:
        futures = {pool.submit(_pool_chunk, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            result = future.result()
            if result is None:
                raise KeyboardInterrupt
            results[job.index] = result
            bar.update(job.positions)
    except BaseException:
        for proc in list(getattr(pool, "_processes", {}).values()):
            try:
                os.kill(proc.pid, signal.SIGINT)
            except OSError:
                pass
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [results[job.index] for job in jobs]
