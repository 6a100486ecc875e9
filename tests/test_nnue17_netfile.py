"""Stockfish 17.1 net files: byte-identical round trip, strict LEB128 checks, pair loading and generation checks."""

import os
import struct

import numpy as np
import pytest

from quantfish.nnue.architecture import LEB128_MAGIC
from quantfish.nnue.net import NetFileError
from quantfish.nnue.io import load_net
from quantfish.nnue.io.stockfish import net_bytes, write_net
from quantfish.nnue.loader import (
    BIG_NET_NAME, SMALL_ENV_VAR, SMALL_NET_NAME, NetPair, NetPairError, check_pair, load_nets, load_pair,
)
from quantfish.nnue.locate import ENV_VAR

# Offsets of the synthetic small net (nnue-sf17.1.md section 1): description 107 bytes, FT hash at 119,
# then the three LEB128 blocks (17-byte magic, u32 byte count, payload) and the 8 raw stacks.
SMALL_SIZE = 3_935_756
BIG_SIZE = 76_364_942
BLOCKS_SMALL = [(123, 205), (349, 3_419_628), (3_419_998, 489_305)]   # (offset of magic, payload bytes)
STACKS_SMALL = 3_909_324


@pytest.fixture(scope="module")
def small_bytes(nnue17_dir):
    return (nnue17_dir / "synthetic_small.nnue").read_bytes()


