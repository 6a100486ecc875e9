"""The trainer: loss, learning, checkpoints (shape checks, resume) and the data-source protocol."""


import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")

from quantfish.train.checkpoint import CheckpointError, load_checkpoint# noqa: E402
from quantfish.train.data import ArraySource, DataError  # noqa: E402
from quantfish.train.stream import load_data_files  # noqa: E402
from quantfish.train.loss import loss_fn# noqa: E402
from quantfish.train.model import NnueModel# noqa: E402
from quantfish.train.trainer import LAST, TrainConfig, evaluate_loss, model_from_checkpoint, train# noqa: E402
from tests.trainset import distill_set, trained_tiny  # noqa: E402

torch.set_num_threads(1)


def test_loss_in_wdl_space_with_lambda():
    out = torch.tensor([0.0, 361.0, -722.0])
    cp = torch.tensor([0.0, 100.0, -200.0])            # the same evaluations in centipawns
    result = torch.tensor([1.0, 0.0, 0.5])
    assert loss_fn(out, cp, result, lambda_=1.0).item() == pytest.approx(0.0, abs=1e-9)
    # lambda 0: only the result counts; a draw score against a won result costs 0.5 ** 2.6.
    assert loss_fn(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]), lambda_=0.0).item() == \
        pytest.approx(0.5 ** 2.6)
    half = loss_fn(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]), lambda_=0.5).item()
    assert half == pytest.approx(0.25 ** 2.6)


def test_training_lowers_the_loss():
    """About 260 Adam steps on 1350 positions: the training loss must fall to a fifth of the untrained model's,
    and the held-back loss must fall too."""
    result, config = trained_tiny()
    train_src, val_src = ArraySource(distill_set()).split(config.val_fraction, config.seed)
    untrained = NnueModel(config.l1, seed=config.seed)
    train0 = evaluate_loss(untrained, train_src, config)
    val0 = evaluate_loss(untrained, val_src, config)
    last = result.history[-1]
    print(f"\ntrain loss {train0:.5f} -> {last['train_loss']:.5f}, val loss {val0:.5f} -> {last['val_loss']:.5f}")
    assert last["train_loss"] < 0.2 * train0
    assert last["val_loss"] < 0.95 * val0
    assert [h["epoch"] for h in result.history] == list(range(1, config.epochs + 1))
    assert [h["fake_quant"] for h in result.history] == [False] * (config.epochs - 1) + [True]


def _small_config(out_dir, epochs, l1=128):
    return TrainConfig(l1=l1, epochs=epochs, batch_size=64, lr=1e-3, val_fraction=0.1, seed=3,
                       out_dir=str(out_dir), log=None)


def test_resume_continues_from_the_saved_epoch(tmp_path):
    """2 epochs, then resume to 3: the same weights as 3 epochs in one go (optimizer, schedule and epoch
    restored), and the history goes on from epoch 3."""
    data = distill_set(300, 3)
    whole = train(data, _small_config(tmp_path / "whole", 3))
    train(data, _small_config(tmp_path / "part", 2))
    lines = []
    cfg = _small_config(tmp_path / "part", 3)
    cfg.log = lines.append
    resumed = train(data, cfg, resume=tmp_path / "part" / LAST)
    assert lines[0].startswith("resumed from") and "after epoch 2" in lines[0]
    assert lines[1].startswith("epoch 3/3") and len(lines) == 2
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    state = load_checkpoint(tmp_path / "part" / LAST)
    assert state["epoch"] == 3 and state["arch"]["l1"] == 128
    assert (tmp_path / "part" / "epoch-0003.pt").is_file()


def test_a_checkpoint_of_the_earlier_scheduler_state_resumes(tmp_path):
    """A checkpoint whose schedule state is that of torch's ExponentialLR (as checkpoints recorded it before the
    schedules became one function of the epoch) resumes to the weights of a run never stopped."""
    data = distill_set(300, 3)
    whole = train(data, _small_config(tmp_path / "whole", 3))
    train(data, _small_config(tmp_path / "part", 2))
    path = tmp_path / "part" / LAST
    state = load_checkpoint(path)
    config = _small_config(None, 2)
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=config.lr)
    earlier = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=config.lr_gamma)
    for _ in range(2):
        optimizer.step()
        earlier.step()
    state["scheduler"] = earlier.state_dict()
    assert "lr_lambdas" not in state["scheduler"]
    torch.save(state, path)
    resumed = train(data, _small_config(tmp_path / "part", 3), resume=path)
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name


