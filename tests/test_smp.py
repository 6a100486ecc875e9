"""Lazy SMP (quantfish.search.threads): helper threads share the table, obey the limits and stop with the main search."""
import threading
import time

import chess
import numpy as np
import pytest
from numba import njit

from quantfish.core.fen import parse_fen
from quantfish.core.notation import move_to_uci
from quantfish.search.tt import tt_probe, tt_store
from quantfish.search.driver import Limits
from quantfish.search.values import MATE, MATE_IN_MAX
from quantfish.search.threads import Finished, vote
from quantfish.search.timeman import Clock

MIDDLEGAME = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"


def _legal(fen, move):
    return chess.Move.from_uci(move_to_uci(move, False)) in chess.Board(fen).legal_moves


@pytest.mark.parametrize("threads", [2, 4])
def test_threads_search_returns_legal_move_and_counts_all_nodes(searcher, threads):
    searcher.set_threads(threads)
    searcher.clear()
    infos = []
    best, _, lines = searcher.think(parse_fen(MIDDLEGAME), [], Limits(depth=8), on_info=lambda **k: infos.append(k))
    assert _legal(MIDDLEGAME, best)
    assert lines and lines[0].moves[0] == best
    # info's node count includes the helpers: more than the main thread searched alone (which searches no more
    # after its last info line; the helpers run on until they are joined).
    assert searcher.nodes >= infos[-1]["nodes"] > int(searcher.ctl["nodes"][0])
    assert all(h.nodes > 0 for h in searcher.pool.helpers)


@pytest.mark.parametrize("threads", [2, 4])
def test_node_limit_is_shared_by_the_threads(searcher, threads):
    searcher.set_threads(threads)
    searcher.clear()
    best, _, _ = searcher.think(parse_fen(MIDDLEGAME), [], Limits(nodes=40_000))
    assert _legal(MIDDLEGAME, best)
    # Each thread stops at its share (checked every 1,024 nodes), so the total is about the limit.
    assert 0.5 * 40_000 <= searcher.nodes <= 40_000 + threads * 1024


def test_movetime_is_kept_with_helpers(searcher):
    searcher.set_threads(2)
    limits = Limits(movetime=300)
    start = time.monotonic_ns()
    best, _, _ = searcher.think(parse_fen(MIDDLEGAME), [], limits, clock=Clock.for_limits(limits, 0, 10, start))
    elapsed = (time.monotonic_ns() - start) / 1e9
    assert _legal(MIDDLEGAME, best)
    assert elapsed < 2.0
    assert not any(t.is_alive() for t in threading.enumerate() if t.name.startswith("quantfish-helper"))


def test_stop_ends_every_thread(searcher):
    searcher.set_threads(3)
    searcher.clear_stop()
    result = {}
    t = threading.Thread(target=lambda: result.setdefault(
        "r", searcher.think(parse_fen(MIDDLEGAME), [], Limits(infinite=True), reset_stop=False)))
    t.start()
    time.sleep(0.5)
    stopped = time.perf_counter()
    searcher.stop()
    t.join(timeout=5)
    assert not t.is_alive()
    assert time.perf_counter() - stopped < 1.0      # 50 ms on an idle machine; generous for a loaded one
    assert _legal(MIDDLEGAME, result["r"][0])
    assert not any(t.is_alive() for t in threading.enumerate() if t.name.startswith("quantfish-helper"))


def test_vote_takes_the_move_found_deeper_higher_or_by_more_threads():
    main = Finished(10, 20, [1, 2])
    assert vote([main, Finished(10, 20, [1, 5])], MATE_IN_MAX) is main            # the same move: the main's
    assert vote([main, Finished(10, 10, [3, 4])], MATE_IN_MAX) is main            # a lower score loses
    higher = Finished(10, 60, [3, 4])
    assert vote([main, higher], MATE_IN_MAX) is higher                           # a higher one, as deep, wins
    assert vote([main, Finished(4, 40, [3, 4])], MATE_IN_MAX) is main             # but not from far shallower
    # Two threads agreeing outvote a third that scored a little higher.
    assert vote([main, Finished(10, 18, [1, 7]), Finished(10, 30, [3, 4])], MATE_IN_MAX).pv[0] == 1
    # A mate is taken over any vote, the shorter mate over a longer one; a thread that sees itself mated
    # gets no vote against one that does not.
    mate = Finished(6, MATE - 5, [3, 4])
    assert vote([main, mate], MATE_IN_MAX) is mate
    assert vote([Finished(12, MATE - 9, [1, 2]), mate], MATE_IN_MAX) is mate
    assert vote([main, Finished(30, -MATE + 8, [3, 4])], MATE_IN_MAX) is main


