"""``quantfish match``: statistics against hand computations, games between fake UCI engines
(``tests/fake_uci_engine.py``), faults, determinism, batches of pairs, the SPRT stop, the command line."""
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.pgn
import pytest
from click.testing import CliRunner

from quantfish.cli.match import match_command
from quantfish.data.openings import DEFAULT_BOOK
from quantfish.match.config import (Adjudication, EngineSpec, Limits, MatchConfig, build_engines, parse_option,
                                    parse_tc)
from quantfish.match.game import GameRecord, _Adjudicator
from quantfish.match.runner import PairResult, Tally, opening_index, pair_opening, play_pairs, run_match
from quantfish.match.stats import (PAIR_SCORES, Sprt, constrained_mle, elo_from_score, estimate_elo,
                                   llr_logistic, mean_and_variance, score_from_elo)
from quantfish.match.uci import MATE_CP, SearchResult, parse_info

FAKE = Path(__file__).resolve().with_name("fake_uci_engine.py")
Z95 = 1.959963984540054


def fake(mode="random", *args):
    return (sys.executable, str(FAKE), mode, *map(str, args))


def fake_text(mode="random", *args):
    return " ".join([sys.executable, str(FAKE), mode, *map(str, args)])


def make_config(a=None, b=None, *, limits=None, adjudication=None, book=None, **kwargs):
    kwargs.setdefault("hang_timeout", 5.0)
    kwargs.setdefault("startup_timeout", 10.0)
    return MatchConfig(engines=(EngineSpec("A", a or fake("random", "--seed", 1)),
                                EngineSpec("B", b or fake("random", "--seed", 2))),
                       limits=limits or Limits(nodes=1), book=str(book or DEFAULT_BOOK),
                       adjudication=adjudication or Adjudication(max_moves=40), **kwargs)


def signature(pair: PairResult):
    """Everything about a pair that a deterministic replay must reproduce."""
    return (pair.pair, pair.opening, pair.fen,
            tuple((g.white, g.black, g.status, g.result, g.reason, tuple(m.uci for m in g.moves))
                  for g in pair.games))


def tally_key(tally: Tally):
    return (tuple(tally.penta), tally.wins, tally.draws, tally.losses, tally.played, tally.faults,
            dict(tally.reasons))


# statistics -------------------------------------------------------------------------------------------------

def test_score_variance_elo_interval_by_hand():
    penta = [3, 10, 40, 15, 4]
    pair_scores = [0.0] * 3 + [0.25] * 10 + [0.5] * 40 + [0.75] * 15 + [1.0] * 4
    n = len(pair_scores)
    mu = statistics.fmean(pair_scores)
    var = statistics.pvariance(pair_scores)
    assert mu == pytest.approx((10 * 0.25 + 40 * 0.5 + 15 * 0.75 + 4) / 72)
    est = estimate_elo(penta)
    assert est.pairs == n == 72
    assert est.score == pytest.approx(mu)
    assert est.variance == pytest.approx(var)
    assert est.elo == pytest.approx(-400 * math.log10(1 / mu - 1))
    half = Z95 * math.sqrt(var / n)
    assert est.lower == pytest.approx(-400 * math.log10(1 / (mu - half) - 1))
    assert est.upper == pytest.approx(-400 * math.log10(1 / (mu + half) - 1))
    assert est.lower < est.elo < est.upper
    assert est.los == pytest.approx(0.5 * (1 + math.erf((mu - 0.5) / math.sqrt(var / n) / math.sqrt(2))))
    assert est.nelo == pytest.approx((mu - 0.5) / math.sqrt(2 * var) * 800 / math.log(10))


def test_elo_score_round_trip_and_edges():
    for elo in (-300, -20, 0, 7.5, 150):
        assert elo_from_score(score_from_elo(elo)) == pytest.approx(elo)
    assert score_from_elo(0) == 0.5
    assert elo_from_score(1.0) == math.inf and elo_from_score(0.0) == -math.inf
    assert estimate_elo([0, 0, 0, 0, 0]) is None
    all_wins = estimate_elo([0, 0, 0, 0, 5])
    assert all_wins.elo == math.inf and all_wins.los == 1.0


