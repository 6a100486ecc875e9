"""Self-play data generation (quantfish.datagen, quantfish.datagen) and the gendata / data commands."""

import signal
import subprocess
import sys
import time

import chess
import numpy as np
import pytest
from click.testing import CliRunner

from quantfish.datagen.config import GenConfig
from quantfish.data.openings import Openings, OpeningsError
from quantfish.datagen.run import _OrderedOutput, generate, shares
from quantfish.datagen.shard import ShardPlayer
from quantfish.datagen.selfplay import (CHECKMATE, DRAW, FIFTY_MOVES, MATERIAL, MAX_PLIES, STALEMATE, WHITE_WINS,
                                  threefold)
from quantfish.data.records import DataFileError, from_bytes, read_records
from quantfish.data.text import format_lines
from tests.testdata import ROOT, require
from quantfish.cli.main import main

from quantfish.data.openings import DEFAULT_BOOK as BOOK
FAST = GenConfig(depth=1)
MAX_CP = 31507 * 100 // 361          # the evaluation's clamp in centipawns; mate scores are not kept


@pytest.fixture(scope="module")
def player(nnue_net):
    require(BOOK)
    return ShardPlayer(nnue_net, FAST, Openings(BOOK), seed=11)


def _book(tmp_path, fen):
    path = tmp_path / "book.epd"
    path.write_text(f"# one position\n{fen}\n")
    return Openings(path)


def _check_positions(records):
    """Every record is a legal position, not in check, with a score in range (python-chess)."""
    for line in format_lines(records):
        fen, score, result = (part.strip() for part in line.split("|"))
        board = chess.Board(fen)
        assert board.is_valid(), fen
        assert not board.is_check(), fen
        assert abs(int(score)) <= MAX_CP
        assert result in ("1.0", "0.5", "0.0")


def test_games_give_legal_quiet_positions_with_one_result_each(player):
    for _ in range(4):
        game = player.play()
        records = from_bytes(np.frombuffer(game.data, np.uint8))
        assert len(records) == game.records > 0
        _check_positions(records)
        white = np.where(records["stm"] == 0, records["result"], 2 - records["result"].astype(int))
        assert (white == game.white_result).all()
        assert (game.white_result == DRAW) == (game.reason != CHECKMATE)
        assert (np.diff(records["fullmove"].astype(int)) >= 0).all()
        assert game.records < game.plies


@pytest.mark.parametrize("fen, reason, result", [
    ("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", CHECKMATE, WHITE_WINS),
    ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", STALEMATE, DRAW),
    ("7k/8/6K1/8/8/8/8/R7 w - - 100 80", FIFTY_MOVES, DRAW),
    ("7k/8/6K1/8/8/8/8/N7 w - - 0 1", MATERIAL, DRAW),
])
def test_game_end_rules(player, tmp_path, fen, reason, result):
    player.openings = _book(tmp_path, fen)
    game = player.play()
    assert (game.reason, game.white_result, game.records, game.plies) == (reason, result, 0, 0)


def test_a_won_game_labels_both_sides(nnue_net, tmp_path):
    """White mates with queen and two rooks: White's positions are wins, Black's losses.

    With queen and one rook against a king in the corner (k7/8/8/8/8/8/8/4K1QR w) a depth-3 search misses the
    mate in 2 (1. Qg7 Kb8 2. Rh8#: the first move is reduced and the mate is a quiet check), as do depths 4 and
    5, and the game ends in mate or by the 50-move rule by chance; two rooks and a queen mate within a few
    moves at depth 3."""
    p = ShardPlayer(nnue_net, GenConfig(depth=3, random_plies=0), _book(tmp_path, "8/8/8/4k3/8/8/8/R3K1QR w - - 0 1"),
                    seed=1)
    game = p.play()
    assert (game.reason, game.white_result) == (CHECKMATE, WHITE_WINS)
    records = from_bytes(np.frombuffer(game.data, np.uint8))
    assert len(records) > 0 and set(records["stm"]) == {0, 1}
    assert (records["result"] == np.where(records["stm"] == 0, 2, 0)).all()
    assert (np.where(records["stm"] == 0, records["score"], -records["score"].astype(int)) > 300).all()


