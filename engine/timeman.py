"""How long to think: a soft target checked between iterations and a hard deadline timer."""
import threading
import time


class Clock:
    """Budget for one move. ``should_continue`` is asked after each iteration; the timer
    started by ``start`` calls ``on_deadline`` at the hard limit."""

    def __init__(self, soft_ms, hard_ms):
        self.soft = soft_ms / 1000.0 if soft_ms is not None else None
        self.hard = hard_ms / 1000.0 if hard_ms is not None else None
        self._timer = None

    @classmethod
    def for_limits(cls, limits, side, overhead_ms):
        if limits.infinite or limits.ponder:
            return cls(None, None)
        if limits.movetime is not None:
            return cls(None, max(1, limits.movetime - overhead_ms))
        remaining = limits.wtime if side == 0 else limits.btime
        if remaining is None:
            return cls(None, None)
        inc = limits.winc if side == 0 else limits.binc
        left = max(1, remaining - overhead_ms)
        mtg = min(limits.movestogo, 50) if limits.movestogo else 40
        soft = left / mtg + 0.75 * inc
        hard = min(left * (0.8 if (limits.movestogo or 99) > 1 else 0.9), soft * 5)
        soft = min(soft, hard)
        return cls(max(1.0, soft), max(1.0, hard))

    def start(self, on_deadline):
        if self.hard is not None:
            self._timer = threading.Timer(self.hard, on_deadline)
            self._timer.daemon = True
            self._timer.start()

    def rebase(self, fresh, elapsed_ms, on_deadline):
        """After ponderhit: the budget of ``fresh`` counted from now, ``elapsed_ms`` into the search."""
        self.cancel()
        base = elapsed_ms / 1000.0
        self.soft = None if fresh.soft is None else base + fresh.soft
        self.hard = None if fresh.hard is None else base + fresh.hard
        if fresh.hard is not None:
            self._timer = threading.Timer(fresh.hard, on_deadline)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def should_continue(self, elapsed, stable_iterations, depth):
        """Stop early when the best move has held for several iterations."""
        if self.soft is None:
            return True
        factor = 1.3 if stable_iterations == 0 else (1.0 if stable_iterations < 3 else 0.6)
        # The next iteration takes roughly as long as all before it together.
        return elapsed < self.soft * factor * 0.55 and elapsed < (self.hard or 1e9) * 0.5
