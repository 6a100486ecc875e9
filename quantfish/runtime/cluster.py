"""A Dask cluster to run many independent jobs on (the optional extra ``quantfish[cluster]``).

``connect("local:N")`` starts a cluster of N single-threaded worker processes on this machine;
``connect("tcp://HOST:8786")`` joins a scheduler started by hand (``dask scheduler``, then ``dask worker
tcp://HOST:8786 --nthreads 1`` on each machine, one per core) or by dask-jobqueue on SLURM. Data generation
(``quantfish.datagen.cluster``) and matches (``quantfish.match.cluster``) hand it their tasks.
"""
from __future__ import annotations

INSTALL_HINT = "Dask is not installed: pip install 'quantfish[cluster]' (or make cluster-deps)"


class ClusterError(RuntimeError):
    """No cluster to be had, or a job on it failed; the message says why."""


def distributed():
    """The ``distributed`` module, or a ``ClusterError`` saying how to install it."""
    try:
        import distributed as module
    except ImportError:
        raise ClusterError(INSTALL_HINT) from None
    return module


def connect(spec: str):
    """A ``distributed.Client`` for ``local:N`` (a new local cluster of N processes, closed with the client by
    ``close``) or a scheduler's address."""
    dd = distributed()
    if spec.startswith("local:"):
        try:
            n = int(spec.split(":", 1)[1])
        except ValueError:
            raise ClusterError(f"cluster {spec!r}: expected local:N, N the number of worker processes") from None
        if n < 1:
            raise ClusterError("cluster local:N needs N >= 1")
        cluster = dd.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
        return dd.Client(cluster)
    try:
        return dd.Client(spec, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the scheduler at {spec}: {exc}") from None


def close(client) -> None:
    """Close the client, and the local cluster it started if it did."""
    local = getattr(client, "cluster", None)
    client.close()
    if local is not None:
        local.close()


def workers_alive(client) -> int:
    try:
        return len(client.scheduler_info().get("workers", {}))
    except Exception:         # a scheduler gone away: none we know of
        return 0
