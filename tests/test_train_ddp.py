"""Training on several processes (``torchrun ... quantfish train --ddp``): each rank's share of a batch, and
two processes taking the same steps as one process on the same global batches."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from quantfish.data.records import append_records
from quantfish.train.data import ArraySource, share
from quantfish.train.stream import RecordStream
from tests.testdata import perft_suite_fens

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Three record files (4,097 training positions and a validation block) whose scores are their indices,
    so that batches can be told apart; 4,097 = 16 batches of 256 and one of a single position, which one of
    two ranks gets nothing of."""
    from quantfish.data.text import parse_lines
    fens = perft_suite_fens()
    folder = tmp_path_factory.mktemp("ddp-shards")
    rng = np.random.default_rng(5)
    paths, index = [], 0
    for n in (2500, 1597, 1300):
        records = parse_lines([f"{fens[(index + i) % len(fens)]} | 0 | 0.5" for i in range(n)])
        records["score"] = rng.integers(-600, 600, n)
        path = folder / f"s{len(paths)}.bin"
        append_records(path, records)
        paths.append(path)
        index += n
    return paths


def test_the_shares_cover_each_batch_once():
    for n in (0, 1, 5, 256, 1001):
        for world in (1, 2, 3, 8):
            cuts = [share(n, r, world) for r in range(world)]
            assert cuts[0][0] == 0 and cuts[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
            assert max(hi - lo for lo, hi in cuts) - min(hi - lo for lo, hi in cuts) <= 1


def test_a_ranks_batches_are_its_share_of_the_whole(shards):
    """Record stream and in-memory source: rank r's batches, laid side by side, are the single process's."""
    stream = RecordStream(shards, shuffle_buffer=3000)
    whole = list(stream.batches(256, True, 11))
    parts = [list(stream.batches(256, True, 11, part=(r, 3))) for r in range(3)]
    assert all(len(p) == len(whole) for p in parts)
    for i, batch in enumerate(whole):
        joined = np.concatenate([p[i].score for p in parts])
        assert np.array_equal(joined, batch.score)
        assert np.array_equal(np.concatenate([p[i].white_idx for p in parts]), batch.white_idx)
    arrays = whole[0]
    source = ArraySource(arrays)
    one = list(source.batches(50, True, 3))
    two = [list(source.batches(50, True, 3, part=(r, 2))) for r in range(2)]
    for i, batch in enumerate(one):
        assert np.array_equal(np.concatenate([two[0][i].score, two[1][i].score]), batch.score)


def _train_args(shards, out, *extra):
    args = ["train", "--out", str(out), "--l1", "32", "--epochs", "2", "--batch-size", "256", "--lr", "2e-3",
            "--val-fraction", "0.3", "--seed", "4", "--shuffle-buffer", "100000", "--checkpoint-minutes", "0",
            *extra]
    for p in shards:
        args += ["--data", str(p)]
    return args


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.pop("RANK", None)
    return env


def _torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "quantfish",
            *args]


def _state(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def test_two_processes_take_the_steps_of_one(shards, tmp_path):
    """Two ranks by torchrun (gloo) and one process, on the same data, seed and global batch: the same
    weights within float rounding after two epochs (34 steps, the last step of each epoch a single position
    that one rank has none of), and the same losses."""
    one = subprocess.run([sys.executable, "-m", "quantfish", *_train_args(shards, tmp_path / "one", "--threads",
                                                                           "1")],
                         capture_output=True, text=True, timeout=300, env=_env())
    assert one.returncode == 0, one.stderr[-3000:]
    two = subprocess.run(_torchrun(*_train_args(shards, tmp_path / "two", "--ddp")), capture_output=True,
                         text=True, timeout=300, env=_env())
    assert two.returncode == 0, two.stderr[-3000:]
    assert "2 processes on cpu" in two.stderr
    assert two.stderr.count("epoch 2/2  train loss") == 1          # the first rank alone logs
    a, b = _state(tmp_path / "one" / "last.pt"), _state(tmp_path / "two" / "last.pt")
    start = _state_of_untrained()
    for name, wa in a["model"].items():
        wb = b["model"][name]
        moved = float((wa - start[name]).abs().max())
        assert moved > 1e-3, name                                  # the runs did train
        assert float((wa - wb).abs().max()) < 1e-3 * moved, name
    for ha, hb in zip(a["history"], b["history"], strict=True):
        assert hb["train_loss"] == pytest.approx(ha["train_loss"], rel=1e-5)
        assert hb["val_loss"] == pytest.approx(ha["val_loss"], rel=1e-5)
    assert b["epoch"] == 2 and not (tmp_path / "two" / "last.pt.tmp").exists()


def _state_of_untrained():
    from quantfish.train.model import NnueModel
    return NnueModel(32, seed=4).state_dict()


def test_ctrl_c_stops_every_rank_after_the_same_step_and_keeps_the_checkpoint(shards, tmp_path):
    """SIGINT to the whole torchrun process group (what Ctrl-C in a terminal sends) in the middle of a long
    run: the ranks agree on a step, the first saves last.pt there, and the run resumes from it."""
    out = tmp_path / "run"
    args = _train_args(shards, out, "--ddp")
    args[args.index("--epochs") + 1] = "400"
    proc = subprocess.Popen(_torchrun(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (out / "epoch-0001.pt").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not get through an epoch"
            time.sleep(0.2)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    state = _state(out / "last.pt")
    assert "saved" in err and "continue with --resume" in err, err[-3000:]
    assert 1 <= state["epoch"] < 400
    resumed = subprocess.run(_torchrun(*_train_args(shards, out, "--ddp", "--resume", str(out / "last.pt"))),
                             capture_output=True, text=True, timeout=300, env=_env())
    # --epochs 2 asks for fewer epochs than the checkpoint may already have: either it finishes epoch 2 or it
    # says there is nothing to do; it never fails on the checkpoint.
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in resumed.stderr
