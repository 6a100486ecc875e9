"""The engine as a subprocess behind BINARY pipes, for tests that send arbitrary bytes (tests/test_uci_fuzz.py,
tests/test_netfile_fuzz.py): what a GUI or a broken GUI may write, and every byte the engine writes back.

``output_problem`` is the grammar of what the engine may print on stdout: UCI's replies and the text of its
own commands (``d``, ``eval``, ``go perft``, ``bench``), each line valid UTF-8 and printable.
"""
import os
import queue
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ENGINE = [sys.executable, "-m", "quantfish.cli.main"]

_MOVE = r"[a-h][1-8][a-h][1-8][qrbn]?"
_NUM = r"-?\d+"
STDOUT_GRAMMAR = [re.compile(p) for p in (
    r"",
    r"id (name|author) \S.*",
    r"option name \S.* type (spin default -?\d+ min -?\d+ max -?\d+|check default (true|false)|button"
    r"|string default \S.*|combo default \S+( var \S+)+)",
    r"uciok", r"readyok",
    r"info string \S.*",
    rf"info depth \d+ seldepth \d+ multipv \d+ score (cp|mate) {_NUM}( wdl \d+ \d+ \d+)? nodes \d+ nps \d+ "
    rf"hashfull \d+ tbhits \d+ time \d+ "
    rf"pv(( {_MOVE})+| )",
    rf"bestmove (0000|{_MOVE})( ponder {_MOVE})?",
    # d
    r" \+(---\+){8}", r" \|( [ PNBRQKpnbrqk] \|){8} [1-8]", r"   a   b   c   d   e   f   g   h",
    r"Fen: \S+ [wb] \S+ \S+ \d+ \d+", r"Key: [0-9A-F]{16}",
    # eval
    r" NNUE network contributions \((White|Black) to move\).*", r"\+(-+\+)+", r"\|.*\|.*",
    r"(NNUE|Final) evaluation +[-+]\d+\.\d\d \(white side\).*", r"Net used +\S.*",
    r"Quantisation +\S+, (floor|nearest) rounding, activations 0\.\.(127|255) \(.+\)",
    # go perft
    rf"{_MOVE}: \d+", r"Nodes searched: \d+",
    # bench
    r"Position: \d+/\d+ \(.+\): \d+ nodes", r"=+", r"Total time \(ms\) : \d+", r"Nodes searched  : \d+",
    r"Nodes/second    : \d+",
)]


def output_problem(raw: bytes):
    """None if ``raw`` (one stdout line without its newline) is something the engine may print, else why not."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc})"
    if "Traceback" in line or 'File "' in line:
        return "a traceback on stdout"
    if not line.isprintable():
        return "control or unprintable characters"
    if line.startswith(("info string error:", "info string search error:")):
        return "an unexpected exception, caught by the loop's last-resort guard"
    if not any(p.fullmatch(line) for p in STDOUT_GRAMMAR):
        return "not UCI output"
    return None


def command_lines(data: bytes):
    """The command lines the engine sees in ``data``: UTF-8 (undecodable bytes replaced), split at \\n, \\r\\n
    and \\r as Python's text streams split them, as tokens."""
    text = data.decode("utf-8", errors="replace")
    return [part.split() for part in re.split(r"\r\n|\r|\n", text)]


class Engine:
    """A running engine; stdout is collected line by line (bytes) by a thread, stderr in full."""

    def __init__(self, args=(), env=None):
        self.p = subprocess.Popen(ENGINE + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=ROOT, env=env)
        self.lines = queue.Queue()
        self._stderr = []
        self._outbox = queue.Queue()
        self._write_error = None
        threading.Thread(target=self._write, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for raw in iter(self.p.stdout.readline, b""):
            self.lines.put(raw[:-1] if raw.endswith(b"\n") else raw)
        self.lines.put(None)

    def _read_stderr(self):
        for chunk in iter(lambda: self.p.stderr.read1(65536), b""):
            self._stderr.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", errors="replace")

    def alive(self) -> bool:
        return self.p.poll() is None

    def _write(self):
        while (data := self._outbox.get()) is not None:
            try:
                self.p.stdin.write(data)
                self.p.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self._write_error = exc
                return

    def send(self, data: bytes):
        """Queue ``data`` for the engine's stdin (written by a thread: an engine that stops reading must not
        block the test, whose reads time out instead)."""
        if self._write_error is not None:
            raise AssertionError(f"cannot write to the engine ({self._write_error}): exit code {self.p.poll()}; "
                                 f"stderr:\n{self.stderr[-3000:]}")
        self._outbox.put(data)

    def line(self, timeout):
        """The next stdout line (bytes); AssertionError if the engine ended or said nothing in time."""
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout} s") from None
        if raw is None:
            self.lines.put(None)
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            raise AssertionError(f"the engine exited (code {self.p.poll()}); stderr:\n{self.stderr[-3000:]}")
        return raw

    def until(self, want: bytes, timeout=30.0, prefix=False):
        """Lines up to and including the first equal to (or, with ``prefix``, starting with) ``want``."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {want!r} within {timeout} s; got {got[-20:]}")
            try:
                raw = self.line(left)
            except AssertionError as exc:
                raise AssertionError(f"waiting for {want!r}: {exc}; got {got[-20:]}") from None
            got.append(raw)
            if raw == want or (prefix and raw.startswith(want)):
                return got

    def sync(self, timeout=30.0):
        """``isready``; the lines before ``readyok``."""
        self.send(b"isready\n")
        return self.until(b"readyok", timeout)[:-1]

    def start(self, timeout=120.0):
        """``uci`` and ``isready`` answered (the net loaded)."""
        self.send(b"uci\n")
        self.until(b"uciok", timeout)
        self.sync(timeout)
        return self

    def quit(self, timeout=10.0):
        """``quit``; the exit code (None if the engine had to be killed)."""
        try:
            self.send(b"quit\n")
        except AssertionError:
            pass
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def traceback_count(text: str) -> int:
    return text.count("Traceback (most recent call last)")
