"""Streamed training data, learning-rate schedules, and a run stopped in the middle of an epoch that resumes
exactly where it stopped."""
import math

import numpy as np
import pytest

from quantfish.data.records import append_records
from quantfish.train import stream
from quantfish.train.stream import RecordStream
from tests.testdata import perft_suite_fens


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Three record files of positions from the perft suites, each record's score its own index (to track it)."""
    from quantfish.data.text import parse_lines
    fens = perft_suite_fens()
    folder = tmp_path_factory.mktemp("shards")
    paths, index = [], 0
    for n in (2500, 4100, 1300):
        lines = [f"{fens[(index + i) % len(fens)]} | {index + i} | 0.5" for i in range(n)]
        records = parse_lines(lines)
        records["score"] = np.arange(index, index + n)      # side to move's view: the index itself
        path = folder / f"s{len(paths)}.bin"
        append_records(path, records)
        paths.append(path)
        index += n
    return paths


def _scores(batches):
    return np.concatenate([np.asarray(b.score, np.int64) for b in batches])


def test_every_record_once_an_epoch_in_an_order_fixed_by_the_seed(shards, monkeypatch):
    monkeypatch.setattr(stream, "BLOCK", 256)
    s = RecordStream(shards, shuffle_buffer=1000)
    assert len(s) == 7900
    first = _scores(s.batches(300, True, seed=1))
    assert sorted(first) == list(range(7900))
    assert np.array_equal(first, _scores(s.batches(300, True, seed=1)))
    assert not np.array_equal(first, _scores(s.batches(300, True, seed=2)))
    # Shuffled through a buffer: records of one block are spread out, and blocks of every file mix.
    assert np.abs(np.diff(first[:1000])).mean() > 200
    assert sorted(_scores(s.batches(300, False, seed=0))) == list(range(7900))


def test_skipped_batches_are_the_first_ones(shards, monkeypatch):
    monkeypatch.setattr(stream, "BLOCK", 256)
    s = RecordStream(shards, shuffle_buffer=1000)
    whole = [np.asarray(b.score) for b in s.batches(128, True, seed=5)]
    for skip in (1, 7, 8, len(whole) - 1):
        rest = [np.asarray(b.score) for b in s.batches(128, True, seed=5, skip=skip)]
        assert len(rest) == len(whole) - skip
        assert all(np.array_equal(a, b) for a, b in zip(rest, whole[skip:]))


def test_validation_blocks_are_held_back(shards, monkeypatch):
    monkeypatch.setattr(stream, "BLOCK", 256)
    train, val = RecordStream(shards).split(0.1, seed=4)
    a, b = set(_scores(train.batches(512, True, 0))), set(_scores(val.batches(512, True, 0)))
    assert not a & b and len(a | b) == 7900 and 0 < len(b) < 1600


def test_a_bad_shard_is_one_clear_error(tmp_path):
    from quantfish.train.data import DataError
    (tmp_path / "bad.bin").write_bytes(b"x" * 33)
    with pytest.raises(DataError, match="bad.bin"):
        RecordStream([tmp_path / "bad.bin"])
    with pytest.raises(DataError, match="no such file"):
        RecordStream([tmp_path / "missing.bin"])


# ---------------------------------------------------------------------------------------------------------
# Schedules and resuming within an epoch (PyTorch)

def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")


def test_cosine_and_step_schedules():
    torch = _torch()
    from quantfish.train.model import NnueModel
    from quantfish.train.trainer import TrainConfig, make_optimizer, make_scheduler
    for kind, want in (("cosine", [1.0, 0.75, 0.25, 0.0]), ("step", [1.0, 1.0, 0.5, 0.5])):
        config = TrainConfig(l1=32, epochs=4, lr=1.0, lr_schedule=kind, lr_gamma=0.5, lr_step_epochs=2)
        opt = make_optimizer(NnueModel(32, seed=0), config)
        sched = make_scheduler(opt, config)
        rates = []
        for _ in range(4):
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        assert rates == pytest.approx(want, abs=1e-9), kind
    with pytest.raises(ValueError, match="schedule"):
        make_scheduler(opt, TrainConfig(lr_schedule="linear"))


def test_a_schedule_followed_by_batch_decays_within_the_epoch(shards, monkeypatch):
    """--lr-by-batch: each batch's rate is the cosine at the run's fractional epoch, from lr at the first batch
    to near lr * lr_min_ratio at the last, even in a one-epoch run."""
    torch = _torch()
    from quantfish.train import trainer
    monkeypatch.setattr(stream, "BLOCK", 256)
    data = RecordStream(shards, shuffle_buffer=2000)
    size, rates = len(data), []
    real_step = torch.optim.Adam.step

    def recording_step(self, *args, **kwargs):
        rates.append(self.param_groups[0]["lr"])
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", recording_step)
    config = trainer.TrainConfig(l1=32, epochs=1, batch_size=256, lr=1e-3, lr_schedule="cosine",
                                 lr_min_ratio=0.1, lr_by_batch=True, val_fraction=0.0, seed=7, log=None)
    trainer.train(data, config)
    # The epoch's batches, drawn as the trainer draws them (a shard's end can cut one short).
    starts = np.cumsum([0] + [len(b.stm) for b in data.batches(256, True, 7 * 100003 + 1)])[:-1]
    want = [1e-3 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * start / size))) for start in starts]
    assert len(rates) == len(starts) and starts[-1] > 0.9 * size
    assert rates == pytest.approx(want, rel=1e-9)
    assert rates[-1] < 0.11e-3
    with pytest.raises(ValueError, match="known size"):
        trainer._epoch_size(None)