def _write(tmp_path, data, name="net.nnue"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _set_count(data, block, delta):
    off, n = BLOCKS_SMALL[block]
    b = bytearray(data)
    b[off + 17:off + 21] = struct.pack("<I", n + delta)
    return bytes(b)


def test_layout_of_the_synthetic_files(nnue17_dir, small_bytes):
    assert len(small_bytes) == SMALL_SIZE
    assert (nnue17_dir / "synthetic_big.nnue").stat().st_size == BIG_SIZE
    assert struct.unpack("<III", small_bytes[:12])[:2] == (0x7AF32F20, 0x1C103C92)
    for off, n in BLOCKS_SMALL:
        assert small_bytes[off:off + 17] == LEB128_MAGIC
        assert struct.unpack("<I", small_bytes[off + 17:off + 21])[0] == n
    assert struct.unpack("<I", small_bytes[STACKS_SMALL:STACKS_SMALL + 4])[0] == 0x6333712A


def test_round_trip_is_byte_identical(nnue17_pair, nnue17_dir, tmp_path):
    for net, name in ((nnue17_pair.big, "synthetic_big.nnue"), (nnue17_pair.small, "synthetic_small.nnue")):
        original = (nnue17_dir / name).read_bytes()
        assert net_bytes(net) == original, name
    out = tmp_path / "small.nnue"
    write_net(nnue17_pair.small, out)
    again = load_net(out)
    assert again.arch == nnue17_pair.small.arch
    assert np.array_equal(again.ft_weights, nnue17_pair.small.ft_weights)
    assert np.array_equal(again.ft_psqt, nnue17_pair.small.ft_psqt)


def test_header_hashes_identify_the_nets(nnue17_pair):
    big, small = nnue17_pair
    assert (big.arch.header_hash, big.arch.ft_hash, big.arch.network_hash) == (0x1C1020F2, 0x7F2354B8, 0x6333744A)
    assert (small.arch.header_hash, small.arch.ft_hash, small.arch.network_hash) == (
        0x1C103C92, 0x7F234DB8, 0x6333712A)
    assert big.arch.compressed_ft and small.arch.compressed_ft


@pytest.mark.parametrize("block, what", [(0, "FT biases"), (1, "FT weights"), (2, "FT PSQT weights")])
def test_wrong_magic(small_bytes, tmp_path, block, what):
    off = BLOCKS_SMALL[block][0]
    data = small_bytes[:off] + b"XXXXXXXXXXXXXXXXX" + small_bytes[off + 17:]
    with pytest.raises(NetFileError, match=rf"wrong LEB128 magic before {what} at offset {off}: "
                                           rf"expected b'COMPRESSED_LEB128', found b'XXXXXXXXXXXXXXXXX'"):
        load_net(_write(tmp_path, data))


@pytest.mark.parametrize("block, what", [(0, "FT biases"), (1, "FT weights"), (2, "FT PSQT weights")])
def test_byte_count_off_by_one(small_bytes, tmp_path, block, what):
    n = BLOCKS_SMALL[block][1]
    with pytest.raises(NetFileError, match=rf"LEB128 byte count of {what} too large: the block says {n + 1} "
                                           rf"bytes, but its \d+ values end after {n} \(1 unused\)"):
        load_net(_write(tmp_path, _set_count(small_bytes, block, +1)))
    with pytest.raises(NetFileError, match=rf"LEB128 byte count of {what} too small: the block says {n - 1} "
                                           rf"bytes, but they end inside value \d+"):
        load_net(_write(tmp_path, _set_count(small_bytes, block, -1)))


def test_truncated_payload(small_bytes, tmp_path):
    cut = BLOCKS_SMALL[1][0] + 21 + 1000
    with pytest.raises(NetFileError, match=r"truncated LEB128 payload of FT weights: the byte count says 3419628 "
                                           r"bytes at offset 370, but only 1000 bytes are left"):
        load_net(_write(tmp_path, small_bytes[:cut]))
    with pytest.raises(NetFileError, match=r"truncated file: FT PSQT weights LEB128 byte count needs 4 bytes"):
        load_net(_write(tmp_path, small_bytes[:BLOCKS_SMALL[2][0] + 19]))
    with pytest.raises(NetFileError, match=r"truncated file: stack 7 fc_2 weights needs 32 bytes"):
        load_net(_write(tmp_path, small_bytes[:-1]))


def test_trailing_bytes(small_bytes, tmp_path):
    with pytest.raises(NetFileError, match=rf"trailing bytes: expected end of file at offset {SMALL_SIZE}, "
                                           r"found 2 extra bytes"):
        load_net(_write(tmp_path, small_bytes + b"\0\0"))


def test_value_widths(small_bytes, tmp_path):
    """An int16 value whose encoding runs past 3 bytes, or does not fit int16, is refused."""
    off = BLOCKS_SMALL[0][0] + 21                      # first payload byte of the FT biases
    b = bytearray(small_bytes)
    first_len = next(i for i in range(3) if not b[off + i] & 0x80) + 1
    # Re-encode bias 0 as 0xFF 0xFF 0xFF 0x00 (continuation bit still set after the third byte).
    too_long = bytes(b[:off]) + b"\xff\xff\xff\x00" + bytes(b[off + first_len:])
    too_long = bytearray(too_long)
    too_long[BLOCKS_SMALL[0][0] + 17:BLOCKS_SMALL[0][0] + 21] = struct.pack("<I", 205 - first_len + 4)
    with pytest.raises(NetFileError, match=r"LEB128 value too wide in FT biases: value 0 has more than 3 bytes"):
        load_net(_write(tmp_path, bytes(too_long)))
    # 3 bytes encoding 40000 (does not fit int16).
    v, enc = 40000, bytearray()
    for _ in range(3):
        enc.append((v & 0x7F) | 0x80)
        v >>= 7
    enc[-1] &= 0x7F
    big_val = bytearray(bytes(b[:off]) + bytes(enc) + bytes(b[off + first_len:]))
    big_val[BLOCKS_SMALL[0][0] + 17:BLOCKS_SMALL[0][0] + 21] = struct.pack("<I", 205 - first_len + 3)
    with pytest.raises(NetFileError, match=r"LEB128 value out of range in FT biases: value 0 does not fit int16"):
        load_net(_write(tmp_path, bytes(big_val)))


def test_corruption_messages_are_distinct(small_bytes, tmp_path):
    off = BLOCKS_SMALL[0][0]
    cases = [small_bytes[:off] + b"Y" * 17 + small_bytes[off + 17:], _set_count(small_bytes, 0, 1),
             _set_count(small_bytes, 0, -1), small_bytes[:BLOCKS_SMALL[1][0] + 500], small_bytes + b"z"]
    msgs = set()
    for i, data in enumerate(cases):
        with pytest.raises(NetFileError) as exc:
            load_net(_write(tmp_path, data, f"c{i}.nnue"))
        msgs.add(str(exc.value).split(": ", 1)[1].split(":")[0])
    assert len(msgs) == len(cases), msgs


def test_pair_generation_checks(nnue17_pair, nnue_net):
    big, small = nnue17_pair
    check_pair(big, small)
    with pytest.raises(NetPairError, match="the nets are swapped"):
        check_pair(small, big)
    with pytest.raises(NetPairError, match=r"not a Stockfish 17.1 big net: expected a 17.1 net with L1 = 3072 .*"
                                           r"found a Stockfish 15.1 net with L1 = 1024"):
        check_pair(nnue_net, small)
    with pytest.raises(NetPairError, match=r"not a Stockfish 17.1 small net: expected a 17.1 net with L1 = 128"):
        check_pair(big, big)
    with pytest.raises(NetPairError, match=r"not a Stockfish 17.1 small net.*found a Stockfish 15.1 net"):
        check_pair(big, nnue_net)


def test_pair_paths_and_front_door(nnue17_dir, nnue_net, tmp_path, monkeypatch):
    import quantfish.nnue.loader as netpair
    cache = {}

    def cached_load(path):            # each file is read once (the big one takes ~1 s); paths stay as given
        key = os.path.realpath(path)
        if key not in cache:
            cache[key] = load_net(path)
        return cache[key]
    monkeypatch.setattr(netpair, "load_net", cached_load)
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv(SMALL_ENV_VAR, raising=False)
    d = tmp_path / "nets17"
    d.mkdir()
    os.symlink(nnue17_dir / "synthetic_big.nnue", d / BIG_NET_NAME)
    os.symlink(nnue17_dir / "synthetic_small.nnue", d / SMALL_NET_NAME)
    # Directory or big file: the small net is found by its default name next to the big one.
    for arg in (d, d / BIG_NET_NAME):
        pair = load_pair(arg)
        assert isinstance(pair, NetPair) and pair.l1 == (3072, 128)
        assert load_nets(arg).l1 == (3072, 128)
    monkeypatch.setenv(ENV_VAR, str(d))
    assert load_pair().l1 == (3072, 128)
    assert load_nets(small=str(d / SMALL_NET_NAME)).l1 == (3072, 128)
    monkeypatch.delenv(ENV_VAR)
    # A 15.1 net: alone it loads as itself; with a small net it is refused.
    assert load_nets(nnue_net.path) is not None and load_nets(nnue_net.path).arch.l1 == 1024
    with pytest.raises(NetPairError, match="a small net pairs only with a Stockfish 17.1 big net"):
        load_nets(nnue_net.path, d / SMALL_NET_NAME)
    # A 17.1 big net without its partner.
    lone = tmp_path / "lone"
    lone.mkdir()
    os.symlink(nnue17_dir / "synthetic_big.nnue", lone / "big.nnue")
    with pytest.raises(NetPairError, match=r"needs the small net of its pair: .*nn-37f18f62d772.nnue not found"):
        load_nets(lone / "big.nnue")
    # Swapped on the command line.
    with pytest.raises(NetPairError, match="swapped"):
        load_pair(d / SMALL_NET_NAME, d / BIG_NET_NAME)
    monkeypatch.setenv(SMALL_ENV_VAR, str(nnue17_dir / "synthetic_small.nnue"))
    assert load_nets(lone / "big.nnue").l1 == (3072, 128)
