"""The UCI loop: reads commands, hands each to its handler, and keeps one line of output per answer.

Only standard-library modules and the option table are imported before ``uciok``, so that ``uci`` is answered at
once; the nets and the compiled code load in the background (``quantfish.uci.state``) and are ready before
``readyok``. Every command is handled inside a guard: a bad command gets one ``info string`` line and the
previous state stays as it was; an unexpected error is reported the same way, with its traceback on stderr,
never on stdout. Searches run in their own thread (``quantfish.uci.searching``).
"""
from __future__ import annotations

import io
import sys
import threading
import time
import traceback

from quantfish._version import __version__
from quantfish.uci.limits import BENCH_MAX_DEPTH, PERFT_MAX_DEPTH
from quantfish.uci.options import option_table
from quantfish.uci.parse import UciError, int_arg, parse_go, parse_position, parse_setoption
from quantfish.uci.searching import SearchThread
from quantfish.uci.state import EngineState

ENGINE_NAME = f"Quantfish {__version__}"
ENGINE_AUTHOR = "the Quantfish developers"


class UciEngine:
    def __init__(self, out=None, net=None, net_small=None):
        self._out = out or self._stdout
        self._lock = threading.Lock()
        self.options = option_table(self)
        # Command-line --net / --net-small set the start-up values of EvalFile / EvalFileSmall.
        if net:
            self.options["evalfile"].value = net
        if net_small:
            self.options["evalfilesmall"].value = net_small
        self.state = EngineState()
        self.search = SearchThread(self.send, self.info_string)
        self._announced = False
        self._received = 0.0       # when the command being handled was read: deadlines count from there

    # -- output -------------------------------------------------------------------------------

    @staticmethod
    def _stdout(line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def send(self, line):
        with self._lock:
            self._out(line)

    def info_string(self, text):
        # The text may echo the GUI's input: control characters (NUL, escape sequences, line breaks) are written
        # escaped (\\x00), so that each info string is one printable line.
        self.send("info string " + "".join(c if c.isprintable() else repr(c)[1:-1] for c in text))

    # -- start-up -----------------------------------------------------------------------------

    def start_loading(self):
        o = self.options
        self.state.start_loading(o.value("EvalFile"), o.value("EvalFileSmall"), o.value("NNUE Path"),
                                 o.value("Hash"), o.value("Threads"))

    def ensure_ready(self):
        self.start_loading()
        self.state.wait_ready()

    # -- commands -----------------------------------------------------------------------------

    def handle(self, line):
        """Handles one command line; returns False on quit."""
        self._received = time.monotonic_ns()
        tokens = line.strip().split()
        if not tokens:
            return True
        cmd, args = tokens[0], tokens[1:]
        try:
            if cmd == "quit":
                self.cmd_stop()
                return False
            handler = getattr(self, "cmd_" + cmd, None) if cmd.isidentifier() else None
            if handler is None:
                raise UciError(f"unknown command: {line.strip()}")
            handler(args)
        except UciError as exc:
            self.info_string(str(exc))
        except Exception as exc:  # a bug must not kill the loop nor reach stdout as a traceback
            self.info_string(f"error: {type(exc).__name__}: {exc}")
            print(traceback.format_exc(), file=sys.stderr)
        return True

    def cmd_uci(self, args):
        self.send(f"id name {ENGINE_NAME}")
        self.send(f"id author {ENGINE_AUTHOR}")
        self.send("")
        for opt in self.options.values():
            self.send(opt.describe())
        self.send("uciok")
        self.start_loading()

    def cmd_isready(self, args):
        self.start_loading()
        self.state.ready.wait()
        if self.state.init_error:
            self.info_string(f"engine not ready: {self.state.init_error}")
        self.send("readyok")

    def cmd_debug(self, args):
        pass

    def cmd_register(self, args):
        pass

    def cmd_setoption(self, args):
        name, value = parse_setoption(args)
        opt = self.options.get(name.lower())
        if opt is None:
            raise UciError(f"unknown option: {name}")
        if self.search.searching():
            raise UciError(f"cannot change {opt.name} during a search")
        if opt.name == "SyzygyPath" and not value:
            value = "<empty>"                      # as Stockfish: an empty value turns the tables off
        opt.set(value)

    def cmd_ucinewgame(self, args):
        self.ensure_ready()
        if not self.search.searching():
            self.state.searcher.clear()
        self.state.lag.reset()

    def cmd_position(self, args):
        self.ensure_ready()
        from quantfish.core.fen import STARTING_FEN
        fen, moves = parse_position(args, STARTING_FEN)
        self.state.set_position(fen, self.options.value("UCI_Chess960"), moves)

    def cmd_d(self, args):
        self.ensure_ready()
        from quantfish.core.types import PIECE_LETTERS
        from quantfish.search.driver import board_key
        b = self.state.board
        self.send("")
        for rank in range(7, -1, -1):
            self.send(" +---+---+---+---+---+---+---+---+")
            self.send(" | " + " | ".join(PIECE_LETTERS[int(b.board[rank * 8 + f])] for f in range(8)) + f" | {rank + 1}")
        self.send(" +---+---+---+---+---+---+---+---+")
        self.send("   a   b   c   d   e   f   g   h")
        self.send("")
        self.send(f"Fen: {b.fen()}")
        self.send(f"Key: {int(board_key(b)):016X}")

    def cmd_eval(self, args):
        self.ensure_ready()
        from quantfish.nnue.formulas import eval_report, eval_report_pair
        from quantfish.uci.evaltext import format_human, format_human_pair
        s, b = self.state, self.state.board
        if s.net_small is not None:
            report = eval_report_pair(s.net, s.net_small, b.board, b.side, b.halfmove)
            text = format_human_pair(report, b.side, b.board, (s.net.arch.l1, s.net_small.arch.l1))
        else:
            text = format_human(eval_report(s.net, b.board, b.side, b.halfmove), b.side, 0, s.net)
        for line in text.splitlines():
            self.send(line)

    def cmd_bench(self, args):
        self.ensure_ready()
        if self.search.searching():      # the bench would search with the searcher the search thread is using
            raise UciError("already searching; send stop first")
        from quantfish.search.bench import run_bench
        depth = int_arg(args[0], "bench depth", 1, BENCH_MAX_DEPTH) if args else None
        run_bench(self.state.searcher, depth, self.send)

    def cmd_go(self, args):
        perft = bool(args) and args[0] == "perft"
        try:
            self.ensure_ready()
        except UciError as exc:
            if perft:
                raise
            # A GUI waits for bestmove after go: with no net to search with, say why and answer at once (the
            # null move, as for a position without moves) rather than leave it waiting for a move that never comes.
            self.info_string(str(exc))
            self.send("bestmove 0000")
            return
        if self.search.searching():
            raise UciError("already searching; send stop first")
        if perft:
            self._go_perft(args[1:])
            return
        from quantfish.core.notation import parse_uci_move
        from quantfish.search.driver import Limits
        board = self.state.board
        chess960 = self.options.value("UCI_Chess960") or board.chess960
        limits = parse_go(args, Limits(), lambda text: parse_uci_move(board, text, chess960))
        if not self._announced:
            # Like Stockfish's first-search note: which net and which evaluation path are live.
            self.info_string(f"NNUE evaluation using {self.state.net_text}; "
                             f"{self.state.searcher.kernel.info_string()}")
            self._announced = True
        self.search.start(self.state, self.options, limits, self._received)

    def _go_perft(self, args):
        if not args:
            raise UciError("go perft needs a depth")
        depth = int_arg(args[0], "go perft depth", 0, PERFT_MAX_DEPTH)
        import numpy as np

        from quantfish.core.movegen import MAX_MOVES
        from quantfish.core.notation import move_to_uci
        from quantfish.core.perft import perft_divide
        b = self.state.board
        moves = np.empty(MAX_MOVES, np.int32)
        counts = np.empty(MAX_MOVES, np.int64)
        n = perft_divide(self.state.searcher.T, b.bb, b.board, b.st, max(depth, 1), moves, counts)
        chess960 = self.options.value("UCI_Chess960") or b.chess960
        for i in range(n):
            self.send(f"{move_to_uci(moves[i], chess960)}: {int(counts[i])}")
        self.send("")
        self.send(f"Nodes searched: {int(counts[:n].sum()) if depth > 0 else 1}")

    def cmd_stop(self, args=None):
        self.search.stop(self.state.searcher)

    def cmd_ponderhit(self, args=None):
        self.search.ponderhit(self.state, self.options, self._received)

    # -- what a new option value changes ------------------------------------------------------

    def on_threads(self, opt, value):
        searcher = self.state.loaded_searcher()
        if searcher is not None:
            searcher.set_threads(value)

    def on_hash(self, opt, value):
        searcher = self.state.loaded_searcher()
        if searcher is not None:
            searcher.resize(value)

    def on_clear_hash(self, opt, value):
        self.ensure_ready()
        self.state.searcher.clear()

    def on_nnue_path(self, opt, value):
        self.ensure_ready()
        kernel = self.state.searcher.set_kernel(None if value == "auto" else value)
        self.info_string(kernel.info_string())

    def on_syzygy_path(self, opt, value):
        try:
            self.info_string(self.state.open_tablebases(value))
        except UciError as exc:
            raise UciError(f"{exc}; keeping SyzygyPath {opt.value}") from None

    def on_eval_file(self, opt, value):
        """``EvalFile`` / ``EvalFileSmall``: the nets change when the files named by both options load (and form
        a pair when the main net is a 17.1 big net); the option keeps the value either way."""
        from quantfish.nnue.locate import SMALL_NET_NAME
        self.start_loading()
        s = self.state
        s.ready.wait()        # not ensure_ready: after a start-up load that failed, naming a net is the way out
        main_value = value if opt.name == "EvalFile" else self.options.value("EvalFile")
        small_value = value if opt.name == "EvalFileSmall" else self.options.value("EvalFileSmall")
        opt.value = value
        if opt.name == "EvalFileSmall" and s.searcher is not None and s.small_net_is_ignored(main_value):
            self.info_string(f"EvalFileSmall {value!r} ignored: the main net {s.net.path} is a Stockfish "
                             f"{s.net.arch.generation_name} net, evaluated alone (a small net pairs only "
                             f"with a Stockfish 17.1 big net)")
            return
        try:
            s.load_nets(main_value, small_value, self.options.value("NNUE Path"), self.options.value("Hash"),
                        self.options.value("Threads"))
        except (OSError, ValueError) as exc:
            kept = f"keeping the previous net ({s.net_text})" if s.searcher is not None else "no net loaded"
            raise UciError(f"{opt.name} {value!r} not loaded, {kept}: {exc}") from None
        if s.init_error is not None:               # the engine is ready now: warm it as the start-up load would
            from quantfish.search.warm import warm_for_play
            warm_for_play(s.searcher)
            s.init_error = None
        self._announced = False
        text = f"NNUE evaluation using {s.net_text}"
        if s.net_small is None and small_value != SMALL_NET_NAME:
            text += f"; EvalFileSmall {small_value!r} ignored (the main net is not a Stockfish 17.1 big net)"
        self.info_string(text)


def _stdin_lines():
    """stdin's lines decoded as UTF-8 whatever the locale, an undecodable byte replaced by U+FFFD (so that a
    stray byte from the GUI gets an info string instead of ending the loop); line ends as before (\\n, \\r\\n
    or \\r). stdout is written as UTF-8 too, so that an echoed character never fails to encode."""
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")


def run_uci(stream=None, net=None, net_small=None):
    engine = UciEngine(net=net, net_small=net_small)
    stream = stream or _stdin_lines()
    for line in stream:
        if not engine.handle(line):
            break
    engine.cmd_stop()
