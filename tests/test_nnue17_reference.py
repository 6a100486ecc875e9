"""Stockfish 17.1 two-net evaluation reproduces the reference data integer for integer.

Every row of sf17.1_reference.tsv (5,325 positions measured with Stockfish 17.1 and the two synthetic nets):
bucket, all 8 buckets of psqt and positional of both nets, the small-net decision, used_net, nnue, complexity,
material and Eval::evaluate with optimism 0, +100 and -57 (the side to move's optimism, as the search passes
it). The layer dumps check accumulators (doubled, as Stockfish holds them), transformed input and every layer.
"""

import csv

import numpy as np
import pytest

from quantfish.core.fen import parse_fen
from quantfish.nnue.accumulator import make_pair_stacks, make_stack
from quantfish.nnue.stack import refresh_ply
from quantfish.nnue.architecture import GEN_SF15_1, GEN_SF17_1
from quantfish.nnue.formulas import (
    bitboards, eval_report_pair, evaluate, evaluate_pair, final_eval_17, material_17,
    material_17_bb, nnue_17,
)
from quantfish.nnue.layers import fc0_dense, fc0_sparse, head, make_scratch, transform
from quantfish.nnue.intmath import tdiv
from tests.layerdump import parse_layers_line
from tests.testdata import NNUE_DATA, require

DATA = NNUE_DATA
TSV = DATA / "sf17.1_reference.tsv"
LAYERS = DATA / "sf17.1_layers.txt"


@pytest.fixture(scope="module")
def rows():
    with open(require(TSV)) as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _ints(r, prefix):
    return [int(r[f"{prefix}_{k}"]) for k in range(8)]


def test_generations(nnue17_pair, nnue_net):
    big, small = nnue17_pair
    assert big.arch.l1 == 3072 and small.arch.l1 == 128
    assert big.arch.generation == small.arch.generation == GEN_SF17_1
    assert big.arch.ft_shift == small.arch.ft_shift == 1
    assert nnue_net.arch.generation == GEN_SF15_1 and nnue_net.arch.ft_shift == 0
    # The synthetic nets put non-zero weights on fc_1's padding inputs 30 and 31, which must be ignored.
    assert big.w1[:, :, 30:].any() and small.w1[:, :, 30:].any()


def test_every_reference_row(nnue17_pair, rows):
    big, small = (n.arrays() for n in nnue17_pair)
    assert len(rows) == 5325
    stacks = make_pair_stacks(3072, 128, 1)
    sb, ss = make_scratch(3072), make_scratch(128)
    bad = []
    seen = {"big": 0, "small": 0, "reeval": 0, "rule50": 0}
    for r in rows:
        pos = parse_fen(r["fen"])
        rep = eval_report_pair(big, small, pos.board, pos.side, pos.halfmove)
        got = {"bucket": rep.bucket, "big_psqt": rep.big_psqt, "big_positional": rep.big_positional,
               "small_psqt": rep.small_psqt, "small_positional": rep.small_positional,
               "simple_eval": rep.simple_eval, "use_smallnet": int(rep.use_smallnet),
               "reeval_big": int(rep.reeval_big), "used_net": rep.used_net, "big_nnue": rep.big_nnue,
               "nnue": rep.nnue, "complexity": rep.complexity, "material": rep.material,
               "final_eval": rep.final, "pieces": rep.pieces}
        exp = {"bucket": int(r["bucket"]), "big_psqt": _ints(r, "big_psqt"),
               "big_positional": _ints(r, "big_positional"), "small_psqt": _ints(r, "small_psqt"),
               "small_positional": _ints(r, "small_positional"), "simple_eval": int(r["simple_eval"]),
               "use_smallnet": int(r["use_smallnet"]), "reeval_big": int(r["reeval_big"]),
               "used_net": r["used_net"], "big_nnue": int(r["big_nnue"]), "nnue": int(r["nnue"]),
               "complexity": int(r["complexity"]), "material": int(r["material"]),
               "final_eval": int(r["final_eval"]), "pieces": int(r["pieces"])}
        # With optimism: the compiled search entry point on fresh stacks.
        kw, kb = int(np.flatnonzero(pos.board == 6)[0]), int(np.flatnonzero(pos.board == 14)[0])
        for opt, col in ((100, "final_opt_p100"), (-57, "final_opt_m57")):
            stacks[0][2][:] = 0
            stacks[1][2][:] = 0
            got[col] = int(evaluate_pair(big, small, stacks[0], stacks[1], 0, pos.board, pos.bb, kw, kb,
                                         pos.side, pos.halfmove, opt, sb, ss))
            exp[col] = int(r[col])
        diff = {k: (got[k], v) for k, v in exp.items() if got[k] != v}
        if diff:
            bad.append((r["fen"], diff))
        seen[rep.used_net] += 1
        seen["reeval"] += rep.reeval_big
        seen["rule50"] += pos.halfmove > 0 and rep.final != 0
    assert not bad, f"{len(bad)} rows differ, first: {bad[:3]}"
    assert seen["small"] > 100 and seen["big"] > 100 and seen["reeval"] > 10 and seen["rule50"] > 100


