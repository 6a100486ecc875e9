"""The UCI loop: parses commands, keeps the game state and runs searches in a worker thread.

Only standard-library modules are imported at the top so that ``uci`` is answered at once; the
engine (Numba code, the net) is loaded in the background and is ready before ``readyok``.
Every command is handled inside a guard: a bad command gets one ``info string`` line and the
previous state stays as it was.
"""
import io
import os
import random
import sys
import threading
import time
import traceback

from uci.limits import BENCH_MAX_DEPTH, PERFT_MAX_DEPTH
from nnue.netpath import DEFAULT_NET_NAME as DEFAULT_NET
from nnue.netpath import SMALL_NET_NAME as DEFAULT_NET_SMALL

ENGINE_NAME = "Quantfish 0.1"
ENGINE_AUTHOR = "the Quantfish developers"


class UciError(Exception):
    """A command that cannot be carried out; its text goes to the GUI as an info string."""


GO_VALUE_MAX = 2**31 - 1  # go's numbers are capped here (times in ms: 24 days) ...
GO_NODES_MAX = 2**62      # ... and nodes here


def _int_arg(text, what, lo, hi=None):
    """``text`` as an integer in lo..hi (no upper bound when hi is None), else UciError."""
    try:
        value = int(text)
    except ValueError:
        raise UciError(f"{what} must be an integer, got {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        raise UciError(f"{what} must be {'at least ' + str(lo) if hi is None else f'between {lo} and {hi}'}, "
                       f"got {value}")
    return value


class Option:
    def __init__(self, name, kind, default=None, lo=None, hi=None, choices=()):
        self.name, self.kind, self.default, self.lo, self.hi = name, kind, default, lo, hi
        self.choices = choices
        self.value = default

    def describe(self):
        text = f"option name {self.name} type {self.kind}"
        if self.kind == "spin":
            text += f" default {self.default} min {self.lo} max {self.hi}"
        elif self.kind == "check":
            text += f" default {'true' if self.default else 'false'}"
        elif self.kind == "string":
            text += f" default {self.default}"
        elif self.kind == "combo":
            text += f" default {self.default}" + "".join(f" var {c}" for c in self.choices)
        return text

    def parse(self, text):
        if self.kind == "spin":
            try:
                v = int(text)
            except (TypeError, ValueError):
                raise UciError(f"option {self.name} needs an integer, got {text!r}") from None
            if not self.lo <= v <= self.hi:
                raise UciError(f"option {self.name} must be between {self.lo} and {self.hi}, got {v}")
            return v
        if self.kind == "check":
            if text is None or text.lower() not in ("true", "false"):
                raise UciError(f"option {self.name} needs true or false, got {text!r}")
            return text.lower() == "true"
        if self.kind == "combo":
            for c in self.choices:
                if text is not None and text.lower() == c.lower():
                    return c
            raise UciError(f"option {self.name} must be one of {', '.join(self.choices)}, got {text!r}")
        if self.kind == "string":
            if text is None or text == "":
                raise UciError(f"option {self.name} needs a value")
            return text
        return None


def make_options():
    opts = [
        Option("Threads", "spin", 1, 1, 256),
        Option("Hash", "spin", 16, 1, 16384),
        Option("Clear Hash", "button"),
        Option("Ponder", "check", False),
        Option("MultiPV", "spin", 1, 1, 256),
        Option("Move Overhead", "spin", 10, 0, 5000),
        Option("UCI_Chess960", "check", False),
        Option("UCI_ShowWDL", "check", False),
        Option("Skill Level", "spin", 20, 0, 20),
        Option("UCI_LimitStrength", "check", False),
        Option("UCI_Elo", "spin", 1320, 1320, 2850),
        Option("SyzygyPath", "string", "<empty>"),
        Option("SyzygyProbeLimit", "spin", 7, 0, 7),
        Option("Syzygy50MoveRule", "check", True),
        Option("SyzygyProbeDepth", "spin", 1, 1, 100),
        Option("EvalFile", "string", DEFAULT_NET),
        Option("EvalFileSmall", "string", DEFAULT_NET_SMALL),
        Option("NNUE Path", "combo", "auto", choices=("auto", "c", "numba")),
    ]
    return {o.name.lower(): o for o in opts}


