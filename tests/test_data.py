"""Training records (quantfish.train): byte layout, text round trips, shards, corrupt files, feature indices."""

import random

import chess
import numpy as np
import pytest

from quantfish.nnue.features import feature_index
from quantfish.data import codec
from quantfish.train.features import batch_features
from quantfish.data.records import (RECORD_DTYPE, DataFileError, append_records, as_bytes, count_records, from_bytes,
                                read_records)
from quantfish.data.text import export_text, format_lines, import_text, parse_lines


def _random_positions(n, seed=1):
    """python-chess boards from random games (captures preferred, so material varies)."""
    rng = random.Random(seed)
    boards = []
    while len(boards) < n:
        board = chess.Board()
        for _ in range(rng.randrange(1, 120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            captures = [m for m in moves if board.is_capture(m)]
            board.push(rng.choice(captures if captures and rng.random() < 0.5 else moves))
        if not board.is_game_over():
            boards.append(board)
    return boards


def _lines(boards, seed=2):
    rng = random.Random(seed)
    return [f"{b.fen(en_passant='fen')} | {rng.randint(-32767, 32767)} | {rng.choice(['1.0', '0.5', '0.0'])}"
            for b in boards]


@pytest.fixture(scope="module")
def sample():
    boards = _random_positions(300)
    lines = _lines(boards)
    return boards, lines, parse_lines(lines)


def test_record_is_32_bytes_with_the_documented_layout():
    assert RECORD_DTYPE.itemsize == 32
    [rec] = parse_lines(["4k3/8/8/8/4Pp2/8/8/R3K3 b Q e3 7 42 | 150 | 1.0"])
    raw = as_bytes(np.array([rec]))[0]
    occ = int.from_bytes(raw[0:8].tobytes(), "little")
    assert occ == (1 << 0) | (1 << 4) | (1 << 28) | (1 << 29) | (1 << 60)
    # Pieces in square order: a1 rook (4), e1 king (6), e4 pawn (1), f4 black pawn (9), e8 black king (14).
    assert list(raw[8:11]) == [4 | 6 << 4, 1 | 9 << 4, 14]
    assert not raw[11:24].any()
    assert int.from_bytes(raw[24:26].tobytes(), "little", signed=True) == -150    # Black to move: -White's
    assert raw[26] == 1 and raw[27] == 0                                          # Black lost
    assert raw[28] == 2 | (4 + 1) << 4                                            # Q, en passant file e
    assert raw[29] == 7 and int.from_bytes(raw[30:32].tobytes(), "little") == 42


def test_text_records_text_round_trip_is_exact(sample):
    _, lines, records = sample
    assert len(records) == len(lines)
    assert format_lines(records) == lines


def test_records_text_records_round_trip_is_exact(sample):
    _, _, records = sample
    again = parse_lines(format_lines(records))
    assert as_bytes(again).tobytes() == as_bytes(records).tobytes()


def test_file_round_trip_through_text(sample, tmp_path):
    _, lines, records = sample
    append_records(tmp_path / "a.bin", records)
    with open(tmp_path / "a.txt", "w") as out:
        assert export_text(tmp_path / "a.bin", out) == len(records)
    assert (tmp_path / "a.txt").read_text().splitlines() == lines
    with open(tmp_path / "a.txt") as fh:
        assert import_text(fh, tmp_path / "b.bin") == len(records)
    assert (tmp_path / "b.bin").read_bytes() == (tmp_path / "a.bin").read_bytes()


def test_concatenated_shards_read_as_one_file(sample, tmp_path):
    _, _, records = sample
    append_records(tmp_path / "s1.bin", records[:100])
    append_records(tmp_path / "s2.bin", records[100:])
    (tmp_path / "all.bin").write_bytes((tmp_path / "s1.bin").read_bytes() + (tmp_path / "s2.bin").read_bytes())
    merged = read_records(tmp_path / "all.bin")
    assert as_bytes(merged).tobytes() == as_bytes(records).tobytes()
    assert count_records(tmp_path / "all.bin") == len(records)
    assert len(read_records(tmp_path / "all.bin", mmap=True)) == len(records)


def test_appending_twice_keeps_both(sample, tmp_path):
    _, _, records = sample
    append_records(tmp_path / "x.bin", records[:10])
    append_records(tmp_path / "x.bin", records[10:30])
    assert as_bytes(read_records(tmp_path / "x.bin")).tobytes() == as_bytes(records[:30]).tobytes()


def test_truncated_file_is_refused(sample, tmp_path):
    _, _, records = sample
    path = tmp_path / "t.bin"
    path.write_bytes(as_bytes(records[:5]).tobytes()[:-7])
    with pytest.raises(DataFileError, match=r"truncated.*153 bytes is not a multiple of 32.*25 bytes"):
        read_records(path)
    with pytest.raises(DataFileError, match="truncated"):
        append_records(path, records[:1])


@pytest.mark.parametrize("start, stop, value, message", [
    (26, 27, 2, "side to move is not 0"),
    (27, 28, 3, "result is not 0, 1 or 2"),
    (27, 28, 0x41, "result is not 0, 1 or 2"),     # a bit other than the raw-label bit
    (27, 28, 0x82, None),                          # a win, labelled with a net's raw output
    (8, 9, 0x77, "bad piece code"),
    (23, 24, 0x10, "unused piece nibbles"),
    (0, 8, 0, "fewer than 2 or more than 32"),
    (0, 8, 255, "fewer than 2 or more than 32"),
    (30, 32, 0, "move number 0"),
    (24, 26, [0, 0x80], "score -32768"),
    (31, 32, 0, None),                  # fullmove high byte 0 is fine when the low byte is not
])
def test_corrupt_records_are_refused_with_a_clear_message(sample, tmp_path, start, stop, value, message):
    _, _, records = sample
    data = as_bytes(records[:8]).copy()
    data[5, start:stop] = value
    path = tmp_path / "c.bin"
    path.write_bytes(data.tobytes())
    if message is None:
        read_records(path)
        return
    with pytest.raises(DataFileError, match=f"record 5 .*{message}"):
        read_records(path)


def test_random_bytes_are_refused(tmp_path):
    path = tmp_path / "noise.bin"
    path.write_bytes(np.random.default_rng(3).integers(0, 256, 32 * 50, dtype=np.uint8).tobytes())
    with pytest.raises(DataFileError, match="record 0 "):
        read_records(path)


@pytest.mark.parametrize("line, message", [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 | 12", "expected 'FEN | score | result'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1 | 12 | 0.5", "side to move 'x'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1 | 12 | 0.5", "bad character 'X'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 | 1.5 | 0.5", "not an integer"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 | 40000 | 0.5", "out of range"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 | 12 | 0.7", "result '0.7'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1 | 12 | 0.5", "only KQkq"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w - - 0 1 | 12 | 0.5", "one king of each colour"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1 | 12 | 0.5", "rank 6"),
])
def test_bad_text_lines_are_refused_with_the_line_number(line, message):
    good = "8/8/8/8/8/8/8/K6k w - - 0 1 | 0 | 0.5"
    with pytest.raises(DataFileError, match=f"in.txt:2: .*{message}"):
        parse_lines([good, line], "in.txt")


def test_failed_import_leaves_the_output_as_it_was(sample, tmp_path):
    _, lines, records = sample
    out = tmp_path / "o.bin"
    append_records(out, records[:3])
    before = out.read_bytes()
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines[:50] + ["nonsense"]) + "\n")
    with open(bad) as fh, pytest.raises(DataFileError, match="bad.txt:51"):
        import_text(fh, out, str(bad))
    assert out.read_bytes() == before
    with open(bad) as fh, pytest.raises(DataFileError):
        import_text(fh, tmp_path / "new.bin", str(bad))
    assert not (tmp_path / "new.bin").exists()


