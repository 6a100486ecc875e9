"""Strength limiting (quantfish.search.skill): levels from UCI_Elo, the weaker move's choice, the UCI options."""
import random
from collections import Counter

import pytest

from quantfish.search.driver import Line
from quantfish.search.skill import ELO_ANCHORS, ELO_CURVE_END, ELO_EXTRA_DEPTH, ELO_MAX, ELO_MIN, FULL_LEVEL, Skill
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE as PAWN


def test_elo_maps_to_levels_in_order():
    levels = [Skill.from_elo(elo).level for elo in range(ELO_MIN, ELO_MAX + 1, 10)]
    assert levels == sorted(levels)
    assert levels[0] < 1 and 0 <= levels[0]
    assert Skill.from_elo(ELO_MAX).level <= FULL_LEVEL
    assert Skill.from_elo(2000).depth == 1 + int(Skill.from_elo(2000).level) + ELO_EXTRA_DEPTH
    assert Skill(7).depth == 8 and Skill.from_elo(2000).depth < Skill.from_elo(2500).depth
    assert not Skill(FULL_LEVEL).enabled and Skill(19.5).enabled
    assert Skill.from_options(20, True, 1500) == Skill.from_elo(1500)
    assert Skill.from_options(7, False, 1500) == Skill(7.0, 0)


def test_elo_follows_stockfish_curve_then_the_calibrated_anchors():
    # Stockfish 15.1's form below the curve's end: (1500 - 1346.6) / 143.4 = 1.0697, to the power 1 / 0.806.
    assert Skill.from_elo(1500).level == pytest.approx(1.0697 ** (1 / 0.806), abs=1e-3)
    # No jump where the curve hands over, and each anchor's level is met exactly.
    assert abs(Skill.from_elo(ELO_CURVE_END + 1).level - Skill.from_elo(ELO_CURVE_END).level) < 0.05
    for elo, level in ELO_ANCHORS:
        assert Skill.from_elo(elo).level == pytest.approx(level)
    # Halfway between two anchors, halfway between their levels.
    (e1, l1), (e2, l2) = ELO_ANCHORS[:2]
    assert Skill.from_elo((e1 + e2) // 2).level == pytest.approx((l1 + l2) / 2, abs=0.01)
    # The top of the scale is full strength: nothing is weakened.
    assert not Skill.from_elo(ELO_MAX).enabled and Skill.from_elo(ELO_MAX - 1).enabled


def _lines(*scores):
    return [Line(s, [100 + i, 200 + i]) for i, s in enumerate(scores)]


def test_low_level_spreads_its_choices_high_level_keeps_the_best():
    close = _lines(30, 20, 10, 0)
    rng = random.Random(1)
    weak = Counter(Skill(0).pick(close, rng) for _ in range(2000))
    assert set(weak) == {100, 101, 102, 103}                   # every close line gets played
    assert weak[100] > weak[103]                               # the best still most often
    strong = Counter(Skill(19).pick(_lines(300, 0, -50, -400), rng) for _ in range(2000))
    assert strong[100] == 2000                                 # a clearly better line is never given up at 19


def test_blunders_get_rarer_with_the_level():
    lines = _lines(0, -PAWN // 2, -2 * PAWN, -9 * PAWN)       # the last line drops a queen
    rng = random.Random(2)
    worse = [sum(Skill(level).pick(lines, rng) != 100 for _ in range(3000)) for level in (0, 5, 10, 15)]
    assert worse == sorted(worse, reverse=True) and worse[0] > worse[-1]
    assert sum(Skill(0).pick(lines, rng) == 103 for _ in range(3000)) < 300


@pytest.mark.parametrize("command,want", [
    ("setoption name Skill Level value 21", "between 0 and 20"),
    ("setoption name Skill Level value -1", "between 0 and 20"),
    ("setoption name UCI_Elo value 1000", "between 1320 and 2850"),
    ("setoption name UCI_Elo value 3000", "between 1320 and 2850"),
    ("setoption name UCI_LimitStrength value maybe", "true or false"),
])
def test_out_of_range_strength_options_are_refused(command, want):
    from quantfish.uci.protocol import UciEngine
    out = []
    engine = UciEngine(out=out.append)
    engine.handle(command)
    assert len(out) == 1 and out[0].startswith("info string") and want in out[0]
