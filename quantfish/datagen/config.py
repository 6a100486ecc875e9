"""The generator's settings, standard library only so that the command line reads its defaults without
loading the compiled engine.

With ``sample``, the positions kept are those the net evaluates inside each move's search (a sample of them),
labelled with the net's raw output: what a smaller net must reproduce, taken where the search needs it. Then a
deeper search per move pays for itself (``--depth 8 --nodes 4000 --sample 2``: its nodes are the data).

Why depth 1 by default: it is the budget that reaches 5,000 labelled positions per second per core on the
development machine. A node costs about 3 us there (mostly the NNUE update and forward pass), a depth-1
search some 40 nodes, and about 64% of the positions searched are kept. Deeper searches label better at a
lower rate (measured: depth 2 about 3,000 positions per CPU-second, depth 3 about 1,800, ``--depth 8
--nodes 600`` about 350).
"""
from __future__ import annotations

from dataclasses import dataclass

MAX_GAME_PLIES = 1000     # the search's repetition history (quantfish.search.state.HISTORY_KEYS) holds the game


@dataclass(frozen=True)
class GenConfig:
    """How each move is searched and how games start and end."""

    depth: int = 1              # deepest iteration (1: every root move, each answered by a quiescence search)
    nodes: int = 0              # no new iteration starts after this many nodes; 0: no node limit
    random_plies: int = 4       # uniformly random moves from ply 0 or 1 of the game, not recorded
    max_plies: int = 400        # a game this long is adjudicated a draw
    hash_mb: int = 4            # transposition table per worker
    sample: int = 0             # 0: keep the searched positions, labelled with the search's score; N (a power of
                                # two): keep about one in N of the positions the net evaluates during the
                                # searches, labelled with the net's raw output (distillation data)

    def check(self) -> None:
        if self.depth < 1 or self.nodes < 0 or self.random_plies < 0 or self.hash_mb < 1:
            raise ValueError("depth and hash must be at least 1, nodes and random plies at least 0")
        if not 1 <= self.max_plies <= MAX_GAME_PLIES:
            raise ValueError(f"max plies must be 1..{MAX_GAME_PLIES}")
        if self.sample < 0 or (self.sample & (self.sample - 1)):
            raise ValueError(f"sample must be 0 or a power of two (keep one in N evaluated positions), not "
                             f"{self.sample}")

    @property
    def soft_nodes(self) -> int:
        return self.nodes if self.nodes > 0 else 1 << 62

    @property
    def hard_nodes(self) -> int:
        """The node count that stops an iteration under way (a safety net for explosive positions); 0: none."""
        return max(8 * self.nodes, 8192) if self.nodes > 0 else 0
