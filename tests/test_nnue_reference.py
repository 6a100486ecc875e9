"""Every integer of Stockfish 15.1's reference data, reproduced exactly (docs/nnue-sf15.1.md)."""

import csv

import numpy as np

from quantfish.core.fen import parse_fen
from quantfish.nnue.accumulator import make_stack
from quantfish.nnue.stack import refresh_ply
from quantfish.nnue.formulas import eval_report, final_eval, nnue_adjusted, nnue_complexity, PSQ_EG_NONE
from quantfish.nnue.layers import fc0_dense, fc0_sparse, head, make_scratch, transform
from quantfish.nnue.intmath import tdiv, wrap32
from tests.layerdump import parse_layers_line
from tests.testdata import NNUE_DATA, require

DATA = NNUE_DATA
TSV = DATA / "sf15.1_reference.tsv"
LAYERS = DATA / "sf15.1_layers.txt"



def _rows():
    with open(require(TSV)) as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_tdiv_truncates():
    assert tdiv(-7, 2) == -3 and tdiv(7, -2) == -3 and tdiv(-7, -2) == 3 and tdiv(7, 2) == 3
    assert wrap32(2**31) == -2**31 and wrap32(-2**31 - 1) == 2**31 - 1


def test_every_reference_row(sf_arrays):
    rows = _rows()
    assert len(rows) == 4878
    bad = []
    for r in rows:
        pos = parse_fen(r["fen"])
        rep = eval_report(sf_arrays, pos.board, pos.side, pos.halfmove)
        got = {"bucket": rep.bucket, "nnue_evaluate_raw": rep.nnue_raw,
               "nnue_evaluate_adjusted": rep.nnue_adjusted, "final_eval_nnue_path": rep.final,
               "nnue_complexity": rep.complexity, "non_pawn_material": rep.npm, "pieces": rep.pieces}
        for k in range(8):
            got[f"psqt_{k}"] = rep.psqt[k]
            got[f"positional_{k}"] = rep.positional[k]
        diff = {k: (v, int(r[k])) for k, v in got.items() if v != int(r[k])}
        if diff:
            bad.append((r["fen"], diff))
    assert not bad, f"{len(bad)} rows differ, first: {bad[:3]}"


def test_final_eval_with_psq_and_optimism_formula():
    # optimism 0: the complexity term has no effect, whatever psq is.
    assert final_eval(100, 50, 1234, 10000, 0, 0) == final_eval(100, 50, PSQ_EG_NONE, 10000, 0, 0)
    # Hand-computed from evaluate.cpp:1066-1091's formula with optimism 30, psq 80, nnue 100, cplx 50,
    # npm 10000, rule50 10: scale 1270, cplx' = (20800 + 8480 + 0)/1024 = 28, opt = 30*297/256 = 34,
    # v = (127000 + 34*516)/1024 = 141, v = 141*185/211 = 123.
    assert final_eval(100, 50, 80, 10000, 10, 30) == 123
    assert final_eval(10**6, 0, PSQ_EG_NONE, 0, 0, 0) == 31507
    assert final_eval(-10**6, 0, PSQ_EG_NONE, 0, 0, 0) == -31507
    assert nnue_adjusted(-1000, 333, 16604) == tdiv(1001 * -1000 + 1047 * 333, 16384)
    assert nnue_complexity(-17, 0) == 1


def _parse_layers():
    """Positions of sf15.1_layers.txt as dicts of int lists."""
    out = []
    cur = None
    with open(require(LAYERS)) as fh:
        for line in fh:
            if line.startswith("#"):
                continue
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "fen":
                cur = {"fen": " ".join(parts[1:]), "layers": {}}
                out.append(cur)
            elif parts[0] == "layers":
                b, d = parse_layers_line(parts)
                cur["layers"][b] = d
            elif parts[0] in ("acc_white", "acc_black", "psqtacc_white", "psqtacc_black", "transformed"):
                cur[parts[0]] = [int(t) for t in parts[1:]]
    return out


def test_layer_dumps(sf_arrays):
    """Accumulators, transformed input and every layer of every bucket, for the 64 dumped positions;
    also checks the sparse fc_0 against the dense one."""
    net = sf_arrays
    positions = _parse_layers()
    assert len(positions) == 64
    acc, psqt, computed, _, _ = make_stack(1024, 1)
    x, nzb, work = make_scratch(1024)
    for p in positions:
        pos = parse_fen(p["fen"])
        refresh_ply(net, acc, psqt, computed, 0, pos.board)
        assert acc[0, 0].tolist() == p["acc_white"], p["fen"]
        assert acc[0, 1].tolist() == p["acc_black"], p["fen"]
        assert psqt[0, 0].tolist() == p["psqtacc_white"] and psqt[0, 1].tolist() == p["psqtacc_black"]
        n = transform(acc, 0, pos.side, x, nzb)
        assert x.tolist() == p["transformed"], p["fen"]
        assert nzb[:n].tolist() == np.flatnonzero(x).tolist()
        for b, d in p["layers"].items():
            fc0 = np.zeros(16, np.int32)
            dense = np.zeros(16, np.int32)
            fc0_sparse(net.w0t[b], net.b0[b], x, nzb, n, fc0)
            fc0_dense(net.w0[b], net.b0[b], x, dense)
            assert fc0.tolist() == d["fc0"] == dense.tolist()
            l1in = np.zeros(32, np.int32)
            cr1 = np.zeros(32, np.int32)
            out = head(fc0, net.b1[b], net.w1[b], net.b2[b], net.w2[b], l1in, cr1)
            assert l1in.tolist() == d["l1in"]
            assert cr1.tolist() == d["ac1"]
            assert out == d["out"][0]
