"""Depth limits of the commands that run in the caller's thread.

UCI's ``go perft`` and ``bench`` and the command line's ``quantfish perft`` and ``bench`` share them. Deeper
would block for hours, and a bench in the UCI loop's thread cannot be ended by ``stop``. This module imports
nothing, so the command line can register its options without loading the engine.
"""
PERFT_MAX_DEPTH = 20
BENCH_MAX_DEPTH = 60
