"""``quantfish gendata`` (self-play training data) and ``quantfish data export|import|check`` (record files
and ``FEN | score | result`` text). Errors are one line on stderr and a non-zero status, never a traceback."""
from __future__ import annotations

import os
import sys

import dataclasses

import click

from quantfish.datagen.config import MAX_GAME_PLIES, GenConfig

# The generator's defaults (its settings module is standard library only: the command imports no engine code).
DEFAULTS = {f.name: f.default for f in dataclasses.fields(GenConfig)}


def _fail(exc: BaseException) -> click.ClickException:
    return click.ClickException(str(exc))


@click.command("gendata")
@click.option("-o", "--output", default="gendata.bin", show_default=True, type=click.Path(dir_okay=False),
              help="Record file to append to (created if missing).")
@click.option("--positions", type=click.IntRange(1), default=100_000, show_default=True,
              help="Labelled positions to add.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="Random seed: the same seed and worker count give the same records.")
@click.option("--workers", type=click.IntRange(1), default=None, help="Processes (default: every core).")
@click.option("--depth", type=click.IntRange(1, 60), default=DEFAULTS["depth"], show_default=True,
              help="Deepest search iteration per move.")
@click.option("--nodes", type=click.IntRange(0), default=DEFAULTS["nodes"], show_default=True,
              help="No new iteration starts after this many nodes (0: no limit).")
@click.option("--random-plies", type=click.IntRange(0, 100), default=DEFAULTS["random_plies"], show_default=True,
              help="Random moves from the first or second ply of each game (not recorded).")
@click.option("--max-plies", type=click.IntRange(1, MAX_GAME_PLIES), default=DEFAULTS["max_plies"],
              show_default=True, help="Game length adjudicated a draw.")
@click.option("--openings", type=click.Path(dir_okay=False), default=None,
              help="EPD/FEN file of start positions (default: the book shipped with Quantfish, 8moves_v3.epd).")
@click.option("--sample", type=click.IntRange(0), default=DEFAULTS["sample"], show_default=True,
              help="0: keep the searched positions with the search's score; N (a power of two): keep about one "
                   "in N of the positions the net evaluates in the searches, with the net's raw output.")
@click.option("--net", "net_path", default=None, metavar="PATH",
              help="Teacher net (default: the net the engine loads).")
@click.option("--hash", "hash_mb", type=click.IntRange(1, 4096), default=DEFAULTS["hash_mb"], show_default=True,
              help="Hash per worker in MB.")
@click.option("--cluster", default=None, metavar="local:N|tcp://HOST:8786",
              help="Run in chunks on a Dask cluster: local:N starts N worker processes here, an address joins a "
                   "running scheduler (pip install 'quantfish[cluster]'). The output is the same bytes as "
                   "--chunk-positions alone gives.")
@click.option("--chunk-positions", type=click.IntRange(1), default=None,
              help="Cut the run into chunks of this many positions (default with --cluster: 1,000,000), each "
                   "from its own stream (seed, chunk), written to OUTPUT.chunks/ and renamed when whole; a "
                   "stopped run started again skips the finished chunks. Without --cluster they run here on "
                   "--workers processes.")
@click.option("--quiet", is_flag=True, help="No progress line.")
def gendata_command(output, positions, seed, workers, depth, nodes, random_plies, max_plies, openings, sample,
                    net_path, hash_mb, cluster, chunk_positions, quiet):
    """Self-play games labelled by the engine's search (Stockfish 15.1's net at the leaves), appended to a
    record file (quantfish.data.records). Progress on stderr; Ctrl-C keeps what was written."""
    from quantfish.data.openings import OpeningsError
    from quantfish.datagen.run import WorkerError, default_workers, generate
    from quantfish.nnue.loader import load_nets
    from quantfish.datagen.config import GenConfig
    from quantfish.data.records import DataFileError
    workers = workers or default_workers()
    if cluster or chunk_positions:
        _chunked(output, positions, seed, GenConfig(depth=depth, nodes=nodes, random_plies=random_plies,
                                                    max_plies=max_plies, hash_mb=hash_mb, sample=sample),
                 openings, net_path, cluster, chunk_positions, quiet, workers)
        return
    try:
        config = GenConfig(depth=depth, nodes=nodes, random_plies=random_plies, max_plies=max_plies,
                           hash_mb=hash_mb, sample=sample)
        net = load_nets(net_path)
        summary = generate(output, positions, seed, workers, config, openings, net,
                           progress=None if quiet else sys.stderr)
    except (DataFileError, OpeningsError, WorkerError, OSError, ValueError) as exc:
        raise _fail(exc) from None
    endings = ", ".join(f"{name} {n}" for name, n in summary.reasons.most_common())
    results = ", ".join(f"{r} {summary.results[r]}" for r in ("1-0", "1/2-1/2", "0-1"))
    click.echo(f"{'interrupted: kept' if summary.interrupted else 'wrote'} {summary.positions:,} positions from "
               f"{summary.games:,} games to {output} in {summary.seconds:.1f} s ({summary.rate:,.0f} pos/s, "
               f"{workers} worker{'s' if workers > 1 else ''}; {summary.cpu_rate:,.0f} pos per CPU-second, set-up "
               f"included); results {results}; endings {endings}", err=True)
    if summary.interrupted:
        sys.exit(130)


def _chunked(output, positions, seed, config, openings, net_path, cluster, chunk_positions, quiet, workers=1):
    """The chunked run (``quantfish.datagen.chunks``), here or on a cluster."""
    import time
    from quantfish.data.openings import Openings, OpeningsError
    from quantfish.data.records import DataFileError
    from quantfish.datagen import chunks
    from quantfish.datagen.run import _check_output
    progress = None if quiet else sys.stderr
    t0 = time.perf_counter()
    client = None
    try:
        _check_output(output)
        Openings(openings)                                  # a bad book: one line now, not from every worker
        jobs = chunks.plan(output, positions, seed, config, chunk_positions or chunks.DEFAULT_CHUNK_POSITIONS,
                           openings, net_path)
        if cluster:
            from quantfish.datagen import cluster as dask_gendata
            from quantfish.runtime.cluster import connect
            client = connect(cluster)
            results = dask_gendata.run(client, jobs, output, progress)
        else:
            results = chunks.generate_chunked(output, jobs, progress, workers)
    except KeyboardInterrupt:
        done = sum(chunks.finished(j) for j in jobs)
        click.echo(f"interrupted: {done} of {len(jobs)} chunks are finished in {jobs[0].folder}; the same command "
                   f"continues from them", err=True)
        sys.exit(130)
    except Exception as exc:          # a worker's error comes back as the exception it raised
        from quantfish.runtime.cluster import ClusterError
        known = (DataFileError, OpeningsError, ClusterError, OSError, ValueError)
        raise _fail(exc if isinstance(exc, known) else RuntimeError(f"{type(exc).__name__}: {exc}")) from None
    finally:
        if client is not None:
            from quantfish.runtime.cluster import close
            close(client)
    seconds = time.perf_counter() - t0
    games = sum(r.games for r in results)
    skipped = sum(r.skipped for r in results)
    click.echo(f"wrote {positions:,} positions in {len(jobs)} chunks ({skipped} from an earlier run) to {output} "
               f"in {seconds:.1f} s ({positions / max(seconds, 1e-9):,.0f} pos/s"
               + (f" on {cluster}" if cluster else "") + f"); {games:,} games", err=True)


@click.group("data")
def data_group():
    """Record files: text export and import, checks."""


@data_group.command("export")
@click.argument("records", type=click.Path(dir_okay=False))
@click.argument("text", default="-", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Overwrite TEXT if it exists.")
def export_command(records, text, force):
    """Write RECORDS as 'FEN | score | result' lines (White's view) to TEXT (default: stdout)."""
    from quantfish.data.records import DataFileError
    from quantfish.data.text import export_text
    if text != "-" and os.path.exists(text) and not force:
        raise click.ClickException(f"{text} exists (use --force to overwrite)")
    try:
        if text == "-":
            n = export_text(records, sys.stdout)
        else:
            with open(text, "w") as out:
                n = export_text(records, out)
    except (DataFileError, OSError) as exc:
        raise _fail(exc) from None
    click.echo(f"exported {n:,} positions", err=True)


@data_group.command("import")
@click.argument("text", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("records", type=click.Path(dir_okay=False))
@click.option("--append", is_flag=True, help="Append to RECORDS if it exists.")
def import_command(text, records, append):
    """Read 'FEN | score | result' lines (White's view) from TEXT ('-': stdin) into RECORDS."""
    from quantfish.data.records import DataFileError
    from quantfish.data.text import import_text
    if os.path.exists(records) and not append:
        raise click.ClickException(f"{records} exists (use --append to add to it)")
    try:
        if text == "-":
            n = import_text(sys.stdin, records, "stdin")
        else:
            with open(text) as fh:
                n = import_text(fh, records, text)
    except (DataFileError, OSError, UnicodeDecodeError) as exc:
        raise _fail(exc) from None
    click.echo(f"imported {n:,} positions", err=True)


@data_group.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def check_command(files):
    """Validate record files; print positions, results (White's view) and score spread of each."""
    import numpy as np

    from quantfish.data.codec import RAW_LABEL, RESULT_MASK
    from quantfish.data.records import DataFileError, read_records
    from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
    for path in files:
        try:
            rec = read_records(path, mmap=True)
        except (DataFileError, OSError) as exc:
            raise _fail(exc) from None
        n = len(rec)
        if n == 0:
            click.echo(f"{path}: 0 positions")
            continue
        stm = np.asarray(rec["stm"])
        result_byte = np.asarray(rec["result"])
        result = result_byte & RESULT_MASK
        raw = (result_byte & RAW_LABEL) != 0
        white = np.where(stm == 0, result, 2 - result)
        score = np.asarray(rec["score"], np.float64)
        score = np.where(raw, score * 100 / PAWN_VALUE_NORMALIZE, score)
        labels = f"; {np.mean(raw):.1%} labelled with a net's raw output" if raw.any() else ""
        click.echo(f"{path}: {n:,} positions, all valid; White to move {np.mean(stm == 0):.1%}; results (White) "
                   f"1-0 {np.mean(white == 2):.1%} 1/2 {np.mean(white == 1):.1%} 0-1 {np.mean(white == 0):.1%}; "
                   f"score (side to move, cp) mean {score.mean():.0f}, median |score| "
                   f"{np.median(np.abs(score)):.0f}{labels}")
