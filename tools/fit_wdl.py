"""Fit the win-rate model of ``quantfish.search.wdl`` (``UCI_ShowWDL``) to self-play record files.

Usage::

    python -m tools.fit_wdl DATA [DATA...] [--min-ply N] [--max-cp 1000] [--bucket 4] [--no-refine]

The model (the form Stockfish uses): for a score ``v`` in centipawns (side to move's view) at game ply ``p``,
with ``m = clamp(p, 0, 240) / 64``, ``a = A(m)`` and ``b = B(m)`` cubic polynomials::

    P(win)  = 1 / (1 + exp((a - v) / b))
    P(loss) = 1 / (1 + exp((a + v) / b))
    P(draw) = 1 - P(win) - P(loss)          (non-negative while a >= 0)

Every record is one trinomial observation (its game's result, side to move's view), and the coefficients are
maximum-likelihood estimates, found in three steps:

1. ``fit_ab`` per ply bucket (``--bucket`` plies wide, the clamped ply): the two parameters by Fisher scoring
   (Newton's method with the expected information, which is positive definite) and a halving line search;
2. weighted least-squares cubics through the bucket estimates (weights 1 / standard error);
3. unless ``--no-refine``: all eight coefficients together, by Fisher scoring on the whole likelihood.

Records with ``|score| > --max-cp`` (mate and tablebase scores, hopeless positions) and plies below
``--min-ply`` are dropped. The output is the coefficients as Python lines for ``quantfish/search/wdl.py`` and a table
comparing, by ply and score bucket, the observed win/draw/loss rates with the model's mean prediction.
Numerical core: numpy only. Errors (missing, truncated or corrupt files, no data left) are one line on stderr
and exit status 2; Ctrl-C prints ``interrupted`` and exits with 130.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, TextIO

import numpy as np

MAX_PLY = 240          # the model's ply is clamped to 0..MAX_PLY
PLY_SCALE = 64.0       # m = clamped ply / PLY_SCALE
DEGREE = 3             # cubic polynomials, coefficients highest power first (numpy.polyval order)
MAX_AB = 1e4           # a bucket whose a or b runs past this has no finite maximum (scores carry no signal)


class FitError(ValueError):
    """Data that cannot be fitted (nothing left, no draws at all, no convergence)."""


# ----------------------------------------------------------------------------------------------------------
# The model

def ply_to_m(ply) -> np.ndarray:
    """The polynomials' argument: clamp(ply, 0, 240) / 64."""
    return np.clip(np.asarray(ply, dtype=np.float64), 0, MAX_PLY) / PLY_SCALE


def ab_at(coeffs_a: Sequence[float], coeffs_b: Sequence[float], ply) -> tuple[np.ndarray, np.ndarray]:
    """The model's (a, b) at each ply (coefficients highest power first)."""
    m = ply_to_m(ply)
    return np.polyval(np.asarray(coeffs_a, float), m), np.polyval(np.asarray(coeffs_b, float), m)


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(_log_sigmoid(x))


def model_probs(cp, a, b) -> np.ndarray:
    """float[n, 3]: (win, draw, loss) probabilities of the model at scores ``cp`` with parameters a, b
    (arrays or scalars, broadcast). The draw probability is computed without cancellation."""
    cp, a, b = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (cp, a, b)))
    win = _sigmoid((cp - a) / b)
    loss = _sigmoid((-cp - a) / b)
    with np.errstate(divide="ignore", invalid="ignore"):
        draw = np.where(a > 0, np.exp(_log_sigmoid((a - cp) / b) + _log_sigmoid((a + cp) / b)
                                      + np.log(-np.expm1(-2.0 * a / np.where(a > 0, b, 1.0)))), 0.0)
    return np.stack([win, draw, loss], axis=-1)


