"""The Python side of the search: owns the arrays, runs iterative deepening and keeps the clock.

Each iteration is one call into compiled code (``search_root``) that releases the GIL, so the UCI
thread stays responsive. The ``stop`` command sets the stop flag that the search polls; the search reads the
clock itself and stops at the deadline (``quantfish.runtime.monoclock``; a timer thread where no clock can be read).
"""
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from quantfish.runtime import monoclock

from quantfish.tablebase import load as tbload
from quantfish.core.movegen import MAX_MOVES, generate_legal
from quantfish.core.position import ST_KEY
from quantfish.search.tree import search_root
from quantfish.search.tt import tt_hashfull
from quantfish.search.values import INF, MATE, MATE_IN_MAX
from quantfish.search.threads import Finished, HelperPool, vote
from quantfish.search.state import HISTORY_KEYS, MAX_PLY, STACK, new_control, new_state
from quantfish.core.tables import tables
from quantfish.search.timeman import Carry, Progress
from quantfish.search.wdl import wdl, wdl_of_mate
from quantfish.nnue.kernel import ceval, loader as ckernel
from quantfish.nnue import evaluator, netdir
from quantfish.nnue.layers import make_scratch
from quantfish.nnue.net import P_GENERATION
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE



@dataclass
class Limits:
    """What `go` asked for; times in milliseconds."""
    wtime: int | None = None
    btime: int | None = None
    winc: int = 0
    binc: int = 0
    movestogo: int | None = None
    depth: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list = field(default_factory=list)


@dataclass
class Line:
    """One principal variation of a finished iteration."""
    score: int
    moves: list


TB_WIN = MATE_IN_MAX - 1    # a tablebase win's reported score, less the plies to zeroing (Stockfish's way)
PROVEN_WIN = MATE_IN_MAX - MAX_PLY      # a search score at least this is a mate or a tablebase win


def score_to_cp(v):
    """A search score (not a mate) in UCI centipawns (Stockfish 15.1's scaling)."""
    return int(v * 100 / PAWN_VALUE_NORMALIZE)


def score_to_uci(v):
    """``cp N`` or ``mate N`` in UCI's units (Stockfish 15.1's scaling)."""
    if v >= MATE_IN_MAX:
        return f"mate {(MATE - v + 1) // 2}"
    if v <= -MATE_IN_MAX:
        return f"mate {-((MATE + v) // 2)}"
    return f"cp {score_to_cp(v)}"


def score_to_wdl(v, ply):
    """(win, draw, loss) permille for ``UCI_ShowWDL``: the model's at game ply ``ply``, certain for a mate."""
    if abs(v) >= MATE_IN_MAX:
        return wdl_of_mate(1 if v > 0 else 0)
    return wdl(score_to_cp(v), ply)


def board_key(board):
    """The Zobrist key of a Board as uint64."""
    return board.st[ST_KEY:ST_KEY + 1].view(np.uint64)[0]


