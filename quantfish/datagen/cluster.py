"""Chunks of data generation on a Dask cluster (``quantfish.runtime.cluster``).

Each chunk is a task keyed by its seed and number that writes its own file into the chunk folder, which must
be storage every worker sees (the same path on each); no record passes through the scheduler. A lost worker's
chunk is run again by another (its temporary file is never renamed), and a task retried after a failure makes
the same bytes. Every worker loads the net and the compiled generator once when it joins (``_warm_plugin``).
"""
from __future__ import annotations

import sys
from typing import Optional, TextIO

from quantfish.datagen.chunks import ChunkJob, ChunkResult, assemble, finished, run_chunk
from quantfish.runtime.cluster import distributed, workers_alive


def _warm_plugin():
    """A worker plugin that loads the default net and the generator's compiled code as each worker starts
    (``chunks.warm``), once, not in its first chunk's time."""
    class WarmGenerator(distributed().WorkerPlugin):
        name = "quantfish-warm-generator"

        def setup(self, worker):
            from quantfish.datagen.chunks import warm
            warm()

    return WarmGenerator()


def run(client, jobs: list[ChunkJob], out_path, progress: Optional[TextIO] = sys.stderr) -> list[ChunkResult]:
    """Every unfinished chunk on the cluster, then ``assemble``. Ctrl-C cancels what is left, keeping the
    finished chunks (the same command takes up from them)."""
    dd = distributed()
    from quantfish.runtime.progress import progress_bar
    client.register_plugin(_warm_plugin())
    todo = [j for j in jobs if not finished(j)]
    bar = progress_bar(sum(j.positions for j in jobs), "gendata", "pos", stream=progress,
                       enabled=progress is not None)
    bar.update(sum(j.positions for j in jobs if finished(j)))
    futures = [client.submit(run_chunk, j, key=j.key, pure=False, retries=3) for j in todo]
    results = []
    try:
        for future in dd.as_completed(futures):
            result = future.result()
            results.append(result)
            bar.set_postfix_str(f"chunks {len(results)}/{len(todo)}, workers {workers_alive(client)}",
                                refresh=False)
            bar.update(result.positions)
    except KeyboardInterrupt:
        client.cancel(futures)
        raise
    finally:
        bar.close()
    assemble(jobs, out_path)
    return results
