"""NNUE speed: evaluations per second from scratch and incrementally along game move sequences.

    python -m tools.nnue_bench [--net PATH] [--net-big PATH] [--net-small PATH] [--games N] [--plies N] [--runs N]
                         [--no-stockfish] [--no-17]

Measured for the 15.1 net (``--net``) and, when a Stockfish 17.1 pair is found (``--net-big``/``--net-small``,
else the default names via ``quantfish.nnue.loader``), for the big net alone, the small net alone (each with 17.1's
formula, ``evaluate``) and the pair as the search would use it (``evaluate_pair``: small net on large material
imbalances, big-net re-evaluation, both stacks lazy).

Move sequences are games from fixed openings (``8moves_v3.epd`` when present, else the start position)
continued by Stockfish at a small node count when a Stockfish binary is available, else by seeded random
legal moves. The timed loops run inside compiled code over pre-built arrays, so Python overhead is not
counted. Each figure is the median of several runs.

The Stockfish 15.1 comparison is measured in the same run, two ways, both stated in the output:
``eval`` commands per second (an upper bound on its per-evaluation cost: the command also runs the
classical trace and prints tables) and ``bench`` nodes per second (every node costs at most about one
incremental evaluation plus search work).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import chess
import numpy as np

from quantfish.nnue.accumulator import make_stack
from quantfish.runtime.jit import njit
from quantfish.nnue.stack import ensure_accumulator, refresh_ply
from quantfish.nnue.formulas import bitboards, evaluate, evaluate_pair
from quantfish.nnue.layers import make_scratch
from quantfish.nnue.io import load_net
from quantfish.nnue.loader import resolve_main_path
from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty, side_to_move

from quantfish.data.openings import DEFAULT_BOOK as OPENINGS  # noqa: E402


@njit(cache=True, nogil=True)
def bench_scratch(net, boards, sides, rule50s, acc, psqt, computed, scratch):
    """Refresh both perspectives and evaluate every position; returns a checksum."""
    total = 0
    for i in range(boards.shape[0]):
        refresh_ply(net, acc, psqt, computed, 0, boards[i])
        total += evaluate(net, acc, psqt, 0, sides[i], boards[i], rule50s[i], 0, scratch)
    return total


@njit(cache=True, nogil=True)
def bench_incremental(net, boards, sides, rule50s, kings, dirty, ndirty, acc, psqt, computed, scratch):
    """Play the sequence as a search would: ply p = move p, lazy update, evaluate at every ply."""
    total = 0
    refresh_ply(net, acc, psqt, computed, 0, boards[0])
    for p in range(1, boards.shape[0]):
        computed[p, 0] = 0
        computed[p, 1] = 0
        ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1])
        total += evaluate(net, acc, psqt, p, sides[p], boards[p], rule50s[p], 0, scratch)
    return total


@njit(cache=True, nogil=True)
def bench_pair_incremental(big, small, boards, bbs, sides, rule50s, kings, big_nn, small_nn, sb, ss):
    """As ``bench_incremental`` with Stockfish 17.1's two nets (``evaluate_pair``; stacks share dirty)."""
    total = 0
    big_nn[2][0, :] = 0
    small_nn[2][0, :] = 0
    for p in range(boards.shape[0]):
        big_nn[2][p, :] = 0
        small_nn[2][p, :] = 0
        total += evaluate_pair(big, small, big_nn, small_nn, p, boards[p], bbs[p], kings[p, 0], kings[p, 1],
                               sides[p], rule50s[p], 0, sb, ss)
    return total


def stockfish_for_comparison():
    """(path, where it came from) of the Stockfish that benchmarks compare against, or (None, None):
    ``$STOCKFISH`` (a build for this CPU, the fair yardstick; exits when it names no file), else the installed
    one. Shared with ``make bench`` (``tools.bench_all``)."""
    given = os.environ.get("STOCKFISH")
    if given:
        path = shutil.which(given) or given
        if not os.path.exists(path):
            sys.exit(f"STOCKFISH={given}: no such file")
        return path, "$STOCKFISH"
    for path in (shutil.which("stockfish"), "/usr/games/stockfish"):
        if path and os.access(path, os.X_OK):
            return path, "installed (a generic build: set STOCKFISH=/path/to/native/stockfish for a fair ratio)"
    return None, None


def _openings(n):
    fens = []
    if os.path.exists(OPENINGS):
        with open(OPENINGS) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 4:
                    fens.append(" ".join(parts[:4]) + " 0 1")
                if len(fens) >= n:
                    break
    while len(fens) < n:
        fens.append(chess.STARTING_FEN)
    return fens


