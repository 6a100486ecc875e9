"""The engine's state between UCI commands: the nets and the searcher (loaded in the background), the position
of the game with its history, the tablebases, and what the GUI's clocks taught about lag.

Every change is whole or nothing: a net that does not load, a bad FEN or an illegal move in ``position``, a
tablebase folder that cannot be opened, each leaves the previous state as it was.
"""
from __future__ import annotations

import sys
import threading
import traceback
from pathlib import Path

from quantfish.nnue.locate import DEFAULT_NET_NAME, SMALL_NET_NAME
from quantfish.uci.parse import UciError


class EngineState:
    def __init__(self):
        self.ready = threading.Event()
        self.init_error = None
        self._loader = None
        self.searcher = None
        self.net = None           # the main (15.1, or 17.1 big) net
        self.net_small = None     # the 17.1 small net of a pair, else None
        self.net_text = ""        # which net(s) evaluate, for info strings
        self.board = None
        self.game_keys = []       # the keys of the positions since the last capture or pawn move, for repetitions
        self.game_id = None       # the start position of the game, and the number of moves played from it
        self.ply = 0
        self._line = None         # (fen, chess960, moves, boards, keys) of the last position command
        self.tablebases = None    # quantfish.tablebase.root.Tablebases of SyzygyPath, None when it names no table
        self._lag = None

    # -- loading ------------------------------------------------------------------------------

    def start_loading(self, net_name, small_name, kernel_mode, hash_mb, threads):
        """Loads the nets and warms the compiled code in a background thread (``uci`` is answered at once; the
        loader is done before ``readyok``)."""
        if self._loader is None:
            self._loader = threading.Thread(target=self._load, args=(net_name, small_name, kernel_mode, hash_mb,
                                                                     threads), daemon=True)
            self._loader.start()

    def _load(self, net_name, small_name, kernel_mode, hash_mb, threads):
        try:
            from quantfish.core.fen import STARTING_FEN, parse_fen
            from quantfish.search.warm import warm_for_play
            self.board = parse_fen(STARTING_FEN)
            self.load_nets(net_name, small_name, kernel_mode, hash_mb, threads)
            warm_for_play(self.searcher)
        except Exception as exc:  # reported on isready / go, never a traceback on stdout
            self.init_error = str(exc)
            # A net that does not load (missing, corrupt, unpaired) is the user's to mend: one line says so. Any
            # other failure is a bug, and its traceback goes to stderr.
            print(f"quantfish: {exc}" if isinstance(exc, (OSError, ValueError)) else traceback.format_exc(),
                  file=sys.stderr)
        finally:
            self.ready.set()

    def loaded_searcher(self):
        """The searcher, once a loader that has started is done (None when none loaded): an option set while the
        nets load must reach the searcher the loader makes, not be dropped for lack of one."""
        if self._loader is not None:
            self.ready.wait()
        return self.searcher

    def wait_ready(self):
        """Waits for the loader; ``UciError`` when it failed."""
        self.ready.wait()
        if self.searcher is None:
            raise UciError(f"engine not ready: {self.init_error or 'no net loaded'}")

    def load_nets(self, name, small_name, kernel_mode, hash_mb, threads):
        """Loads ``EvalFile`` (and its small partner when it is a 17.1 big net) and a searcher for them; on an
        error nothing changes. The options' default names mean the default places (``quantfish.nnue.locate``)."""
        from quantfish.nnue.loader import load_nets
        from quantfish.search.driver import Searcher
        nets = load_nets(None if name == DEFAULT_NET_NAME else name,
                         None if small_name == SMALL_NET_NAME else small_name, ignore_unpaired_small=True)
        net, small = (nets.big, nets.small) if isinstance(nets, tuple) else (nets, None)
        searcher = Searcher(net, hash_mb, None if kernel_mode == "auto" else kernel_mode, small_net=small)
        searcher.set_threads(threads)
        self.net, self.net_small, self.searcher = net, small, searcher
        self.net_text = searcher.describe_nets()

    def small_net_is_ignored(self, main_value) -> bool:
        """True when a small net cannot pair with the live main net, which ``main_value`` still names."""
        from quantfish.nnue.loader import resolve_main_path
        if self.net_small is not None:
            return False
        try:
            main_path = resolve_main_path(None if main_value == DEFAULT_NET_NAME else main_value)
            return main_path.is_file() and Path(self.net.path).resolve() == main_path.resolve()
        except (OSError, ValueError):      # EvalFile names no usable path (too long, ...): the load says so
            return False

    # -- the game -----------------------------------------------------------------------------

    def set_position(self, fen, chess960, moves):
        """The position after ``moves`` (UCI text) from ``fen``. A GUI resends the whole game before every
        move: the longest prefix of the moves already made for the last position command is not replayed."""
        from quantfish.core.fen import parse_fen
        from quantfish.core.notation import parse_uci_move, push
        from quantfish.search.driver import board_key
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
        self.board, self.game_keys = board, keys_at[reset:]
        self.game_id, self.ply = fen, len(moves)

    # -- tablebases and the clock -------------------------------------------------------------

    def open_tablebases(self, path) -> str:
        """Opens the tables of ``path`` (checked now, so that a bad folder is reported at once); returns their
        description. ``UciError`` leaves the previous tables."""
        from quantfish.tablebase.root import TablebaseError, Tablebases
        try:
            tables = Tablebases(path)
        except TablebaseError as exc:
            raise UciError(str(exc)) from None
        if tables.max_pieces:
            tables.compiled()      # parse the WDL headers for the search's probes now, not at the next go
        old, self.tablebases = self.tablebases, tables if tables.max_pieces else None
        if old is not None:        # no search is probing it: setoption is refused during a search
            old.close()
        return tables.describe()

    @property
    def lag(self):
        """The ``quantfish.search.timeman.LagMeter`` of this game."""
        if self._lag is None:
            from quantfish.search.timeman import LagMeter
            self._lag = LagMeter()
        return self._lag