def _log_probs_and_scores(cp, a, b):
    """log P(win/draw/loss) (each float[n]) and their derivatives with respect to a and b (float[n, 3, 2]).

    With X = (v - a)/b, Y = (-v - a)/b, P = (a - v)/b, Q = (a + v)/b:
    log w = logsig(X), log l = logsig(Y), log d = logsig(P) + logsig(Q) + log(1 - exp(-2a/b)).
    """
    x = (cp - a) / b
    y = (-cp - a) / b
    p = -x
    q = -y
    r = 2.0 * a / b
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_w = _log_sigmoid(x)
        log_l = _log_sigmoid(y)
        log_d = _log_sigmoid(p) + _log_sigmoid(q) + np.log(-np.expm1(-r))
        inv_em1 = 1.0 / np.expm1(r)          # d/dr log(1 - e^-r) = 1 / (e^r - 1)
    sx, sy, sp, sq = _sigmoid(-x), _sigmoid(-y), _sigmoid(-p), _sigmoid(-q)
    scores = np.empty(cp.shape + (3, 2))
    scores[:, 0, 0] = -sx / b                # dX/da = -1/b, dX/db = -X/b
    scores[:, 0, 1] = -sx * x / b
    scores[:, 2, 0] = -sy / b
    scores[:, 2, 1] = -sy * y / b
    scores[:, 1, 0] = (sp + sq) / b + 2.0 * inv_em1 / b          # dP/da = dQ/da = 1/b, dr/da = 2/b
    scores[:, 1, 1] = -(sp * p + sq * q) / b - r * inv_em1 / b   # dP/db = -P/b, dr/db = -r/b
    return np.stack([log_w, log_d, log_l], axis=-1), scores


# ----------------------------------------------------------------------------------------------------------
# Maximum likelihood with a linear design: a = X @ alpha, b = X @ beta

@dataclass
class LinearFit:
    alpha: np.ndarray        # a = X @ alpha
    beta: np.ndarray         # b = X @ beta
    loglik: float            # sum of log-likelihoods
    count: float             # observations
    cov: np.ndarray          # inverse Fisher information of (alpha, beta)
    iterations: int
    converged: bool          # stopped by the tolerance (not by max_iter)


def _loglik(X, cp, counts, theta):
    k = X.shape[1]
    a, b = X @ theta[:k], X @ theta[k:]
    if np.any(b <= 0) or np.any(a <= 0):
        return -np.inf
    logp, _ = _log_probs_and_scores(cp, a, b)
    with np.errstate(invalid="ignore"):
        terms = np.where(counts > 0, counts * logp, 0.0)
    total = float(terms.sum())
    return total if math.isfinite(total) else -np.inf


def fit_linear(X, cp, counts, theta0, max_iter: int = 200, tol: float = 1e-10,
               check: Optional[Callable[[], None]] = None) -> LinearFit:
    """Maximise the trinomial likelihood over (alpha, beta) with a = X @ alpha, b = X @ beta.

    ``X`` float[n, k] design, ``cp`` float[n] scores, ``counts`` float[n, 3] observed (win, draw, loss) counts
    of each row, ``theta0`` the start (alpha then beta; a and b must be positive on every row). Fisher scoring
    with step halving; stops when an iteration gains less than ``tol`` per observation.
    """
    X = np.asarray(X, np.float64)
    cp = np.asarray(cp, np.float64)
    counts = np.asarray(counts, np.float64)
    k = X.shape[1]
    n_obs = counts.sum()
    theta = np.asarray(theta0, np.float64).copy()
    ll = _loglik(X, cp, counts, theta)
    if not math.isfinite(ll):
        raise FitError("the starting point gives a zero probability to some observation")
    totals = counts.sum(axis=1)
    it = 0
    converged = False
    info = np.eye(2 * k)
    for it in range(1, max_iter + 1):
        if check is not None:
            check()
        a, b = X @ theta[:k], X @ theta[k:]
        logp, scores = _log_probs_and_scores(cp, a, b)
        probs = np.exp(logp)
        # gradient in (a_i, b_i), then chained through the design
        g = np.einsum("nj,njk->nk", counts, np.nan_to_num(scores))
        grad = np.concatenate([X.T @ g[:, 0], X.T @ g[:, 1]])
        # expected information per row: N_i * sum_j p_j s_j s_j^T
        fi = np.einsum("n,nj,njk,njl->nkl", totals, probs, np.nan_to_num(scores), np.nan_to_num(scores))
        info = np.empty((2 * k, 2 * k))
        info[:k, :k] = X.T @ (fi[:, 0, 0, None] * X)
        info[:k, k:] = X.T @ (fi[:, 0, 1, None] * X)
        info[k:, :k] = info[:k, k:].T
        info[k:, k:] = X.T @ (fi[:, 1, 1, None] * X)
        scale = np.sqrt(np.maximum(np.diag(info), 1e-300))
        scaled = info / np.outer(scale, scale) + 1e-12 * np.eye(2 * k)
        step = np.linalg.solve(scaled, grad / scale) / scale
        t = 1.0
        while True:
            candidate = theta + t * step
            new_ll = _loglik(X, cp, counts, candidate)
            if new_ll >= ll or t < 1e-10:
                break
            t *= 0.5
        if not new_ll >= ll:          # no ascent possible: at the optimum to machine precision
            converged = True
            break
        gain = new_ll - ll
        theta, ll = candidate, new_ll
        if gain <= tol * max(n_obs, 1.0) and t == 1.0:
            converged = True
            break
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        cov = np.full((2 * k, 2 * k), np.inf)
    return LinearFit(theta[:k].copy(), theta[k:].copy(), ll, float(n_obs), cov, it, converged)