def test_published_pentanomial_sample():
    """A fishtest-style statistics page (montytest) lists for [13, 37, 50, 25, 3]: Elo -43.6578, normalized
    Elo -63.97, and logistic exact LLR -0.53772 for H0 0 / H1 2.716 (normalised bounds 0 and 4)."""
    est = estimate_elo([13, 37, 50, 25, 3])
    assert est.score == pytest.approx(0.4375)
    assert est.variance == pytest.approx(0.05762, abs=1e-5)
    assert est.elo == pytest.approx(-43.6578, abs=1e-4)
    assert est.nelo == pytest.approx(-63.97, abs=0.01)
    assert llr_logistic([13, 37, 50, 25, 3], 0.0, 2.7156) == pytest.approx(-0.53772, abs=2e-4)


def test_constrained_mle_is_the_maximum_with_that_mean():
    pdf = [0.05, 0.2, 0.45, 0.22, 0.08]
    for target in (0.3, 0.5, 0.52, 0.7):
        q = constrained_mle(pdf, PAIR_SCORES, target)
        assert sum(q) == pytest.approx(1)
        assert sum(qi * x for qi, x in zip(q, PAIR_SCORES)) == pytest.approx(target, abs=1e-12)
        best = sum(p * math.log(qi) for p, qi in zip(pdf, q))
        rng = random.Random(target)
        for _ in range(200):
            # a direction that keeps the sum and the mean: orthogonal to (1, ..., 1) and to the scores
            d = [rng.uniform(-1, 1) for _ in q]
            for basis in ([1] * 5, [x - 0.5 for x in PAIR_SCORES]):
                norm = sum(b * b for b in basis)
                dot = sum(a * b for a, b in zip(d, basis))
                d = [a - dot / norm * b for a, b in zip(d, basis)]
            step = 1e-3
            other = [qi + step * di for qi, di in zip(q, d)]
            if min(other) <= 0:
                continue
            assert sum(p * math.log(o) for p, o in zip(pdf, other)) <= best + 1e-12


def test_llr_near_the_normal_approximation_on_a_large_sample():
    """For close bounds the GSPRT's LLR tends to N (s1 - s0) (2 mu - s0 - s1) / (2 var)."""
    penta = [400, 3000, 9000, 3300, 450]
    mu, var = mean_and_variance(penta)
    s0, s1 = score_from_elo(0), score_from_elo(2)
    approx = sum(penta) * (s1 - s0) * (2 * mu - s0 - s1) / (2 * var)
    assert llr_logistic(penta, 0, 2) == pytest.approx(approx, rel=0.02)


def test_sprt_accepts_h1_h0_or_goes_on():
    sprt = Sprt(0, 5)
    assert sprt.lower == pytest.approx(math.log(0.05 / 0.95))
    assert sprt.upper == pytest.approx(math.log(0.95 / 0.05))
    strong = [200, 1500, 4000, 1900, 300]
    weak = list(reversed(strong))
    assert mean_and_variance(strong)[0] > 0.5
    assert sprt.llr(strong) >= sprt.upper and sprt.decision(strong) == "H1"
    assert sprt.llr(weak) <= sprt.lower and sprt.decision(weak) == "H0"
    small = [1, 3, 6, 3, 1]
    assert sprt.lower < sprt.llr(small) < sprt.upper and sprt.decision(small) is None
    assert sprt.llr([0, 0, 0, 0, 0]) == 0.0
    # an even score with elo0 >= 0 is always evidence for H0
    assert sprt.llr([10, 20, 40, 20, 10]) < 0
    with pytest.raises(ValueError):
        Sprt(5, 0)
    with pytest.raises(ValueError):
        Sprt(0, 5, alpha=0.7)


def _pair(index, a_points):
    """A complete pair where A scores ``a_points`` (game 0 White, game 1 Black)."""
    results = {1.0: ("1-0", "0-1"), 0.5: ("1/2-1/2", "1/2-1/2"), 0.0: ("0-1", "1-0")}
    g0, g1 = a_points
    games = [GameRecord(index, 0, 0, chess.STARTING_FEN, "A", "B", result=results[g0][0], reason="r"),
             GameRecord(index, 1, 0, chess.STARTING_FEN, "B", "A", result=results[g1][1], reason="r")]
    return PairResult(index, 0, chess.STARTING_FEN, games)


