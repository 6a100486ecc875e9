"""How long to think: an optimum checked after each iteration and a hard deadline the search checks itself.

Stockfish 15.1's time manager, in milliseconds, for ``go wtime/btime [winc/binc] [movestogo]`` at game ply
``ply`` (half-moves since the game's first position, the FEN's move number included):

- The horizon ``mtg`` is ``movestogo`` (at most 50), or 50 moves in sudden death and with increments.
- Every move costs ``overhead`` that the engine does not see (the GUI, the pipes, the scheduler on a busy
  machine). It is the larger of the ``Move Overhead`` option and the largest lag the GUI charged us over
  the last moves (``LagMeter``), so a loaded machine raises it by itself.
- ``pool = max(1, remaining + inc * (mtg - 1) - overhead * (mtg + 2))``: the time to spread over the horizon
  after paying the overhead of each of its moves and two more in reserve.
- ``optimum = pool * scale``. In sudden death ``scale = min(0.0120 + 0.0039 (ply + 3) ^ 0.45, 0.2 * remaining /
  pool)``, times up to 1.12 for an increment: about pool/54 at the first move, /30 at ply 40, /25 at ply 80, as
  the game's critical moves come after the opening; never more than a fifth of the clock. With ``movestogo``:
  ``min((0.88 + ply / 116.4) / mtg, 0.88 * remaining / pool)``.
- ``hard = min(0.8 * remaining - overhead, k * optimum)`` with ``k = min(7, 4 + ply / 12)`` (sudden death) or
  ``min(6.3, 1.5 + 0.11 mtg)``, at least 1 ms: a timer stops the search there.
- With the ``Ponder`` option on, the optimum is a quarter more: some of the thinking is done on the opponent's
  time.

After each iteration ``Progress`` scales the optimum by what the iterations say (``Progress.scale``): more when
the score falls below the previous move's or the one of four iterations ago, more while the best move changes,
less when it has held for ten depths (and carried from the previous move: a move that was quick because it was
stable leaves some of that time to this one). The search stops once it has spent the scaled optimum; past 53% of
it, the next iteration repeats about the same depth instead of going one deeper (``Progress.increase``). One legal
move gets at most half a second.

``movetime`` gives ``hard = movetime - overhead``. ``infinite`` and ``ponder`` have no limit until ``stop`` or
``ponderhit`` (which starts the budget of the ponder command's clocks from the moment it arrives). Deadlines
count from the moment the command was read, not from when the search thread began, and the compiled search
checks the deadline itself every 256 nodes (``quantfish.runtime.monoclock``): no timer thread has to be scheduled.
"""
from collections import deque
from dataclasses import dataclass
from typing import Optional

from quantfish.runtime import monoclock

SUDDEN_DEATH_HORIZON = 50
MIN_HARD_MS = 1.0          # a search always gets this long
SINGLE_MOVE_MS = 500.0     # the most one legal move may take


class Clock:
    """Budget for one move, counted from ``started_ns`` (``quantfish.runtime.monoclock``; default: now).
    ``optimum`` (seconds, None without time management) is what ``Progress`` scales after each iteration; the
    search stops itself at ``deadline_ns``."""

    def __init__(self, optimum_ms, hard_ms, started_ns=None):
        self.optimum = optimum_ms / 1000.0 if optimum_ms is not None else None
        self.hard = hard_ms / 1000.0 if hard_ms is not None else None
        self.started_ns = monoclock.now_ns() if started_ns is None else started_ns
        self.budget_ns = self.started_ns     # where the optimum counts from (moved by a ponderhit)

    @classmethod
    def for_limits(cls, limits, side, overhead_ms, started_ns=None, ply=0, ponder=False):
        """The budget of ``limits`` for ``side`` at game ply ``ply``; see the module's text. ``ponder``: the GUI
        lets the engine think on the opponent's time (the ``Ponder`` option), so a quarter more is spent now."""
        if limits.infinite or limits.ponder:
            return cls(None, None, started_ns)
        if limits.movetime is not None:
            return cls(None, max(MIN_HARD_MS, limits.movetime - overhead_ms), started_ns)
        remaining = limits.wtime if side == 0 else limits.btime
        if remaining is None:
            return cls(None, None, started_ns)
        remaining = max(0, remaining)
        inc = max(0, limits.winc if side == 0 else limits.binc)
        ply = max(0, ply)
        mtg = min(limits.movestogo, SUDDEN_DEATH_HORIZON) if limits.movestogo else SUDDEN_DEATH_HORIZON
        pool = max(1.0, remaining + inc * (mtg - 1) - overhead_ms * (mtg + 2))
        if not limits.movestogo:
            extra = min(1.12, 1.0 + 12.0 * inc / remaining) if remaining > 0 else 1.0
            scale = min(0.0120 + (ply + 3.0) ** 0.45 * 0.0039, 0.2 * remaining / pool) * extra
            most = min(7.0, 4.0 + ply / 12.0)
        else:
            scale = min((0.88 + ply / 116.4) / mtg, 0.88 * remaining / pool)
            most = min(6.3, 1.5 + 0.11 * mtg)
        optimum = scale * pool
        hard = max(MIN_HARD_MS, min(0.8 * remaining - overhead_ms, most * optimum))
        if ponder:
            optimum *= 1.25
        return cls(min(optimum, hard), hard, started_ns)

    def elapsed(self):
        """Seconds since the command that started the clock was read."""
        return (monoclock.now_ns() - self.started_ns) / 1e9

    def spent(self):
        """Seconds of the optimum's budget used: since the command, or since the ponderhit."""
        return (monoclock.now_ns() - self.budget_ns) / 1e9

    def deadline_ns(self):
        return None if self.hard is None else self.started_ns + int(self.hard * 1e9)

    def rebase(self, fresh):
        """After ponderhit: the budget of ``fresh`` (a clock started at the ponderhit) replaces ours."""
        shift = (fresh.started_ns - self.started_ns) / 1e9
        self.optimum = fresh.optimum
        self.budget_ns = fresh.started_ns
        self.hard = None if fresh.hard is None else shift + fresh.hard