class _Stockfish:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.send("uci")
        self.wait("uciok")
        self.send("setoption name Threads value 1")
        self.send("isready")
        self.wait("readyok")

    def send(self, s):
        self.p.stdin.write(s + "\n")

    def wait(self, prefix):
        lines = []
        for line in self.p.stdout:
            lines.append(line)
            if line.startswith(prefix):
                return line, lines
        raise RuntimeError("stockfish exited")

    def bestmove(self, fen, moves, nodes):
        self.send(f"position fen {fen} moves {' '.join(moves)}".rstrip())
        self.send(f"go nodes {nodes}")
        line, _ = self.wait("bestmove")
        return line.split()[1]

    def close(self):
        try:
            self.send("quit")
            self.p.wait(timeout=5)
        except Exception:
            self.p.kill()


def game_sequences(games, plies, seed=1):
    """Lists of python-chess boards along games (Stockfish-played when available, else random)."""
    rng = random.Random(seed)
    sf_path = stockfish_for_comparison()[0]
    sf = _Stockfish(sf_path) if sf_path else None
    seqs = []
    try:
        for fen in _openings(games):
            board = chess.Board(fen)
            seq = [board.copy()]
            moves = []
            for _ in range(plies):
                if board.is_game_over(claim_draw=False):
                    break
                if sf:
                    uci = sf.bestmove(fen, moves, 2000)
                    move = chess.Move.from_uci(uci)
                else:
                    move = rng.choice(list(board.legal_moves))
                moves.append(move.uci())
                seq.append((board.copy(), move))
                board.push(move)
                seq[-1] = (seq[-1][0], move, board.copy())
            seqs.append(seq)
    finally:
        if sf:
            sf.close()
    return seqs, ("Stockfish go nodes 2000" if sf else "seeded random legal moves")


def sequence_arrays(seq, max_ply):
    """Boards, sides, rule50, king squares and dirty pieces of one game for the compiled loops."""
    n = min(len(seq), max_ply)
    boards = np.zeros((n, 64), np.int8)
    sides = np.zeros(n, np.int64)
    r50 = np.zeros(n, np.int64)
    kings = np.zeros((n, 2), np.int64)
    _, _, _, dirty, ndirty = make_stack(8, n)
    for p in range(n):
        if p == 0:
            b = seq[0]
        else:
            before, move, b = seq[p]
            set_dirty(dirty, ndirty, p, dirty_pieces(before, move))
        boards[p] = mailbox(b)
        sides[p] = side_to_move(b)
        r50[p] = b.halfmove_clock
        kings[p] = (b.king(chess.WHITE), b.king(chess.BLACK))
    return boards, sides, r50, kings, dirty, ndirty


def _median_rate(fn, count, runs):
    rates = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        rates.append(count / (time.perf_counter() - t))
    return statistics.median(rates)


def stockfish_eval_rate(fens, path, count=3000, repeats=5):
    """Stockfish ``eval`` commands per second: (median time of ``count`` evals) minus (median time of a
    process that evaluates nothing), so process start and net loading are not counted."""
    work = [fens[i % len(fens)] for i in range(count)]

    def run(k):
        # stdin comes from a file and stdout is drained as it arrives, so neither pipe can fill up.
        with tempfile.TemporaryFile("w+") as script:
            script.write("".join(f"position fen {f}\neval\n" for f in work[:k]) + "isready\nquit\n")
            script.seek(0)
            t = time.perf_counter()
            proc = subprocess.Popen([path], stdin=script, stdout=subprocess.PIPE, text=True)
            for line in proc.stdout:
                if line.startswith("readyok"):
                    break
            elapsed = time.perf_counter() - t
            proc.stdout.close()
            proc.wait()
        return elapsed
    base = statistics.median(run(0) for _ in range(repeats))
    full = statistics.median(run(count) for _ in range(repeats))
    return count / max(full - base, 1e-9)


def stockfish_bench_nps(path):
    """Nodes/second of ``stockfish bench`` (16 MB hash, 1 thread, depth 13, its default position set)."""
    out = subprocess.run([path, "bench"], capture_output=True, text=True, timeout=600)
    for line in (out.stderr + out.stdout).splitlines():
        if line.startswith("Nodes/second"):
            return int(line.split(":")[1])
    return None


def measure(arrays, l1, prepared, boards, sides, r50, runs):
    """(from-scratch evals/s, incremental evals/s) of one net with ``evaluate`` (formula by generation)."""
    max_ply = max(len(p[0]) for p in prepared)
    acc, psqt, computed, _, _ = make_stack(l1, max_ply)
    scratch = make_scratch(l1)
    # Warm up (compiles or loads from cache).
    bench_scratch(arrays, boards[:2], sides[:2], r50[:2], acc, psqt, computed, scratch)
    bench_incremental(arrays, *prepared[0][:4], prepared[0][4], prepared[0][5], acc, psqt, computed, scratch)
    scratch_rate = _median_rate(
        lambda: bench_scratch(arrays, boards, sides, r50, acc, psqt, computed, scratch), boards.shape[0], runs)
    n_inc = sum(len(p[0]) - 1 for p in prepared)

    def inc():
        for p in prepared:
            bench_incremental(arrays, p[0], p[1], p[2], p[3], p[4], p[5], acc, psqt, computed, scratch)
    return scratch_rate, _median_rate(inc, n_inc, runs)


