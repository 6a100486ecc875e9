"""The evaluation's display units: internal units to pawns and centipawns, stated once.

Stockfish 15.1 prints an evaluation as ``v / 361`` pawns (``NormalizeToPawnValue``). Stockfish 17.1 scales by the
win-rate model instead (docs/nnue-sf17.1.md section 8): ``to_cp(v) = round(100 v / a)``, where ``a`` is a cubic in
the material on the board. The ``eval`` command, the UCI scores and the Python API all convert through here.
Pure Python: the command line imports it without the compiled code.
"""
from __future__ import annotations

PAWN_VALUE_NORMALIZE = 361        # Stockfish 15.1: internal units per pawn

# Stockfish 17.1's win-rate model: a(m) = ((a0 m + a1) m + a2) m + a3, m = clamp(material, 17, 78) / 58.
WDL_AS = (-13.50030198, 40.92780883, -36.82753545, 386.83004070)
_WDL_MATERIAL = (0, 1, 3, 3, 5, 9, 0, 0)     # P N B R Q by piece type (quantfish.core.types codes & 7)


def wdl_a(board) -> float:
    """The win-rate model's ``a`` for a mailbox (int8[64] of piece codes)."""
    mat = sum(_WDL_MATERIAL[int(pc) & 7] for pc in board)
    m = min(max(mat, 17), 78) / 58
    a0, a1, a2, a3 = WDL_AS
    return ((a0 * m + a1) * m + a2) * m + a3


def to_cp(v: int, a: float) -> int:
    """Stockfish 17.1's centipawns of internal value ``v`` with the model's ``a``."""
    return round(100 * v / a)


def cp_15(v: int) -> int:
    """Stockfish 15.1's centipawns of internal value ``v``, rounded to nearest (``v * 100 / 361`` is never a
    half: 361 is odd and prime to 200, so this is the number ``eval`` prints to two decimals in pawns)."""
    return round(v * 100 / PAWN_VALUE_NORMALIZE)