def _grouped(keys: np.ndarray, result: np.ndarray):
    """Unique rows of ``keys`` (int64[n] or [n, c]) and the float[u, 3] (win, draw, loss) counts of each.
    ``result`` is the records' code: 0 loss, 1 draw, 2 win."""
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.zeros((len(uniq), 3))
    column = 2 - np.asarray(result, np.int64)           # win -> 0, draw -> 1, loss -> 2
    np.add.at(counts, (inverse, column), 1.0)
    return uniq, counts


def _start(cp, result) -> tuple[float, float]:
    """A start for (a, b) from moments: b from the spread of decisive scores, a from the draw rate."""
    cp = np.asarray(cp, np.float64)
    result = np.asarray(result)
    draw_rate = float(np.clip(np.mean(result == 1), 0.02, 0.98))
    b = float(np.clip(np.std(cp) / 3.0, 20.0, 1000.0))
    # at v = 0 the draw rate is 1 - 2 sigmoid(-a/b): solve for a
    a = b * math.log((1.0 + draw_rate) / (1.0 - draw_rate))
    return max(a, 1.0), b


def fit_ab_full(cp, result, start: Optional[tuple[float, float]] = None) -> LinearFit:
    """``fit_ab`` with the log-likelihood and the covariance of (a, b)."""
    cp = np.asarray(cp)
    result = np.asarray(result)
    if len(cp) == 0:
        raise FitError("no positions")
    if not np.any(result == 1):
        raise FitError("no draws: the draw margin a is not identified")
    values, counts = _grouped(np.rint(cp).astype(np.int64), result)
    X = np.ones((len(values), 1))
    a0, b0 = start or _start(cp, result)
    return fit_linear(X, values.astype(np.float64), counts, [a0, b0])


def fit_ab(cp, result, start: Optional[tuple[float, float]] = None) -> tuple[float, float]:
    """Maximum-likelihood (a, b) of one ply bucket: ``cp`` scores (side to move's view), ``result`` the
    records' codes (0 loss, 1 draw, 2 win, side to move's view)."""
    fit = fit_ab_full(cp, result, start)
    a, b = float(fit.alpha[0]), float(fit.beta[0])
    if not fit.converged or a >= MAX_AB or b >= MAX_AB:
        raise FitError("no finite maximum-likelihood (a, b): the scores do not predict the results")
    return a, b


@dataclass
class BucketFit:
    ply_lo: int              # clamped plies ply_lo..ply_hi
    ply_hi: int
    m: float                 # mean m of its positions
    n: int
    a: float
    b: float
    se_a: float
    se_b: float


@dataclass
class PolyFit:
    A: tuple                 # a(m) coefficients, highest power first
    B: tuple
    buckets: list            # BucketFit per bucket used
    loglik_buckets: float    # sum over buckets of their own fits (the best any (a, b) per bucket can do)
    loglik_cubic: float      # the cubics through the bucket estimates
    loglik: float            # final (after joint refinement, when done)
    n: int
    refined: bool
    skipped: list            # (ply_lo, ply_hi, n, why) of the buckets left out of step 2


def _design(m: np.ndarray) -> np.ndarray:
    return np.vander(m, DEGREE + 1)      # columns m^3, m^2, m, 1


