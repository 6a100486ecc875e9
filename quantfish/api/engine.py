"""The engine as a Python library, in python-chess's types: ``Engine`` (evaluate, analyse, play) and ``perft``.

    import chess, chess.engine
    from quantfish import Engine, perft
    with Engine() as quantfish:
        info = quantfish.analyse(chess.Board(), chess.engine.Limit(depth=12))   # info["score"], info["pv"]
    perft("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 3)   # 97862

Scores, moves and info dicts are python-chess's own types, as ``chess.engine.SimpleEngine`` returns them, so
code written for an external UCI engine runs in-process with Quantfish. Errors are python's and the engine's
own: ``ValueError`` subclasses (``quantfish.core.fen.FenError``, ``quantfish.nnue.io.stockfish.NetFileError``,
``quantfish.nnue.loader.NetPairError``) with the reason in the message.
"""
from __future__ import annotations

import os
import threading
from typing import Optional, Union

import chess
import chess.engine

from quantfish.core.fen import Board
from quantfish.core.perft import perft as _perft
from quantfish.api.pychess import FenOrBoard, game_of, position_of, to_limits, to_move, to_pv, to_score
from quantfish.search.driver import Searcher
from quantfish.core.tables import tables
from quantfish.search.timeman import Clock
from quantfish.nnue.formulas import EvalReport, PairReport, eval_report, eval_report_pair
from quantfish.nnue.net import Net
from quantfish.nnue.loader import NetPair, load_nets
from quantfish.nnue.units import cp_15, to_cp, wdl_a

NetPath = Union[str, os.PathLike]
Report = Union[EvalReport, PairReport]