def test_long_games_are_adjudicated_draws(nnue_net):
    p = ShardPlayer(nnue_net, GenConfig(depth=1, random_plies=2, max_plies=12), Openings(require(BOOK)), seed=3)
    game = p.play()
    assert (game.reason, game.white_result, game.plies) == (MAX_PLIES, DRAW, 12)
    records = from_bytes(np.frombuffer(game.data, np.uint8))
    assert 0 < len(records) <= 10 and (records["result"] == 1).all()


def test_quiet_moves_and_centipawns():
    from quantfish.core.position import MOVE_CASTLE, MOVE_EP, encode_move
    from quantfish.search.driver import score_to_uci
    from quantfish.datagen.selfplay import centipawns, is_quiet
    board = np.zeros(64, np.int8)
    board[4], board[7], board[12], board[52], board[36], board[35] = 6, 4, 1, 9, 1, 9   # Ke1 Rh1 e2 e7 e5 d5
    assert is_quiet(board, encode_move(12, 20, 0, 0))                 # e2-e3
    assert is_quiet(board, encode_move(4, 7, 0, MOVE_CASTLE))         # O-O as king takes rook
    assert not is_quiet(board, encode_move(36, 43, 0, MOVE_EP))       # exd6 e.p.
    assert not is_quiet(board, encode_move(7, 52, 0, 0))              # a capture
    assert not is_quiet(board, encode_move(52, 60, 5, 0))             # a promotion
    for v in (-31507, -1000, -361, -4, -3, 0, 3, 4, 361, 1000, 31507):
        assert f"cp {centipawns(v)}" == score_to_uci(v)


def test_threefold_counts_positions_of_the_same_side():
    keys = np.array([1, 2, 3, 4, 1, 2, 3, 4, 1], np.uint64)
    assert threefold(keys, 8, 8)
    assert not threefold(keys, 8, 7)          # the first occurrence is before the last irreversible move
    assert not threefold(keys, 4, 4)


def test_generation_is_deterministic_and_appends(nnue_net, tmp_path):
    out = tmp_path / "a.bin"
    s = generate(out, 300, seed=5, workers=1, config=FAST, openings_path=require(BOOK), net=nnue_net, progress=None)
    assert s.positions == 300 and not s.interrupted
    first = out.read_bytes()
    assert len(first) == 300 * 32
    _check_positions(read_records(out))
    generate(out, 300, seed=5, workers=1, config=FAST, openings_path=BOOK, net=nnue_net, progress=None)
    assert out.read_bytes() == first + first
    generate(tmp_path / "b.bin", 300, seed=6, workers=1, config=FAST, openings_path=BOOK, net=nnue_net,
             progress=None)
    assert (tmp_path / "b.bin").read_bytes() != first


def test_worker_processes_are_deterministic(nnue_net, tmp_path):
    runs = []
    for name in ("w1.bin", "w2.bin"):
        s = generate(tmp_path / name, 400, seed=9, workers=2, config=FAST, openings_path=require(BOOK),
                     net=nnue_net, progress=None)
        assert s.positions == 400
        runs.append((tmp_path / name).read_bytes())
    assert runs[0] == runs[1] and len(runs[0]) == 400 * 32
    read_records(tmp_path / "w1.bin")


def test_ordered_output_is_round_robin_whatever_the_arrival_order():
    written = []
    out = _OrderedOutput(3, written.append)
    out.add(2, "c0")
    out.add(1, "b0")
    out.add(1, "b1")
    assert written == []
    out.add(0, "a0")
    assert written == ["a0", "b0", "c0"]
    out.finish(0)
    out.add(2, "c1")
    assert written == ["a0", "b0", "c0", "b1", "c1"]
    out.finish(1)
    out.finish(2)
    assert out.finished
    assert shares(10, 3) == [4, 3, 3]


