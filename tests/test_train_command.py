"""``quantfish train`` and ``quantfish export`` end to end (tiny run from a Python-level data source)."""


import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")

from quantfish.nnue.io import load_net
from quantfish.cli.main import main# noqa: E402

torch.set_num_threads(1)

TRAIN = ["train", "--source", "tests.trainset:tiny_source", "--l1", "128", "--batch-size", "64",
         "--val-fraction", "0.1", "--threads", "1"]


def test_train_then_export(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, [*TRAIN, "--epochs", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "training L1=128 on cpu, 300 positions" in res.stderr
    assert "epoch 1/2  train loss" in res.stderr and "epoch 2/2" in res.stderr and "pos/s" in res.stderr
    assert (out / "last.pt").is_file() and (out / "epoch-0002.pt").is_file()

    res = CliRunner().invoke(main, [*TRAIN, "--epochs", "3", "--out", str(out), "--resume", str(out / "last.pt")])
    assert res.exit_code == 0, res.output
    assert "after epoch 2" in res.stderr and "epoch 3/3" in res.stderr and "epoch 1/3" not in res.stderr

    net_path = tmp_path / "tiny.nnue"
    res = CliRunner().invoke(main, ["export", str(out / "last.pt"), "-o", str(net_path)])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.stdout and load_net(net_path).arch.l1 == 128


def test_errors_are_one_line(tmp_path):
    out = tmp_path / "run"
    CliRunner().invoke(main, [*TRAIN, "--epochs", "1", "--out", str(out)])
    res = CliRunner().invoke(main, [*TRAIN[:3], "--l1", "256", "--epochs", "2", "--out", str(out),
                                    "--resume", str(out / "last.pt")])
    assert res.exit_code == 1 and "checkpoint shape does not match the model: l1 128 (model: 256)" in res.stderr
    assert "Traceback" not in res.output
    res = CliRunner().invoke(main, ["export", str(tmp_path / "none.pt"), "-o", str(tmp_path / "x.nnue")])
    assert res.exit_code == 1 and "checkpoint not found" in res.stderr
    res = CliRunner().invoke(main, ["train", "--out", str(out)])
    assert res.exit_code == 2 and "--data FILE" in res.stderr


def test_a_corrupt_data_file_is_a_clear_error(tmp_path):
    data = tmp_path / "d.bin"
    data.write_bytes(b"\x01" * 40)
    res = CliRunner().invoke(main, ["train", "--data", str(data), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "d.bin" in res.stderr and "Traceback" not in res.output


def test_init_net_errors_are_one_line(tmp_path):
    out = tmp_path / "run"
    bad = tmp_path / "bad.nnue"
    bad.write_bytes(b"\x00" * 100)
    res = CliRunner().invoke(main, [*TRAIN, "--epochs", "1", "--out", str(out), "--init-net", str(bad)])
    assert res.exit_code == 1 and "bad.nnue" in res.stderr and "Traceback" not in res.output
    res = CliRunner().invoke(main, [*TRAIN, "--epochs", "1", "--out", str(out), "--init-net", str(bad),
                                    "--resume", str(out / "last.pt")])
    assert res.exit_code == 2 and "--init-net starts a new run" in res.stderr
