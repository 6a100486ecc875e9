"""``quantfish match``: two UCI engines play game pairs from a book; Elo, pentanomial counts, SPRT, faults."""
import contextlib
import json
import math
import signal
import sys
import threading

import click

EPILOG = """\b
Examples:
  quantfish match --engine new=./new.sh --engine base=./base.sh --tc 10+0.1 --games 400 --concurrency 2
  quantfish match --engine sf=/usr/games/stockfish --engine qf=quantfish --option 'sf.Skill Level=3' \\
      --nodes 20000 --sprt 0,5 --pgn games.pgn

\b
Exit status: 0 when every game was played (or the SPRT decided), 1 when games could not be played,
130 after Ctrl-C."""


def _check(condition, message):
    if not condition:
        raise click.UsageError(message)


@click.command("match", epilog=EPILOG)
@click.option("--engine", "engine_texts", multiple=True, metavar="NAME=COMMAND",
              help="An engine: its name, and the command that starts it (split like a shell does). Exactly two; "
                   "the Elo is the first one's.")
@click.option("--option", "option_texts", multiple=True, metavar="NAME.OPTION=VALUE",
              help="A UCI option for engine NAME ('*' for both), e.g. '*.Hash=64'. Repeatable.")
@click.option("--tc", default=None, metavar="BASE[+INC]", help="Clock per side in seconds, e.g. 10+0.1.")
@click.option("--movetime", type=float, default=None, metavar="SECONDS", help="Fixed time a move.")
@click.option("--nodes", type=click.IntRange(1), default=None, help="Nodes a move.")
@click.option("--depth", type=click.IntRange(1), default=None, help="Depth a move.")
@click.option("--margin", type=click.FloatRange(0), default=0.1, show_default=True,
              help="Seconds an engine may overrun its clock or move time before it loses on time.")
@click.option("--games", type=click.IntRange(1), default=None,
              help="Games to play, rounded up to pairs (default 100; with --sprt, at most 40000).")
