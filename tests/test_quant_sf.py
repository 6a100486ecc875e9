"""The quantisation toolkit on Stockfish 15.1's net: the ``sf`` scheme is Stockfish, bit for bit.

Dequantised with the fixed scales and quantised back with ``sf``, the net is the same file; the integer
simulator, reading only the integer tensors and the record, equals Stockfish 15.1's reference data (all 8
buckets of a few hundred rows) and the engine's own evaluation on random positions.
"""

import csv

import numpy as np
import pytest

from quantfish.quant.schemes import is_stockfish
from quantfish.quant.schemes import to_net
from quantfish.nnue.formulas import eval_report
from quantfish.nnue.io.stockfish import net_bytes
from quantfish.quant import schemes
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.positions import from_boards, parse_lines
from quantfish.nnue.scheme import Scheme
from quantfish.quant.simulator import accumulate, simulate
from quantfish.train.quanterror import compare
from tests.testdata import NNUE_DATA, require
from tests.test_quant_schemes import random_boards

TSV = NNUE_DATA / "sf15.1_reference.tsv"


@pytest.fixture(scope="module")
def fnet(sf_net):
    return FloatNet.from_net(sf_net)


@pytest.fixture(scope="module")
def sf(fnet):
    return schemes.make("sf", fnet)


def test_sf_gives_the_file_back_byte_for_byte(sf_net, sf):
    assert is_stockfish(sf.scheme)
    with open(sf_net.path, "rb") as fh:
        assert net_bytes(to_net(sf)) == fh.read()


def test_record_survives_json(sf):
    d = sf.scheme.to_dict()
    assert Scheme.from_dict(d) == sf.scheme
    st = d["stacks"][0]
    # Stockfish's arithmetic, as the record states it.
    assert (d["ft_scale"], d["ft_hi"], d["x"]["requant"]["shift"]) == (127.0, 127, 7)
    assert st["ac_0"]["requant"] == {"mul": [1], "shift": 6, "div": 1, "rounding": "floor", "int32": False}
    assert st["ac_sqr_0"]["requant"]["shift"] == 19 and st["ac_sqr_0"]["limit"] == [8160] * 15
    assert st["skip"] == {"mul": [9600], "shift": 0, "div": 8128, "rounding": "trunc", "int32": True}
    assert d["final"]["div"] == 16 and d["final"]["rounding"] == "trunc"


def _reference_rows(step=16):
    with open(require(TSV)) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert len(rows) == 4878
    return rows[::step]


def test_simulator_equals_stockfish_reference_rows(sf):
    rows = _reference_rows()
    pos = parse_lines([r["fen"] for r in rows])
    accs = accumulate(sf, pos)
    for k in range(8):
        tr = simulate(sf, pos, stack=k, accumulators=accs)
        assert tr.psqt.tolist() == [int(r[f"psqt_{k}"]) for r in rows], k
        assert tr.positional.tolist() == [int(r[f"positional_{k}"]) for r in rows], k
    own = simulate(sf, pos, accumulators=accs)
    assert own.raw.tolist() == [int(r["nnue_evaluate_raw"]) for r in rows]
    assert pos.bucket.tolist() == [int(r["bucket"]) for r in rows]


def _random_boards(n, seed=7):
    boards = random_boards(n, seed)
    return [b for b, _ in boards], [side for _, side in boards]


def test_simulator_equals_engine_on_random_positions(sf_arrays, sf):
    boards, sides = _random_boards(150)
    pos = from_boards(boards, sides)
    accs = accumulate(sf, pos)
    sims = [simulate(sf, pos, stack=k, accumulators=accs) for k in range(8)]
    for i, (board, side) in enumerate(zip(boards, sides)):
        rep = eval_report(sf_arrays, board, side, 0)
        assert rep.psqt == [int(t.psqt[i]) for t in sims], i
        assert rep.positional == [int(t.positional[i]) for t in sims], i
        assert rep.nnue_raw == int(sims[rep.bucket].raw[i]), i


def test_float_net_is_the_float_counterpart(sf_net, fnet):
    """Float pass = quantfish.train.quanterror's float counterpart of the same net (no torch needed)."""
    rows = _reference_rows(step=40)
    pos = parse_lines([r["fen"] for r in rows])
    out = fnet.forward(pos).out
    ref = compare(sf_net, pos.white, pos.black, pos.stm, pos.bucket).real
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-6)


def test_float_net_equals_the_trainers_model(sf_net, fnet):
    torch = pytest.importorskip("torch", reason="the trainer's model needs PyTorch")
    from quantfish.train.quantize import dequantise
    model = dequantise(sf_net)
    rows = _reference_rows(step=40)
    pos = parse_lines([r["fen"] for r in rows])
    with torch.no_grad():
        got = model(pos.white, pos.black, pos.stm, pos.bucket).double().numpy()
    np.testing.assert_allclose(fnet.forward(pos).out, got, rtol=1e-5, atol=0.05)


def test_rounding_and_resolution_beat_stockfish_floors(fnet, sf):
    """The toolkit's point: on quiet positions the best integer scheme is within 0.6 of ``sf``'s error."""
    from quantfish.quant.report import compare as report_compare
    path = require(NNUE_DATA.parent / "eval" / "tcec_league_positions_labeled.epd")
    pos = parse_lines(path.read_text().splitlines()[:300])
    ft = fnet.forward(pos)
    base = report_compare(sf, fnet, pos, ft, layers=False).end_to_end
    best = report_compare(schemes.make("sf", fnet, rounding="nearest", resolution=255), fnet, pos, ft,
                          layers=False).end_to_end
    assert 1.0 < base.mae < 4.0, base
    assert best.mae < 0.6 * base.mae, (best, base)
    assert best.sign >= base.sign


def test_kl_calibration_of_fc0_input_is_harmful_and_the_report_shows_it(fnet, sf):
    """TensorRT's entropy calibration sees fc_0's input dominated by zeros and tiny products and clips it far
    below the function's own range (docs/quantisation.md): many values saturate and the error explodes."""
    from quantfish.quant import calibrate
    from quantfish.quant.report import compare as report_compare
    lines = require(NNUE_DATA.parent / "eval" / "tcec_league_positions_labeled.epd").read_text().splitlines()
    cal, pos = parse_lines(lines[:200]), parse_lines(lines[200:400])
    kl = schemes.make("kl", fnet, calibrate.collect(fnet, cal), "nearest", 127)
    ft = fnet.forward(pos)
    rep = report_compare(kl, fnet, pos, ft)
    x = {r.layer: r for r in rep.layers}["x (fc_0 input)"]
    assert kl.scheme.x.clip < 0.25 and x.clipped > 0.02
    assert rep.end_to_end.mae > 5 * report_compare(sf, fnet, pos, ft, layers=False).end_to_end.mae
