"""Export: the 15.1 round trip, refusals instead of clipping, and a trained net in the engine."""

import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")

from quantfish.nnue.formulas import eval_report# noqa: E402
from quantfish.nnue.io import load_net
from quantfish.nnue.io.stockfish import net_bytes
from quantfish.nnue.pychess import mailbox, side_to_move# noqa: E402
from quantfish.train.distill import board_arrays, random_boards# noqa: E402
from quantfish.train.model import NnueModel# noqa: E402
from quantfish.train.quanterror import compare# noqa: E402
from quantfish.train.quantize import QuantisationError, dequantise, export, quantise# noqa: E402
from tests.trainset import trained_tiny  # noqa: E402

torch.set_num_threads(1)


def test_sf15_round_trip_is_byte_identical(sf_net, tmp_path):
    original = open(sf_net.path, "rb").read()
    net = quantise(dequantise(sf_net), sf_net.description)
    assert net_bytes(net) == original
    out = tmp_path / "again.nnue"
    export(dequantise(sf_net), out, sf_net.description)
    assert out.read_bytes() == original


@pytest.mark.parametrize("param, index, value, words", [
    ("w0", (3 * 16 + 5, 17), 5.0, ["fc_0 weights (w0)", "int8", "320", "(3, 5, 17)"]),
    ("w1", (40, 2), -3.0, ["fc_1 weights (w1)", "-192", "(1, 8, 2)"]),
    ("w2", (6, 31), 2.0, ["fc_2 weights (w2)", "151", "(6, 31)"]),
    ("b2", (4,), 3e5, ["fc_2 bias (b2)", "int32", "(4,)"]),
    ("ft_weight", (1000, 128 + 2), 3e5, ["PSQT weights (ft_psqt)", "int32", "(1000, 2)"]),
])
def test_overflow_is_refused_naming_the_layer(param, index, value, words):
    model = NnueModel(128, seed=0)
    with torch.no_grad():
        getattr(model, param)[index] = value
    with pytest.raises(QuantisationError) as err:
        quantise(model)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_accumulator_that_could_wrap_is_refused():
    """32 pieces on features whose weight for neuron 0 is 5.0 (635) sum to 20320, which int16 holds; at 10.0
    (1270) they sum to 40640, which it does not (our nets keep 15.1's arithmetic: no doubling at any width)."""
    for weight, refused in ((5.0, False), (10.0, True)):
        model = NnueModel(128, seed=0)
        with torch.no_grad():
            model.ft_weight[:40, 0] = weight
        if refused:
            with pytest.raises(QuantisationError, match=r"accumulator .* could reach .*40\d\d\d.*-32768\.\.32767"):
                quantise(model)
        else:
            quantise(model)


def test_trained_net_in_the_engine_equals_the_float_model_within_rounding(tmp_path):
    """The tiny net trained with fake quantisation in its last epoch, exported and loaded by the engine.

    The bound: the engine's value must lie in the rigorous rounding interval of quantfish.train.quanterror (each
    activation the engine floors may lose at most one step, propagated through the net with the weights'
    signs) around the float counterpart, which the model computes (to float32 precision) because it runs on
    the exported weights. Also the engine equals the integer simulator exactly. Measured: engine - float
    mean 2.2 internal units (0.6 cp), max 6; interval width 24 on average."""
    result, config = trained_tiny()
    model = result.model
    net = export(model, tmp_path / "tiny.nnue")
    assert load_net(tmp_path / "tiny.nnue").arch.l1 == 128
    boards = random_boards(300, seed=99)
    arr = board_arrays(boards)
    engine = np.array([eval_report(net, mailbox(b), side_to_move(b), 0).nnue_raw for b in boards])
    c = compare(net, arr.white_idx, arr.black_idx, arr.stm, arr.bucket)
    assert np.array_equal(engine, c.integer)
    assert np.all((engine >= c.lo) & (engine <= c.hi))
    model.eval()
    model.fake_quant = True
    with torch.no_grad():
        out = model(arr.white_idx, arr.black_idx, arr.stm, arr.bucket).double().numpy()
    assert np.abs(out - c.real).max() < 0.05
    mae = np.abs(out - engine).mean()
    assert mae < 8, mae
    print(f"\ntrained L1=128: engine - float MAE {mae:.2f} units, max {np.abs(out - engine).max():.1f}, "
          f"interval width mean {c.width.mean():.1f}")


def _stockfish():
    import shutil
    return shutil.which("stockfish") or ("/usr/games/stockfish" if os.path.exists("/usr/games/stockfish") else None)


def _stockfish_eval_lines(stockfish, net_path, fen):
    """Stockfish 15.1's bucket table and NNUE evaluation line for ``fen`` with the net at ``net_path``."""
    script = f"uci\nsetoption name EvalFile value {net_path}\nisready\nposition fen {fen}\neval\nquit\n"
    out = subprocess.run([stockfish], input=script, capture_output=True, text=True, timeout=120).stdout
    assert "ERROR" not in out, out[-2000:]
    return _table_and_nnue(out)


def _table_and_nnue(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "NNUE network contributions" in line)
    table = [line.rstrip() for line in lines[start:start + 14] if line.startswith("|  ")]
    nnue = next(line.split()[2] for line in lines if line.startswith("NNUE evaluation"))
    return table, nnue


@pytest.mark.skipif(_stockfish() is None, reason="Stockfish is not installed (apt-get install stockfish)")
def test_l1_1024_export_loads_in_stockfish_and_evaluates_as_ours(sf_net, tmp_path):
    """An exported L1 = 1024 net is a Stockfish 15.1 net: Stockfish loads it and prints, bucket by bucket, the
    same evaluation as `quantfish eval` does with it. The net is Stockfish's own, dequantised and perturbed (so
    every layer and bucket carries real, new values), then exported."""
    from click.testing import CliRunner

    from quantfish.cli.eval import eval_command
    model = dequantise(sf_net)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * p.abs().mean() * 0.3)
    model.clip_weights()
    path = tmp_path / "exported1024.nnue"
    export(model, path, b"exported by the Quantfish trainer (test)")
    fens = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
            "8/5k2/3p4/1p1Pp2p/pP2Pp1P/P4P1K/8/8 b - - 99 50",
            "6k1/5ppp/8/8/8/8/1Q3PPP/6K1 w - - 0 1"]
    for fen in fens:
        want = _stockfish_eval_lines(_stockfish(), path, fen)
        res = CliRunner().invoke(eval_command, ["--net", str(path), fen])
        assert res.exit_code == 0, res.output
        got = _table_and_nnue(res.output)
        assert got == want, (fen, got, want)
        totals = [row.split("|")[4] for row in want[0][2:]]
        assert len(totals) == 8 and len(set(totals)) > 4      # the buckets differ: the comparison says something