@dataclass
class Carry:
    """What one search leaves the next one of the same game (``Searcher.time_carry``, cleared by ucinewgame):
    the best move's score and its running average, and the stable-move reduction it ended with."""
    score: Optional[int] = None
    average: Optional[float] = None
    reduction: float = 1.0


class Progress:
    """What the finished iterations of one search say about how much of the optimum it deserves.

    ``scale`` multiplies three signs, as Stockfish 15.1 does:

    - falling score: ``(71 + 12 (previous move's average - score) + 6 (score 4 iterations ago - score)) /
      656.7`` within [0.5, 1.5]. Scores are in the search's units (a pawn is about 208 of them in the
      endgame), so a drop of a fifth of a pawn is worth about 50% more time.
    - stable move: ``(1.4 + previous reduction) / (2.15 r)`` where ``r`` is 1.37 when the best move has held
      for more than nine depths, else 0.65 (about 0.7 or 1.5 once the game is under way).
    - instability: ``1 + 1.7 c``, where ``c`` adds the best-move changes of each iteration and halves what
      earlier ones added.
    """

    DEEPER_SHARE = 0.53     # past this share of the scaled optimum, repeat the depth instead of going deeper

    def __init__(self, carry=None):
        self.carry = carry if carry is not None else Carry()
        start = 0 if self.carry.score is None else self.carry.score
        self.values = deque([start] * 4, maxlen=4)   # the scores of the last 4 iterations, oldest first
        self.changes = 0.0
        self.score = start
        self.average = None
        self.depth = 0
        self.best_move = None
        self.best_depth = 0
        self.reduction = 1.0
        self.increase = True
        self._falling = 1.0

    def record(self, depth, score, best_move, best_changes):
        """After an iteration: its depth, score, best move and the number of times the best move changed."""
        self.changes = self.changes / 2 + best_changes
        if best_move != self.best_move:
            self.best_move, self.best_depth = best_move, depth
        self.average = score if self.average is None else (2 * score + self.average) / 3
        self.depth, self.score = depth, score
        previous = self.carry.average
        if previous is None:           # the first move of a game: as long as a falling score
            self._falling = 1.5
        else:
            drop = 71 + 12 * (previous - score) + 6 * (self.values[0] - score)
            self._falling = min(1.5, max(0.5, drop / 656.7))
        self.values.append(score)

    def scale(self):
        """The factor of the optimum after the iterations recorded so far (sets the stable-move reduction)."""
        self.reduction = 1.37 if self.best_depth + 9 < self.depth else 0.65
        stable = (1.4 + self.carry.reduction) / (2.15 * self.reduction)
        return self._falling * stable * (1 + 1.7 * self.changes)

    def decide(self, clock, single_move=False):
        """After a recorded iteration: False to stop now; otherwise sets ``increase`` (whether the next
        iteration goes one deeper)."""
        if clock is None or clock.optimum is None:
            return True
        total = clock.optimum * self.scale()
        if single_move:
            total = min(SINGLE_MOVE_MS / 1000.0, total)
        spent = clock.spent()
        if spent > total:
            return False
        self.increase = not (self.increase and spent > total * self.DEEPER_SHARE)
        return True

    def finish(self):
        """The search is over: what the next one of the game starts from (a search without a clock leaves a
        reduction of 1)."""
        if self.average is not None:
            self.carry.score, self.carry.average = self.score, self.average
        self.carry.reduction = self.reduction


class LagMeter:
    """The time the GUI charges beyond our own thinking, learnt from its clocks.

    When ``go`` comes for the same side of the same game two plies after our last move, the GUI's clock
    should read (clock then) + (increment) - (time we thought). What it reads less is lag: pipes, the GUI,
    the scheduler of a machine running more games than it has cores. The largest of the last few is the
    overhead the next budget pays for."""

    WINDOW = 8
    MAX_LAG_MS = 2000.0

    def __init__(self):
        self.recent = deque(maxlen=self.WINDOW)
        self._last = None

    def reset(self):
        """A new game: what the last one taught about the clock no longer applies to its moves."""
        self._last = None

    def before_search(self, game, ply, side, remaining, inc):
        """Called for a timed ``go``: ``game`` names the game (its start position), ``ply`` counts its moves."""
        last, self._last = self._last, None
        if last is None or remaining is None:
            return
        l_game, l_ply, l_side, l_remaining, l_inc, used = last
        if (l_game, l_ply + 2, l_side) == (game, ply, side) and used is not None:
            lag = l_remaining + l_inc - used - remaining
            if 0.0 <= lag <= self.MAX_LAG_MS:
                self.recent.append(lag)

    def after_search(self, game, ply, side, remaining, inc, used_ms):
        """Called when ``bestmove`` was sent: ``used_ms`` from reading ``go`` to writing ``bestmove``; None
        for a search whose clock the GUI started elsewhere (ponder), which teaches nothing."""
        self._last = None if remaining is None else (game, ply, side, remaining, inc, used_ms)

    def overhead(self, move_overhead_ms):
        return max(float(move_overhead_ms), max(self.recent, default=0.0))
