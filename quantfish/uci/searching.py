"""The thread that runs every search of a UCI session, and the ``bestmove`` it ends with.

One worker thread takes the searches from a queue (no thread to start per move). ``go`` returns at once; the
UCI loop stays free to answer ``stop``, ``ponderhit`` and ``isready``. In ponder and infinite mode the
``bestmove`` waits for ``stop`` or ``ponderhit``, as the protocol asks. The clock of a search counts from when
its ``go`` was read.
"""
from __future__ import annotations

import dataclasses
import queue
import random
import sys
import threading
import time
import traceback


class SearchThread:
    def __init__(self, send, info_string):
        self._send = send
        self._info_string = info_string
        self._thread = None
        self._jobs = None
        self._idle = threading.Event()
        self._idle.set()
        self._done = True
        self.pondering = False
        self._ponder_release = threading.Event()
        self.clock = None
        self.limits = None
        self._started = 0.0
        self._clock_record = None
        self._rng = random.Random()  # draws a weakened search's move (Skill Level, UCI_Elo)

    def searching(self) -> bool:
        """True until the search has decided its best move (its thread may still be finishing)."""
        return self._thread is not None and self._thread.is_alive() and not self._done

    def wait_idle(self):
        """Waits until the last search has sent its ``bestmove``."""
        self._idle.wait()

    def start(self, state, options, limits, received):
        """Starts searching ``state``'s position under ``limits``; ``received`` is when ``go`` was read."""
        from quantfish.search.timeman import Clock
        board = state.board
        self._idle.wait()             # the previous search has sent its bestmove
        self.limits = limits
        self.pondering = limits.ponder
        self._ponder_release.clear()
        remaining, inc = (limits.wtime, limits.winc) if board.side == 0 else (limits.btime, limits.binc)
        if not limits.ponder:
            state.lag.before_search(state.game_id, state.ply, board.side, remaining, inc)
        self._started = received
        self.clock = Clock.for_limits(limits, board.side, state.lag.overhead(options.value("Move Overhead")),
                                      received, board.game_ply, options.value("Ponder"))
        self._clock_record = (state.game_id, state.ply, board.side, remaining, inc, limits.ponder)
        if self._thread is None:
            self._jobs = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._work, daemon=True, name="quantfish-search")
            self._thread.start()
        self._done = False
        self._idle.clear()
        searcher = state.searcher
        searcher.set_tablebases(state.tablebases, options.value("Syzygy50MoveRule"),
                                options.value("SyzygyProbeLimit"), options.value("SyzygyProbeDepth"))
        searcher.clear_stop()   # here, not in the worker: a stop that comes before it starts still counts
        self._jobs.put((state, options, board, list(state.game_keys), limits))

    def stop(self, searcher):
        """Stops the search (if any) and waits for its ``bestmove``."""
        if searcher is not None:
            searcher.stop()
        self._ponder_release.set()
        self._idle.wait()

    def ponderhit(self, state, options, received):
        """The opponent played the move pondered on: the search goes on, now on its own clock."""
        if not self.searching() or not self.pondering:
            return
        from quantfish.search.timeman import Clock
        self.limits.ponder = False
        fresh = Clock.for_limits(self.limits, state.board.side, state.lag.overhead(options.value("Move Overhead")),
                                 received, state.board.game_ply, options.value("Ponder"))
        self.clock.rebase(fresh)
        state.searcher.arm(self.clock)
        self.pondering = False
        self._ponder_release.set()

    def _work(self):
        while True:
            job = self._jobs.get()
            try:
                self._search(*job)
            finally:
                self._done = True
                self._idle.set()

    def _search(self, state, options, board, keys, limits):
        from quantfish.core.notation import move_to_uci
        from quantfish.search.driver import score_to_uci, score_to_wdl
        from quantfish.search.skill import MULTIPV as SKILL_MULTIPV
        from quantfish.search.skill import Skill
        searcher = state.searcher
        chess960 = options.value("UCI_Chess960") or board.chess960
        show_wdl = options.value("UCI_ShowWDL")
        ply = board.game_ply

        def on_info(depth, seldepth, multipv, score, nodes, time_ms, nps, hashfull, tbhits, pv):
            wdl = f" wdl {' '.join(map(str, score_to_wdl(score, ply)))}" if show_wdl else ""
            self._send(f"info depth {depth} seldepth {seldepth} multipv {multipv} score {score_to_uci(score)}{wdl} "
                       f"nodes {nodes} nps {nps} hashfull {hashfull} tbhits {tbhits} time {time_ms} pv "
                       + " ".join(move_to_uci(m, chess960) for m in pv))

        best = ponder = None
        skill = Skill.from_options(options.value("Skill Level"), options.value("UCI_LimitStrength"),
                                   options.value("UCI_Elo"))
        multipv, search_limits = options.value("MultiPV"), limits
        if skill.enabled:       # a shallow search that keeps a few lines to choose a weaker move from
            search_limits = dataclasses.replace(limits, depth=min(limits.depth or skill.depth, skill.depth))
            multipv = max(multipv, SKILL_MULTIPV)
        try:
            best, ponder, lines = searcher.think(board, keys, search_limits, multipv, self.clock, on_info,
                                                 reset_stop=False)
            if skill.enabled and lines:
                move = skill.pick(lines, self._rng)
                chosen = next(line for line in lines if line.moves[0] == move)
                best, ponder = chosen.moves[0], (chosen.moves[1] if len(chosen.moves) > 1 else None)
        except Exception as exc:
            self._info_string(f"search error: {type(exc).__name__}: {exc}")
            print(traceback.format_exc(), file=sys.stderr)
        # In ponder and infinite mode the GUI must say stop (or ponderhit) before bestmove; both set the event.
        if limits.infinite or self.pondering:
            while not searcher.stopped and not self._ponder_release.is_set():
                self._ponder_release.wait(0.1)
        text = "bestmove 0000"
        if best:
            text = f"bestmove {move_to_uci(best, chess960)}"
            if ponder:
                text += f" ponder {move_to_uci(ponder, chess960)}"
        # Before bestmove goes out: the GUI's next go may follow at once.
        game, ply, side, remaining, inc, pondered = self._clock_record
        used_ms = None if pondered else (time.monotonic_ns() - self._started) / 1e6
        state.lag.after_search(game, ply, side, remaining, inc, used_ms)
        self._done = True
        self._send(text)