def tt_entries(hash_mb):
    """Largest power of two of 16-byte entries that fits in ``hash_mb`` megabytes."""
    n = max(2, (int(hash_mb) * 1024 * 1024) // 16)
    return 1 << (n.bit_length() - 1)


def make_tt(hash_mb):
    """The transposition table (quantfish.search.tree.tt_probe): 2 int64 words per entry, 64-byte aligned."""
    return ckernel.aligned_zeros(2 * tt_entries(hash_mb), np.int64)


class Searcher:
    """One search thread's state: position stack, TT, histories, NNUE accumulators.

    ``net`` is one net (any generation: its own formula), or with ``small_net`` the big net of a Stockfish
    17.1 pair (``net`` may also be a ``netpair.NetPair``); a pair is checked with ``netpair.check_pair``
    (``NetPairError`` otherwise) and evaluated with Stockfish 17.1's two-net ``Eval::evaluate``.
    """

    def __init__(self, net, hash_mb=16, kernel_mode=None, small_net=None, *, tt=None, kernel=None, share=None):
        if small_net is None and hasattr(net, "big") and hasattr(net, "small"):
            net, small_net = net.big, net.small
        if small_net is not None:
            from quantfish.nnue.loader import check_pair
            check_pair(net, small_net)
        self.net = net
        self.small_net = small_net
        self.kernel = kernel if kernel is not None else ckernel.load_kernel(kernel_mode)
        self.T = tables()
        # A Lazy SMP helper (quantfish.search.threads) gets the main searcher's table, kernel and (``share``) net arrays.
        self.tt = tt if tt is not None else make_tt(hash_mb)
        self.ctl = new_control()
        self._share = share
        self.pool = None
        self.time_carry = Carry()    # what the last search of the game tells the time manager
        self.finished = None    # the last finished iteration (quantfish.search.threads.Finished), for the threads' vote
        # Syzygy tables (quantfish.tablebase.root), set by set_tablebases: ranked at the root in Python, probed in the
        # search through their compiled form (quantfish.tablebase.probe); the last search's root probe count and score.
        self.tablebases, self.tb_rule50, self.tb_probe_limit, self.tb_probe_depth = None, True, 7, 1
        self._tb_arrays = share._tb_arrays if share is not None else tbload.empty_arrays()
        self._root_tb_hits, self._tb_score = 0, None
        self._tap = evaluator.new_tap()
        self._build()

    @property
    def is_pair(self):
        """True when a Stockfish 17.1 pair evaluates (big net ``net``, small net ``small_net``)."""
        return self.small_net is not None

    @property
    def nets(self):
        """The live nets: (net,) or (big, small)."""
        return (self.net,) if self.small_net is None else (self.net, self.small_net)

    def describe_nets(self):
        """Which net(s) evaluate, for an info string."""
        if self.small_net is None:
            scheme = getattr(self.net, "scheme", None)
            quant = "" if scheme is None else (f", Quantfish format: scheme {scheme.name}, {scheme.rounding}, "
                                               f"activations 0..{scheme.resolution}")
            return (f"{getattr(self.net, 'path', 'net')} ({self.net.arch.generation_name}, L1 {self.net.arch.l1}"
                    f"{quant})")
        return (f"{self.net.path} (big, L1 {self.net.arch.l1}) + {self.small_net.path} (small, L1 "
                f"{self.small_net.arch.l1}), Stockfish {self.net.arch.generation_name} two-net evaluation")

    def _net_slots(self, net, use_c, k=0):
        """(arrays, cnet, stack, scratch, refresh cache) of one net (``k``: 0 the main net, 1 a pair's small
        net) for the search tuple; a helper shares the main searcher's read-only arrays and cnet."""
        if self._share is not None:
            arrays, cnet = self._share._net_parts[k][:2]
        else:
            arrays, cnet = net.arrays(), ckernel.make_cnet(net, align_ft=use_c)
        l1 = arrays.ft_bias.shape[0]
        return (arrays, cnet, ckernel.make_cstack(l1, STACK),
                ckernel.make_cscratch(l1) if use_c else make_scratch(l1), ckernel.make_refresh_cache(net))

    def _build(self):
        use_c = self.kernel.is_c
        kf = self.kernel.funcs if use_c else ckernel.placeholder_funcs()
        arrays, cnet, stack, scratch, cache = self._net_slots(self.net, use_c)
        # The state holds only directories (addresses) of the nets' arrays: keep the arrays themselves alive here.
        self._net_parts = [(arrays, cnet, stack, scratch, cache)]
        net_directory = netdir.directory(arrays, cnet, stack.acc, stack.psqt, cache, scratch)
        # The small net of a pair, an unused directory otherwise; its computed flags have every ply either
        # way (the make-move code clears them unconditionally).
        small_directory = netdir.unused()
        if self.small_net is not None:
            s_arrays, s_cnet, s_stack, s_scratch, s_cache = self._net_slots(self.small_net, use_c, 1)
            self._net_parts.append((s_arrays, s_cnet, s_stack, s_scratch, s_cache))
            small_directory = netdir.directory(s_arrays, s_cnet, s_stack.acc, s_stack.psqt, s_cache, s_scratch)
        self.ctl["clock_id"] = monoclock.CLOCK_ID
        # One net on the C kernel: the whole evaluation is one kernel call (quantfish.nnue.kernel.ceval).
        one_call = use_c and self.small_net is None
        scheme = getattr(self.net, "scheme", None) is not None
        mode = evaluator.new_mode(use_c, self.small_net is not None, scheme, one_call, int(arrays.params[P_GENERATION]))
        qscheme = arrays.qscheme if scheme else None
        cx = ceval.context(cnet, stack, cache, scratch, qscheme) if one_call else np.zeros(ceval.CX_SIZE, np.int64)
        self.S = new_state(self.tt, self.ctl, stack, net_directory, kf, small_directory,
                           np.zeros((STACK, 2), dtype=np.uint8), monoclock.clock_gettime, cx, self._tb_arrays, mode,
                           self._tap)

    def set_tap(self, capacity: int, keep_one_in: int, seed: int = 0) -> None:
        """Keep about one in ``keep_one_in`` of the positions the net evaluates, with its raw output, up to
        ``capacity`` (``quantfish.nnue.evaluator``; 0: off). The search's tree does not change."""
        self._tap = evaluator.new_tap(capacity, keep_one_in, seed)
        self.S = self.S._replace(tap=self._tap[0], tap_boards=self._tap[1], tap_rows=self._tap[2])

    @property
    def eval_mode(self) -> dict:
        """Which evaluation path the search takes: {use_c, pair, scheme, one_call, generation}."""
        m = self.S.eval_mode
        return {"use_c": bool(m[evaluator.M_USE_C]), "pair": bool(m[evaluator.M_PAIR]),
                "scheme": bool(m[evaluator.M_SCHEME]), "one_call": bool(m[evaluator.M_ONE_CALL]),
                "generation": int(m[evaluator.M_GENERATION])}

    @property
    def nodes(self) -> int:
        """Nodes searched by the current (or last) search, helper threads included."""
        return int(self.ctl["nodes"][0]) + (self.pool.nodes if self.pool else 0)

    @property
    def threads(self) -> int:
        return 1 + (len(self.pool) if self.pool else 0)

    def set_threads(self, n):
        """Search with ``n`` threads (Lazy SMP, quantfish.search.threads): ``n`` - 1 helpers share this searcher's table."""
        if self.pool is not None:
            self.pool.join()
        self.pool = HelperPool(self._helper, n - 1) if n > 1 else None

    def _helper(self):
        """A Lazy SMP helper: a searcher of its own around this one's table, kernel and net arrays."""
        return Searcher(self.net, tt=self.tt, small_net=self.small_net, kernel=self.kernel, share=self)

    @property
    def stopped(self) -> bool:
        """True once the search was told to stop (stop command, time, node limit)."""
        return bool(self.ctl["stop"][0])

    def set_tablebases(self, tablebases, rule50=True, probe_limit=7, probe_depth=1):
        """Rank the root moves with ``tablebases`` (an ``quantfish.tablebase.root.Tablebases``, or None for none) and
        probe their WDL tables in the search, at nodes of at most ``probe_limit`` pieces (with exactly that
        many, from ``probe_depth`` on). The search must not outlive ``tablebases``: its files stay mapped
        while it lives."""
        self.tablebases, self.tb_rule50 = tablebases, bool(rule50)
        self.tb_probe_limit, self.tb_probe_depth = int(probe_limit), int(probe_depth)
        compiled = tablebases.compiled() if tablebases is not None else None
        arrays = compiled.arrays if compiled is not None else tbload.empty_arrays()
        pieces = min(self.tb_probe_limit, compiled.max_pieces) if compiled is not None else 0
        for searcher in [self] + (self.pool.helpers if self.pool else []):
            if searcher.S.tb is not arrays:
                searcher._tb_arrays = arrays
                searcher.S = searcher.S._replace(tb=arrays)
            searcher.ctl["tb_pieces"] = pieces
            searcher.ctl["tb_depth"] = self.tb_probe_depth
            searcher.ctl["tb_rule50"] = int(self.tb_rule50)

    @property
    def tb_hits(self) -> int:
        """Tablebase probes of the current (or last) search: the root's ranking and the search's, all threads."""
        searchers = [self] + (self.pool.helpers if self.pool else [])
        return self._root_tb_hits + sum(int(s.ctl["tb_hits"][0]) for s in searchers)

    def _tablebase_root(self, board, root):
        """The root moves that keep the tables' best outcome, best first (``root`` when the tables do not
        cover the position); sets the tablebase score reported instead of the search's and the probe count."""
        from quantfish.core.notation import move_to_uci
        from quantfish.tablebase.root import rank_outcome
        probe = self.tablebases.rank_root(board.fen(), board.chess960, self.tb_rule50, self.tb_probe_limit)
        if probe is None:
            return root
        self._root_tb_hits = len(probe.ranks)
        rank = {m: probe.ranks[move_to_uci(m, board.chess960)] for m in root}
        # With DTZ the exact rank (shortest win, longest loss); with WDL only, every move of the best outcome.
        grade = (lambda m: rank[m]) if probe.by_dtz else (lambda m: rank_outcome(rank[m])[0])
        best = max(grade(m) for m in root)
        kept = sorted((m for m in root if grade(m) == best), key=lambda m: -rank[m])
        outcome, plies = rank_outcome(rank[kept[0]])
        self._tb_score = {2: TB_WIN - plies, 1: 1, 0: 0, -1: -1, -2: -TB_WIN + plies}[outcome]
        return kept

    def set_kernel(self, mode):
        """Choose the evaluation path (auto, c or numba); returns the Kernel now live."""
        self.kernel = ckernel.load_kernel(mode)
        self._build()
        self.set_threads(self.threads)
        return self.kernel

    def resize(self, hash_mb):
        self.tt = make_tt(hash_mb)
        self._build()
        self.set_threads(self.threads)

    def clear(self):
        """Forget everything learnt from earlier searches (ucinewgame, Clear Hash)."""
        self.tt[:] = 0
        self.S.history[:] = 0
        self.S.cont_history[:] = 0
        self.S.capture_history[:] = 0
        for table in (self.S.corr_pawn, self.S.corr_minor, self.S.corr_non_pawn, self.S.corr_cont):
            table[:] = 0
        self.S.counters[:] = 0
        self.S.killers[:] = 0
        self.S.eval_cache[:] = 0
        self.time_carry = Carry()
        if self.pool:
            self.pool.clear()

    def stop(self):
        self.ctl["stop"] = 1
        if self.pool:
            self.pool.stop()

    def clear_stop(self):
        self.ctl["stop"] = 0

    def arm(self, clock):
        """Sets the deadline of ``clock`` (or none) for the search running or about to run; also after
        ponderhit, from another thread."""
        timer, self._timer = getattr(self, "_timer", None), None
        if timer is not None:
            timer.cancel()
        deadline = None if clock is None else clock.deadline_ns()
        if deadline is None:
            self.ctl["deadline"] = 0
        elif monoclock.available:
            self.ctl["deadline"] = monoclock.native_ns(deadline)
        else:
            self.ctl["deadline"] = 0
            self._timer = threading.Timer(max(0.0, (deadline - monoclock.now_ns()) / 1e9), self.stop)
            self._timer.daemon = True
            self._timer.start()

    def hashfull(self):
        return int(tt_hashfull(self.tt, self.ctl["tt_gen"][0]))

    def _setup(self, board, game_keys, reset_stop=True):
        S, ctl = self.S, self.ctl
        S.bbs[0] = board.bb
        S.boards[0] = board.board
        S.sts[0] = board.st
        game_keys = list(game_keys)[-HISTORY_KEYS:]
        root_index = len(game_keys)
        if root_index:
            S.keys[:root_index] = np.array(game_keys, dtype=np.uint64)
        S.keys[root_index] = board_key(board)
        ctl["root_index"] = root_index
        self._root_side = board.side
        ctl["optimism_w"] = ctl["optimism_b"] = 0
        evaluator.new_root(S)
        if reset_stop:
            ctl["stop"] = 0
        ctl["nodes"] = 0
        ctl["tb_hits"] = 0
        ctl["tt_gen"] = (ctl["tt_gen"] + 1) & 31
        S.killers[:] = 0
        S.excluded[:] = 0      # a stopped search may leave one set

    def _set_root_moves(self, moves):
        self.S.root_moves[:len(moves)] = moves
        self.ctl["n_root"] = len(moves)

    def legal_root_moves(self, board):
        moves = np.empty(MAX_MOVES, dtype=np.int32)
        n = generate_legal(self.T, board.bb, board.board, board.st, moves)
        return [int(m) for m in moves[:n]]

    def _set_optimism(self, score):
        """Stockfish 15.1's optimism from the root's last score: 118 score / (|score| + 169), truncated, for the
        side to move at the root and its negation for the other. The evaluation blends it in (more for a complex
        position), so a side that is ahead plays on."""
        us = 118 * score
        opt = abs(us) // (abs(score) + 169) * (1 if us >= 0 else -1)
        white = opt if self._root_side == 0 else -opt
        self.ctl["optimism_w"], self.ctl["optimism_b"] = white, -white

    def _iteration(self, depth, prev_score, full_window):
        """Aspiration search around the previous score; returns (score, completed)."""
        if depth >= 4:
            self._set_optimism(prev_score)
        if full_window or depth < 4 or abs(prev_score) >= MATE_IN_MAX:
            alpha, beta = -INF, INF
        else:
            delta = 30
            alpha, beta = max(prev_score - delta, -INF), min(prev_score + delta, INF)
        delta = 30
        while True:
            score = int(search_root(self.T, self.S, depth, alpha, beta))
            if self.stopped:
                return score, False
            if score <= alpha:
                beta = (alpha + beta) // 2
                alpha = max(score - delta, -INF)
            elif score >= beta:
                beta = min(score + delta, INF)
            else:
                return score, True
            delta += delta // 2 + 10

    def think(self, board, game_keys, limits, multipv=1, clock=None, on_info=None, reset_stop=True):
        """Searches ``board`` and returns (best move, ponder move or None, lines of the last iteration).

        ``reset_stop=False``: the caller cleared the stop flag when it asked for this search (``clear_stop``),
        so that a ``stop`` that comes before the search thread gets here still stops it."""
        start = time.perf_counter()
        self._setup(board, game_keys, reset_stop)
        root = self.legal_root_moves(board)
        if limits.searchmoves:
            root = [m for m in root if m in limits.searchmoves] or root
        if not root:
            return 0, None, []
        self._root_tb_hits, self._tb_score = 0, None
        if self.tablebases is not None:
            root = self._tablebase_root(board, root)
        # With helper threads a node limit is shared out: the threads together search about ``nodes``.
        share = -(-limits.nodes // self.threads) if limits.nodes else 0
        self.ctl["max_nodes"] = share
        self.arm(clock)
        try:
            if self.pool:
                self.pool.start(self, board, game_keys, root, min(limits.depth or MAX_PLY - 8, MAX_PLY - 8), share)
            result = self._deepen(board, root, limits, multipv, clock, on_info, start)
        finally:
            if self.pool:
                self.pool.join()
            self.arm(None)
        if self.pool and multipv == 1 and not limits.depth:
            result = self._voted(result, on_info, start)
        return result

    def _voted(self, result, on_info, start):
        """The move the threads vote for (``quantfish.search.threads.vote``), in place of the main thread's when it differs;
        a fixed-depth search keeps the main thread's, as Stockfish does."""
        if self.finished is None:
            return result
        chosen = vote([self.finished] + self.pool.finished(), PROVEN_WIN)
        if chosen is self.finished or chosen.pv[0] == result[0]:
            return result
        lines = [Line(chosen.score, chosen.pv)]
        self._report(chosen.depth, lines, on_info, start)
        return chosen.pv[0], (chosen.pv[1] if len(chosen.pv) > 1 else None), lines

    def _report(self, depth, lines, on_info, start):
        """One ``info`` line per line of an iteration."""
        if not on_info:
            return
        elapsed = time.perf_counter() - start
        nodes = self.nodes
        for k, line in enumerate(lines):
            on_info(depth=depth, seldepth=int(self.ctl["seldepth"][0]), multipv=k + 1,
                    score=self._reported(line.score), nodes=nodes, time_ms=int(elapsed * 1000),
                    nps=int(nodes / elapsed) if elapsed > 0 else 0, hashfull=self.hashfull(),
                    tbhits=self.tb_hits, pv=line.moves)

    def _reported(self, score):
        """The score to report: the tables' when they ranked the root moves, unless the search found a mate."""
        return score if self._tb_score is None or abs(score) >= MATE_IN_MAX else self._tb_score

    def _deepen(self, board, root, limits, multipv, clock, on_info, start):
        """Iterative deepening (with MultiPV lines) until a limit; see ``think``."""
        max_depth = min(limits.depth or MAX_PLY - 8, MAX_PLY - 8)
        multipv = max(1, min(multipv, len(root)))
        self.finished = None
        lines = []
        best_move, ponder_move = root[0], None
        progress = Progress(self.time_carry)
        prev_score = 0
        search_again = 0
        for root_depth in range(1, max_depth + 1):
            # Past half its time the time manager repeats the depth (about one deeper every four iterations).
            if not progress.increase:
                search_again += 1
            depth = max(1, root_depth - 3 * (search_again + 1) // 4)
            new_lines = []
            excluded = []
            completed = True
            for k in range(multipv):
                remaining = [m for m in root if m not in excluded]
                self._set_root_moves(remaining)
                self.ctl["best_changes"] = 0
                score, completed = self._iteration(depth, lines[k].score if k < len(lines) else prev_score, k > 0)
                n = int(self.S.pv_len[0])
                pv = [int(m) for m in self.S.pv[0, :n]] if n > 0 else []
                if not completed:
                    if k == 0 and pv and depth > 1:
                        # A root move that beat the previous best inside the aspiration window is good.
                        best_move = pv[0]
                        ponder_move = pv[1] if len(pv) > 1 else None
                    break
                if not pv:
                    pv = [remaining[0]]
                if k == 0:
                    progress.record(root_depth, score, pv[0], int(self.ctl["best_changes"][0]))
                new_lines.append(Line(score, pv))
                excluded.append(pv[0])
            if not completed and not new_lines:
                break
            new_lines.sort(key=lambda line: -line.score)
            if completed:
                lines = new_lines
            else:
                lines = new_lines + lines[len(new_lines):]
            best_move = lines[0].moves[0]
            ponder_move = lines[0].moves[1] if len(lines[0].moves) > 1 else None
            prev_score = lines[0].score
            if completed:
                self.finished = Finished(root_depth, lines[0].score, lines[0].moves)
            self._report(root_depth, lines, on_info, start)
            if not completed or self.stopped:
                break
            if limits.mate and lines[0].score >= MATE_IN_MAX and (MATE - lines[0].score + 1) // 2 <= limits.mate:
                break
            if not progress.decide(clock, len(root) == 1):
                break
            if limits.nodes and self.nodes >= limits.nodes:
                break
        progress.finish()
        return best_move, ponder_move, lines