def test_tally_pentanomial_from_pairs():
    pairs = [_pair(0, (0.0, 0.0)), _pair(1, (0.5, 0.0)), _pair(2, (1.0, 0.0)), _pair(3, (0.5, 0.5)),
             _pair(4, (1.0, 0.5)), _pair(5, (1.0, 1.0)), _pair(6, (0.0, 1.0))]
    tally = Tally.from_pairs(("A", "B"), pairs)
    assert tally.penta == [1, 1, 3, 1, 1]
    assert (tally.wins, tally.draws, tally.losses) == (5, 4, 5)
    assert Tally.from_pairs(("A", "B"), reversed(pairs)).penta == tally.penta


# parsing ----------------------------------------------------------------------------------------------------

def test_parse_command_line_values():
    assert parse_tc("10+0.1") == (10.0, 0.1)
    assert parse_tc("8") == (8.0, 0.0)
    for bad in ("", "x", "0+1", "5+-1", "1+y", "inf"):
        with pytest.raises(ValueError):
            parse_tc(bad)
    a, b = build_engines(["a=/bin/eng --x 'two words'", "b=eng2"], ["*.Hash=16", "a.Hash=64", "b.Skill Level=3"])
    assert a.command == ("/bin/eng", "--x", "two words")
    assert dict(a.options) == {"Hash": "64"}
    assert dict(b.options) == {"Hash": "16", "Skill Level": "3"}
    with pytest.raises(ValueError):
        build_engines(["a=x"], [])
    with pytest.raises(ValueError):
        build_engines(["a=x", "a=y"], [])
    with pytest.raises(ValueError):
        parse_option("c.Hash=1", ["a", "b"])
    with pytest.raises(ValueError):
        Limits()


def test_parse_info_takes_score_and_skips_garbage():
    result = SearchResult(move=None, seconds=0)
    parse_info("info depth 12 seldepth 20 score cp -31 nodes 1000 pv e2e4 e7e5".split(), result)
    assert (result.depth, result.score, result.nodes, result.score_text) == (12, -31, 1000, "cp -31")
    parse_info("info depth x score mate -3 pv".split(), result)
    assert result.score == -(MATE_CP - 3) and result.score_text == "mate -3"
    parse_info("info string score cp 999".split(), result)
    parse_info("info score cp".split(), result)
    assert result.score == -(MATE_CP - 3)


def test_adjudicator_draw_and_two_sided_resign():
    rules = Adjudication(draw_move=3, draw_count=2, draw_score=10, resign_count=2, resign_score=300)
    adj = _Adjudicator(rules)
    for ply in range(4):
        adj.add(ply % 2 == 0, 5)
    assert adj.verdict(2) is None
    assert adj.verdict(3) == ("1/2-1/2", "adjudication: draw")
    adj = _Adjudicator(rules)
    for ply in range(4):                      # White says +400 for itself, Black -400 for itself
        adj.add(ply % 2 == 0, 400 if ply % 2 == 0 else -400)
    assert adj.verdict(0) == ("1-0", "adjudication: Black resigns")
    adj = _Adjudicator(rules)
    for ply in range(4):                      # only White thinks it is winning: no verdict
        adj.add(ply % 2 == 0, 400 if ply % 2 == 0 else 0)
    assert adj.verdict(0) is None
    assert _Adjudicator(Adjudication(resign=False, draw=False)).verdict(100) is None


# games between fake engines ---------------------------------------------------------------------------------

def test_short_match_swaps_colours_on_the_same_opening():
    config = make_config(seed=3)
    outcome = run_match(config, range(4), concurrency=2)
    assert outcome.status == "complete" and outcome.not_played == 0
    assert [p.pair for p in outcome.pairs] == [0, 1, 2, 3]
    for pair in outcome.pairs:
        g0, g1 = pair.games
        assert (g0.white, g0.black, g1.white, g1.black) == ("A", "B", "B", "A")
        assert g0.fen == g1.fen == pair.fen
        assert pair.opening == opening_index(config, pair.pair)
        assert chess.Board(pair.fen) == chess.Board(pair_opening(config, pair.pair)[1])
        for game in pair.games:
            board = chess.Board(game.fen)
            for move in game.moves:
                assert chess.Move.from_uci(move.uci) in board.legal_moves
                board.push_uci(move.uci)
            assert game.result in ("1-0", "0-1", "1/2-1/2") and game.reason
    tally = outcome.tally
    assert tally.played == 8 and tally.wins + tally.draws + tally.losses == 8
    assert tally.penta == Tally.from_pairs(config.names, outcome.pairs).penta
    assert sum(tally.penta) == 4
    by_hand = [0] * 5
    for pair in outcome.pairs:
        by_hand[round(2 * sum(g.points("A") for g in pair.games))] += 1
    assert tally.penta == by_hand
    assert all(count == 0 for faults in tally.faults.values() for count in faults.values())