class Engine:
    """One net (or a Stockfish 17.1 pair) and one searcher with its hash table, kept across calls.

    ``net``: a net file (or a directory holding the default name); ``None`` looks in $QUANTFISH_NET, then
    ``nets/``. A Stockfish 17.1 big net needs its small net: ``small_net``, else the default small net's name
    next to it. ``hash_mb``: the transposition table size. ``kernel``: the evaluation path, ``"auto"``,
    ``"c"`` or ``"numba"`` (``None``: $QUANTFISH_KERNEL, else auto). Net problems raise ``NetFileError`` /
    ``NetPairError`` (``ValueError``s) naming the file and the reason.

    Searches share the hash table (call ``clear()`` between unrelated games) and run one at a time: a lock
    makes concurrent calls from several threads wait for each other.
    """

    def __init__(self, net: Optional[NetPath] = None, small_net: Optional[NetPath] = None, hash_mb: int = 16,
                 kernel: Optional[str] = None) -> None:
        if int(hash_mb) < 1:
            raise ValueError(f"hash_mb must be at least 1, got {hash_mb}")
        self._lock = threading.Lock()
        self._nets: Optional[Union[Net, NetPair]] = load_nets(net, small_net)
        self._searcher: Optional[Searcher] = Searcher(self._nets, int(hash_mb), kernel)

    # -- life cycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Let go of the nets and the hash table (hundreds of MB with big nets); later calls raise."""
        with self._lock:
            self._nets = self._searcher = None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Engine {self.description if self._searcher else 'closed'}>"

    def _live(self) -> Searcher:
        if self._searcher is None:
            raise RuntimeError("this Engine is closed")
        return self._searcher

    @property
    def description(self) -> str:
        """Which net(s) evaluate and how, as the UCI ``info string`` says it."""
        return self._live().describe_nets()

    def clear(self) -> None:
        """Forget what earlier searches learnt (hash table, histories), as UCI's ``ucinewgame``."""
        with self._lock:
            self._live().clear()

    # -- static evaluation --------------------------------------------------------------------

    def _report(self, position: FenOrBoard, optimism: int) -> tuple[Report, Board]:
        """The eval command's computation (``quantfish.cli.eval``): the nnue report of one position."""
        nets = self._nets
        if nets is None:
            raise RuntimeError("this Engine is closed")
        pos = position_of(position)
        if isinstance(nets, NetPair):
            report = eval_report_pair(nets.big, nets.small, pos.board, pos.side, pos.halfmove, optimism)
        else:
            report = eval_report(nets, pos.board, pos.side, pos.halfmove, optimism)
        return report, pos

    def eval_report(self, position: FenOrBoard, *, optimism: int = 0) -> Report:
        """Every integer of the static evaluation, side to move's view, in internal units (not centipawns).

        A Stockfish 15.1 net gives ``quantfish.nnue.formulas.EvalReport`` (``bucket``, ``psqt`` and ``positional`` of
        all 8 buckets, ``nnue_raw``, ``nnue_adjusted``, ``complexity``, ``final``, ``pieces``, ``npm``); a 17.1
        pair gives ``quantfish.nnue.formulas.PairReport`` (both nets' buckets, ``used_net``, ``nnue``, ``final``, ...).
        These are the values of ``quantfish eval --json``. ``position``: a FEN or a chess.Board.
        """
        return self._report(position, optimism)[0]

    def evaluate(self, position: FenOrBoard, *, optimism: int = 0) -> int:
        """The static evaluation in centipawns from the side to move's view: the "Final evaluation" that
        ``quantfish eval`` prints (there in pawns and from White's view). ``position``: a FEN or a chess.Board.
        """
        report, pos = self._report(position, optimism)
        if isinstance(report, PairReport):
            return to_cp(report.final, wdl_a(pos.board))
        return cp_15(report.final)

    # -- search -------------------------------------------------------------------------------

    def _search(self, board: chess.Board, limit: chess.engine.Limit,
                multipv: int) -> tuple[Optional[chess.Move], list[chess.engine.InfoDict]]:
        """Searches ``board`` (with its move stack); returns the best move and one info dict per line."""
        if int(multipv) < 1:
            raise ValueError(f"multipv must be at least 1, got {multipv}")
        pos, keys = game_of(board)
        limits = to_limits(limit, board.turn)
        latest: dict[int, chess.engine.InfoDict] = {}

        def on_info(depth, seldepth, multipv, score, nodes, time_ms, nps, hashfull, tbhits, pv):
            latest[multipv] = {"multipv": multipv, "depth": depth, "seldepth": seldepth, "nodes": nodes,
                               "time": time_ms / 1000, "nps": nps, "hashfull": hashfull,
                               "score": to_score(score, board.turn), "pv": to_pv(board, pv)}

        with self._lock:
            searcher = self._live()
            clock = Clock.for_limits(limits, pos.side, 0, ply=pos.game_ply)
            best, _, _ = searcher.think(pos, keys, limits, int(multipv), clock, on_info)
        if not best:                   # no legal move: python-chess's engines report mate 0 or cp 0
            score = chess.engine.Mate(0) if board.is_check() else chess.engine.Cp(0)
            return None, [{"depth": 0, "nodes": 0, "score": chess.engine.PovScore(score, board.turn), "pv": []}]
        best_move = to_move(board, best)
        # Stopped (node or time limit) before the first iteration finished: the move, nothing measured.
        return best_move, [latest[k] for k in sorted(latest)] or [{"pv": [best_move]}]

    def analyse(self, board: chess.Board, limit: chess.engine.Limit,
                multipv: Optional[int] = None) -> Union[chess.engine.InfoDict, list[chess.engine.InfoDict]]:
        """Search ``board`` (its move stack counts for repetitions; it is not modified) within ``limit``.

        Returns python-chess's info dict: ``score`` (``PovScore`` of the side to move, ``Cp`` or ``Mate``),
        ``pv`` (legal chess.Moves from ``board``), ``depth``, ``seldepth``, ``nodes``, ``time`` (seconds),
        ``nps``, ``hashfull``, ``multipv``: all of the last iteration, as the UCI ``info`` line says them. With
        ``multipv`` a number, a list of such dicts, best first. ``limit`` may set ``depth``, ``nodes``,
        ``time`` (per move), ``mate`` (stop when a mate in that many moves is found; bound it with depth or
        time too), and the game clock (``white_clock``, ``black_clock``, increments, ``remaining_moves``).
        """
        infos = self._search(board, limit, 1 if multipv is None else multipv)[1]
        return infos[0] if multipv is None else infos

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """The best move in ``board`` (searched with its move stack, not modified) within ``limit`` (see
        ``analyse``). A position without legal moves raises ``ValueError``."""
        best, _ = self._search(board, limit, 1)
        if best is None:
            raise ValueError(f"no legal move in {board.fen()}: {'checkmate' if board.is_check() else 'stalemate'}")
        return best


def perft(fen: Optional[FenOrBoard] = None, depth: int = 1) -> int:
    """The number of leaves of the legal move tree ``depth`` plies deep (1 at depth 0), the standard check of a
    move generator. ``fen``: a FEN, a chess.Board (its current position), or ``None`` for the start position.
    A bad FEN raises ``quantfish.core.fen.FenError`` (a ``ValueError``) with the parser's reason."""
    if int(depth) != depth or depth < 0:
        raise ValueError(f"perft depth must be a non-negative integer, got {depth!r}")
    pos = position_of(fen)
    return int(_perft(tables(), pos.bb, pos.board, pos.st, int(depth)))


__all__ = ["Engine", "perft"]