def test_material_counts_agree(rows):
    for r in rows[::25]:
        pos = parse_fen(r["fen"])
        m = material_17(pos.board, pos.side)
        assert m == material_17_bb(pos.bb, pos.side) == material_17_bb(bitboards(pos.board), pos.side)
        assert (m[0], m[1], m[2]) == (int(r["pieces"]), int(r["simple_eval"]), int(r["material"]))


def test_single_17_net_uses_the_17_formula(nnue17_pair, rows):
    """``evaluate`` with the big net alone gives 17.1's value whenever the pair used the big net."""
    big = nnue17_pair.big.arrays()
    acc, psqt, computed, _, _ = make_stack(3072, 1)
    scratch = make_scratch(3072)
    n = 0
    for r in rows[::7]:
        if r["used_net"] != "big":
            continue
        pos = parse_fen(r["fen"])
        refresh_ply(big, acc, psqt, computed, 0, pos.board)
        assert evaluate(big, acc, psqt, 0, pos.side, pos.board, pos.halfmove, 0, scratch) == int(r["final_eval"])
        n += 1
    assert n > 100


def test_formula_details():
    # Separate truncation of psqt and positional (not (p + q) / 16).
    assert nnue_17(-17, -17) == (-1, -1, tdiv(125 * -1 + 131 * -1, 128))
    assert nnue_17(31, 1) == (1, 0, 0)
    # Rule-50 damping v -= v * r50 / 212 and optimism scaled by complexity.
    v = final_eval_17(1000, 0, 0, 0, 0, 0)
    assert final_eval_17(1000, 0, 0, 0, 100, 0) == v - tdiv(v * 100, 212)
    assert final_eval_17(0, 468, 0, 0, 0, 100) == tdiv(200 * 7777, 77777)


def _wrap(v):
    return (v + 2**31) % 2**32 - 2**31


def _model(nnue, p, q, material, rule50, optimism):
    """nnue-sf17.1.md section 7 in plain Python, C++ int semantics (products wrap to int32)."""
    c = abs(p - q)
    optimism += tdiv(_wrap(optimism * c), 468)
    nnue -= tdiv(_wrap(nnue * c), 18000)
    v = tdiv(_wrap(nnue * (77777 + material) + optimism * (7777 + material)), 77777)
    v -= tdiv(_wrap(v * rule50), 212)
    return max(-31506, min(31506, v))


def test_final_formula_against_model():
    """Random inputs, including |nnue| large enough for int32 wrap-around. (The +-31506 clamp cannot bite:
    after the int32 product, |v| <= 2^31 / 77777 < 27612.)"""
    rng = np.random.default_rng(171)
    wrapped = 0
    for _ in range(3000):
        nnue = int(rng.integers(-40000, 40000))
        p, q = int(rng.integers(-5000, 5000)), int(rng.integers(-5000, 5000))
        material, rule50, opt = int(rng.integers(0, 80000)), int(rng.integers(0, 101)), int(rng.integers(-200, 200))
        v = final_eval_17(nnue, p, q, material, rule50, opt)
        assert v == _model(nnue, p, q, material, rule50, opt), (nnue, p, q, material, rule50, opt)
        wrapped += abs(nnue * (77777 + material)) >= 2**31
    assert wrapped > 100