FAULTS = [
    ("crash", fake("crash", "--after", 2), Limits(nodes=1), {}),
    ("illegal", fake("illegal", "--after", 1), Limits(nodes=1), {}),
    ("hang", fake("hang", "--after", 1), Limits(nodes=1), {"hang_timeout": 0.5}),
    ("time", fake("slow", "--delay", 0.6, "--after", 1), Limits(base=0.3), {"margin": 0.05}),
]


@pytest.mark.parametrize("kind,command,limits,extra", FAULTS, ids=[f[0] for f in FAULTS])
def test_faulty_engine_loses_and_is_counted(kind, command, limits, extra):
    for faulty, fine in (("B", "A"), ("A", "B")):
        engines = {faulty: command, fine: fake("random", "--seed", 1)}
        config = make_config(engines["A"], engines["B"], limits=limits, **extra)
        outcome = run_match(config, [0])
        tally = outcome.tally
        assert outcome.status == "complete" and tally.played == 2
        assert tally.faults[faulty][kind] == 2, tally.faults
        assert sum(tally.faults[fine].values()) == 0 and sum(tally.faults[faulty].values()) == 2
        games = outcome.pairs[0].games
        for game in games:
            assert game.fault == kind and game.fault_engine == faulty
            assert game.points(fine) == 1.0
        assert len(games[0].moves) >= 1
        if kind != "illegal":                           # killed after the fault, started afresh, moved again
            assert len(games[1].moves) >= 1
        first_wins = faulty == "B"
        assert tally.penta == ([0, 0, 0, 0, 1] if first_wins else [1, 0, 0, 0, 0])


def test_garbage_lines_are_ignored():
    config = make_config(fake("garbage", "--seed", 5), adjudication=Adjudication(max_moves=10))
    outcome = run_match(config, [0])
    assert outcome.tally.played == 2
    assert all(sum(f.values()) == 0 for f in outcome.tally.faults.values())
    assert all(len(g.moves) > 4 for g in outcome.pairs[0].games)


def test_clock_runs_down_and_increment_refills_it():
    """0.12 s a move with 0.3+0.15: the increment keeps the clock full. 0.2 s a move with 0.7+0: the clock
    runs out on the fourth move (0.7 - 3 x 0.2 + margin < 0.2)."""
    config = make_config(fake("slow", "--delay", 0.12), limits=Limits(base=0.3, inc=0.15), margin=0.02,
                         adjudication=Adjudication(max_moves=5, resign=False))
    outcome = run_match(config, [0])
    assert outcome.tally.played == 2 and outcome.tally.faults["A"]["time"] == 0
    assert all(g.reason == "adjudication: 5 moves" for g in outcome.pairs[0].games)
    config = make_config(fake("slow", "--delay", 0.2), limits=Limits(base=0.7), margin=0.02,
                         adjudication=Adjudication(max_moves=8, resign=False))
    outcome = run_match(config, [0])
    assert outcome.tally.faults["A"]["time"] == 2
    for game in outcome.pairs[0].games:
        a_moves = game.moves[0 if game.white == "A" else 1::2]
        assert len(a_moves) == 3 and game.reason.endswith("loses on time (no move)")


def test_engine_that_does_not_start_stops_the_match():
    config = make_config(b=fake("nostart"), startup_timeout=2)
    outcome = run_match(config, range(3), concurrency=2)
    assert outcome.status == "failed"
    assert outcome.tally.played == 0 and outcome.not_played == 6
    assert outcome.tally.faults["B"]["start"] >= 1 and outcome.tally.faults["A"]["start"] == 0
    assert "B failed to start" in outcome.error
    silent = make_config(b=fake("silent"), startup_timeout=0.5)
    outcome = run_match(silent, [0])
    assert outcome.status == "failed" and "within 0.5 s" in outcome.error


