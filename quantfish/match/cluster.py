"""A match played on a Dask cluster (the optional extra ``quantfish[cluster]``): batches of game pairs handed
to the workers, counted here as they come back.

Each batch is a task (``runner.play_pairs`` on a few consecutive pair indices: their openings and colours
follow from the index, as in a local match), so the engines run on the workers, whose machines need them at
the same paths. Finished batches enter the pentanomial tally and the SPRT at once; when the SPRT decides,
what is left is cancelled. A batch whose worker is lost is played again by another (Dask reschedules it);
only the returned results count, so a game is never counted twice. The counts equal a local run's for the
same batches whenever the games themselves are reproducible (fixed nodes or depth, deterministic engines).
"""
from __future__ import annotations

import threading
import time

from quantfish.match.game import PLAYED
from quantfish.match.runner import MatchOutcome, Tally, pair_opening, play_pairs
from quantfish.runtime.cluster import distributed

DEFAULT_BATCH_PAIRS = 4


def batches(pairs, size: int) -> list[list[int]]:
    pairs = list(pairs)
    return [pairs[i:i + size] for i in range(0, len(pairs), max(1, size))]


def run_match_on_cluster(client, config, pairs, *, batch_pairs: int = DEFAULT_BATCH_PAIRS, sprt=None,
                         on_game=None, on_pair=None, stop: threading.Event | None = None) -> MatchOutcome:
    """``runner.run_match``'s outcome, the pairs played by the cluster behind ``client``. ``on_game`` and
    ``on_pair`` are called here as each batch comes back; ``stop`` (or Ctrl-C) cancels what is left."""
    as_completed = distributed().as_completed
    pairs = list(pairs)
    for pair in pairs:
        pair_opening(config, pair)              # a bad book fails here, not on every worker
    stop = stop if stop is not None else threading.Event()
    started = time.monotonic()
    tally = Tally(config.names)
    results = []
    status, decision, error = "complete", None, None
    futures = [client.submit(play_pairs, config, batch, key=f"match-{config.seed}-{batch[0]}-{len(batch)}",
                             pure=False, retries=2) for batch in batches(pairs, batch_pairs)]
    done = as_completed(futures)
    try:
        for future in done:
            if stop.is_set():
                status = "interrupted"
                break
            try:
                played = future.result()
            except Exception as exc:            # a batch that failed on every retry
                status, error = "failed", f"a batch of pairs failed on the cluster: {type(exc).__name__}: {exc}"
                break
            for result in played:
                results.append(result)
                tally.add(result)
                for record in result.games:
                    if on_game is not None and record.status == PLAYED:
                        on_game(record, tally)
                if on_pair is not None:
                    on_pair(result, tally)
                if sprt is not None and decision is None and result.complete:
                    decision = sprt.decision(tally.penta)
            if decision is not None:
                status = "sprt"
                break
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        client.cancel([f for f in futures if not f.done()])
    results.sort(key=lambda result: result.pair)
    return MatchOutcome(tally=tally, pairs=results, status=status, requested_games=2 * len(pairs),
                        seconds=time.monotonic() - started, decision=decision, error=error)