def _engine_features(board, persp):
    """The engine's indices of one perspective, piece by piece through quantfish.nnue.features.feature_index."""
    ksq = board.king(chess.WHITE if persp == 0 else chess.BLACK)
    return sorted(int(feature_index(persp, ksq, sq, (0 if pc.color else 8) + pc.piece_type))
                  for sq, pc in board.piece_map().items())


def test_batch_features_equal_the_engines(sample):
    boards, lines, records = sample
    batch = batch_features(records)
    for i, board in enumerate(boards):
        n = len(board.piece_map())
        assert batch.count[i] == n
        assert list(batch.white[i, :n]) == _engine_features(board, 0)
        assert list(batch.black[i, :n]) == _engine_features(board, 1)
        assert (batch.white[i, n:] == -1).all() and (batch.black[i, n:] == -1).all()
        fen, score, result = (part.strip() for part in lines[i].split("|"))
        sign = 1 if board.turn == chess.WHITE else -1
        assert batch.stm[i] == (0 if board.turn == chess.WHITE else 1)
        assert batch.score[i] == sign * int(score)
        assert batch.result[i] == (float(result) if sign == 1 else 1.0 - float(result))


def test_batch_features_match_active_features_order_free(sample):
    """Same sets as quantfish.nnue.features.active_features, the function the accumulators call."""
    from quantfish.nnue.features import active_features
    from quantfish.nnue.pychess import mailbox
    boards, _, records = sample
    batch = batch_features(records[:50])
    out = np.zeros(32, np.int64)
    for i, board in enumerate(boards[:50]):
        for persp, rows in ((0, batch.white), (1, batch.black)):
            k = active_features(persp, board.king(persp == 0), mailbox(board), out)
            assert sorted(out[:k].tolist()) == rows[i, :k].tolist()