def fit_polynomials_full(ply, cp, result, bucket: int = 4, refine: bool = True, min_bucket: int = 200,
                         progress: Optional[TextIO] = None) -> PolyFit:
    """Step 1-3 of the module's method; see ``fit_polynomials``."""
    ply = np.clip(np.asarray(ply, np.int64), 0, MAX_PLY)
    cp = np.rint(np.asarray(cp, np.float64)).astype(np.int64)
    result = np.asarray(result, np.int64)
    if len(ply) == 0:
        raise FitError("no positions to fit")
    if not np.any(result == 1):
        raise FitError("no draws in the data: the model's draw margin cannot be fitted")
    bucket = max(1, int(bucket))
    index = ply // bucket
    buckets = []
    ll_buckets = 0.0
    order = np.argsort(index, kind="stable")
    edges = np.flatnonzero(np.diff(index[order])) + 1
    groups = np.split(order, edges)
    start = None
    shown = 0.0
    skipped = []
    for g_i, rows in enumerate(groups):
        if progress is not None and (time.monotonic() - shown > 0.5 or g_i == len(groups) - 1):
            shown = time.monotonic()
            progress.write(f"\rfit_wdl: ply bucket {g_i + 1}/{len(groups)}")
            progress.flush()
        r = result[rows]
        lo = int(index[rows[0]]) * bucket
        hi = min(lo + bucket - 1, MAX_PLY)
        if len(rows) < min_bucket or not np.any(r == 1) or not np.any(r != 1):
            skipped.append((lo, hi, len(rows), "too few positions, draws or decisive results"))
            continue
        fit = fit_ab_full(cp[rows], r, start)
        a, b = float(fit.alpha[0]), float(fit.beta[0])
        se = np.sqrt(np.abs(np.diag(fit.cov)))
        if not (fit.converged and np.all(np.isfinite(se)) and a < MAX_AB and b < MAX_AB):
            skipped.append((lo, hi, len(rows), "no maximum: the scores do not predict the results"))
            continue
        buckets.append(BucketFit(lo, hi, float(ply_to_m(ply[rows]).mean()), len(rows),
                                 a, b, float(se[0]), float(se[1])))
        ll_buckets += fit.loglik
        start = (a, b)
    if progress is not None:
        progress.write("\n")
    if len(buckets) < DEGREE + 1:
        raise FitError(f"only {len(buckets)} ply buckets have enough positions (at least {min_bucket}, with "
                       f"draws and decisive games); need {DEGREE + 1}: give more data or a wider --bucket")
    ms = np.array([bk.m for bk in buckets])
    A = np.polyfit(ms, [bk.a for bk in buckets], DEGREE, w=1.0 / np.maximum([bk.se_a for bk in buckets], 1e-9))
    B = np.polyfit(ms, [bk.b for bk in buckets], DEGREE, w=1.0 / np.maximum([bk.se_b for bk in buckets], 1e-9))
    # the likelihood of the whole data, grouped by (ply, cp)
    keys, counts = _grouped(np.stack([ply, cp], axis=1), result)
    X = _design(ply_to_m(keys[:, 0]))
    v = keys[:, 1].astype(np.float64)
    theta = np.concatenate([A, B])
    ll_cubic = _loglik(X, v, counts, theta)
    if not math.isfinite(ll_cubic):
        # the cubic went non-positive somewhere in the data's range: start the joint fit from constants
        mean_a = float(np.average([bk.a for bk in buckets], weights=[bk.n for bk in buckets]))
        mean_b = float(np.average([bk.b for bk in buckets], weights=[bk.n for bk in buckets]))
        theta = np.array([0, 0, 0, mean_a, 0, 0, 0, mean_b], float)
        if not refine:
            raise FitError("the cubics through the bucket estimates are not positive on the data's plies; "
                           "run without --no-refine")
    ll = ll_cubic
    if refine:
        if progress is not None:
            progress.write(f"fit_wdl: joint refinement of 8 coefficients on {len(keys):,} distinct (ply, score)\n")

        def tick(state={"i": 0}):
            state["i"] += 1
            if progress is not None:
                progress.write(f"\rfit_wdl: refinement iteration {state['i']}")
                progress.flush()

        fit = fit_linear(X, v, counts, theta, check=tick)
        if progress is not None:
            progress.write("\n")
        A, B, ll = fit.alpha, fit.beta, fit.loglik
    return PolyFit(tuple(float(c) for c in A), tuple(float(c) for c in B), buckets, ll_buckets, float(ll_cubic),
                   float(ll), len(ply), refine, skipped)


def fit_polynomials(ply, cp, result, bucket: int = 4, refine: bool = True) -> tuple[tuple, tuple]:
    """Maximum-likelihood cubic coefficients (A, B), each 4 floats highest power first, of a(m) and b(m) with
    m = clamp(ply, 0, 240) / 64, from per-position ``ply``, ``cp`` and ``result`` (0 loss, 1 draw, 2 win)."""
    fit = fit_polynomials_full(ply, cp, result, bucket=bucket, refine=refine)
    return fit.A, fit.B


# ----------------------------------------------------------------------------------------------------------
# Data