def test_checkpoint_of_another_shape_is_refused(tmp_path):
    data = distill_set(300, 3)
    train(data, _small_config(tmp_path, 1))
    ckpt = tmp_path / LAST
    with pytest.raises(CheckpointError, match=r"l1 128 \(model: 256\).*--l1 128"):
        train(data, _small_config(tmp_path / "b", 2, l1=256), resume=ckpt)
    with pytest.raises(CheckpointError, match="l1 128"):
        model_from_checkpoint(ckpt, l1=256)
    assert model_from_checkpoint(ckpt).l1 == 128
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable training checkpoint"):
        model_from_checkpoint(junk)


class _Reader:
    """A data reader of the protocol only: batches(batch_size, shuffle, seed), no split."""

    def __init__(self, arrays):
        self.arrays = arrays

    def batches(self, batch_size, shuffle, seed):
        for i in range(0, self.arrays.size, batch_size):
            yield self.arrays.take(np.arange(i, min(i + batch_size, self.arrays.size)))


def test_any_object_with_batches_plugs_in():
    data = distill_set(300, 3)
    cfg = TrainConfig(l1=128, epochs=1, batch_size=100, val_fraction=0.0, log=None)
    assert len(train(_Reader(data), cfg).history) == 1
    with pytest.raises(DataError, match="cannot hold back a validation split"):
        train(_Reader(data), TrainConfig(l1=128, epochs=1, batch_size=100, val_fraction=0.1, log=None))
    res = train(_Reader(data), TrainConfig(l1=128, epochs=1, batch_size=100, val_fraction=0.1, log=None),
                val_data=data.take(np.arange(50)))
    assert res.history[0]["val_loss"] is not None


def test_data_files_go_through_the_records_reader(tmp_path):
    """A records file (``quantfish.data.records``) reaches the trainer with the engine's feature indices, the bucket of
    its piece count and side-to-move labels; a corrupt file is a DataError."""
    from quantfish.data.records import append_records
    from quantfish.data.text import parse_lines
    lines = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1 | 35 | 0.5",
             "8/8/4k3/8/8/3K4/4P3/8 w - - 0 60 | 250 | 1.0",
             "8/8/4k3/8/8/3K4/4P3/8 b - - 0 60 | 250 | 1.0"]
    append_records(tmp_path / "a.bin", parse_lines(lines))
    append_records(tmp_path / "b.bin", parse_lines(lines[:1]))
    src = load_data_files([tmp_path / "a.bin", tmp_path / "b.bin"])
    rows = [b for b in src.batches(128, False, 0)]
    assert sum(b.size for b in rows) == 4
    a = rows[0]
    assert list(a.stm[:3]) == [1, 0, 1] and list(a.bucket[:3]) == [7, 0, 0]
    assert list(a.score[:3]) == [-35, 250, -250] and list(a.result[:3]) == [0.5, 1.0, 0.0]
    assert (a.white_idx[1] >= 0).sum() == 3 and (a.white_idx[0] >= 0).sum() == 32
    (tmp_path / "bad.bin").write_bytes(b"x" * 33)
    with pytest.raises(DataError, match="bad.bin"):
        load_data_files([tmp_path / "bad.bin"])


def _own_net_path():
    from quantfish.nnue.locate import OWN_NET_NAME, package_nets_dir
    return package_nets_dir() / OWN_NET_NAME