def _parse_layers():
    out = []
    cur = net = None
    with open(require(LAYERS)) as fh:
        for line in fh:
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if parts[0] == "fen":
                cur = {"fen": " ".join(parts[1:]), "big": {"layers": {}}, "small": {"layers": {}}}
                out.append(cur)
            elif parts[0] in ("[big]", "[small]"):
                net = cur[parts[0][1:-1]]
            elif parts[0] == "layers":
                b, d = parse_layers_line(parts)
                net["layers"][b] = d
            elif parts[0] in ("acc2_white", "acc2_black", "psqtacc_white", "psqtacc_black", "transformed"):
                net[parts[0]] = [int(t) for t in parts[1:]]
    return out


def test_layer_dumps(nnue17_pair):
    """Doubled accumulators, transformed input and every layer of every bucket of both nets (72 positions);
    fc_1 ignores its padding inputs even when the work buffer holds garbage there."""
    positions = _parse_layers()
    assert len(positions) == 72
    for name, net in (("big", nnue17_pair.big.arrays()), ("small", nnue17_pair.small.arrays())):
        l1 = net.ft_bias.shape[0]
        acc, psqt, computed, _, _ = make_stack(l1, 1)
        x, nzb, _ = make_scratch(l1)
        for p in positions:
            d = p[name]
            pos = parse_fen(p["fen"])
            refresh_ply(net, acc, psqt, computed, 0, pos.board)
            doubled = (acc[0].astype(np.int32) * 2).astype(np.int16)          # Stockfish's in-memory values
            assert doubled[0].tolist() == d["acc2_white"] and doubled[1].tolist() == d["acc2_black"], p["fen"]
            assert psqt[0, 0].tolist() == d["psqtacc_white"] and psqt[0, 1].tolist() == d["psqtacc_black"]
            n = transform(acc, 0, pos.side, x, nzb, 1)
            assert x.tolist() == d["transformed"], (name, p["fen"])
            for b, layer in d["layers"].items():
                fc0 = np.zeros(16, np.int32)
                dense = np.zeros(16, np.int32)
                fc0_sparse(net.w0t[b], net.b0[b], x, nzb, n, fc0)
                fc0_dense(net.w0[b], net.b0[b], x, dense)
                assert fc0.tolist() == layer["fc0"] == dense.tolist()
                l1in = np.full(32, 99, np.int32)                              # garbage in the padding
                cr1 = np.zeros(32, np.int32)
                out = head(fc0, net.b1[b], net.w1[b], net.b2[b], net.w2[b], l1in, cr1)
                assert l1in.tolist() == layer["l1in"] and l1in[30:].tolist() == [0, 0]
                assert cr1.tolist() == layer["ac1"]
                assert out == layer["out"][0], (name, p["fen"], b)


def test_doubling_wraps_like_int16():
    """17.1 doubles the FT in int16: an accumulator beyond +-16383 (file units) wraps before the clamp."""
    acc = np.zeros((1, 2, 4), np.int16)
    acc[0, 0] = [16383, 16384, 100, 20000]       # pairs (16383, 100) and (16384, 20000)
    x = np.zeros(4, np.uint8)
    nzb = np.zeros(4, np.int32)
    transform(acc, 0, 0, x, nzb, 1)
    # 2*16383 = 32766 -> 254; 2*100 = 200 -> (254*200) >> 9 = 99. 2*16384 wraps to -32768 -> 0.
    assert x[:2].tolist() == [99, 0]
    transform(acc, 0, 0, x, nzb, 0)              # 15.1: no doubling, clamp 127, >> 7
    assert x[:2].tolist() == [(127 * 100) >> 7, 127 * 127 >> 7]
