"""Lazy SMP: helper threads that search the same root as the main search and share its transposition table.

Each helper is a ``Searcher`` of its own (position stack, accumulators, histories) built around the main
searcher's table and net arrays, and runs iterative deepening in a Python thread; every iteration is one call
into compiled code that releases the GIL, so the threads search in parallel. They help only through the table:
what one thread stores, the others find. Odd helpers search one ply deeper than their iteration count, so that
the threads do not all walk the same tree in step. The main thread keeps the clock, decides the best move and
stops the helpers when it is done; the table is safe under races (``engine.search.tt_probe``).
"""
from __future__ import annotations

import threading


class HelperPool:
    """The helper threads of one main searcher (``Threads`` - 1 of them)."""

    def __init__(self, main, count: int):
        from engine.searcher import Searcher
        self.helpers = [Searcher(main.net, tt=main.tt, small_net=main.small_net, kernel=main.kernel, share=main)
                        for _ in range(count)]
        self._threads: list[threading.Thread] = []

    def __len__(self):
        return len(self.helpers)

    @property
    def nodes(self) -> int:
        return sum(h.nodes for h in self.helpers)

    def start(self, main, board, game_keys, root, max_depth, max_nodes):
        """Starts every helper on ``root`` (the main search's root moves) with the main search's table age."""
        self.join()
        for k, helper in enumerate(self.helpers):
            helper._setup(board, game_keys)
            helper.ctl["tt_gen"] = main.ctl["tt_gen"]
            helper.ctl["max_nodes"] = max_nodes
            helper.ctl["deadline"] = 0       # the main thread keeps the clock and stops the helpers
            helper._set_root_moves(root)
            t = threading.Thread(target=_deepen, args=(helper, max_depth, k & 1), daemon=True,
                                 name=f"quantfish-helper-{k + 1}")
            self._threads.append(t)
            t.start()

    def stop(self):
        for helper in self.helpers:
            helper.ctl["stop"] = 1

    def join(self):
        """Stops the helpers and waits for them (each polls its stop flag every 256 nodes)."""
        self.stop()
        for t in self._threads:
            t.join()
        self._threads = []

    def clear(self):
        for helper in self.helpers:
            helper.clear()


def _deepen(helper, max_depth, offset):
    """A helper's iterative deepening: no output, no clock of its own; it runs until stopped."""
    score = 0
    for depth in range(1, max_depth + 1):
        score, completed = helper._iteration(min(depth + offset, max_depth), score, False)
        if not completed or helper.stopped:
            return
