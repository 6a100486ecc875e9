"""Training data generation: self-play with the engine's own search, positions labelled for ``nnue.train``.

``config`` (settings), ``openings`` (start positions), ``shard`` (one process's stream of games,
deterministic for its seed) and ``run`` (worker processes, ordered output, progress, Ctrl-C). The games
themselves are played by compiled code in ``engine.selfplay``; the record format is
``nnue.train.records``.
"""