def measure_pair(pair, prepared, runs):
    """(incremental evals/s, fraction of evaluations that used the small net) with ``evaluate_pair``."""
    big, small = pair.arrays()
    max_ply = max(len(p[0]) for p in prepared)
    (bl1, sl1) = pair.l1
    big_nn0 = make_stack(bl1, max_ply)
    small_nn0 = make_stack(sl1, max_ply)
    sb, ss = make_scratch(bl1), make_scratch(sl1)
    games = []
    for p in prepared:
        big_nn = big_nn0[:3] + (p[4], p[5])
        small_nn = small_nn0[:3] + (p[4], p[5])
        bbs = np.stack([bitboards(b) for b in p[0]])
        games.append((p[0], bbs, p[1], p[2], p[3], big_nn, small_nn))
    bench_pair_incremental(big, small, *games[0], sb, ss)
    n = sum(len(g[0]) for g in games)

    def run():
        for g in games:
            bench_pair_incremental(big, small, *g, sb, ss)
    rate = _median_rate(run, n, runs)
    from quantfish.nnue.formulas import material_17
    small_used = sum(abs(material_17(b, s)[1]) > 962 for g in games for b, s in zip(g[0], g[2]))
    return rate, small_used / n


def _report(label, net, scratch_rate, inc_rate):
    print(f"{label:<15}: {os.path.basename(net.path)} ({net.arch.describe()})")
    print(f"  from scratch : {scratch_rate:12,.0f} evals/s  ({1e6 / scratch_rate:.2f} us/eval: refresh both "
          f"perspectives + forward + final eval)")
    print(f"  incremental  : {inc_rate:12,.0f} evals/s  ({1e6 / inc_rate:.2f} us/eval: lazy update of both "
          f"perspectives (refresh on own king moves) + forward + final eval)")


def main(argv=None):
    ap = argparse.ArgumentParser(description="NNUE evaluation speed.")
    ap.add_argument("--net", default=None, help="Stockfish 15.1 net (default: nets/nn-ad9b42354671.nnue)")
    ap.add_argument("--net-big", default=None, help="Stockfish 17.1 big net (default: nn-1c0000000000.nnue)")
    ap.add_argument("--net-small", default=None, help="Stockfish 17.1 small net (default: nn-37f18f62d772.nnue)")
    ap.add_argument("--games", type=int, default=8)
    ap.add_argument("--plies", type=int, default=120)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-stockfish", action="store_true")
    ap.add_argument("--no-17", action="store_true", help="skip the Stockfish 17.1 nets")
    args = ap.parse_args(argv)

    net = load_net(resolve_main_path(args.net))
    pair = None
    if not args.no_17:
        from quantfish.nnue.loader import load_pair
        try:
            pair = load_pair(args.net_big, args.net_small)
        except ValueError as exc:
            print(f"(no Stockfish 17.1 pair: {exc})")
    seqs, source = game_sequences(args.games, args.plies)
    prepared = [sequence_arrays(s, args.plies + 1) for s in seqs]
    boards = np.concatenate([p[0] for p in prepared])
    sides = np.concatenate([p[1] for p in prepared])
    r50 = np.concatenate([p[2] for p in prepared])

    print(f"positions      : {boards.shape[0]} from {len(seqs)} games ({source}), median of {args.runs} runs")
    _report("15.1 net", net, *measure(net.arrays(), net.arch.l1, prepared, boards, sides, r50, args.runs))
    if pair is not None:
        for label, n in (("17.1 big net", pair.big), ("17.1 small net", pair.small)):
            _report(label, n, *measure(n.arrays(), n.arch.l1, prepared, boards, sides, r50, args.runs))
        rate, frac = measure_pair(pair, prepared, args.runs)
        print(f"17.1 pair      : incremental {rate:12,.0f} evals/s  ({1e6 / rate:.2f} us/eval: evaluate_pair, "
              f"small net chosen in {100 * frac:.1f}% of these positions)")

    sf = None if args.no_stockfish else stockfish_for_comparison()[0]
    if sf:
        fens = [b.fen() for s in seqs for b in [s[0]] + [t[2] for t in s[1:]]][:400]
        eval_rate = stockfish_eval_rate(fens, sf)
        nps = stockfish_bench_nps(sf)
        print(f"stockfish eval : {eval_rate:12,.0f} eval commands/s ({1e6 / eval_rate:.1f} us each; includes "
              f"a fresh Position, NNUE from scratch, the classical trace and printing: an upper bound)")
        if nps:
            print(f"stockfish bench: {nps:12,} nodes/s ({1e6 / nps:.2f} us/node incl. search; an upper bound "
                  f"on its incremental eval cost)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
