"""Statistics of a match played in game pairs (each opening twice, colours swapped).

The two games of a pair are correlated through their opening, so the pair, not the game, is the independent
sample: its score is 0, 1/2, 1, 3/2 or 2 points, counted in the pentanomial ``[LL, LD, DD+WL, WD, WW]``.

With ``x_i = i/4`` the per-game score of outcome ``i`` and ``p_i = n_i / N`` over ``N`` pairs:

* score ``mu = sum p_i x_i``; per-pair variance ``var = sum p_i (x_i - mu)^2``; standard error
  ``sqrt(var / N)``;
* logistic Elo ``E(mu) = -400 log10(1/mu - 1)``; the 95 % interval maps ``mu -+ 1.96 sqrt(var / N)``
  through ``E``;
* normalised Elo ``(mu - 1/2) / sigma_game * 800 / ln 10`` with ``sigma_game = sqrt(2 var)``, the standard
  deviation of one game as seen through pairs;
* the generalized SPRT, the test fishtest runs (after M. Van den Bergh; normalised Elo and the pentanomial
  model: http://hardy.uhasselt.be/Toga/normalized_elo.pdf): ``LLR = N sum p_i log(q1_i / q0_i)``, where
  ``qk`` is the most likely distribution (for the observed ``p``) whose mean is the score ``sk`` of the
  bound ``elok``. That maximum is ``q_i = p_i / (1 + lambda (x_i - s))`` with ``lambda`` the root of
  ``sum p_i (x_i - s) / (1 + lambda (x_i - s)) = 0`` (a Lagrange multiplier; the sum falls monotonically in
  ``lambda``, so bisection finds it). Empty cells are given 1e-3 of a pair first, so the root exists.
  Wald's bounds: accept H0 at ``log(beta / (1 - alpha))``, H1 at ``log((1 - beta) / alpha)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
PENTANOMIAL_LABELS = ("LL", "LD", "DD+WL", "WD", "WW")
NELO_PER_T = 800 / math.log(10)
EMPTY_CELL = 1e-3


def score_from_elo(elo: float) -> float:
    """The expected score of a logistic Elo difference."""
    return 1 / (1 + 10 ** (-elo / 400))


def elo_from_score(score: float) -> float:
    """The logistic Elo difference of an expected score; infinite at 0 and 1."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return -400 * math.log10(1 / score - 1)


def pentanomial_index(points: float) -> int:
    """The pentanomial cell of a pair's points (0, 0.5, 1, 1.5 or 2)."""
    index = round(points * 2)
    if not 0 <= index <= 4 or abs(index - points * 2) > 1e-9:
        raise ValueError(f"a pair scores 0, 0.5, 1, 1.5 or 2 points, not {points}")
    return index


def mean_and_variance(penta) -> tuple[float, float]:
    """The per-game score ``mu`` and the variance of one pair's per-game score."""
    total = sum(penta)
    if total <= 0:
        raise ValueError("no pairs")
    mu = sum(n * x for n, x in zip(penta, PAIR_SCORES)) / total
    var = sum(n * (x - mu) ** 2 for n, x in zip(penta, PAIR_SCORES)) / total
    return mu, var


@dataclass(frozen=True)
class EloEstimate:
    """The Elo of the first engine, from the pentanomial counts of ``pairs`` complete pairs."""
    pairs: int
    score: float
    variance: float
    elo: float
    lower: float
    upper: float
    los: float
    nelo: float
    nelo_error: float
    confidence: float

    @property
    def error(self) -> float:
        """Half the width of the interval (infinite when either end is)."""
        return (self.upper - self.lower) / 2


def estimate_elo(penta, confidence: float = 0.95) -> EloEstimate | None:
    """Elo, its interval and the likelihood of superiority; None without a pair."""
    if sum(penta) <= 0:
        return None
    pairs = sum(penta)
    mu, var = mean_and_variance(penta)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    error = math.sqrt(var / pairs)
    if error > 0:
        los = NormalDist().cdf((mu - 0.5) / error)
    else:
        los = 1.0 if mu > 0.5 else 0.0 if mu < 0.5 else 0.5
    sigma_game = math.sqrt(2 * var)
    if sigma_game > 0:
        nelo = (mu - 0.5) / sigma_game * NELO_PER_T
        nelo_error = z / math.sqrt(pairs) / math.sqrt(2) * NELO_PER_T
    else:
        nelo = 0.0 if mu == 0.5 else math.copysign(math.inf, mu - 0.5)
        nelo_error = math.nan
    return EloEstimate(pairs=pairs, score=mu, variance=var, elo=elo_from_score(mu),
                       lower=elo_from_score(mu - z * error), upper=elo_from_score(mu + z * error), los=los,
                       nelo=nelo, nelo_error=nelo_error, confidence=confidence)


def _regularized(penta) -> list[float]:
    return [n if n > 0 else EMPTY_CELL for n in penta]


def constrained_mle(pdf, scores, target: float) -> list[float]:
    """The distribution ``q`` over ``scores`` of mean ``target`` that maximises ``sum pdf_i log q_i``.

    ``pdf`` must be positive everywhere and ``target`` strictly between the least and the greatest score."""
    shifts = [x - target for x in scores]
    if not min(shifts) < 0 < max(shifts):
        raise ValueError(f"mean {target} lies outside the scores {scores}")

    def slope(lam):
        return sum(p * d / (1 + lam * d) for p, d in zip(pdf, shifts))

    # 1 + lam * d > 0 for every d: lam in (-1/max d, -1/min d); slope falls from +inf to -inf there
    lo, hi = -1 / max(shifts), -1 / min(shifts)
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if slope(mid) > 0:
            lo = mid
        else:
            hi = mid
    lam = (lo + hi) / 2
    q = [p / (1 + lam * d) for p, d in zip(pdf, shifts)]
    total = sum(q)
    return [x / total for x in q]


def llr_logistic(penta, elo0: float, elo1: float) -> float:
    """The generalized log-likelihood ratio of H1 (Elo = elo1) against H0 (Elo = elo0), logistic Elo."""
    if sum(penta) <= 0:
        return 0.0
    counts = _regularized(penta)
    total = sum(counts)
    pdf = [n / total for n in counts]
    q0 = constrained_mle(pdf, PAIR_SCORES, score_from_elo(elo0))
    q1 = constrained_mle(pdf, PAIR_SCORES, score_from_elo(elo1))
    return total * sum(p * math.log(b / a) for p, a, b in zip(pdf, q0, q1))


@dataclass(frozen=True)
class Sprt:
    """A sequential probability ratio test of H0: Elo = ``elo0`` against H1: Elo = ``elo1``."""
    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self):
        if not self.elo0 < self.elo1:
            raise ValueError("SPRT: elo0 must be less than elo1")
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0 < value < 0.5:
                raise ValueError(f"SPRT: {name} must lie strictly between 0 and 0.5, not {value}")

    @property
    def lower(self) -> float:
        """The LLR at or below which H0 is accepted."""
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which H1 is accepted."""
        return math.log((1 - self.beta) / self.alpha)

    def llr(self, penta) -> float:
        return llr_logistic(penta, self.elo0, self.elo1)

    def decision(self, penta) -> str | None:
        """``"H0"``, ``"H1"`` or None while the test goes on."""
        llr = self.llr(penta)
        if llr >= self.upper:
            return "H1"
        if llr <= self.lower:
            return "H0"
        return None