def test_batch_features_are_the_same_on_two_threads_in_chunks(sample):
    """A batch larger than a decoding chunk, shared between two threads, gives each record the features it has
    alone."""
    import numba
    from quantfish.train.features import DECODE_CHUNK
    _, _, records = sample
    many = np.concatenate([records] * (2 * DECODE_CHUNK // len(records) + 2))
    assert len(many) > 2 * DECODE_CHUNK
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        batch = batch_features(many)
    finally:
        numba.set_num_threads(before)
    alone = batch_features(records)
    for field, whole in zip(batch._fields, batch):
        part = getattr(alone, field)
        for start in range(0, len(many) - len(records) + 1, len(records)):
            assert np.array_equal(whole[start:start + len(records)], part), field


def test_codec_pack_unpack_matches_mailbox(sample):
    from quantfish.nnue.pychess import mailbox
    boards, _, records = sample
    data = as_bytes(records)
    board = np.zeros(64, np.int8)
    for i, b in enumerate(boards[:100]):
        codec.unpack_board(data[i], board)
        assert (board == mailbox(b)).all()
    assert from_bytes(data).dtype == RECORD_DTYPE


def test_trainer_side_imports_neither_engine_nor_torch():
    """Layering: a trainer reads records and features with quantfish.train alone."""
    import subprocess
    import sys
    from tests.testdata import ROOT
    code = ("import sys, quantfish.train, quantfish.data.records, quantfish.data.text, quantfish.train.features\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('engine', 'torch', 'uci')]\n"
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_raw_labels_are_read_in_centipawns_by_the_trainer_and_the_text(sample):
    """A record labelled with a net's raw output (internal units) reaches training and text in centipawns."""
    from quantfish.data.codec import RAW_LABEL
    from quantfish.data.text import format_lines
    from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
    from quantfish.train.features import batch_features
    _, _, records = sample
    raw = records[:4].copy()
    raw["score"] = [361, -722, 0, 1000]
    raw["result"] = raw["result"] | RAW_LABEL
    batch = batch_features(raw)
    assert np.allclose(batch.score, np.array([361, -722, 0, 1000]) * 100 / PAWN_VALUE_NORMALIZE)
    assert np.array_equal(batch.result, 0.5 * (records["result"][:4]))
    for line, score, stm in zip(format_lines(raw), (100, -200, 0, 277), raw["stm"]):
        assert int(line.split("|")[1]) == (score if stm == 0 else -score)