@click.option("--concurrency", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Games at once (one process per engine per game).")
@click.option("--book", type=click.Path(dir_okay=False), default=None,
              help="Openings, EPD or FEN, one a line (default: the shipped 8moves_v3.epd).")
@click.option("--book-order", type=click.Choice(["random", "sequential"]), default="random", show_default=True,
              help="Openings in a shuffle seeded by --seed, or in the file's order.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the opening shuffle.")
@click.option("--book-offset", type=click.IntRange(0), default=0, show_default=True,
              help="First pair index to play (pairs N, N+1, ...), to continue or split a run.")
@click.option("--sprt", "sprt_text", default=None, metavar="ELO0,ELO1",
              help="Stop when the SPRT of H0: Elo=ELO0 against H1: Elo=ELO1 (logistic) decides.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="SPRT false positive rate.")
@click.option("--beta", type=float, default=0.05, show_default=True, help="SPRT false negative rate.")
@click.option("--draw-move", type=click.IntRange(0), default=34, show_default=True,
              help="Draw adjudication starts after this many full moves.")
@click.option("--draw-count", type=click.IntRange(1), default=8, show_default=True,
              help="Draw adjudication: consecutive moves of each engine within --draw-score.")
@click.option("--draw-score", type=click.IntRange(0), default=20, show_default=True,
              help="Draw adjudication: largest |score| in centipawns.")
@click.option("--no-draw-adjudication", is_flag=True, help="Never adjudicate a draw.")
@click.option("--resign-count", type=click.IntRange(1), default=3, show_default=True,
              help="Resign adjudication: consecutive moves of each engine agreeing on the score.")
@click.option("--resign-score", type=click.IntRange(1), default=400, show_default=True,
              help="Resign adjudication: centipawns behind.")
@click.option("--no-resign-adjudication", is_flag=True, help="Never adjudicate a loss.")
@click.option("--max-moves", type=click.IntRange(0), default=0, show_default=True,
              help="Call a game drawn after this many full moves (0: no limit).")
@click.option("--hang-timeout", type=click.FloatRange(0, min_open=True), default=60.0, show_default=True,
              help="Seconds to wait for readyok, or for a move without a clock, before the engine hangs.")
@click.option("--startup-timeout", type=click.FloatRange(0, min_open=True), default=120.0, show_default=True,
              help="Seconds an engine may take to start (up to readyok).")
@click.option("--pgn", "pgn_path", type=click.Path(dir_okay=False), default=None,
              help="Append every game to this PGN file as it finishes.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the summary as JSON to this file.")
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on a terminal).")
@click.option("--cluster", default=None, metavar="local:N|tcp://HOST:8786",
              help="Play on a Dask cluster instead of here (--concurrency is then the workers'): local:N starts "
                   "N worker processes, an address joins a running scheduler; the engines' commands must work "
                   "on every worker (pip install 'quantfish[cluster]').")
@click.option("--batch-pairs", type=click.IntRange(1, 1000), default=4, show_default=True,
              help="With --cluster: game pairs per task handed to a worker.")
def match_command(engine_texts, option_texts, tc, movetime, nodes, depth, margin, games, concurrency, book,
                  book_order, seed, book_offset, sprt_text, alpha, beta, draw_move, draw_count, draw_score,
                  no_draw_adjudication, resign_count, resign_score, no_resign_adjudication, max_moves,
                  hang_timeout, startup_timeout, pgn_path, json_path, progress, cluster, batch_pairs):
    """Play a match between two UCI engines in pairs of games (each opening twice, colours swapped) and
    report the first engine's score, Elo with its 95% interval, the pentanomial counts, faults, and an
    optional SPRT."""
    from quantfish.data.openings import DEFAULT_BOOK, OpeningsError
    from quantfish.match.config import Adjudication, Limits, MatchConfig, build_engines, parse_bounds, parse_tc
    from quantfish.match.runner import BookError, load_book
    from quantfish.match.stats import Sprt

    try:
        engines = build_engines(engine_texts, option_texts)
        base, inc = parse_tc(tc) if tc is not None else (None, 0.0)
        if movetime is not None:
            _check(math.isfinite(movetime) and movetime > 0, "--movetime must be more than 0 seconds")
        limits = Limits(base=base, inc=inc, movetime=movetime, nodes=nodes, depth=depth)
        sprt = Sprt(*parse_bounds(sprt_text), alpha=alpha, beta=beta) if sprt_text is not None else None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    adjudication = Adjudication(draw=not no_draw_adjudication, draw_move=draw_move, draw_count=draw_count,
                                draw_score=draw_score, resign=not no_resign_adjudication,
                                resign_count=resign_count, resign_score=resign_score, max_moves=max_moves)
    config = MatchConfig(engines=engines, limits=limits, book=str(book or DEFAULT_BOOK), seed=seed,
                         book_order=book_order, adjudication=adjudication, margin=margin,
                         hang_timeout=hang_timeout, startup_timeout=startup_timeout)
    if games is None:
        games = 40000 if sprt is not None else 100
    pairs = range(book_offset, book_offset + (games + 1) // 2)
    try:
        load_book(config.book)
    except OpeningsError as exc:
        raise click.ClickException(str(exc)) from None

    stop = threading.Event()
    with _ctrl_c_sets(stop):
        try:
            _probe_engines(config, stop)
            outcome = _play(config, pairs, concurrency, sprt, pgn_path, progress, stop, cluster, batch_pairs)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (BookError, OpeningsError) as exc:
            raise click.ClickException(str(exc)) from None

    from quantfish.match.report import summary_json, summary_text
    click.echo(summary_text(outcome, config, sprt))
    if json_path:
        try:
            with open(json_path, "w", encoding="utf-8") as handle:
                json.dump(summary_json(outcome, config, sprt), handle, indent=2)
                handle.write("\n")
        except OSError as exc:
            raise click.ClickException(f"cannot write {json_path}: {exc.strerror or exc}") from None
    if outcome.status == "interrupted":
        click.echo("interrupted: the summary counts the games finished before Ctrl-C", err=True)
        sys.exit(130)
    if outcome.status == "failed":
        raise click.ClickException(f"{outcome.not_played} of {outcome.requested_games} games could not be "
                                   f"played: {outcome.error}")


@contextlib.contextmanager
def _ctrl_c_sets(stop):
    """While the match runs, the first Ctrl-C only sets ``stop`` (the runner then kills the engines and
    returns what finished), so no exception lands in the middle of a write or under a lock; a second Ctrl-C
    raises KeyboardInterrupt as usual."""
    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:                       # not the main thread: leave Ctrl-C alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _probe_engines(config, stop):
    """Starts each engine once before the match: a command that does not work is reported before any game,
    a first start that compiles or loads something is paid once, and unknown options are named. The starts
    run in a thread so that Ctrl-C (``stop``) can end them at once."""
    from quantfish.match.uci import EngineStartError, UciEngine
    engines = [UciEngine(spec.name, spec.command, spec.options) for spec in config.engines]
    failures = []

    def probe():
        for engine in engines:
            try:
                engine.start(config.startup_timeout)
            except EngineStartError as exc:
                failures.append(f"engine {engine.name} did not start ({exc}); no games were played")
                return
            finally:
                engine.quit()

    thread = threading.Thread(target=probe, daemon=True, name="match-probe")
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
        if stop.is_set():
            for engine in engines:
                engine.close()
    if stop.is_set():
        raise KeyboardInterrupt
    if failures:
        raise click.ClickException(failures[0])
    for engine in engines:
        for name in engine.unknown_options:
            click.echo(f"warning: engine {engine.name} does not list the option {name!r}; it is sent anyway",
                       err=True)


def _play(config, pairs, concurrency, sprt, pgn_path, progress, stop, cluster=None, batch_pairs=4):
    from quantfish.match.pgn import PgnWriter
    from quantfish.match.report import Progress
    from quantfish.match.runner import run_match
    writer = None
    if pgn_path:
        try:
            writer = PgnWriter(pgn_path, time_control=config.limits.pgn_time_control())
        except OSError as exc:
            raise click.ClickException(f"cannot open {pgn_path}: {exc.strerror or exc}") from None
    bar = Progress(2 * len(pairs), config.names[0], sprt, progress)

    def on_game(record, tally):
        if writer is not None:
            try:
                writer.write(record)
            except OSError as exc:
                raise click.ClickException(f"cannot write {pgn_path}: {exc.strerror or exc}") from None
        bar.game(record, tally)

    client = None
    try:
        if cluster:
            from quantfish.match.cluster import run_match_on_cluster
            from quantfish.runtime.cluster import ClusterError, connect
            try:
                client = connect(cluster)
            except ClusterError as exc:
                raise click.ClickException(str(exc)) from None
            return run_match_on_cluster(client, config, pairs, batch_pairs=batch_pairs, sprt=sprt,
                                        on_game=on_game, on_pair=bar.pair, stop=stop)
        return run_match(config, pairs, concurrency=concurrency, sprt=sprt, on_game=on_game, on_pair=bar.pair,
                         stop=stop)
    finally:
        bar.close()
        if writer is not None:
            writer.close()
        if client is not None:
            from quantfish.runtime.cluster import close
            close(client)
