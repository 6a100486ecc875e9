"""Lazy SMP: helper threads that search the same root as the main search and share its transposition table.

Each helper is a ``Searcher`` of its own (position stack, accumulators, histories) built around the main
searcher's table and net arrays, and runs iterative deepening in a Python thread; every iteration is one call
into compiled code that releases the GIL, so the threads search in parallel. They help only through the table:
what one thread stores, the others find. Odd helpers search one ply deeper than their iteration count, so that
the threads do not all walk the same tree in step. The main thread keeps the clock and stops the helpers when it
is done; the move played is then chosen by a vote of every thread's last finished iteration (``vote``). The
table is safe under races (``quantfish.search.tree.tt_probe``).
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import NamedTuple, Sequence

VOTE_FLOOR = 14     # every thread's vote counts, the lowest-scoring one's too


class Finished(NamedTuple):
    """A thread's last finished iteration: its depth, score and principal variation."""
    depth: int
    score: int
    pv: list


def vote(finished: Sequence[Finished], mate_bound: int) -> Finished:
    """The iteration whose move to play, the main thread's first in ``finished``.

    Each thread votes for its own move with the weight ``(score - lowest score + VOTE_FLOOR) * depth``, so a
    move that several threads found, or one a thread found deeper or scored higher, wins; scores beyond
    ``mate_bound`` (a mate or a tablebase result) are not averaged but taken when better. Stockfish's Lazy SMP
    chooses its best thread this way."""
    lowest = min(f.score for f in finished)
    votes: dict = defaultdict(int)
    for f in finished:
        votes[f.pv[0]] += (f.score - lowest + VOTE_FLOOR) * f.depth
    best = finished[0]
    for f in finished[1:]:
        if abs(best.score) >= mate_bound:
            if f.score > best.score:
                best = f
        elif f.score >= mate_bound or (f.score > -mate_bound and votes[f.pv[0]] > votes[best.pv[0]]):
            best = f
    return best


class HelperPool:
    """The helper threads of one main searcher (``Threads`` - 1 of them)."""

    def __init__(self, make_helper, count: int):
        """``make_helper()`` returns a new searcher that shares the main searcher's table and nets."""
        self.helpers = [make_helper() for _ in range(count)]
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
            for field in ("tb_pieces", "tb_depth", "tb_rule50"):
                helper.ctl[field] = main.ctl[field]
            helper._set_root_moves(root)
            helper.finished = None
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

    def finished(self) -> list:
        """Each helper's last finished iteration (``Finished``), for those that finished one; after ``join``."""
        return [h.finished for h in self.helpers if h.finished is not None]


def _deepen(helper, max_depth, offset):
    """A helper's iterative deepening: no output, no clock of its own; it runs until stopped."""
    score = 0
    for depth in range(1, max_depth + 1):
        searched = min(depth + offset, max_depth)
        score, completed = helper._iteration(searched, score, False)
        if not completed:
            return
        n = int(helper.S.pv_len[0])
        if n > 0:
            helper.finished = Finished(searched, score, [int(m) for m in helper.S.pv[0, :n]])
        if helper.stopped:
            return
