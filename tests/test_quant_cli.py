"""``quantfish quant-report`` and ``quantfish quantize`` end to end, and reading training checkpoints."""

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from quantfish.nnue.io import load_net
from quantfish.nnue.io import quantfish as qformat
from quantfish.quant.floatnet import TORCH_MISSING, FloatNet
from quantfish.quant.positions import parse_lines
from tests.testdata import NNUE_DATA, require
from quantfish.cli.main import main

EPD = NNUE_DATA.parent / "eval" / "tcec_league_positions_labeled.epd"


@pytest.fixture(scope="module")
def positions_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("quant") / "positions.epd"
    path.write_text("\n".join(require(EPD).read_text().splitlines()[:160]) + "\n")
    return path


def test_commands_are_registered():
    import click
    ctx = click.Context(main)
    assert {"quant-report", "quantize"} <= set(main.list_commands(ctx))


def test_quant_report_json(nnue_net, positions_file):
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(positions_file),
                                    "--scheme", "sf", "--scheme", "range", "--rounding", "both", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["positions"] == 120 and "first 40" in out["calibration"]
    got = {(r["scheme"], r["rounding"]): r for r in out["results"]}
    assert set(got) == {("sf", "floor"), ("sf", "nearest"), ("range", "floor"), ("range", "nearest")}
    sf = got["sf", "floor"]
    assert 0.5 < sf["end_to_end"]["mae"] < 5 and sf["end_to_end"]["positions"] == 120
    assert got["sf", "nearest"]["end_to_end"]["mae"] < sf["end_to_end"]["mae"]
    layers = {row["layer"]: row for row in sf["layers"]}
    assert layers["fc_0 weights"]["sqnr"] == "inf" and layers["x (fc_0 input)"]["hi"] == 126


def test_quant_report_text(nnue_net, positions_file):
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(positions_file),
                                    "--limit", "40", "--layers"])
    assert res.exit_code == 0, res.output
    assert "40 positions" in res.output and "MAE cp" in res.output and "ac_sqr_0" in res.output


def test_quantize_sf_writes_stockfish_file(sf_net, tmp_path):
    out = tmp_path / "sf.nnue"
    res = CliRunner().invoke(main, ["quantize", sf_net.path, "-o", str(out), "--scheme", "sf"])
    assert res.exit_code == 0, res.output
    assert "Stockfish .nnue" in res.output
    assert out.read_bytes() == open(sf_net.path, "rb").read()


def test_quantize_other_scheme_writes_quantfish_format(nnue_net, positions_file, tmp_path):
    out = tmp_path / "q.qfnn"
    res = CliRunner().invoke(main, ["quantize", nnue_net.path, "-o", str(out), "--scheme", "sf",
                                    "--rounding", "nearest", "--resolution", "255"])
    assert res.exit_code == 0, res.output
    assert "Quantfish-format" in res.output and "Stockfish refuses it; Quantfish plays it" in res.output
    assert load_net(out).scheme.name == "sf"                # the engine's loader takes it
    q = qformat.read_qnet(out)
    assert (q.scheme.name, q.scheme.rounding, q.scheme.resolution) == ("sf", "nearest", 255)

    res = CliRunner().invoke(main, ["quantize", nnue_net.path, "-o", str(out), "--scheme", "range"])
    assert res.exit_code != 0 and "needs --calibration" in res.output


def test_checkpoint_without_torch_says_so(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="needs PyTorch"):
        FloatNet.from_checkpoint(tmp_path / "none.pt")
    assert "PyTorch" in TORCH_MISSING


def test_checkpoint_float_net_equals_the_model(tmp_path):
    torch = pytest.importorskip("torch", reason="reading a training checkpoint needs PyTorch")
    from quantfish.train.checkpoint import save_checkpoint
    from quantfish.train.model import NnueModel
    model = NnueModel(128, seed=3)
    with torch.no_grad():                       # move off the identical-stacks start so every stack differs
        for p in (model.w0, model.w1, model.w2):
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(5)) * 0.05)
    path = save_checkpoint(tmp_path / "c.pt", model)
    fnet = FloatNet.from_checkpoint(path)
    assert fnet.l1 == 128 and fnet.stacks == 8
    pos = parse_lines(require(EPD).read_text().splitlines()[:64])
    with torch.no_grad():
        want = model(pos.white, pos.black, pos.stm, pos.bucket).double().numpy()
    np.testing.assert_allclose(fnet.forward(pos).out, want, rtol=1e-5, atol=0.02)