def test_a_run_started_from_a_net_begins_as_that_net():
    """--init-net: the model holds the net's weights (the factoriser's rows at zero), so at a vanishing rate
    the exported net is the net itself, integer for integer, and its loss is far below a random start's."""
    from quantfish.nnue.io import load_net
    from quantfish.train.quantize import quantise
    path = _own_net_path()
    net = load_net(path)
    data = distill_set(300, 3)
    lines = []
    cfg = TrainConfig(l1=net.arch.l1, factoriser=True, epochs=1, batch_size=64, lr=1e-30, val_fraction=0.0,
                      seed=3, init_net=str(path), log=lines.append)
    started = train(data, cfg)
    assert lines[0] == f"starting from the weights of {path}"
    again = quantise(started.model)
    for name in ("ft_bias", "ft_weights", "ft_psqt", "w0", "b0", "w1", "b1", "w2", "b2"):
        np.testing.assert_array_equal(getattr(again, name), getattr(net, name), err_msg=name)
    cfg_random = TrainConfig(l1=net.arch.l1, factoriser=True, epochs=1, batch_size=64, lr=1e-30,
                             val_fraction=0.0, seed=3, log=None)
    random_start = train(data, cfg_random)
    assert started.history[0]["train_loss"] < 0.5 * random_start.history[0]["train_loss"]


def test_a_net_wider_than_the_model_cannot_start_a_run():
    from quantfish.nnue.io import load_net
    l1 = load_net(_own_net_path()).arch.l1
    cfg = TrainConfig(l1=l1 // 2, epochs=1, batch_size=64, val_fraction=0.0, init_net=str(_own_net_path()), log=None)
    with pytest.raises(ValueError, match=rf"L1 = {l1}, the model has L1 = {l1 // 2} \(give --l1 {l1} or wider\)"):
        train(distill_set(300, 3), cfg)


def test_a_run_started_from_a_narrower_net_begins_as_that_net():
    """--init-net with a wider --l1: the net's neuron pairs keep their places in each half of the feature
    transformer and in fc_0's inputs, so the wide model computes the narrow net's function; its new neurons are
    alive (random feature weights around the 0.5 bias), so training gives their fc_0 columns weight."""
    from quantfish.nnue.io import load_net
    from quantfish.train.quantize import dequantise
    path = _own_net_path()
    narrow = dequantise(load_net(path))
    wide_l1 = narrow.l1 + 128
    half, wide_half = narrow.l1 // 2, wide_l1 // 2
    new_cols = torch.cat([torch.arange(half, wide_half), torch.arange(wide_half + half, wide_l1)])
    arr = distill_set(300, 3)
    args = (arr.white_idx, arr.black_idx, arr.stm, arr.bucket)
    cfg = dict(l1=wide_l1, factoriser=True, epochs=1, batch_size=64, val_fraction=0.0, seed=3,
               init_net=str(path), log=None)
    wide = train(arr, TrainConfig(lr=1e-30, **cfg)).model
    with torch.no_grad():
        expected = narrow(*args).double().numpy()
        np.testing.assert_allclose(wide(*args).double().numpy(), expected, rtol=1e-5, atol=1e-3)
    assert wide.ft_weight[:, new_cols].abs().sum() > 0
    trained = train(arr, TrainConfig(lr=1e-3, **cfg)).model
    assert (trained.w0[:, new_cols].abs().sum(0) > 0).all()


def test_a_net_of_another_format_cannot_start_a_run():
    """The fixed scales are Stockfish 15.1's: a net of a later generation (here one marked as Stockfish 16's,
    its feature transformer stored compressed) is refused, naming the file, rather than read at a wrong scale."""
    import dataclasses
    from quantfish.nnue.io import load_net
    from quantfish.train.quantize import dequantise
    net = load_net(_own_net_path())
    later = dataclasses.replace(net, arch=net.arch._replace(compressed_ft=True), path="doubled.nnue")
    with pytest.raises(ValueError, match=r"doubled.nnue: a net of Stockfish 15.1's format is needed"):
        dequantise(later)


def test_a_net_cannot_start_a_dorefa_run():
    path = _own_net_path()
    cfg = TrainConfig(l1=512, epochs=1, batch_size=64, val_fraction=0.0, qat="dorefa", init_net=str(path), log=None)
    with pytest.raises(ValueError, match="dorefa"):
        train(distill_set(300, 3), cfg)
