"""How long to think: a soft target checked between iterations and a hard deadline the search checks itself.

The allocation, in milliseconds, for ``go wtime/btime [winc/binc] [movestogo]``:

- The horizon ``mtg`` is ``movestogo`` (at most 40), or 40 moves in sudden death and with increments.
- Every move costs ``overhead`` that the engine does not see (the GUI, the pipes, the scheduler on a busy
  machine). It is the larger of the ``Move Overhead`` option and the largest lag the GUI charged us over
  the last moves (``LagMeter``), so a loaded machine raises it by itself.
- ``pool = remaining + inc * (mtg - 1) - overhead * (mtg + 2)``: the time we may spread over the horizon
  after paying the overhead of each of its moves and two more in reserve. It never goes below zero, so with
  little time left the engine moves at once and the clock does not drain in sudden death.
- ``soft = pool / mtg``: the target. After each iteration the search goes on only while the elapsed time is
  below about half of it (the next iteration costs about as much as all before it) times a factor that
  ``Progress`` draws from the iterations so far: more while the best move changes or the score falls, less
  while the score rises and when the best move took nearly all the nodes (no other move came close).
- ``hard = min(5 * soft, 0.7 * (remaining - overhead))``, at least 1 ms: a timer stops the search there.
  It never spends what the clock does not have, whatever the increment promises.

``movetime`` gives ``hard = movetime - overhead``. ``infinite`` and ``ponder`` have no limit until ``stop`` or
``ponderhit`` (which starts the budget of the ponder command's clocks from the moment it arrives). Deadlines
count from the moment the command was read, not from when the search thread began, and the compiled search
checks the deadline itself every 256 nodes (``quantfish.runtime.monoclock``): no timer thread has to be scheduled.
"""
from collections import deque

from quantfish.runtime import monoclock

SUDDEN_DEATH_HORIZON = 40
MIN_HARD_MS = 1.0   # a search always gets this long


class Clock:
    """Budget for one move, counted from ``started_ns`` (``quantfish.runtime.monoclock``; default: now).
    ``should_continue`` is asked after each iteration; the search stops itself at ``deadline_ns``."""

    def __init__(self, soft_ms, hard_ms, started_ns=None):
        self.soft = soft_ms / 1000.0 if soft_ms is not None else None
        self.hard = hard_ms / 1000.0 if hard_ms is not None else None
        self.started_ns = monoclock.now_ns() if started_ns is None else started_ns

    @classmethod
    def for_limits(cls, limits, side, overhead_ms, started_ns=None):
        if limits.infinite or limits.ponder:
            return cls(None, None, started_ns)
        if limits.movetime is not None:
            return cls(None, max(MIN_HARD_MS, limits.movetime - overhead_ms), started_ns)
        remaining = limits.wtime if side == 0 else limits.btime
        if remaining is None:
            return cls(None, None, started_ns)
        remaining = max(0, remaining)
        inc = max(0, limits.winc if side == 0 else limits.binc)
        mtg = min(limits.movestogo, SUDDEN_DEATH_HORIZON) if limits.movestogo else SUDDEN_DEATH_HORIZON
        pool = max(0.0, remaining + inc * (mtg - 1) - overhead_ms * (mtg + 2))
        soft = pool / mtg
        hard = max(MIN_HARD_MS, min(5 * soft, 0.7 * (remaining - overhead_ms)))
        return cls(min(soft, hard), hard, started_ns)

    def elapsed(self):
        """Seconds since the command that started the clock was read."""
        return (monoclock.now_ns() - self.started_ns) / 1e9

    def deadline_ns(self):
        return None if self.hard is None else self.started_ns + int(self.hard * 1e9)

    def rebase(self, fresh):
        """After ponderhit: the budget of ``fresh`` (a clock started at the ponderhit) replaces ours."""
        shift = (fresh.started_ns - self.started_ns) / 1e9
        self.soft = None if fresh.soft is None else shift + fresh.soft
        self.hard = None if fresh.hard is None else shift + fresh.hard

    def should_continue(self, factor=1.0):
        """Whether to start another iteration, with the target scaled by ``factor`` (``Progress.factor``)."""
        if self.soft is None:
            return True
        elapsed = self.elapsed()
        # The next iteration takes roughly as long as all before it together.
        return elapsed < self.soft * factor * 0.55 and elapsed < (self.hard or 1e9) * 0.5


class Progress:
    """What the finished iterations of one search say about how much of the target it deserves.

    Three signs, multiplied into ``factor`` (between ``MIN_FACTOR`` and ``MAX_FACTOR``):

    - instability: each iteration adds the number of times another root move became best in it, and halves
      what earlier ones added; a changing best move earns time, one that has held for a while saves it.
    - falling score: a score below the one of a few iterations ago means trouble found late, worth more
      time; a rising one needs less.
    - dominance: the share of the iteration's nodes that went to the best move's subtree. Near all of them
      means every other move was refuted quickly, so a deeper look is unlikely to change the move.
    """

    MIN_FACTOR = 0.5
    MAX_FACTOR = 2.0
    DOMINANT_SHARE = 0.95

    def __init__(self, pawn=100):
        self.pawn = pawn            # the score units of a pawn
        self.changes = 0.0
        self.scores = []
        self.share = 0.0

    def record(self, score, best_changes, best_nodes, nodes):
        """After an iteration: its score, best-move changes, the best move's nodes and all its nodes."""
        self.changes = self.changes / 2 + best_changes
        self.scores.append(score)
        self.share = best_nodes / nodes if nodes > 0 else 0.0

    def factor(self):
        instability = 0.8 + 0.8 * self.changes
        earlier = self.scores[max(0, len(self.scores) - 4)] if self.scores else 0
        drop = (earlier - self.scores[-1]) / self.pawn if self.scores else 0.0
        falling = min(1.5, max(0.8, 1.0 + 0.8 * drop))
        dominance = 0.75 if self.share >= self.DOMINANT_SHARE else 1.0
        return min(self.MAX_FACTOR, max(self.MIN_FACTOR, instability * falling * dominance))


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