def test_the_vote_decides_the_move_played(searcher, monkeypatch):
    # A helper that finished deeper with a far better score for another legal move gets that move played, and
    # the last info line shows its line; with a fixed depth the main thread's move stands.
    searcher.set_threads(2)
    board = parse_fen(MIDDLEGAME)
    other = next(m for m in searcher.legal_root_moves(board)
                 if move_to_uci(m, False) == "a2a3")
    monkeypatch.setattr(searcher.pool, "finished", lambda: [Finished(40, 900, [other])])
    infos = []
    limits = Limits(movetime=200)
    best, ponder, lines = searcher.think(board, [], limits, clock=Clock.for_limits(limits, 0, 10, time.monotonic_ns()),
                                         on_info=lambda **k: infos.append(k))
    assert best == other and ponder is None and lines[0].moves == [other]
    assert infos[-1]["pv"] == [other] and infos[-1]["depth"] == 40
    best, _, _ = searcher.think(board, [], Limits(depth=6))
    assert best != other


def test_threads_share_one_table_and_resize_keeps_them(searcher):
    searcher.set_threads(3)
    assert searcher.threads == 3
    assert all(h.tt is searcher.tt for h in searcher.pool.helpers)
    searcher.resize(2)
    assert searcher.threads == 3 and all(h.tt is searcher.tt for h in searcher.pool.helpers)
    searcher.set_threads(1)
    assert searcher.pool is None and searcher.threads == 1


@njit(nogil=True, cache=False)
def _hammer(tt, keys, seed, n, out):
    """Stores and probes keys of one bucket from several threads; each key's entry is a function of the key,
    so a hit that returns anything else is a torn (corrupt) entry."""
    s = np.uint64(seed)
    tte = np.zeros(6, np.int64)
    for _ in range(n):
        s ^= s << np.uint64(13)
        s ^= s >> np.uint64(7)
        s ^= s << np.uint64(17)
        key = keys[(s >> np.uint64(5)) % np.uint64(keys.shape[0])]
        move = (key >> 20) & 0xFFFF
        score = (key >> 8) & 0x3FF
        depth = (key >> 40) & 63
        if (s >> np.uint64(33)) & np.uint64(1):
            tt_store(tt, key, move, score, -score, depth, 3, 0)
        elif tt_probe(tt, key, tte):
            out[0] += 1
            if tte[0] != move or tte[1] != score or tte[2] != -score or tte[3] != depth or tte[4] != 3:
                out[1] += 1


def test_table_under_racing_threads_never_returns_a_corrupt_entry():
    # One bucket (two entries) and eight keys: every store and probe of the two threads hits the same words.
    # Written as two plain words (key, data) instead of (key ^ data, data), this gives some 2,000 corrupt hits
    # in these 60 million operations on a 2-core machine.
    tt = np.zeros(4, np.int64)
    keys = np.random.default_rng(1).integers(1, 2**62, 8, dtype=np.int64)
    _hammer(tt, keys, 1, 10, np.zeros(2, np.int64))
    outs = [np.zeros(2, np.int64) for _ in range(2)]
    threads = [threading.Thread(target=_hammer, args=(tt, keys, 7 + k, 30_000_000, outs[k])) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hits = sum(int(o[0]) for o in outs)
    assert hits > 1_000_000
    assert sum(int(o[1]) for o in outs) == 0


def test_bench_command_takes_a_thread_count():
    from click.testing import CliRunner
    from quantfish.cli.bench import bench_command

    def nodes(threads):
        res = CliRunner().invoke(bench_command, ["--depth", "5", "--threads", str(threads)])
        assert res.exit_code == 0, res.output
        return int(next(l for l in res.output.splitlines() if l.startswith("Nodes searched")).split(":")[1])
    # The helpers' nodes count too: two threads search more nodes to the same depths than one.
    assert nodes(2) > nodes(1)
    assert CliRunner().invoke(bench_command, ["--threads", "0"]).exit_code != 0
