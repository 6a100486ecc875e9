"""Data generation and matches on a Dask cluster (``quantfish[cluster]``): a LocalCluster of 2 single-threaded
worker processes shared by these tests; the same bytes and the same counts as the runs here."""
import os
import signal
import threading
import time

import pytest

distributed = pytest.importorskip("distributed", reason="Dask not installed (pip install 'quantfish[cluster]')")

from quantfish.datagen import chunks  # noqa: E402
from quantfish.datagen import cluster as dask_gendata  # noqa: E402
from quantfish.datagen.config import GenConfig  # noqa: E402
from quantfish.match.cluster import run_match_on_cluster  # noqa: E402
from quantfish.match.runner import Tally, play_pairs  # noqa: E402
from quantfish.match.stats import Sprt  # noqa: E402
from quantfish.runtime.cluster import ClusterError, connect  # noqa: E402
from tests.test_match import fake, make_config, tally_key  # noqa: E402

CONFIG = GenConfig(depth=1, nodes=64, random_plies=4, max_plies=60)


@pytest.fixture(scope="module")
def client():
    c = connect("local:2")
    c.wait_for_workers(2, timeout=120)
    yield c
    from quantfish.runtime.cluster import close
    close(c)


def _chunked_here(path, positions, seed, chunk):
    jobs = chunks.plan(path, positions, seed, CONFIG, chunk)
    chunks.generate_chunked(path, jobs, progress=None)
    return path.read_bytes()


def test_generation_on_the_cluster_is_the_run_here_byte_for_byte(client, tmp_path):
    here = _chunked_here(tmp_path / "here.bin", 1000, 5, 300)
    jobs = chunks.plan(tmp_path / "there.bin", 1000, 5, CONFIG, 300)
    assert len(jobs) == 4 and jobs[-1].positions == 100
    dask_gendata.run(client, jobs, tmp_path / "there.bin", progress=None)
    assert (tmp_path / "there.bin").read_bytes() == here
    assert len(here) == 1000 * 32
    assert not (tmp_path / "there.bin.chunks").exists()


def test_a_worker_killed_mid_run_changes_nothing(client, tmp_path):
    here = _chunked_here(tmp_path / "here.bin", 2400, 9, 300)
    jobs = chunks.plan(tmp_path / "there.bin", 2400, 9, CONFIG, 300)
    errors = []

    def go():
        try:
            dask_gendata.run(client, jobs, tmp_path / "there.bin", progress=None)
        except Exception as exc:          # reported by the assertion below
            errors.append(exc)

    runner = threading.Thread(target=go)
    runner.start()
    deadline = time.monotonic() + 60
    while not any(chunks.finished(j) for j in jobs) and time.monotonic() < deadline:
        time.sleep(0.05)
    victim = sorted(client.scheduler_info()["workers"])[0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)                                # its nanny starts a new one
    runner.join(timeout=120)
    assert not errors, errors
    assert (tmp_path / "there.bin").read_bytes() == here
    client.wait_for_workers(2, timeout=60)


def test_a_stopped_run_takes_up_from_its_finished_chunks(tmp_path):
    jobs = chunks.plan(tmp_path / "out.bin", 900, 3, CONFIG, 300)
    first = chunks.run_chunk(jobs[1])
    assert not first.skipped and chunks.finished(jobs[1])
    again = chunks.run_chunk(jobs[1])
    assert again.skipped
    with pytest.raises(FileNotFoundError):
        chunks.assemble(jobs, tmp_path / "out.bin")         # chunks 0 and 2 missing: nothing written
    assert not (tmp_path / "out.bin").exists()


def test_a_match_on_the_cluster_counts_what_the_same_batches_count_here(client):
    config = make_config(fake("random", "--seed", 3), fake("random", "--seed", 4))
    pairs = range(0, 6)
    here = Tally.from_pairs(config.names, play_pairs(config, pairs))
    outcome = run_match_on_cluster(client, config, pairs, batch_pairs=2)
    assert outcome.status == "complete"
    assert tally_key(outcome.tally) == tally_key(here)
    assert [p.pair for p in outcome.pairs] == list(pairs)


def test_an_engine_against_itself_never_passes_the_sprt(client):
    config = make_config(fake("random", "--seed", 3), fake("random", "--seed", 3))
    outcome = run_match_on_cluster(client, config, range(0, 8), batch_pairs=2, sprt=Sprt(0.0, 10.0))
    assert outcome.status in ("complete", "sprt") and outcome.decision != "H1"


def test_a_bad_cluster_address_is_one_clear_error():
    with pytest.raises(ClusterError, match="local:N"):
        connect("local:two")
