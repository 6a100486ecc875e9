"""One worker's stream of self-play games: a ``Searcher`` for its state, an opening book, and a random
stream fixed by (seed, worker), so the same arguments give the same games, record for record."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from quantfish.datagen.config import GenConfig
from quantfish.data.openings import Openings
from quantfish.datagen.selfplay import SAMPLE_RECORDS, TAP_CAPACITY, play_game, play_sampled_game, rng_below
from quantfish.search.driver import Searcher
from quantfish.data.codec import RECORD_SIZE


class Game(NamedTuple):
    data: bytes            # the kept positions, whole 32-byte records
    records: int
    white_result: int      # 0 Black won, 1 draw, 2 White won
    reason: int            # quantfish.datagen.selfplay.REASONS index
    plies: int
    nodes: int

    def first(self, room: int) -> "Game":
        """The game with its first ``room`` records alone when it has more (the last game of a run)."""
        if self.records <= room:
            return self
        return self._replace(data=self.data[:room * RECORD_SIZE], records=room)


def worker_seed(seed: int, worker: int) -> int:
    """A 64-bit stream seed for each (seed, worker) pair."""
    return int(np.random.SeedSequence([seed, worker]).generate_state(1, np.uint64)[0])


class ShardPlayer:
    """Plays games one after another; ``play()`` returns the next ``Game``."""

    def __init__(self, net, config: GenConfig, openings: Openings, seed: int, worker: int = 0):
        config.check()
        self.config = config
        self.openings = openings
        self.searcher = Searcher(net, config.hash_mb)
        self.rng = np.array([worker_seed(seed, worker)], np.uint64)
        if config.sample:
            self.searcher.set_tap(TAP_CAPACITY, config.sample, worker_seed(seed, worker) ^ 0x5A17)
            self.out = np.zeros((SAMPLE_RECORDS, RECORD_SIZE), np.uint8)
            self.seen = np.zeros(1 << 22, np.uint64)        # the last 2M positions kept, for duplicates
            self.seen_count = np.zeros(1, np.int64)
        else:
            self.out = np.zeros((config.max_plies + 1, RECORD_SIZE), np.uint8)

    def play(self) -> Game:
        c = self.config
        board = self.openings.board(int(rng_below(self.rng, len(self.openings))))
        s = self.searcher
        if c.sample:
            n, white, reason, plies, nodes = play_sampled_game(
                s.T, s.S, board.bb, board.board, board.st, self.rng, c.random_plies, c.depth, c.soft_nodes,
                c.hard_nodes, c.max_plies, self.out, self.seen, self.seen_count)
        else:
            n, white, reason, plies, nodes = play_game(s.T, s.S, board.bb, board.board, board.st, self.rng,
                                                       c.random_plies, c.depth, c.soft_nodes, c.hard_nodes,
                                                       c.max_plies, self.out)
        return Game(self.out[:n].tobytes(), int(n), int(white), int(reason), int(plies), int(nodes))