def test_an_output_in_a_new_folder_is_written_there(nnue_net, tmp_path):
    out = tmp_path / "new" / "deeper" / "d.bin"
    s = generate(out, 50, seed=2, workers=1, config=FAST, openings_path=require(BOOK), net=nnue_net, progress=None)
    assert s.positions == 50 and out.stat().st_size == 50 * 32


def test_appending_to_a_truncated_file_is_refused(nnue_net, tmp_path):
    out = tmp_path / "bad.bin"
    out.write_bytes(b"\0" * 33)
    with pytest.raises(DataFileError, match="truncated"):
        generate(out, 10, openings_path=require(BOOK), net=nnue_net, progress=None)


def test_openings_errors_are_clear(tmp_path):
    with pytest.raises(OpeningsError, match="openings file .*missing.epd"):
        Openings(tmp_path / "missing.epd")
    (tmp_path / "empty.epd").write_text("# nothing\n\n")
    with pytest.raises(OpeningsError, match="holds no positions"):
        Openings(tmp_path / "empty.epd")
    (tmp_path / "bad.epd").write_text("8/8/8/8/8/8/8/8 w - -\n")
    with pytest.raises(OpeningsError, match="bad.epd:1: 0 white kings"):
        Openings(tmp_path / "bad.epd").board(0)


# ---------------------------------------------------------------------------------------------------------
# Command line


def _run(args):
    result = CliRunner().invoke(main, args)
    assert "Traceback" not in result.output
    return result


