"""Training data generation: self-play with the engine's own search, positions labelled for training.

``config`` (settings), ``shard`` (one process's stream of games, deterministic for its seed), ``run`` (worker
processes, ordered output, progress, Ctrl-C) and ``selfplay`` (one whole game in one compiled call). The
record format and the opening book reader are ``quantfish.data``'s.
"""
