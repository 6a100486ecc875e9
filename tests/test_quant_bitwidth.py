"""Ristretto's bit-width search (``quantfish.quant.bitwidth``) on the small random float net: the dynamic fixed-point
grid, the bisection's answer, what a narrower type saves, and the command's output."""

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from quantfish.nnue.architecture import NUM_FEATURES
from quantfish.quant import bitwidth
from quantfish.quant.bitwidth import GROUPS, dfp, dfp_unit
from tests.test_quant_schemes import L1, _net, _positions
from quantfish.cli.main import main


def _group(name):
    return next(g for g in GROUPS if g.name == name)


def test_dfp_grid_step_saturation_and_sign():
    v = np.array([1.5, -1.5, 0.3, -0.01, 1.0])
    q = dfp(v, 8, signed=True)            # max 1.5 needs 1 integer bit: step 2**(1 - 7) = 1/64
    assert np.allclose(q * 64, np.rint(v * 64)) and np.all(np.abs(q - v) <= 1 / 128 + 1e-12)
    assert dfp(np.array([2.0, -2.0]), 8, signed=True).tolist() == [127 / 64, -2.0]   # +2 saturates, -2 fits
    assert dfp(np.array([0.75, 0.1]), 4, signed=False).tolist() == [0.75, 0.125]       # unsigned step 1/16
    assert dfp(np.zeros(3), 4, True).tolist() == [0, 0, 0]
    assert dfp_unit(np.array([1.0, 0.5, 0.26]), 2).tolist() == [0.75, 0.5, 0.25]      # step 1/4, top 3/4


@pytest.fixture(scope="module")
def grid_net():
    """The random net with fc_0 weights on int8's 1/64 grid and their full range used."""
    net = _net(5)
    rng = np.random.default_rng(6)
    w0 = rng.integers(-127, 128, net.w0.shape) / 64.0
    w0.flat[0] = 127 / 64
    return replace(net, w0=w0)


def test_search_finds_the_width_of_weights_on_a_grid(grid_net):
    pos = _positions(60, 9)
    rep = bitwidth.search(grid_net, pos, margin=1e-9, groups=(_group("fc_0 weights"),))
    (w,) = rep.widths
    assert w.bits == 8 and w.mae <= 1e-9                 # exactly int8's grid: no error at 8, some at 7
    assert w.errors[7] > 1e-6
    assert rep.combined_mae == pytest.approx(w.mae, abs=1e-9)


def test_search_brackets_each_width_and_combines(grid_net):
    pos = _positions(60, 10)
    margin = 0.5
    rep = bitwidth.search(grid_net, pos, margin)
    assert [w.group for w in rep.widths] == [g.name for g in GROUPS]
    for w, g in zip(rep.widths, GROUPS):
        if w.bits is None:
            assert w.errors[g.ceiling] > margin
            continue
        assert w.errors[w.bits] <= margin and w.mae == w.errors[w.bits]
        if w.bits > 1:
            assert w.errors[w.bits - 1] > margin, (w.group, w.errors)   # the bisection measured the width below
    assert rep.combined_mae > 0
    assert json.loads(json.dumps(rep.to_dict()))["groups"][0]["group"] == "ft weights"


def test_saving_against_the_engine_types(grid_net):
    ft = _group("ft weights")
    text = bitwidth.saving(grid_net, ft, 8)
    assert f"{(NUM_FEATURES + 1) * L1 / 2**20:.1f} MiB" in text and "int8" in text
    assert "narrowest" in bitwidth.saving(grid_net, ft, 12)
    assert "wider than the engine's 8-bit" in bitwidth.saving(grid_net, _group("fc_1 weights"), 9)
    assert "more than" in bitwidth.saving(grid_net, ft, None)


def test_quant_report_bit_widths(nnue_net, tmp_path):
    from tests.test_quant_bestmove import EPD
    from tests.testdata import require
    path = tmp_path / "p.epd"
    path.write_text("\n".join(require(EPD).read_text().splitlines()[:60]) + "\n")
    args = ["quant-report", nnue_net.path, "--positions", str(path), "--best-move", "0", "--bit-widths"]
    res = CliRunner().invoke(main, args + ["--margin", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    groups = {g["group"]: g for g in json.loads(res.stdout)["bit_widths"]["groups"]}
    assert set(groups) == {g.name for g in GROUPS}
    # Stockfish's fc_0 weights are int8 on a 1/64 grid: at most 8 bits reproduce them exactly
    assert groups["fc_0 weights"]["bits"] <= 8 and groups["fc_0 weights"]["mae"] == 0.0
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and "Ristretto" in res.output and "all groups at these widths together" in res.output
    res = CliRunner().invoke(main, args + ["--margin", "0"])
    assert res.exit_code != 0 and "Traceback" not in res.output
