"""``quant-report --plots``: one PNG per scheme and a summary; a clear message without matplotlib."""

import sys

import pytest
from click.testing import CliRunner

from quantfish.quant import calibrate, plots
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.positions import parse_lines
from quantfish.quant.schemes import make
from tests.testdata import require
from tests.test_quant_bestmove import EPD
from quantfish.cli.main import main

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def positions_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plots") / "p.epd"
    path.write_text("\n".join(require(EPD).read_text().splitlines()[:80]) + "\n")
    return path


def test_plots_are_written(nnue_net, positions_file, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is an optional extra (make plot-deps)")
    out = tmp_path / "figs"
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(positions_file),
                                    "--scheme", "sf", "--scheme", "kl", "--rounding", "both", "--best-move", "0",
                                    "--plots", str(out)])
    assert res.exit_code == 0, res.output
    names = {p.name for p in out.iterdir()}
    assert names == {"summary.png", "sf-floor-127.png", "sf-nearest-127.png", "kl-floor-127.png",
                     "kl-nearest-127.png"}
    for p in out.iterdir():
        assert p.read_bytes()[:8] == PNG and p.stat().st_size > 10_000


def test_clips_drawn_are_where_the_integers_saturate(nnue_net):
    fnet = FloatNet.from_net(nnue_net)
    pos = parse_lines(require(EPD).read_text().splitlines()[:20])
    ft = fnet.forward(pos)
    sites = {title: tops for title, _, tops in plots.sites(make("sf", fnet).scheme, ft)}
    # Stockfish's arithmetic saturates every activation at the function's own clamp, 127 / 127 = 1.0
    assert sites["accumulator (FT clamp)"].tolist() == [1.0]
    assert sites["fc_0 input (pairwise product)"].tolist() == [1.0]
    assert sites["fc_0 hidden (ac_0)"].min() == sites["fc_0 hidden (ac_0)"].max() == 1.0
    # KL calibration clips fc_0's input below its range (the 0.62 of the shipped net's figure): drawn there
    kl = make("kl", fnet, calibrate.collect(fnet, pos, min_per_stack=4)).scheme
    top = {title: tops for title, _, tops in plots.sites(kl, ft)}["fc_0 input (pairwise product)"]
    assert top.tolist() == [kl.x.hi[0] / kl.x.scale[0]] and top[0] < 0.99


def test_without_matplotlib_the_command_says_so(nnue_net, positions_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    res = CliRunner().invoke(main, ["quant-report", nnue_net.path, "--positions", str(positions_file),
                                    "--plots", str(tmp_path / "figs")])
    assert res.exit_code != 0 and "make plot-deps" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "figs").exists()
