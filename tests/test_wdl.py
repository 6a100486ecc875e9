"""The UCI_ShowWDL win-rate model (quantfish/search/wdl.py) and its fitting tool (tools/fit_wdl.py)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quantfish.search import wdl
from tools import fit_wdl
from tools.fit_wdl import FitError, fit_ab, fit_ab_full, fit_polynomials

ROOT = Path(__file__).resolve().parent.parent

# A known model, deliberately unlike the committed constants: a(m) from 60 to about 590 cp, b(m) 92..120.
TRUE_A = (10.0, -40.0, 150.0, 60.0)
TRUE_B = (0.0, 8.0, -30.0, 120.0)


def _true_ab(ply, A=TRUE_A, B=TRUE_B):
    m = np.clip(np.asarray(ply, float), 0, 240) / 64
    return np.polyval(A, m), np.polyval(B, m)


def _draw_results(rng, cp, a, b):
    """Record result codes (0 loss, 1 draw, 2 win, side to move) drawn from the model, written out here
    independently of the code under test."""
    win = 1 / (1 + np.exp((a - cp) / b))
    loss = 1 / (1 + np.exp((a + cp) / b))
    u = rng.random(len(cp))
    return np.where(u < win, 2, np.where(u < win + loss, 0, 1))


def _synthetic(seed, n, plies, A=TRUE_A, B=TRUE_B):
    rng = np.random.default_rng(seed)
    ply = rng.choice(np.asarray(plies), n) if np.ndim(plies) else np.full(n, plies)
    cp = np.rint(np.clip(rng.normal(0, 300, n), -1000, 1000))
    a, b = _true_ab(ply, A, B)
    return ply, cp, _draw_results(rng, cp, a, b)


# ---------------------------------------------------------------------------------------------------------
# (a) the fit recovers a known model

# Tolerance of fit_ab with 20,000 positions at one ply: a within 10 cp and b within 6% (2 to 8 standard errors
# at these sizes; measured errors with this seed are at most 1.6 cp and 2.1%; the test also checks that the
# reported standard errors are below half the tolerance).
AB_TOL_CP, AB_TOL_REL = 10.0, 0.06


@pytest.mark.parametrize("ply", [10, 70, 150, 240])
def test_fit_ab_recovers_a_and_b_at_one_ply(ply):
    _, cp, result = _synthetic(ply, 20_000, ply)
    a_true, b_true = (float(x) for x in _true_ab(ply))
    a, b = fit_ab(cp, result)
    assert abs(a - a_true) <= AB_TOL_CP, (a, a_true)
    assert abs(b - b_true) <= AB_TOL_REL * b_true, (b, b_true)
    se_a, se_b = np.sqrt(np.diag(fit_ab_full(cp, result).cov))
    assert 0.5 < se_a < AB_TOL_CP / 2 and 0.5 < se_b < AB_TOL_REL * b_true / 2
    # the tolerance is tight enough to notice a model 30 cp off in a or 20% off in b
    assert abs(a - (a_true + 30)) > AB_TOL_CP and abs(b - 1.2 * b_true) > AB_TOL_REL * b_true


def test_fit_ab_refuses_data_without_signal_or_draws():
    rng = np.random.default_rng(5)
    cp = rng.normal(0, 200, 3000)
    with pytest.raises(FitError, match="no draws"):
        fit_ab(cp, rng.choice([0, 2], 3000))
    with pytest.raises(FitError, match="do not predict"):
        fit_ab(cp, rng.choice([0, 1, 2], 3000))      # results independent of the score


# fit_polynomials on 120,000 positions spread over plies 0..300: a(m) within 12 cp and b(m) within 8% of the
# truth at every tested ply (the cubics are estimated from all plies, so errors are a little larger at the ends).
POLY_TOL_CP, POLY_TOL_REL = 12.0, 0.08


def test_fit_polynomials_recovers_the_cubics():
    ply, cp, result = _synthetic(11, 120_000, np.arange(0, 301))
    A, B = fit_polynomials(ply, cp, result)
    assert len(A) == len(B) == 4
    for p in (0, 30, 60, 100, 150, 200, 240, 300):
        a_true, b_true = (float(x) for x in _true_ab(p))
        a, b = (float(x) for x in fit_wdl.ab_at(A, B, p))
        assert abs(a - a_true) <= POLY_TOL_CP, (p, a, a_true)
        assert abs(b - b_true) <= POLY_TOL_REL * b_true, (p, b, b_true)
    # refinement does not lose likelihood against the cubics through the bucket estimates
    full = fit_wdl.fit_polynomials_full(ply, cp, result)
    assert full.loglik >= full.loglik_cubic - 1e-6


def test_model_probabilities_match_the_formula_and_engine_wdl():
    cp = np.array([-900.0, -150.0, 0.0, 37.0, 400.0])
    probs = fit_wdl.model_probs(cp, 200.0, 150.0)
    win = 1 / (1 + np.exp((200 - cp) / 150))
    loss = 1 / (1 + np.exp((200 + cp) / 150))
    np.testing.assert_allclose(probs, np.stack([win, 1 - win - loss, loss], axis=1), atol=1e-12)
    for ply in (0, 50, 240):
        a, b = wdl.model_params(ply)
        for v in (-500, -30, 0, 120, 800):
            expect = 1000 * fit_wdl.model_probs(v, a, b)
            assert np.all(np.abs(np.array(wdl.wdl(v, ply)) - expect) <= 1.0)


# ---------------------------------------------------------------------------------------------------------
# (b) the committed model

CPS = sorted(set(range(-2000, 2001, 7)) | {0})
PLIES = [0, 1, 10, 31, 64, 100, 160, 239, 240]


def test_committed_constants_are_cubics_positive_on_every_ply():
    assert len(wdl.A_COEFFS) == len(wdl.B_COEFFS) == 4
    for ply in range(0, 241):
        a, b = wdl.model_params(ply)
        assert a > 0 and b > 0, ply


@pytest.mark.parametrize("ply", PLIES)
def test_wdl_sums_to_1000_is_monotonic_and_symmetric(ply):
    rows = [wdl.wdl(cp, ply) for cp in CPS]
    for cp, row in zip(CPS, rows):
        assert sum(row) == 1000 and min(row) >= 0 and all(isinstance(x, int) for x in row)
        assert wdl.wdl(-cp, ply) == row[::-1]
        assert row[0] == wdl.win_rate(cp, ply)
    wins = [r[0] for r in rows]
    losses = [r[2] for r in rows]
    assert wins == sorted(wins) and wins[0] < wins[-1]
    assert losses == sorted(losses, reverse=True)
    draws = [r[1] for r in rows]
    # the draw rate peaks at score 0: exactly in the model, within 1 permille after wdl's rounding (win and loss
    # are rounded each, the draw is the rest, as in Stockfish)
    assert max(draws) <= wdl.wdl(0, ply)[1] + 1
    exact = fit_wdl.model_probs(np.array(CPS, float), *wdl.model_params(ply))[:, 1]
    assert exact.argmax() == CPS.index(0)
    assert wdl.win_rate(2000, ply) >= 990 and wdl.win_rate(-2000, ply) <= 10


def test_draw_is_the_likeliest_result_at_score_0_after_the_opening():
    # In this self-play data draws are rare early (23% at |cp| <= 40 before ply 16), so at ply 0 the model
    # says W 406 D 188 L 406; from about ply 32 on a level score is most often a draw.
    for ply in range(40, 400, 10):
        w, d, l = wdl.wdl(0, ply)
        assert d > w and d > l, (ply, w, d, l)


def test_plies_are_clamped_to_0_240():
    for cp in (-700, -55, 0, 12, 333, 1500):
        assert wdl.wdl(cp, 241) == wdl.wdl(cp, 500) == wdl.wdl(cp, 10_000) == wdl.wdl(cp, 240)
        assert wdl.wdl(cp, -3) == wdl.wdl(cp, 0)


def test_extreme_scores_and_mates():
    assert wdl.wdl(32000, 50) == (1000, 0, 0) and wdl.wdl(-32000, 50) == (0, 0, 1000)
    assert wdl.wdl_of_mate(1) == wdl.wdl_of_mate(40) == (1000, 0, 0)
    assert wdl.wdl_of_mate(-1) == wdl.wdl_of_mate(0) == wdl.wdl_of_mate(-12) == (0, 0, 1000)


def test_search_scores_map_to_wdl_in_uci_units():
    from quantfish.search.values import MATE, MATE_IN_MAX
    from quantfish.search.driver import score_to_uci, score_to_wdl
    for v in (MATE - 1, MATE - 9, MATE_IN_MAX):
        assert score_to_uci(v).startswith("mate ") and score_to_wdl(v, 30) == (1000, 0, 0)
        assert score_to_uci(-v).startswith("mate ") and score_to_wdl(-v, 30) == (0, 0, 1000)
    for v in (-700, -250, 0, 90, 361, 1400):    # internal units: 361 a pawn, so 361 is "cp 100"
        cp = int(score_to_uci(v).split()[1])
        assert score_to_wdl(v, 30) == wdl.wdl(cp, 30)
    assert score_to_wdl(361, 30) == wdl.wdl(100, 30) != wdl.wdl(361, 30)


def test_engine_wdl_is_pure_python():
    source = (ROOT / "quantfish" / "search" / "wdl.py").read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["from __future__ import annotations", "import math"]


# ---------------------------------------------------------------------------------------------------------
# (c) the command-line tool

BASE_FEN = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1 | 0 | 0.5"


def _record_file(path, n=12_000, seed=3):
    """``n`` valid records (one K+P v K placement; ply, side, score and result vary) drawn from TRUE_A/B,
    plus 200 with mate-sized scores that the tool must drop."""
    from quantfish.data.records import append_records
    from quantfish.data.text import parse_lines
    rng = np.random.default_rng(seed)
    ply, cp, result = _synthetic(seed, n, np.arange(0, 301))
    cp[:200] = rng.choice([-32000, 31990, 5000], 200)
    records = np.repeat(parse_lines([BASE_FEN]), n)
    records["stm"] = ply % 2
    records["fullmove"] = ply // 2 + 1
    records["score"] = cp
    records["result"] = result
    append_records(path, records)
    return path


def _coefficients(text):
    names = {}
    exec("\n".join(line for line in text.splitlines() if line.startswith(("A_COEFFS", "B_COEFFS"))), {}, names)
    return names["A_COEFFS"], names["B_COEFFS"]


def test_tool_runs_end_to_end(tmp_path, capsys):
    path = _record_file(tmp_path / "d.bin")
    assert fit_wdl.main([str(path), str(path), "--bucket", "16", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "# 24,000 records (about " in out
    assert "used 23,600 positions: dropped 400 with |score| > 1000" in out
    A, B = _coefficients(out)
    assert len(A) == len(B) == 4 and all(isinstance(c, float) for c in A + B)
    for p in (20, 120, 240):
        a_true, b_true = (float(x) for x in _true_ab(p))
        a, b = (float(x) for x in fit_wdl.ab_at(A, B, p))
        assert abs(a - a_true) < 25 and abs(b - b_true) < 0.15 * b_true, (p, a, b)
    assert "check: observed and model win/draw/loss rates" in out
    rows = [line for line in out.splitlines() if line.strip().startswith(("0-15 ", "64-95 ", "240+ "))]
    assert len(rows) >= 20


def test_tool_options_filter_positions(tmp_path, capsys):
    path = _record_file(tmp_path / "d.bin")
    assert fit_wdl.main([str(path), "--min-ply", "20", "--max-cp", "600", "--bucket", "16", "--no-refine",
                         "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "before ply 20" in out and "with |score| > 600" in out and "through the bucket estimates" in out


def test_tool_refuses_a_corrupt_file_with_one_line(tmp_path):
    path = _record_file(tmp_path / "d.bin", n=400)
    data = bytearray(path.read_bytes())
    data[5 * 32 + 27] = 7                                        # record 5's result byte
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    proc = subprocess.run([sys.executable, "-m", "tools.fit_wdl", str(bad), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"fit_wdl: error: {bad}: record 5 (byte 160) is corrupt: result is not 0, 1 or 2 (with at most the raw-label "
        f"bit set)"]
    assert proc.stdout == ""


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_bytes(b"\0" * 50), "truncated or not a record file"),
    (lambda p: None, "no such file"),
])
def test_tool_refuses_truncated_and_missing_files(tmp_path, capsys, make, message):
    path = tmp_path / "x.bin"
    make(path)
    assert fit_wdl.main([str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_tool_reports_too_little_data(tmp_path, capsys):
    path = _record_file(tmp_path / "d.bin", n=300)
    assert fit_wdl.main([str(path), "--quiet"]) == 2
    assert "ply buckets have enough positions" in capsys.readouterr().err
    assert fit_wdl.main([str(path), "--max-cp", "0", "--min-ply", "999", "--quiet"]) == 2
    assert "no positions left" in capsys.readouterr().err


def test_ctrl_c_stops_cleanly(tmp_path, capsys, monkeypatch):
    path = _record_file(tmp_path / "d.bin", n=300)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fit_wdl, "fit_polynomials_full", interrupt)
    assert fit_wdl.main([str(path), "--quiet"]) == 130
    captured = capsys.readouterr()
    assert "interrupted" in captured.err and "Traceback" not in captured.err and captured.out == ""
