"""Playing weaker on purpose: ``Skill Level`` and ``UCI_LimitStrength`` / ``UCI_Elo``.

A weakened search keeps at least ``MULTIPV`` lines, and the move played is drawn from them: each line's
shortfall against the best is partly forgiven, the more so the lower the level, and a random bonus (at most a
middlegame pawn, scaled by the weakness) decides between lines that end up close. Level 20 is full strength
and changes nothing.

- ``Skill Level`` (whole levels) limits the search to ``1 + level`` plies: low levels see little.
- ``UCI_Elo`` maps to a fractional level and searches ``ELO_EXTRA_DEPTH`` plies deeper than that level's whole
  part. Up to ``ELO_CURVE_END`` the level follows the form of Stockfish 15.1's skill levels,
  ``level = ((elo - ELO_AT_ZERO) / ELO_SCALE) ** (1 / ELO_POWER)``; above it the level runs in straight lines
  through ``ELO_ANCHORS``, points calibrated against Stockfish 15.1 at the same ``UCI_Elo`` (10+0.1), up to
  full strength at ``ELO_MAX``. Stockfish's own curve is too flat at the top for this engine: at 2500 it gives
  level 13.3, and Quantfish there lost 1-3 of its first 4 games while at full strength it won 7-1-0 of 8.
  The extra plies were calibrated at 1500 (30 games each: depth 2 lost 2-20, 3 went 3-27, 4 8-1-21, 5 8-22,
  6 18-12, the full depth 26-2); the README gives the 100-game results at 1500, 2000 and 2500.
"""
from __future__ import annotations

import random
from typing import NamedTuple, Optional, Sequence

FULL_LEVEL = 20
MULTIPV = 4                 # lines a weakened search keeps to choose from
ELO_MIN, ELO_MAX = 1320, 2850
ELO_AT_ZERO = 1346.6        # UCI_Elo of level 0 (below it, level 0 still)
ELO_SCALE = 143.4
ELO_POWER = 0.806
ELO_EXTRA_DEPTH = 4         # UCI_Elo's plies beyond 1 + level (see above)
ELO_CURVE_END = 2000        # where Stockfish's curve gives way to ELO_ANCHORS
ELO_ANCHORS = ((2500, 18.0), (ELO_MAX, float(FULL_LEVEL)))   # (UCI_Elo, level) above ELO_CURVE_END
RANDOM_CAP = 126            # the random bonus's scale at most: a middlegame pawn in the search's units


class Skill(NamedTuple):
    """A strength setting: ``level`` in 0..20 (20 = full strength), searching 1 + level + ``extra_depth``
    plies."""
    level: float
    extra_depth: int = 0

    @classmethod
    def from_options(cls, skill_level: int, limit_strength: bool, elo: int) -> "Skill":
        """The setting of the UCI options: ``UCI_LimitStrength`` with ``UCI_Elo`` wins over ``Skill Level``."""
        return cls.from_elo(elo) if limit_strength else cls(float(skill_level))

    @classmethod
    def from_elo(cls, elo: int) -> "Skill":
        return cls(_level_of_elo(elo), ELO_EXTRA_DEPTH)

    @property
    def enabled(self) -> bool:
        return self.level < FULL_LEVEL

    @property
    def depth(self) -> int:
        """The deepest iteration a weakened search runs."""
        return 1 + int(self.level) + self.extra_depth

    def pick(self, lines: Sequence, rng: Optional[random.Random] = None) -> int:
        """The move to play among ``lines`` (``quantfish.search.driver.Line``s, best first, of one iteration)."""
        rng = rng or random
        weakness = 120 - 2 * self.level
        top = lines[0].score
        spread = min(top - lines[-1].score, RANDOM_CAP)
        best_move, best_value = lines[0].moves[0], None
        for line in lines:
            shortfall = top - line.score
            value = line.score + (weakness * shortfall + spread * rng.random() * weakness) / 128
            if best_value is None or value > best_value:
                best_move, best_value = line.moves[0], value
        return best_move


def _curve_level(elo: float) -> float:
    """Stockfish 15.1's form of the level of an Elo."""
    return max(0.0, (elo - ELO_AT_ZERO) / ELO_SCALE) ** (1 / ELO_POWER)


def _level_of_elo(elo: int) -> float:
    """The fractional level of ``UCI_Elo`` ``elo``: the curve up to ``ELO_CURVE_END``, then ``ELO_ANCHORS``."""
    if elo <= ELO_CURVE_END:
        return _curve_level(elo)
    low_elo, low_level = ELO_CURVE_END, _curve_level(ELO_CURVE_END)
    for high_elo, high_level in ELO_ANCHORS:
        if elo <= high_elo:
            return low_level + (high_level - low_level) * (elo - low_elo) / (high_elo - low_elo)
        low_elo, low_level = high_elo, high_level
    return float(FULL_LEVEL)