@dataclass
class Data:
    ply: np.ndarray
    cp: np.ndarray
    result: np.ndarray
    records: int             # records read
    dropped_score: int       # |score| > max_cp
    dropped_ply: int         # ply < min_ply
    games: int               # estimated: a game starts where the ply does not increase


def load(paths: Sequence[str], min_ply: int = 0, max_cp: int = 1000,
         progress: Optional[TextIO] = None) -> Data:
    """Read and check record files (``quantfish.data.records``), keep what the fit uses."""
    from quantfish.data.records import read_records
    plies, cps, results = [], [], []
    total = dropped_score = dropped_ply = games = 0
    for path in paths:
        if progress is not None:
            progress.write(f"fit_wdl: reading {path}\n")
            progress.flush()
        rec = read_records(path, mmap=True)
        ply = 2 * (rec["fullmove"].astype(np.int64) - 1) + rec["stm"].astype(np.int64)
        score = rec["score"].astype(np.int64)
        result = rec["result"].astype(np.int64) & 3          # bits 0-1; bit 7 marks a raw-output label
        total += len(rec)
        if len(rec):
            games += 1 + int(np.count_nonzero(np.diff(ply) <= 0))
        keep_score = np.abs(score) <= max_cp
        keep_ply = ply >= min_ply
        dropped_score += int(np.count_nonzero(~keep_score))
        dropped_ply += int(np.count_nonzero(keep_score & ~keep_ply))
        keep = keep_score & keep_ply
        plies.append(ply[keep])
        cps.append(score[keep])
        results.append(result[keep])
        del rec
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
    return Data(cat(plies), cat(cps), cat(results), total, dropped_score, dropped_ply, games)


# ----------------------------------------------------------------------------------------------------------
# Report

PLY_EDGES = (0, 16, 32, 64, 96, 128, 160, 200, 240)       # the last bucket is 240 and above
CP_EDGES = (-1000, -400, -200, -100, -40, 40, 100, 200, 400, 1000)   # closed at both outer ends


def check_rows(ply, cp, result, A, B, ply_edges=PLY_EDGES, cp_edges=CP_EDGES, min_count: int = 1):
    """Per (ply bucket, score bucket): (ply label, score label, n, observed (W, D, L), model mean (W, D, L))."""
    ply = np.asarray(ply)
    cp = np.asarray(cp, np.float64)
    result = np.asarray(result)
    a, b = ab_at(A, B, ply)
    probs = model_probs(cp, a, b)
    observed = np.stack([result == 2, result == 1, result == 0], axis=1).astype(np.float64)
    p_bin = np.searchsorted(np.asarray(ply_edges[1:]), ply, side="right")
    c_bin = np.clip(np.searchsorted(np.asarray(cp_edges[1:-1]), cp, side="left"), 0, len(cp_edges) - 2)
    rows = []
    for i in range(len(ply_edges)):
        p_label = f"{ply_edges[i]}-{ply_edges[i + 1] - 1}" if i + 1 < len(ply_edges) else f"{ply_edges[i]}+"
        for j in range(len(cp_edges) - 1):
            sel = (p_bin == i) & (c_bin == j)
            n = int(sel.sum())
            if n < min_count:
                continue
            lo, hi = cp_edges[j], cp_edges[j + 1]
            c_label = f"{lo:+d}..{hi:+d}" if j == 0 else f"{lo + 1:+d}..{hi:+d}"
            rows.append((p_label, c_label, n, observed[sel].mean(axis=0), probs[sel].mean(axis=0)))
    return rows


def format_check(rows) -> str:
    lines = [f"{'ply':>8} {'score':>12} {'n':>8}   {'observed W/D/L %':>18}   {'model W/D/L %':>18}   {'max dev':>7}"]
    last = None
    for p_label, c_label, n, obs, mod in rows:
        if last is not None and p_label != last:
            lines.append("")
        last = p_label
        fmt = (lambda v: f"{100 * v[0]:5.1f} {100 * v[1]:5.1f} {100 * v[2]:5.1f}")
        dev = 100 * float(np.max(np.abs(obs - mod)))
        flag = "  *" if dev > 5 and n >= 500 else ""
        lines.append(f"{p_label:>8} {c_label:>12} {n:>8,}   {fmt(obs):>18}   {fmt(mod):>18}   {dev:6.1f}{flag}")
    return "\n".join(lines)


