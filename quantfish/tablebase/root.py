"""Syzygy endgame tablebases at the root: rank the root moves with python-chess's ``chess.syzygy``.

The engine asks the tables once, at the root, and searches only the moves that keep the best outcome. With
DTZ tables a won position keeps just the moves with the shortest distance to zeroing: following them
converts within the 50-move rule whatever the search then prefers. This root ranking is Python
(python-chess decompresses the tables itself, about 1-10 ms per legal move on 3-4 men: 20 ms for a typical
root, 250 ms for KQ against a piece); inside the search the compiled probe (``quantfish.tablebase.probe``, reached
through ``Tablebases.compiled``) reads the WDL tables instead.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple

import chess
import chess.syzygy

# Rank tiers, wider than any DTZ (7-man tables stay near 1,100 plies), so that outcomes never overlap:
# win 4T - d, cursed win 2T - d, draw 0, blessed loss -2T + d, loss -4T + d (d: plies to zeroing, 0 for mate).
_TIER = 10_000
_TIER_OF = {2: 4 * _TIER, 1: 2 * _TIER, 0: 0, -1: -2 * _TIER, -2: -4 * _TIER}


# What python-chess raises for a missing table (KeyError) or a damaged one (the others): the tables do not decide.
_NOT_DECIDED = (KeyError, OSError, IndexError, struct.error)


class TablebaseError(ValueError):
    """A SyzygyPath entry that cannot be used; the message names it so that the user can fix the option."""


class RootProbe(NamedTuple):
    """What the tables say at the root: the moves to search and why."""
    moves: list[str]       # UCI moves holding the best outcome, best first
    wdl: int               # root outcome for the side to move: 2 win, 1 cursed win, 0 draw, -1 blessed loss,
    #                        -2 loss (with rule50 False only 2, 0, -2)
    dtz: int | None        # python-chess's DTZ of the root; None when ranked by WDL only
    by_dtz: bool           # True: DTZ tables ranked the moves; False: WDL tables only
    ranks: dict[str, int]  # every legal move's rank, higher is better: > 0 wins, 0 draws, < 0 losses


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _rank(outcome: int, plies: int) -> int:
    """Shorter is better when winning, longer when losing, all draws equal; ``plies`` never crosses a tier."""
    return _TIER_OF[outcome] - _sign(outcome) * plies


def rank_outcome(rank: int) -> tuple[int, int]:
    """(outcome, plies) of a rank: the inverse of the ranking, for a caller that narrows the moves further."""
    for outcome in (2, 1, 0, -1, -2):
        plies = (_TIER_OF[outcome] - rank) * _sign(outcome)
        if outcome == 0 and rank == 0 or outcome != 0 and 0 <= plies < _TIER:
            return outcome, plies
    raise ValueError(f"not a rank: {rank}")


class Tablebases:
    """The Syzygy tables of one SyzygyPath value, opened lazily by one ``chess.syzygy.Tablebase``."""

    def __init__(self, path: str) -> None:
        entries = [] if path.strip() in ("", "<empty>") else [p.strip() for p in path.split(os.pathsep)]
        self.paths: list[str] = [p for p in entries if p]
        for p in self.paths:        # check all first: a bad entry must not leave half the tables open
            if not os.path.exists(p):
                raise TablebaseError(f"SyzygyPath: directory {p!r} does not exist")
            if not os.path.isdir(p):
                raise TablebaseError(f"SyzygyPath: {p!r} is not a directory")
        self._tb = chess.syzygy.Tablebase()
        try:
            for p in self.paths:
                # Two passes tell WDL from DTZ files apart; add_directory only returns their sum.
                self._tb.add_directory(p, load_wdl=True, load_dtz=False)
                self._tb.add_directory(p, load_wdl=False, load_dtz=True)
        except OSError as e:        # unreadable directory
            self._tb.close()
            raise TablebaseError(f"SyzygyPath: cannot read {e.filename or p!r}: {e.strerror or e}") from e
        # Each table sits in the dict under its key and its mirrored key; the same table in two directories once.
        wdl = {t.key for t in self._tb.wdl.values()}
        self.wdl_tables: int = len(wdl)
        self.dtz_tables: int = len({t.key for t in self._tb.dtz.values()})
        self.max_pieces: int = max((len(k) - 1 for k in wdl), default=0)   # "KBNvK": 5 letters minus the v
        self._compiled = None

    def compiled(self):
        """The WDL tables for the search's probes (``quantfish.tablebase.load.CompiledTables``), parsed on first use."""
        if self._compiled is None:
            from quantfish.tablebase.load import CompiledTables
            self._compiled = CompiledTables(self.paths)
        return self._compiled

    def close(self) -> None:
        """Unmap python-chess's table files (the engine reopens a new ``Tablebases`` when SyzygyPath changes).
        The search's mappings (``compiled``) go with this object, when no searcher refers to it any more."""
        self._tb.close()

    def describe(self) -> str:
        """One line for an ``info string``, so that the user sees what was found where."""
        if not self.paths:
            return "no Syzygy tables (SyzygyPath is empty)"
        text = (f"found {self.wdl_tables} WDL and {self.dtz_tables} DTZ tables, up to {self.max_pieces} pieces,"
                f" in {os.pathsep.join(self.paths)}")
        skipped = self._compiled.skipped if self._compiled is not None else []
        if skipped:
            text += f"; not probed, damaged or not tables: {', '.join(skipped)}"
        return text

    def rank_root(self, fen: str, chess960: bool = False, rule50: bool = True,
                  probe_limit: int = 7) -> RootProbe | None:
        """Rank the root moves of ``fen``; None when the tables do not decide it (too many pieces, castling
        rights, no legal move, an invalid position or a table missing for it or a child).

        DTZ tables are used when present; if one the position needs is missing, WDL tables alone rank it.
        ``rule50``: the 50-move rule applies (UCI Syzygy50MoveRule), so the FEN's halfmove clock counts and a
        cursed win is worth a draw (ranked above real draws), a blessed loss too (ranked above real losses).
        An unparsable FEN raises ValueError, as chess.Board does.
        """
        board = chess.Board(fen, chess960=chess960)
        if (chess.popcount(board.occupied) > min(probe_limit, self.max_pieces) or board.castling_rights
                or not board.is_valid() or not any(board.generate_legal_moves())):
            return None
        if self.dtz_tables:
            try:
                return self._rank_dtz(board, rule50)
            except _NOT_DECIDED:    # MissingTableError (a KeyError), or a damaged file: try WDL alone
                pass
        try:
            return self._rank_wdl(board, rule50)
        except _NOT_DECIDED:
            return None

    def _rank_dtz(self, board: chess.Board, rule50: bool) -> RootProbe:
        """Rank by each move's DTZ counted from the root, as the halfmove clock sees it."""
        clock = board.halfmove_clock
        scored: dict[str, tuple[int, int]] = {}
        for move in board.legal_moves:
            zeroing = board.is_zeroing(move)
            board.push(move)
            try:
                if board.is_checkmate():
                    outcome, plies = 2, 0                        # mate ends the game: the best win of all
                elif (rule50 and board.halfmove_clock >= 100) or board.is_stalemate():
                    outcome, plies = 0, 0                        # draw claimable after this move, or stalemate
                else:
                    if zeroing:                                  # the clock restarts: only the child's WDL matters
                        dtz = chess.syzygy.dtz_before_zeroing(-self._tb.probe_wdl(board))
                    else:                                        # one more ply than the child's DTZ
                        child = -self._tb.probe_dtz(board)
                        dtz = child + _sign(child)
                    if dtz == 0:
                        outcome, plies = 0, 0
                    else:
                        plies = abs(dtz)
                        # Converted (or suffered) before the clock reaches 100: a real win (loss); else cursed.
                        real = not rule50 or plies + clock <= 100
                        outcome = _sign(dtz) * (2 if real else 1)
            finally:
                board.pop()
            scored[board.uci(move)] = (outcome, _rank(outcome, plies))
        best = max(rank for _, rank in scored.values())
        # Equal rank keeps all draws, and for wins (losses) only the shortest (longest) way to zeroing.
        return self._result(scored, lambda o, r: r == best, self._tb.probe_dtz(board), True)

    def _rank_wdl(self, board: chess.Board, rule50: bool) -> RootProbe:
        """Rank by the children's WDL only (no DTZ table): every move keeping the best outcome stays.

        The child's WDL assumes its clock at zero, so the root's halfmove clock cannot turn a win cursed here.
        """
        scored: dict[str, tuple[int, int]] = {}
        for move in board.legal_moves:
            board.push(move)
            try:
                if board.is_checkmate():
                    outcome, plies = 2, 0
                elif (rule50 and board.halfmove_clock >= 100) or board.is_stalemate():
                    outcome, plies = 0, 0
                else:
                    outcome, plies = -self._tb.probe_wdl(board), 1
                    if not rule50:                               # a cursed win is a win, a blessed loss a loss
                        outcome = 2 * _sign(outcome)
            finally:
                board.pop()
            scored[board.uci(move)] = (outcome, _rank(outcome, plies))
        best = max(outcome for outcome, _ in scored.values())
        return self._result(scored, lambda o, r: o == best, None, False)

    @staticmethod
    def _result(scored: dict[str, tuple[int, int]], keep, dtz: int | None, by_dtz: bool) -> RootProbe:
        ranks = {uci: rank for uci, (_, rank) in scored.items()}
        order = sorted(scored, key=lambda uci: -ranks[uci])          # stable: ties keep move-generation order
        moves = [uci for uci in order if keep(*scored[uci])]
        return RootProbe(moves, scored[order[0]][0], dtz, by_dtz, ranks)