def test_rules_and_adjudication_end_games(tmp_path):
    book = tmp_path / "book.epd"
    book.write_text("# mate in one for the side to move\n6k1/5ppp/8/8/8/8/8/R5K1 w - - bm Ra8#;\n"
                    "8/8/8/4k3/8/8/3Kn3/8 w - -\n")
    config = make_config(book=book, book_order="sequential")
    mate, bare = run_match(config, [0, 1]).pairs
    assert [g.reason for g in mate.games] == ["checkmate", "checkmate"]
    assert [g.moves[0].uci for g in mate.games] == ["a1a8", "a1a8"]
    assert [g.result for g in mate.games] == ["1-0", "1-0"]
    assert [g.reason for g in bare.games] == ["insufficient material"] * 2 and not bare.games[0].moves

    sure = make_config(fake("random", "--score", 500), fake("random", "--score", -500))
    games = run_match(sure, [0]).pairs[0].games
    assert [g.reason for g in games] == ["adjudication: Black resigns", "adjudication: White resigns"]
    assert all(len(g.moves) == 6 and g.points("A") == 1 for g in games)
    one_sided = make_config(fake("random", "--score", 500), fake("random", "--score", 0),
                            adjudication=Adjudication(max_moves=5))
    games = run_match(one_sided, [0]).pairs[0].games
    assert all(g.reason == "adjudication: 5 moves" and len(g.moves) == 10 for g in games)
    quiet = make_config(fake("random", "--score", 0), fake("random", "--score", 0),
                        adjudication=Adjudication(draw_move=3, draw_count=2, draw_score=10))
    games = run_match(quiet, [0]).pairs[0].games
    assert all(g.reason == "adjudication: draw" and len(g.moves) == 6 for g in games)


def test_same_seed_same_openings_and_results():
    config = make_config(seed=11)
    first = run_match(config, range(5), concurrency=2)
    again = run_match(config, range(5), concurrency=1)
    assert [signature(p) for p in first.pairs] == [signature(p) for p in again.pairs]
    assert tally_key(first.tally) == tally_key(again.tally)
    other = make_config(seed=12)
    assert [opening_index(other, p) for p in range(5)] != [opening_index(config, p) for p in range(5)]
    assert [opening_index(config, p) for p in range(5)] == [p.opening for p in first.pairs]


def test_a_batch_alone_equals_the_same_pairs_in_a_larger_run():
    config = make_config(seed=5)
    whole = run_match(config, range(6), concurrency=2)
    batches = [play_pairs(config, [4, 1]), play_pairs(config, [0, 5, 2]), play_pairs(config, [3])]
    by_index = {p.pair: p for batch in batches for p in batch}
    assert [p.pair for p in batches[0]] == [4, 1]
    assert [signature(by_index[p.pair]) for p in whole.pairs] == [signature(p) for p in whole.pairs]
    merged = Tally.from_pairs(config.names, [p for batch in batches for p in batch])
    assert tally_key(merged) == tally_key(whole.tally)
    assert estimate_elo(merged.penta) == estimate_elo(whole.tally.penta)


def test_sprt_stops_the_match_once_decided():
    config = make_config(b=fake("illegal"))
    outcome = run_match(config, range(100), sprt=Sprt(0, 20))
    assert outcome.status == "sprt" and outcome.decision == "H1"
    assert 0 < outcome.tally.played < 200 and outcome.not_played == 0
    assert outcome.tally.penta[4] == outcome.tally.pairs


def test_sprt_of_an_engine_against_itself_never_accepts_h1():
    mirror = make_config(fake("random", "--seed", 4), fake("random", "--seed", 4))
    outcome = run_match(mirror, range(12), concurrency=2, sprt=Sprt(0, 10))
    assert outcome.decision != "H1"
    assert outcome.tally.penta[0] == outcome.tally.penta[1] == outcome.tally.penta[3] == 0
    assert Sprt(0, 10).llr(outcome.tally.penta) < 0
    noisy = make_config(fake("random", "--seed", 4), fake("random", "--seed", 9))
    outcome = run_match(noisy, range(12), concurrency=2, sprt=Sprt(0, 10))
    assert outcome.decision != "H1" and outcome.status in ("complete", "sprt")


# command line -----------------------------------------------------------------------------------------------