def format_coefficients(A, B) -> str:
    fmt = (lambda cs: "(" + ", ".join(f"{c:.6g}" for c in cs) + ")")
    return f"A_COEFFS = {fmt(A)}\nB_COEFFS = {fmt(B)}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.fit_wdl",
                                description="Fit quantfish/search/wdl.py's win-rate model to training-record files.")
    p.add_argument("data", nargs="+", metavar="DATA", help="record files (quantfish gendata)")
    p.add_argument("--min-ply", type=int, default=0, metavar="N", help="drop positions before this ply (default 0)")
    p.add_argument("--max-cp", type=int, default=1000, metavar="CP",
                   help="drop positions with |score| above this (default 1000: mates and tablebase scores)")
    p.add_argument("--bucket", type=int, default=4, metavar="PLIES", help="ply bucket width of step 1 (default 4)")
    p.add_argument("--no-refine", action="store_true", help="skip the joint refinement of the 8 coefficients")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    err = None if args.quiet else sys.stderr
    from quantfish.data.records import DataFileError
    try:
        if args.max_cp < 0 or args.bucket < 1:
            raise FitError("--max-cp must be >= 0 and --bucket >= 1")
        data = load(args.data, args.min_ply, args.max_cp, progress=err)
        if len(data.ply) == 0:
            raise FitError(f"no positions left of {data.records:,} read (|score| <= {args.max_cp}, "
                           f"ply >= {args.min_ply})")
        t0 = time.monotonic()
        fit = fit_polynomials_full(data.ply, data.cp, data.result, bucket=args.bucket,
                                   refine=not args.no_refine, progress=err)
        seconds = time.monotonic() - t0
    except (DataFileError, FitError, OSError) as exc:
        print(f"fit_wdl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nfit_wdl: interrupted", file=sys.stderr)
        return 130
    n = len(data.ply)
    counts = np.bincount(data.result, minlength=3)
    out = sys.stdout
    out.write(f"# data: {', '.join(args.data)}\n")
    out.write(f"# {data.records:,} records (about {data.games:,} games); used {n:,} positions: dropped "
              f"{data.dropped_score:,} with |score| > {args.max_cp} and {data.dropped_ply:,} before ply "
              f"{args.min_ply}\n")
    out.write(f"# results of the positions used (side to move): win {counts[2]:,}  draw {counts[1]:,}  "
              f"loss {counts[0]:,}\n")
    out.write(f"# fit: {len(fit.buckets)} ply buckets of {args.bucket}; cubics "
              f"{'refined jointly' if fit.refined else 'through the bucket estimates'}; {seconds:.1f} s\n")
    per_bucket = fit.loglik_buckets / max(sum(b.n for b in fit.buckets), 1)
    out.write(f"# mean log-likelihood per position: per-bucket (a, b) {per_bucket:.5f}, "
              f"cubics through them {fit.loglik_cubic / n:.5f}, final {fit.loglik / n:.5f}\n")
    out.write(f"# command: python -m tools.fit_wdl {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    out.write(format_coefficients(fit.A, fit.B) + "\n\n")
    grid = np.arange(0, MAX_PLY + 1, 8)
    a, b = ab_at(fit.A, fit.B, grid)
    if np.any(a <= 0) or np.any(b <= 0):
        out.write("# WARNING: a(m) or b(m) is not positive somewhere in plies 0..240: draw rates would be negative\n")
    for lo, hi, nb, why in fit.skipped:
        out.write(f"# skipped ply bucket {lo}-{hi} ({nb:,} positions): {why}\n")
    out.write("# per-bucket estimates (ply: a +- se, b +- se) against the cubics:\n")
    shown = fit.buckets[:: max(1, len(fit.buckets) // 12)]
    if shown[-1] is not fit.buckets[-1]:
        shown.append(fit.buckets[-1])
    for bk in shown:
        pa, pb = ab_at(fit.A, fit.B, bk.ply_lo)
        out.write(f"#   ply {bk.ply_lo:3d}-{bk.ply_hi:3d}  n {bk.n:7,}  a {bk.a:7.1f} +- {bk.se_a:5.1f} (cubic "
                  f"{float(pa):7.1f})   b {bk.b:7.1f} +- {bk.se_b:5.1f} (cubic {float(pb):7.1f})\n")
    out.write("\n# check: observed and model win/draw/loss rates (side to move) by ply and score bucket "
              "(* : off by more than 5 points with n >= 500)\n")
    out.write(format_check(check_rows(data.ply, data.cp, data.result, fit.A, fit.B)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