@pytest.mark.parametrize("by_batch", [False, True])
def test_a_run_stopped_within_an_epoch_resumes_exactly(shards, tmp_path, monkeypatch, by_batch):
    """A checkpoint saved in the middle of an epoch, then resumed: the same weights as an uninterrupted run
    (with a rate that falls batch by batch too: exponential, which a run extended by an epoch does not change)."""
    torch = _torch()
    torch.set_num_threads(1)
    from quantfish.train import trainer
    from quantfish.train.checkpoint import load_checkpoint
    monkeypatch.setattr(stream, "BLOCK", 256)
    data = RecordStream(shards, shuffle_buffer=2000)

    def config(out, epochs, minutes=0.0):
        return trainer.TrainConfig(l1=32, epochs=epochs, batch_size=256, lr=1e-3, val_fraction=0.0, seed=7,
                                   out_dir=str(out), checkpoint_minutes=minutes, log=None,
                                   lr_gamma=0.5 if by_batch else 0.992, lr_by_batch=by_batch)

    whole = trainer.train(data, config(tmp_path / "whole", 2)).model
    # Stop after 10 batches of the second epoch: a clock that says a minute has passed at every batch makes
    # each batch save last.pt; the eleventh batch raises (the run stops as a Ctrl-C would stop it).
    part = tmp_path / "part"
    trainer.train(data, config(part, 1))
    calls = {"n": 0}
    real_step = torch.optim.Adam.step

    def stopping_step(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 10:
            raise KeyboardInterrupt
        return real_step(self, *args, **kwargs)

    clock = iter(np.arange(0, 1e6, 61.0))
    monkeypatch.setattr(trainer.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(torch.optim.Adam, "step", stopping_step)
    with pytest.raises(KeyboardInterrupt):
        trainer.train(data, config(part, 2, minutes=1.0), resume=part / trainer.LAST)
    monkeypatch.setattr(torch.optim.Adam, "step", real_step)
    state = load_checkpoint(part / trainer.LAST)
    assert state["epoch"] == 1 and state["batch"] == 10
    resumed = trainer.train(data, config(part, 2), resume=part / trainer.LAST).model
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name


def test_ctrl_c_finishes_the_step_saves_and_resumes_exactly(shards, tmp_path, monkeypatch):
    """SIGINT during a step: the step completes, last.pt is saved there, the run returns interrupted, and
    resuming gives the weights of a run never stopped."""
    import os
    import signal
    torch = _torch()
    torch.set_num_threads(1)
    from quantfish.train import trainer
    monkeypatch.setattr(stream, "BLOCK", 256)
    data = RecordStream(shards, shuffle_buffer=2000)

    def config(out, epochs):
        return trainer.TrainConfig(l1=32, epochs=epochs, batch_size=256, lr=1e-3, val_fraction=0.0, seed=7,
                                   out_dir=str(out), checkpoint_minutes=0.0, log=None)

    whole = trainer.train(data, config(tmp_path / "whole", 2)).model
    calls = {"n": 0}
    real_step = torch.optim.Adam.step

    def signalling_step(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 40:                    # in the second epoch
            os.kill(os.getpid(), signal.SIGINT)
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", signalling_step)
    part = tmp_path / "part"
    before = signal.getsignal(signal.SIGINT)
    result = trainer.train(data, config(part, 2))
    monkeypatch.setattr(torch.optim.Adam, "step", real_step)
    assert result.interrupted and result.checkpoint == part / trainer.LAST
    from quantfish.train.checkpoint import load_checkpoint
    state = load_checkpoint(part / trainer.LAST)
    assert state["epoch"] == 1 and state["batch"] > 0        # stopped within the second epoch
    assert signal.getsignal(signal.SIGINT) is before         # the caller's handler is put back
    resumed = trainer.train(data, config(part, 2), resume=part / trainer.LAST).model
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name


def test_the_speed_tool_times_steps_on_streamed_data(shards, capsys):
    """`python -m quantfish.train.speed --data FILE --factoriser` trains on batches streamed from the files, and
    refuses data too small for the steps asked."""
    _torch()
    from quantfish.train import speed
    assert speed.measure(l1=64, batch_size=256, steps=2, factoriser=True, data=[str(p) for p in shards]) > 0
    with pytest.raises(SystemExit, match="need"):
        speed.measure(l1=64, batch_size=4096, steps=2, data=[str(shards[2])])