def test_cli_match_writes_pgn_and_json(tmp_path):
    pgn, js = tmp_path / "games.pgn", tmp_path / "summary.json"
    args = ["--engine", f"A={fake_text('random', '--seed', 1)}", "--engine", f"B={fake_text('random', '--seed', 2)}",
            "--tc", "5+0.05", "--games", "3", "--concurrency", "2", "--max-moves", "30", "--seed", "2",
            "--pgn", str(pgn), "--json", str(js), "--sprt", "0,5", "--option", "*.Hash=8", "--no-progress"]
    result = CliRunner().invoke(match_command, args)
    assert result.exit_code == 0, result.output
    assert "Elo" in result.output and "LLR" in result.output and "Traceback" not in result.output
    summary = json.loads(js.read_text())
    assert summary["games"]["played"] == 4 and summary["status"] == "complete"
    assert sum(summary["pentanomial"]) == 2
    with open(pgn) as handle:
        games = []
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    assert len(games) == 4
    for game in games:
        headers = game.headers
        assert {headers["White"], headers["Black"]} == {"A", "B"}
        assert headers["TimeControl"] == "5+0.05" and headers["Termination"] and headers["TerminationDetails"]
        assert headers["Result"] in ("1-0", "0-1", "1/2-1/2") and headers["FEN"]
        assert not game.errors
        assert len(list(game.mainline_moves())) == int(headers["PlyCount"])


@pytest.mark.parametrize("args,message", [
    (["--engine", "a=x", "--nodes", "1"], "exactly two engines"),
    (["--engine", "a=x", "--engine", "b=y"], "give a limit"),
    (["--engine", "a=x", "--engine", "b=y", "--tc", "ten"], "not a number"),
    (["--engine", "a=x", "--engine", "b=y", "--tc", "1", "--movetime", "1"], "exclude each other"),
    (["--engine", "a=x", "--engine", "b=y", "--nodes", "1", "--option", "c.Hash=1"], "no engine named"),
    (["--engine", "a=x", "--engine", "b=y", "--nodes", "1", "--sprt", "5,0"], "ELO0 must be less"),
    (["--engine", "a=x", "--engine", "b=y", "--nodes", "1", "--sprt", "0,5", "--alpha", "2"], "alpha"),
    (["--engine", "a=x", "--engine", "b=y", "--nodes", "0"], "--nodes"),
])
def test_cli_rejects_bad_values(args, message):
    result = CliRunner().invoke(match_command, args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_cli_engine_that_does_not_start(tmp_path):
    result = CliRunner().invoke(match_command, [
        "--engine", f"A={fake_text()}", "--engine", f"B={tmp_path / 'no-such-engine'}", "--nodes", "1"])
    assert result.exit_code == 1
    assert "engine B did not start" in result.output and "no games were played" in result.output
    result = CliRunner().invoke(match_command, [
        "--engine", f"A={fake_text()}", "--engine", "B=x", "--nodes", "1", "--book", str(tmp_path / "none.epd")])
    assert result.exit_code == 1 and "none.epd" in result.output and "Traceback" not in result.output


def test_ctrl_c_kills_engines_keeps_pgn_and_prints_the_summary(tmp_path):
    pids, pgn = tmp_path / "pids", tmp_path / "games.pgn"
    pids.mkdir()
    engine = fake_text("slow", "--delay", 0.02, "--pid-dir", pids)
    proc = subprocess.Popen(
        [sys.executable, "-m", "quantfish", "match", "--engine", f"A={engine}", "--engine", f"B={engine}",
         "--nodes", "1", "--games", "200", "--concurrency", "2", "--max-moves", "10", "--pgn", str(pgn),
         "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not pgn.exists() or pgn.read_text().count("[Event ") < 2):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in out and "Elo" in out and "Traceback" not in out + err
    with open(pgn) as handle:
        count = 0
        while (game := chess.pgn.read_game(handle)) is not None:
            assert not game.errors and game.headers["Result"] != "*"
            count += 1
    played = int(out.split("Games")[1].split()[0])
    assert count == played >= 2
    time.sleep(0.2)
    for pid in (int(p.name) for p in pids.iterdir()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_ctrl_c_while_an_engine_starts(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "quantfish", "match", "--engine", f"A={fake_text('silent', '--pid-dir', pids)}",
         "--engine", f"B={fake_text()}", "--nodes", "1", "--startup-timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(pids.iterdir()):
        time.sleep(0.05)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130 and time.monotonic() - started < 10
    assert "interrupted" in err and "Traceback" not in out + err
    time.sleep(0.2)
    for pid in (int(p.name) for p in pids.iterdir()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
