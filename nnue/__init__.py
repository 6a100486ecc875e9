"""NNUE evaluation: Stockfish .nnue files, HalfKAv2_hm features, accumulators and integer inference."""

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

_invalidate_if_changed(__path__[0])