def test_the_toolkit_imports_no_torch_and_no_matplotlib():
    import subprocess
    from tests.testdata import ROOT
    code = ("import sys\nimport quantfish.quant.floatnet, quantfish.nnue.scheme, quantfish.quant.build, quantfish.quant.calibrate, "
            "quantfish.quant.schemes, quantfish.quant.simulator, quantfish.quant.report, quantfish.nnue.io.quantfish, "
            "quantfish.quant.positions, quantfish.quant.bestmove, quantfish.quant.bitwidth, quantfish.quant.plots, quantfish.cli.quant"
            "\nprint('torch' in sys.modules, 'matplotlib' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False False"


def test_command_lists_every_scheme():
    from quantfish.quant.schemes import NAMES
    from quantfish.cli.quant import NAMES as COMMAND_NAMES
    assert COMMAND_NAMES == NAMES          # repeated there so that loading the command line imports no numpy


def _nnue_pytorch_state(net, torch, factorised=True):
    """Stockfish's net as nnue-pytorch would hold it (float32; HalfKAv2_hm^ virtual rows and the l1
    factoriser carrying a random share of each weight, as training leaves them)."""
    from quantfish.nnue.architecture import NUM_FEATURES, PS_NB
    f = FloatNet.from_net(net)
    rng = np.random.default_rng(11)
    ft = np.concatenate([f.ft_weights, f.ft_psqt], 1)
    if factorised:
        virtual = rng.normal(0, 0.05, (PS_NB, ft.shape[1]))
        ft = np.concatenate([ft - virtual[np.arange(NUM_FEATURES) % PS_NB], virtual])
    fact_w = rng.normal(0, 0.05, f.w0.shape[1:])
    fact_b = rng.normal(0, 0.05, f.b0.shape[1:])
    t = lambda a: torch.tensor(np.asarray(a), dtype=torch.float32)
    return {"input.weight": t(ft), "input.bias": t(np.concatenate([f.ft_bias, np.zeros(8)])),
            "layer_stacks.l1.weight": t((f.w0 - fact_w).reshape(-1, f.l1)),
            "layer_stacks.l1.bias": t((f.b0 - fact_b).reshape(-1)),
            "layer_stacks.l1_fact.weight": t(fact_w), "layer_stacks.l1_fact.bias": t(fact_b),
            "layer_stacks.l2.weight": t(f.w1.reshape(-1, f.w1.shape[2])), "layer_stacks.l2.bias": t(f.b1.reshape(-1)),
            "layer_stacks.output.weight": t(f.w2), "layer_stacks.output.bias": t(f.b2)}


def test_nnue_pytorch_checkpoint_quantises_to_stockfish_integers(sf_net, tmp_path):
    torch = pytest.importorskip("torch", reason="reading an nnue-pytorch checkpoint needs PyTorch")
    ckpt = tmp_path / "nnue-pytorch.ckpt"
    torch.save({"epoch": 400, "state_dict": _nnue_pytorch_state(sf_net, torch)}, ckpt)
    out = tmp_path / "sf.nnue"
    res = CliRunner().invoke(main, ["quantize", str(ckpt), "-o", str(out), "--scheme", "sf"])
    assert res.exit_code == 0, res.output
    got = load_net(out)
    for field in ("ft_bias", "ft_weights", "ft_psqt", "b0", "w0", "b1", "w1", "b2", "w2"):
        assert np.array_equal(getattr(got, field), getattr(sf_net, field)), field
    plain = tmp_path / "plain.pt"                   # unfactorised, a bare state dict with a prefix
    sd = _nnue_pytorch_state(sf_net, torch, factorised=False)
    torch.save({f"model.{k}": v for k, v in sd.items()}, plain)
    assert np.array_equal(FloatNet.from_checkpoint(plain).ft_weights, FloatNet.from_net(sf_net).ft_weights
                          .astype(np.float32).astype(np.float64))


def test_nnue_pytorch_checkpoint_refusals(nnue_net, tmp_path):
    torch = pytest.importorskip("torch", reason="reading an nnue-pytorch checkpoint needs PyTorch")
    sd = _nnue_pytorch_state(nnue_net, torch, factorised=False)
    cases = {"shape.pt": ({**sd, "layer_stacks.l2.weight": torch.zeros(256, 31)}, "layer_stacks.l2.weight has shape"),
             "missing.pt": ({k: v for k, v in sd.items() if k != "layer_stacks.output.bias"}, "lacks"),
             "other.pt": ({"weights": torch.zeros(3)}, "neither a Quantfish training checkpoint nor"),
             "objects.ckpt": ({"state_dict": sd, "hyper_parameters": {"feature_set": _Opaque()}}, "state_dict alone")}
    for name, (state, message) in cases.items():
        path = tmp_path / name
        torch.save(state, path)
        res = CliRunner().invoke(main, ["quantize", str(path), "-o", str(tmp_path / "o.nnue"), "--scheme", "sf"])
        assert res.exit_code != 0 and message in res.output and "Traceback" not in res.output, (name, res.output)


class _Opaque:
    """A Python object in a checkpoint: what weights_only loading refuses to unpickle."""