def test_gendata_command_writes_and_reports(tmp_path):
    out = tmp_path / "g.bin"
    result = _run(["gendata", "-o", str(out), "--positions", "200", "--workers", "1", "--seed", "2",
                   "--openings", str(require(BOOK)), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "wrote 200 positions" in result.output
    assert len(read_records(out)) == 200


@pytest.mark.parametrize("args, message", [
    (["--positions", "0"], "Invalid value for '--positions'"),
    (["--depth", "0"], "Invalid value for '--depth'"),
    (["--workers", "-1"], "Invalid value for '--workers'"),
    (["--max-plies", "5000"], "Invalid value for '--max-plies'"),
    (["--openings", "/nonexistent/book.epd"], "openings file /nonexistent/book.epd"),
    (["--net", "/nonexistent/net.nnue"], "/nonexistent/net.nnue"),
])
def test_gendata_command_refuses_bad_arguments(tmp_path, args, message):
    result = _run(["gendata", "-o", str(tmp_path / "x.bin"), "--positions", "10", "--quiet", *args])
    assert result.exit_code != 0
    assert message in result.output
    assert not (tmp_path / "x.bin").exists()


def test_data_commands_round_trip_and_refuse(tmp_path):
    lines = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1 | -25 | 0.5",
             "8/8/8/8/8/8/8/K6k w - - 0 1 | 0 | 1.0"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    assert _run(["data", "import", str(tmp_path / "in.txt"), str(tmp_path / "r.bin")]).exit_code == 0
    result = _run(["data", "import", str(tmp_path / "in.txt"), str(tmp_path / "r.bin")])
    assert result.exit_code == 1 and "exists (use --append" in result.output
    assert _run(["data", "import", "--append", str(tmp_path / "in.txt"), str(tmp_path / "r.bin")]).exit_code == 0
    assert _run(["data", "export", str(tmp_path / "r.bin"), str(tmp_path / "out.txt")]).exit_code == 0
    assert (tmp_path / "out.txt").read_text().splitlines() == lines + lines
    result = _run(["data", "export", str(tmp_path / "r.bin"), str(tmp_path / "out.txt")])
    assert result.exit_code == 1 and "exists (use --force" in result.output
    result = _run(["data", "check", str(tmp_path / "r.bin")])
    assert result.exit_code == 0 and "4 positions, all valid" in result.output
    (tmp_path / "bad.txt").write_text(lines[0] + "\nnot a position | 1 | 0.5\n")
    result = _run(["data", "import", str(tmp_path / "bad.txt"), str(tmp_path / "s.bin")])
    assert result.exit_code == 1 and "bad.txt:2:" in result.output and not (tmp_path / "s.bin").exists()
    (tmp_path / "cut.bin").write_bytes((tmp_path / "r.bin").read_bytes()[:-1])
    for args in (["data", "check"], ["data", "export"]):
        result = _run([*args, str(tmp_path / "cut.bin")])
        assert result.exit_code == 1 and "truncated" in result.output
    result = _run(["data", "export", str(tmp_path / "missing.bin")])
    assert result.exit_code == 1 and "no such file" in result.output


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_keeps_whole_records(tmp_path, workers):
    """SIGINT mid-run: exit status 130, a message, and a valid file holding what was generated."""
    out = tmp_path / "i.bin"
    proc = subprocess.Popen([sys.executable, "-m", "quantfish.cli.main", "gendata", "-o", str(out), "--positions", "10000000",
                             "--workers", str(workers), "--openings", str(require(BOOK)), "--quiet"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None and (not out.exists() or out.stat().st_size < 32 * 500):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted: kept" in err and "Traceback" not in err
    kept = len(read_records(out))
    assert 500 <= kept < 10000000
    assert f"kept {kept:,} positions" in err


def test_chunks_on_local_workers_are_the_same_bytes_as_on_one(tmp_path):
    """A chunk's bytes depend on its job alone: two processes taking chunks as they free up write the file
    one process writes."""
    from quantfish.datagen import chunks
    config = GenConfig(depth=1, nodes=64, random_plies=4, max_plies=60)
    out = {}
    for workers in (1, 2):
        path = tmp_path / f"w{workers}.bin"
        jobs = chunks.plan(path, 1000, 5, config, 300)
        results = chunks.generate_chunked(path, jobs, progress=None, workers=workers)
        assert [r.index for r in results] == [0, 1, 2, 3] and sum(r.positions for r in results) == 1000
        assert not (tmp_path / f"w{workers}.bin.chunks").exists()
        out[workers] = path.read_bytes()
    assert len(out[1]) == 1000 * 32 and out[2] == out[1]


def test_a_stop_while_assembling_leaves_no_output_cut_short(tmp_path, monkeypatch):
    """The output appears only whole: a stop between two chunks' appends leaves no output file (a Makefile's
    ``test -f`` may trust one) and every chunk in place, and assembling again gives the whole file."""
    from quantfish.datagen import chunks
    config = GenConfig(depth=1, nodes=64, random_plies=4, max_plies=60)
    whole = tmp_path / "whole.bin"
    chunks.generate_chunked(whole, chunks.plan(whole, 900, 5, config, 300), progress=None)
    out = tmp_path / "out.bin"
    jobs = chunks.plan(out, 900, 5, config, 300)
    for job in jobs:
        chunks.run_chunk(job)
    real_write, calls = chunks.write_all, []

    def write_then_stop(path, data):
        if calls:
            raise KeyboardInterrupt
        calls.append(path)
        real_write(path, data)
    monkeypatch.setattr(chunks, "write_all", write_then_stop)
    with pytest.raises(KeyboardInterrupt):
        chunks.assemble(jobs, out)
    assert not out.exists() and all(chunks.finished(job) for job in jobs)
    monkeypatch.setattr(chunks, "write_all", real_write)
    assert chunks.assemble(jobs, out) == 900
    assert out.read_bytes() == whole.read_bytes() and not (tmp_path / "out.bin.assembling").exists()


def test_ctrl_c_on_chunks_on_local_workers_keeps_the_finished_ones(tmp_path):
    """SIGINT to a chunked run on two processes: status 130, no traceback, no half-written chunk left, and the
    same command started again takes up from the finished chunks. The child starts with SIGINT's default
    action, as under a shell, whatever this process inherited (Python ignores Ctrl-C if it starts ignored)."""
    out = tmp_path / "c.bin"
    folder = tmp_path / "c.bin.chunks"
    cmd = [sys.executable, "-m", "quantfish.cli.main", "gendata", "-o", str(out), "--positions", "200000",
           "--chunk-positions", "1000", "--workers", "2", "--depth", "1", "--seed", "3",
           "--openings", str(require(BOOK)), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None and not list(folder.glob("chunk-*.bin")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "Traceback" not in err
    finished = sorted(folder.glob("chunk-*.bin"))
    assert finished and not list(folder.glob("*.tmp-*")) and not out.exists()
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"({len(finished)} from an earlier run)" in again.stderr
    assert len(read_records(out)) == 200000 and not folder.exists()


# ---------------------------------------------------------------------------------------------------------
# Sampled games: positions the net evaluates in the searches, labelled with its raw output

SAMPLED = GenConfig(depth=6, nodes=600, random_plies=6, max_plies=40, sample=4)


def _raw_of(net, record):
    """The net's raw output for a record's position, as ``quantfish eval --json`` reports it (``nnue_raw``)."""
    from quantfish.data.codec import unpack_board
    from quantfish.data.records import as_bytes
    from quantfish.nnue.formulas import eval_report
    board = np.zeros(64, np.int8)
    unpack_board(as_bytes(record[None])[0], board)
    return eval_report(net, board, int(record["stm"]), int(record["halfmove"])).nnue_raw


def test_sampled_labels_are_the_nets_raw_output_of_legal_positions(nnue_net):
    from quantfish.data.codec import RAW_LABEL, RESULT_MASK
    player = ShardPlayer(nnue_net, SAMPLED, Openings(require(BOOK)), seed=5)
    game = player.play()
    records = from_bytes(np.frombuffer(game.data, np.uint8))
    assert game.records == len(records) > 50           # a search's nodes, not one position a move
    assert (records["result"] & RAW_LABEL).all()
    white = np.where(records["stm"] == 0, records["result"] & RESULT_MASK, 2 - (records["result"] & RESULT_MASK))
    assert (white == game.white_result).all()
    for record in records[::max(1, len(records) // 40)]:
        assert int(record["score"]) == _raw_of(nnue_net, record)
    fens = set()
    for line in format_lines(records):
        fen = line.split("|")[0].strip()
        board = chess.Board(fen)
        assert board.is_valid() and not board.is_check(), fen
        fens.add(" ".join(fen.split()[:4]))
    assert len(fens) == len(records)                   # each position once


def test_sampled_games_are_the_same_for_the_same_seed_and_worker(nnue_net):
    book = Openings(require(BOOK))
    games = [[ShardPlayer(nnue_net, SAMPLED, book, seed, worker).play().data for _ in range(2)]
             for seed, worker in ((3, 0), (3, 0), (3, 1), (4, 0))]
    assert games[0] == games[1]
    assert games[0] != games[2] and games[0] != games[3]


def test_sample_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        GenConfig(sample=3).check()


def test_the_tap_does_not_change_the_search(nnue_net):
    """Tapping the evaluations keeps the tree: the same nodes and move with the tap on as off."""
    from quantfish.core.fen import parse_fen
    from quantfish.search.driver import Limits, Searcher
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    found = []
    for keep in (0, 2):
        searcher = Searcher(nnue_net, 4)
        if keep:
            searcher.set_tap(1 << 16, keep, seed=9)
        best, _, _ = searcher.think(parse_fen(fen), [], Limits(depth=7))
        found.append((best, searcher.nodes))
        if keep:
            assert 0 < searcher.S.tap[3] < searcher.nodes
    assert found[0] == found[1]
