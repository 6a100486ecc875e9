"""Bias correction: the mean error of each corrected layer is taken out, on the calibration positions and on
others; only biases change, so an ``sf`` net stays a Stockfish file."""

import numpy as np
import pytest
from click.testing import CliRunner

from quantfish.cli.main import main
from quantfish.nnue.io import load_net
from quantfish.quant import schemes
from quantfish.quant.biascorr import bias_correct
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.positions import read_positions
from quantfish.quant.report import compare
from tests.testdata import NNUE_DATA, require

EPD = NNUE_DATA.parent / "eval" / "tcec_league_positions_labeled.epd"


@pytest.fixture(scope="module")
def split():
    pos = read_positions(require(EPD))
    return pos.take(slice(0, 800)), pos.take(slice(800, 1600))


@pytest.fixture(scope="module")
def fnet(nnue_net):
    return FloatNet.from_net(nnue_net)


def test_correction_takes_out_the_mean_error(fnet, split):
    """Stockfish's floors leave a mean error in each layer; the correction takes it out (measured on 2,000
    calibration and 3,310 other positions: 2.41 -> 2.15 cp on Stockfish's net, 3.52 -> 1.71 on our own)."""
    cal, held = split
    plain = schemes.make("sf", fnet, None, "floor")
    fixed = bias_correct(plain, fnet, cal)
    assert fixed.scheme.name == "sf+bc"
    after = compare(fixed, fnet, cal, layers=False).end_to_end
    assert abs(after.bias) < 0.1, after.bias
    h_before = compare(plain, fnet, held, layers=False).end_to_end
    h_after = compare(fixed, fnet, held, layers=False).end_to_end
    assert h_after.mae < 0.95 * h_before.mae, (h_before.mae, h_after.mae)
    for name in ("ft_bias", "ft_weights", "ft_psqt", "w0", "w1", "w2"):
        assert np.array_equal(getattr(plain, name), getattr(fixed, name)), name


def test_quantize_writes_a_corrected_stockfish_file(nnue_net, tmp_path):
    cal = tmp_path / "cal.epd"
    cal.write_text("\n".join(require(EPD).read_text().splitlines()[:400]) + "\n")
    out = tmp_path / "bc.nnue"
    res = CliRunner().invoke(main, ["quantize", nnue_net.path, "-o", str(out), "--scheme", "sf",
                                    "--bias-correction", "--calibration", str(cal)])
    assert res.exit_code == 0, res.output
    assert "Stockfish .nnue" in res.output
    net = load_net(out)
    assert np.array_equal(net.w0, nnue_net.w0) and not np.array_equal(net.b0, nnue_net.b0)
    res = CliRunner().invoke(main, ["quantize", nnue_net.path, "-o", str(out), "--scheme", "sf",
                                    "--bias-correction"])
    assert res.exit_code != 0 and "--calibration" in res.output
