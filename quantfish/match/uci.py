"""One UCI engine process behind pipes.

A reader thread turns the engine's stdout into (line, arrival time) items on a queue, so every wait has a
deadline and the time of ``bestmove`` is taken when it arrived, not when the game got round to it. The engine
runs in its own process group (and session): Ctrl-C in the terminal does not reach it, the runner ends it,
and ``kill`` ends whatever it started too.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

MATE_CP = 100_000


class EngineError(Exception):
    """An engine that did not do what UCI asks. ``kind`` names the fault for the tallies."""
    kind = "crash"


class EngineCrash(EngineError):
    """The process ended or its pipes broke."""
    kind = "crash"


class EngineTimeout(EngineError):
    """No answer before the deadline."""
    kind = "hang"


class EngineStartError(EngineError):
    """The engine could not be started up to ``readyok``."""
    kind = "start"


@dataclass
class SearchResult:
    """What one ``go`` produced. ``score`` is centipawns from the mover's side (mates as +-``MATE_CP`` less
    the distance), ``score_text`` the score as the engine gave it (``cp 31``, ``mate -4``)."""
    move: str | None
    seconds: float
    score: int | None = None
    score_text: str | None = None
    depth: int | None = None
    nodes: int | None = None


def parse_info(tokens, result: SearchResult) -> None:
    """Takes depth, nodes and score from an ``info`` line into ``result``; malformed fields are skipped."""
    if len(tokens) > 1 and tokens[1] == "string":
        return
    i = 1
    while i < len(tokens):
        token = tokens[i]
        try:
            if token == "depth":
                result.depth = int(tokens[i + 1])
                i += 2
                continue
            if token == "nodes":
                result.nodes = int(tokens[i + 1])
                i += 2
                continue
            if token == "score" and tokens[i + 1] in ("cp", "mate"):
                value = int(tokens[i + 2])
                if tokens[i + 1] == "cp":
                    result.score = value
                else:
                    result.score = MATE_CP - abs(value) if value > 0 else -(MATE_CP - abs(value))
                result.score_text = f"{tokens[i + 1]} {value}"
                i += 3
                continue
            if token == "pv":
                return
        except (IndexError, ValueError):
            pass
        i += 1


class UciEngine:
    """A UCI engine process. Methods raise ``EngineError`` subclasses; ``kill`` may be called from any thread."""

    def __init__(self, name: str, command, options=()):
        self.name = name
        self.command = list(command)
        self.options = list(options)
        self.id_name: str | None = None
        self.advertised: dict[str, str] = {}
        self.unknown_options: list[str] = []
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False

    # process -----------------------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float) -> None:
        """Starts the process, does the ``uci`` handshake, sets the options and waits for ``readyok``."""
        self.kill()
        if self._closed:
            raise EngineStartError("the match is stopping")
        deadline = time.monotonic() + timeout
        try:
            proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, encoding="utf-8", errors="replace",
                                    bufsize=1, start_new_session=True)
        except (OSError, ValueError) as exc:
            raise EngineStartError(f"cannot run {' '.join(self.command)!r}: {exc.strerror or exc}"
                                   if isinstance(exc, OSError) else str(exc)) from None
        lines: queue.Queue = queue.Queue()
        with self._lock:
            self._proc, self._lines = proc, lines
            closed = self._closed
        if closed:
            self.kill()
            raise EngineStartError("the match is stopping")
        threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True,
                         name=f"uci-{self.name}").start()
        try:
            self.send("uci")
            self.advertised = {}
            while True:
                tokens = self._read(deadline).split()
                if tokens[:1] == ["uciok"]:
                    break
                if tokens[:2] == ["id", "name"]:
                    self.id_name = " ".join(tokens[2:])
                elif tokens[:2] == ["option", "name"]:
                    name = " ".join(tokens[2:tokens.index("type")] if "type" in tokens else tokens[2:])
                    self.advertised[name.lower()] = name
            self.unknown_options = [name for name, _ in self.options if name.lower() not in self.advertised]
            for name, value in self.options:
                self.send(f"setoption name {name} value {value}")
            self.ready(deadline)
        except EngineTimeout:
            self.kill()
            raise EngineStartError(f"no uciok/readyok within {timeout:g} s") from None
        except EngineError as exc:
            self.kill()
            raise EngineStartError(f"{exc} while starting") from None

    def close(self) -> None:
        """Kills the engine for good: a ``start`` running in another thread fails, later ones too."""
        with self._lock:
            self._closed = True
        self.kill()

    def kill(self) -> None:
        """Ends the process and everything in its group at once."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                if hasattr(os, "killpg"):
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.kill()
            except (ProcessLookupError, PermissionError, OSError):
                proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            proc.stdin.close()
        except (OSError, ValueError):
            pass

    def quit(self, grace: float = 1.0) -> None:
        """Asks the engine to quit, then kills it if it has not within ``grace`` seconds."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                self.send("quit")
                proc.wait(timeout=grace)
            except (EngineError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # protocol ----------------------------------------------------------------------------------------------

    def send(self, line: str) -> None:
        proc = self._proc
        if proc is None:
            raise EngineCrash("the engine is not running")
        try:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
        except (OSError, ValueError, AttributeError):
            raise EngineCrash(f"the engine's input is closed (exit status {proc.poll()})") from None

    def _read_stamped(self, deadline: float) -> tuple[str, float]:
        lines = self._lines
        while True:
            left = deadline - time.monotonic()
            try:
                line, stamp = lines.get(timeout=max(left, 0.0)) if left > 0 else lines.get_nowait()
            except queue.Empty:
                raise EngineTimeout("no answer in time") from None
            if line is None:
                lines.put((None, stamp))
                proc = self._proc
                try:
                    status = proc.wait(timeout=0.5) if proc is not None else None
                except subprocess.TimeoutExpired:
                    status = None
                raise EngineCrash(f"the engine exited (status {status})" if status is not None
                                  else "the engine closed its output")
            return line, stamp

    def _read(self, deadline: float) -> str:
        return self._read_stamped(deadline)[0]

    def ready(self, deadline: float) -> None:
        """``isready`` and wait for ``readyok`` (other lines are skipped)."""
        self.send("isready")
        while self._read(deadline).strip() != "readyok":
            pass

    def new_game(self, timeout: float) -> None:
        self._drain()
        self.send("ucinewgame")
        self.ready(time.monotonic() + timeout)

    def _drain(self) -> None:
        """Drops lines left over from an earlier search (a late ``info``, a second ``bestmove``)."""
        while True:
            try:
                line, stamp = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._lines.put((None, stamp))
                return

    def search(self, position: str, go: str, deadline: float, on_info=None) -> SearchResult:
        """Sends ``position`` and ``go`` and reads up to ``bestmove``; time is counted from sending ``go`` to
        the arrival of ``bestmove``. Raises ``EngineTimeout`` at ``deadline`` (the engine keeps running).
        ``on_info(tokens, seconds)``, when given, sees each ``info`` line with its arrival since ``go``."""
        self._drain()
        self.send(position)
        start = time.monotonic()
        self.send(go)
        result = SearchResult(move=None, seconds=0.0)
        while True:
            line, stamp = self._read_stamped(deadline)
            tokens = line.split()
            if not tokens:
                continue
            if tokens[0] == "info":
                parse_info(tokens, result)
                if on_info is not None:
                    on_info(tokens, stamp - start)
            elif tokens[0] == "bestmove":
                result.move = tokens[1] if len(tokens) > 1 else None
                result.seconds = stamp - start
                return result


def _read_lines(stream, lines: queue.Queue) -> None:
    """Reads until end of file; the stream is closed here, never by another thread, so closing cannot wait on
    a blocked read."""
    try:
        for line in stream:
            lines.put((line.rstrip("\r\n"), time.monotonic()))
    except (OSError, ValueError):
        pass
    finally:
        lines.put((None, time.monotonic()))
        try:
            stream.close()
        except (OSError, ValueError):
            pass