class UciEngine:
    def __init__(self, out=None, net=None, net_small=None):
        self._out = out or self._stdout
        self._lock = threading.Lock()
        self.options = make_options()
        # Command-line --net / --net-small set the start-up values of EvalFile / EvalFileSmall.
        if net:
            self.options["evalfile"].value = net
        if net_small:
            self.options["evalfilesmall"].value = net_small
        self._ready = threading.Event()
        self._init_error = None
        self._loader = None
        self._search_thread = None  # one worker thread runs every search (no thread to start per move)
        self._jobs = None
        self._idle = threading.Event()
        self._idle.set()
        self._announced = False
        self._search_done = True
        self._searcher = None
        self._net = None          # the main (15.1, or 17.1 big) net
        self._net_small = None    # the 17.1 small net of a pair, else None
        self._board = None
        self._game_keys = []
        self._pondering = False
        self._ponder_release = threading.Event()
        self._clock = None
        self._limits = None
        self._search_started = 0.0
        self._received = 0.0       # when the command being handled was read: deadlines count from there
        self._game_id = None       # the start position of the game, and the number of moves played from it
        self._ply = 0
        self._lag = None
        self._line = None          # (fen, chess960, moves, boards, keys) of the last position command
        self._tablebases = None    # engine.tablebase.Tablebases of SyzygyPath, None when it names no table
        self._rng = random.Random()  # draws a weakened search's move (Skill Level, UCI_Elo)

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
        if self._loader is None:
            # Initialise both packages here, before the loader thread imports their modules: their
            # __init__ (the Numba cache check) imported from two threads at once (the loader, and a
            # command such as setoption EvalFile) can end in Python's import _DeadlockError.
            import engine  # noqa: F401
            import nnue  # noqa: F401
            self._loader = threading.Thread(target=self._load, daemon=True)
            self._loader.start()

    def _load(self):
        try:
            from engine.fen import STARTING_FEN, parse_fen
            self._board = parse_fen(STARTING_FEN)
            self._load_net(self.options["evalfile"].value, self.options["evalfilesmall"].value)
            from engine.warm import warm_for_play
            warm_for_play(self._searcher)
        except Exception as exc:  # reported on isready / go, never a traceback on stdout
            self._init_error = str(exc)
            print(traceback.format_exc(), file=sys.stderr)
        finally:
            self._ready.set()

    def _load_net(self, name, small_name=DEFAULT_NET_SMALL):
        """Load EvalFile (and its small partner when it is a 17.1 big net) and a Searcher for them; on an
        error nothing changes. The options' default names mean the default places ($QUANTFISH_NET, nets/)."""
        from engine.searcher import Searcher
        from nnue.netpair import load_nets
        nets = load_nets(None if name == DEFAULT_NET else name, None if small_name == DEFAULT_NET_SMALL else small_name,
                         ignore_unpaired_small=True)
        net, small = (nets.big, nets.small) if isinstance(nets, tuple) else (nets, None)
        mode = self.options["nnue path"].value
        searcher = Searcher(net, self.options["hash"].value, None if mode == "auto" else mode, small_net=small)
        searcher.set_threads(self.options["threads"].value)
        self._net, self._net_small, self._searcher = net, small, searcher
        self._net_path = searcher.describe_nets()
        self._announced = False

    def _set_eval_file(self, opt, new):
        """setoption EvalFile / EvalFileSmall: the option keeps the value; the nets change when the files
        named by both options load (and form a pair when the main net is a 17.1 big net)."""
        from pathlib import Path

        from nnue.netpair import resolve_main_path
        self.ensure_ready()
        main_value = new if opt.name == "EvalFile" else self.options["evalfile"].value
        small_value = new if opt.name == "EvalFileSmall" else self.options["evalfilesmall"].value
        opt.value = new
        if opt.name == "EvalFileSmall" and self._net_small is None:
            try:
                main_path = resolve_main_path(None if main_value == DEFAULT_NET else main_value)
                live = main_path.is_file() and Path(self._net.path).resolve() == main_path.resolve()
            except (OSError, ValueError):      # EvalFile names no usable path (too long, ...): the load says so
                live = False
            if live:
                self.info_string(f"EvalFileSmall {new!r} ignored: the main net {self._net.path} is a Stockfish "
                                 f"{self._net.arch.generation_name} net, evaluated alone (a small net pairs only "
                                 f"with a Stockfish 17.1 big net)")
                return
        try:
            self._load_net(main_value, small_value)
        except (OSError, ValueError) as exc:
            raise UciError(f"{opt.name} {new!r} not loaded, keeping the previous net ({self._net_path}): "
                           f"{exc}") from None
        text = f"NNUE evaluation using {self._net_path}"
        if self._net_small is None and small_value != DEFAULT_NET_SMALL:
            text += f"; EvalFileSmall {small_value!r} ignored (the main net is not a Stockfish 17.1 big net)"
        self.info_string(text)

    def _set_syzygy_path(self, path):
        """Opens the tables of ``path`` (checked now, so that a bad directory is reported at once)."""
        from engine.tablebase import Tablebases, TablebaseError
        try:
            tables = Tablebases(path)
        except TablebaseError as exc:
            raise UciError(f"{exc}; keeping SyzygyPath {self.options['syzygypath'].value}") from None
        if tables.max_pieces:
            tables.compiled()      # parse the WDL headers for the search's probes now, not at the next go
        old, self._tablebases = self._tablebases, tables if tables.max_pieces else None
        if old is not None:        # no search is probing it: setoption is refused during a search
            old.close()
        self.info_string(tables.describe())

    def ensure_ready(self):
        self.start_loading()
        self._ready.wait()
        if self._searcher is None:
            raise UciError(f"engine not ready: {self._init_error or 'no net loaded'}")

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
        self._ready.wait()
        if self._init_error:
            self.info_string(f"engine not ready: {self._init_error}")
        self.send("readyok")

    def cmd_debug(self, args):
        pass

    def cmd_register(self, args):
        pass

    def cmd_setoption(self, args):
        if not args or args[0] != "name":
            raise UciError("setoption needs: setoption name <name> [value <value>]")
        rest = args[1:]
        if "value" in rest:
            i = rest.index("value")
            name, value = " ".join(rest[:i]), " ".join(rest[i + 1:])
        else:
            name, value = " ".join(rest), None
        opt = self.options.get(name.lower())
        if opt is None:
            raise UciError(f"unknown option: {name}")
        if self._searching():
            raise UciError(f"cannot change {opt.name} during a search")
        if opt.kind == "button":
            if opt.name == "Clear Hash":
                self.ensure_ready()
                self._searcher.clear()
            return
        if opt.name == "SyzygyPath" and not value:
            value = "<empty>"                      # as Stockfish: an empty value turns the tables off
        new = opt.parse(value)
        if opt.name in ("EvalFile", "EvalFileSmall"):
            self._set_eval_file(opt, new)
            return
        if opt.name == "Hash" and self._searcher is not None:
            self._searcher.resize(new)
        elif opt.name == "NNUE Path":
            self.ensure_ready()
            kernel = self._searcher.set_kernel(None if new == "auto" else new)
            self.info_string(kernel.info_string())
        elif opt.name == "Threads" and self._searcher is not None:
            self._searcher.set_threads(new)
        elif opt.name == "SyzygyPath":
            self._set_syzygy_path(new)
        opt.value = new

    def cmd_ucinewgame(self, args):
        self.ensure_ready()
        if not self._searching():
            self._searcher.clear()
        self._lag_meter().reset()

    def cmd_position(self, args):
        self.ensure_ready()
        from engine.fen import STARTING_FEN, parse_fen
        from engine.notation import parse_uci_move, push
        from engine.searcher import board_key
        chess960 = self.options["uci_chess960"].value
        if not args:
            raise UciError("position needs startpos or fen")
        if args[0] == "startpos":
            fen, rest = STARTING_FEN, args[1:]
        elif args[0] == "fen":
            if "moves" in args:
                i = args.index("moves")
                fen, rest = " ".join(args[1:i]), args[i:]
            else:
                fen, rest = " ".join(args[1:]), []
        else:
            raise UciError(f"position needs startpos or fen, got {args[0]!r}")
        if rest and rest[0] != "moves":
            raise UciError(f"unexpected {rest[0]!r} in position command")
        moves = rest[1:]
        # A GUI resends the whole game before every move: start from the longest prefix of the moves
        # already made for the last position command instead of replaying a long game each time.
        line = self._line if self._line is not None and self._line[:2] == (fen, chess960) else None
        if line is None:
            try:
                start = parse_fen(fen, chess960)
            except ValueError as exc:
                raise UciError(f"bad FEN, position unchanged: {exc}") from None
            line = (fen, chess960, [], [start], [])
        _, _, done, boards, keys_at = line
        same = 0
        while same < len(done) and same < len(moves) and done[same] == moves[same]:
            same += 1
        done, boards, keys_at = done[:same], boards[:same + 1], keys_at[:same]
        board = boards[-1]
        for text in moves[same:]:
            try:
                m = parse_uci_move(board, text, chess960 or board.chess960)
            except ValueError:
                raise UciError(f"illegal move {text} in position {board.fen()}, position unchanged") from None
            keys_at.append(int(board_key(board)))
            board = push(board, m)
            done.append(text)
            boards.append(board)
        # Repetitions count from the last capture or pawn move (halfmove clock 0).
        reset = max((i for i in range(1, len(boards)) if boards[i].halfmove == 0), default=0)
        self._line = (fen, chess960, done, boards, keys_at)
        self._board, self._game_keys = board, keys_at[reset:]
        self._game_id, self._ply = fen, len(moves)

    def cmd_d(self, args):
        self.ensure_ready()
        b = self._board
        from engine.types import PIECE_LETTERS
        self.send("")
        for rank in range(7, -1, -1):
            self.send(" +---+---+---+---+---+---+---+---+")
            row = " | " + " | ".join(PIECE_LETTERS[int(b.board[rank * 8 + f])] for f in range(8)) + f" | {rank + 1}"
            self.send(row)
        self.send(" +---+---+---+---+---+---+---+---+")
        self.send("   a   b   c   d   e   f   g   h")
        self.send("")
        self.send(f"Fen: {b.fen()}")
        from engine.searcher import board_key
        self.send(f"Key: {int(board_key(b)):016X}")

    def cmd_eval(self, args):
        self.ensure_ready()
        from nnue.evaluate import eval_report
        from uci.eval_command import format_human
        b = self._board
        if self._net_small is not None:
            from nnue.evaluate import eval_report_pair
            from uci.eval_command import format_human_pair
            report = eval_report_pair(self._net, self._net_small, b.board, b.side, b.halfmove)
            text = format_human_pair(report, b.side, b.board, (self._net.arch.l1, self._net_small.arch.l1))
        else:
            text = format_human(eval_report(self._net, b.board, b.side, b.halfmove), b.side, 0, self._net)
        for line in text.splitlines():
            self.send(line)

    def cmd_bench(self, args):
        self.ensure_ready()
        if self._searching():      # the bench would search with the searcher the search thread is using
            raise UciError("already searching; send stop first")
        from engine.bench import run_bench
        depth = _int_arg(args[0], "bench depth", 1, BENCH_MAX_DEPTH) if args else None
        run_bench(self._searcher, depth, self.send)

    def cmd_go(self, args):
        self.ensure_ready()
        if self._searching():
            raise UciError("already searching; send stop first")
        if args and args[0] == "perft":
            self._go_perft(args[1:])
            return
        limits = self._parse_go(args)
        if not self._announced:
            # Like Stockfish's first-search note: which net and which evaluation path are live.
            self.info_string(f"NNUE evaluation using {self._net_path}; {self._searcher.kernel.info_string()}")
            self._announced = True
        self._start_search(limits)

    def _go_perft(self, args):
        if not args:
            raise UciError("go perft needs a depth")
        depth = _int_arg(args[0], "go perft depth", 0, PERFT_MAX_DEPTH)
        import numpy as np
        from engine.movegen import MAX_MOVES
        from engine.notation import move_to_uci
        from engine.perft_count import perft_divide
        b = self._board
        moves = np.empty(MAX_MOVES, np.int32)
        counts = np.empty(MAX_MOVES, np.int64)
        n = perft_divide(self._searcher.T, b.bb, b.board, b.st, max(depth, 1), moves, counts)
        chess960 = self.options["uci_chess960"].value or b.chess960
        for i in range(n):
            self.send(f"{move_to_uci(moves[i], chess960)}: {int(counts[i])}")
        self.send("")
        self.send(f"Nodes searched: {int(counts[:n].sum()) if depth > 0 else 1}")

    def _parse_go(self, args):
        from engine.notation import parse_uci_move
        from engine.searcher import Limits
        limits = Limits()
        ints = {"wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "movetime", "mate"}
        i = 0
        while i < len(args):
            tok = args[i]
            if tok in ints:
                if i + 1 >= len(args):
                    raise UciError(f"go {tok} needs a number")
                try:
                    value = int(args[i + 1])
                except ValueError:
                    raise UciError(f"go {tok} needs a number, got {args[i + 1]!r}") from None
                if tok in ("wtime", "btime"):
                    value = max(value, 0)
                elif value < 0 or (value == 0 and tok in ("depth", "nodes", "movestogo", "mate")):
                    raise UciError(f"go {tok} must be positive, got {value}")
                # Larger than any game needs, and small enough for the clock's timer and the int64 node limit.
                setattr(limits, tok, min(value, GO_NODES_MAX if tok == "nodes" else GO_VALUE_MAX))
                i += 2
            elif tok == "infinite":
                limits.infinite = True
                i += 1
            elif tok == "ponder":
                limits.ponder = True
                i += 1
            elif tok == "searchmoves":
                i += 1
                chess960 = self.options["uci_chess960"].value or self._board.chess960
                while i < len(args) and args[i] not in ints and args[i] not in ("infinite", "ponder"):
                    try:
                        limits.searchmoves.append(parse_uci_move(self._board, args[i], chess960))
                    except ValueError:
                        raise UciError(f"searchmoves: illegal move {args[i]}") from None
                    i += 1
            else:
                raise UciError(f"unknown go parameter {tok!r}")
        return limits

    def _searching(self):
        """True until the search has decided its best move (its thread may still be finishing)."""
        return self._search_thread is not None and self._search_thread.is_alive() and not self._search_done

    def _lag_meter(self):
        if self._lag is None:
            from engine.timeman import LagMeter
            self._lag = LagMeter()
        return self._lag

    def _overhead(self):
        """Move Overhead, or more when the GUI's clocks show a larger lag (engine.timeman.LagMeter)."""
        return self._lag_meter().overhead(self.options["move overhead"].value)

    def _start_search(self, limits):
        import queue

        from engine.timeman import Clock
        board = self._board
        self._idle.wait()             # the previous search has sent its bestmove
        self._limits = limits
        self._pondering = limits.ponder
        self._ponder_release.clear()
        remaining, inc = (limits.wtime, limits.winc) if board.side == 0 else (limits.btime, limits.binc)
        if not limits.ponder:
            self._lag_meter().before_search(self._game_id, self._ply, board.side, remaining, inc)
        self._search_started = self._received
        self._clock = Clock.for_limits(limits, board.side, self._overhead(), self._search_started)
        self._clock_record = (self._game_id, self._ply, board.side, remaining, inc, limits.ponder)
        if self._search_thread is None:
            self._jobs = queue.SimpleQueue()
            self._search_thread = threading.Thread(target=self._search_worker, daemon=True)
            self._search_thread.start()
        self._search_done = False
        self._idle.clear()
        self._searcher.set_tablebases(self._tablebases, self.options["syzygy50moverule"].value,
                                      self.options["syzygyprobelimit"].value, self.options["syzygyprobedepth"].value)
        self._searcher.clear_stop()   # here, not in the worker: a stop that comes before it starts still counts
        self._jobs.put((board, list(self._game_keys), limits))

    def _search_worker(self):
        while True:
            board, keys, limits = self._jobs.get()
            try:
                self._search_main(board, keys, limits)
            finally:
                self._search_done = True
                self._idle.set()

    def _search_main(self, board, keys, limits):
        from engine.notation import move_to_uci
        from engine.searcher import score_to_uci, score_to_wdl
        import dataclasses

        from engine.skill import MULTIPV as SKILL_MULTIPV
        from engine.skill import Skill
        searcher = self._searcher
        chess960 = self.options["uci_chess960"].value or board.chess960

        show_wdl = self.options["uci_showwdl"].value
        game_ply = 2 * (board.fullmove - 1) + board.side

        def on_info(depth, seldepth, multipv, score, nodes, time_ms, nps, hashfull, tbhits, pv):
            wdl = f" wdl {' '.join(map(str, score_to_wdl(score, game_ply)))}" if show_wdl else ""
            self.send(f"info depth {depth} seldepth {seldepth} multipv {multipv} score {score_to_uci(score)}{wdl} "
                      f"nodes {nodes} nps {nps} hashfull {hashfull} tbhits {tbhits} time {time_ms} pv "
                      + " ".join(move_to_uci(m, chess960) for m in pv))

        best = ponder = None
        skill = Skill.from_options(self.options["skill level"].value, self.options["uci_limitstrength"].value,
                                   self.options["uci_elo"].value)
        multipv, search_limits = self.options["multipv"].value, limits
        if skill.enabled:       # a shallow search that keeps a few lines to choose a weaker move from
            search_limits = dataclasses.replace(limits, depth=min(limits.depth or skill.depth, skill.depth))
            multipv = max(multipv, SKILL_MULTIPV)
        try:
            best, ponder, lines = searcher.think(board, keys, search_limits, multipv, self._clock, on_info,
                                                 reset_stop=False)
            if skill.enabled and lines:
                move = skill.pick(lines, self._rng)
                chosen = next(line for line in lines if line.moves[0] == move)
                best, ponder = chosen.moves[0], (chosen.moves[1] if len(chosen.moves) > 1 else None)
        except Exception as exc:
            self.info_string(f"search error: {type(exc).__name__}: {exc}")
            print(traceback.format_exc(), file=sys.stderr)
        # In ponder and infinite mode the GUI must say stop (or ponderhit) before bestmove; both set the event.
        if limits.infinite or self._pondering:
            while not searcher.stopped and not self._ponder_release.is_set():
                self._ponder_release.wait(0.1)
        text = "bestmove 0000"
        if best:
            text = f"bestmove {move_to_uci(best, chess960)}"
            if ponder:
                text += f" ponder {move_to_uci(ponder, chess960)}"
        # Before bestmove goes out: the GUI's next go may follow at once.
        game, ply, side, remaining, inc, pondered = self._clock_record
        used_ms = None if pondered else (time.monotonic_ns() - self._search_started) / 1e6
        self._lag_meter().after_search(game, ply, side, remaining, inc, used_ms)
        self._search_done = True
        self.send(text)

    def cmd_stop(self, args=None):
        if self._searcher is not None:
            self._searcher.stop()
        self._ponder_release.set()
        self._idle.wait()

    def cmd_ponderhit(self, args=None):
        if not self._searching() or not self._pondering:
            return
        from engine.timeman import Clock
        limits = self._limits
        limits.ponder = False
        fresh = Clock.for_limits(limits, self._board.side, self._overhead(), self._received)
        self._clock.rebase(fresh)
        self._searcher.arm(self._clock)
        self._pondering = False
        self._ponder_release.set()


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
