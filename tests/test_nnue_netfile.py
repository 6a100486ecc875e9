"""The net reader refuses every kind of broken file with its own message; the writer round-trips bytes."""

import re
import struct

import numpy as np
import pytest

from quantfish.nnue import architecture

from quantfish.nnue.io import leb128
from quantfish.nnue.architecture import (
    SF15_1, Architecture, architecture_from_header_hash, architecture_from_raw_size, header_hash,
    network_hash,
)
from quantfish.nnue.net import Net, NetFileError
from quantfish.nnue.io import load_net
from quantfish.nnue.io.stockfish import net_bytes, write_net
from quantfish.nnue.locate import DEFAULT_NET_SHA256, resolve_net_path, sha256_of

SIZE = 47_001_499


@pytest.fixture(scope="module")
def net_bytes_15(sf_net):
    return open(sf_net.path, "rb").read()


def _write(tmp_path, data, name="net.nnue"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _flip(data, offset, bit=0):
    b = bytearray(data)
    b[offset] ^= 1 << bit
    return bytes(b)


def test_hashes_from_architecture():
    assert SF15_1.ft_hash == 0x7F2344B8
    assert SF15_1.network_hash == 0x63336A4A
    assert SF15_1.header_hash == 0x1C102EF2
    # Stockfish 17.1 big/small and the other generations (nnue-sf17.1.md section 2).
    assert header_hash(3072) == 0x1C1020F2 and network_hash(3072) == 0x6333744A
    assert header_hash(128) == 0x1C103C92 and network_hash(128) == 0x6333712A
    assert header_hash(1536) == 0x1C102B72 and header_hash(2560) == 0x1C103072
    assert architecture_from_header_hash(0x1C102EF2).l1 == 1024
    assert architecture_from_header_hash(0x1C1020F2, compressed_ft=True).l1 == 3072
    assert architecture_from_header_hash(0x12345678) is None
    assert SF15_1.raw_file_size(75) == SIZE
    assert architecture_from_raw_size(SIZE, 75) == SF15_1
    assert SF15_1.stack_bytes == 17_640


def test_layer_stack_declaration():
    """The declared layer order gives Stockfish's hash chain step by step (ac_sqr_0 unhashed), and the
    stack sizes of the documents (nnue-sf15.1.md section 2, nnue-sf17.1.md sections 1-2)."""
    layers = SF15_1.layers
    assert [layer.name for layer in layers] == ["fc_0", "ac_sqr_0", "ac_0", "fc_1", "ac_1", "fc_2"]
    assert [(layer.inputs, layer.outputs) for layer in SF15_1.affine_layers] == [(1024, 16), (30, 32), (32, 1)]
    h = 0xEC42E90D ^ 2048
    chain = []
    for layer in layers:
        if layer.hashed:
            h = layer.hash(h)
            chain.append(h)
    assert chain == [0x3A22AA72, 0x8DAFCF39, 0x0AD43C98, 0x5E61615F, 0x63336A4A]
    assert [t.what for t in SF15_1.stack_tensors] == [
        "fc_0 biases", "fc_0 weights", "fc_1 biases", "fc_1 weights", "fc_2 bias", "fc_2 weights"]
    assert [t.shape for t in SF15_1.stack_tensors] == [(16,), (16, 1024), (32,), (32, 32), (), (32,)]
    assert Architecture(l1=3072, compressed_ft=True).stack_bytes == 50_408
    assert Architecture(l1=128, compressed_ft=True).stack_bytes == 3_304


def test_derived_constants():
    assert (architecture.SKIP_MUL, architecture.SKIP_DIV) == (9600, 8128)
    assert architecture.SQR_SHIFT == 19 and architecture.FC1_IN_PADDED == 32
    limit = architecture.SQR_INPUT_LIMIT
    assert (limit * limit) >> 19 >= 127 > ((limit - 1) * (limit - 1)) >> 19
    assert [Architecture(l1, c).ft_shift for l1, c in ((1024, False), (3072, True), (128, True), (1536, True))] \
        == [0, 1, 1, 0]


def test_loaded_shapes(sf_net):
    n = sf_net
    assert n.arch == SF15_1
    assert n.description == b"Network trained with the https://github.com/glinscott/nnue-pytorch trainer."
    assert n.ft_bias.dtype == np.int16 and n.ft_bias.shape == (1024,)
    assert n.ft_weights.dtype == np.int16 and n.ft_weights.shape == (22528, 1024)
    assert n.ft_psqt.dtype == np.int32 and n.ft_psqt.shape == (22528, 8)
    assert n.b0.shape == (8, 16) and n.w0.shape == (8, 16, 1024) and n.w0.dtype == np.int8
    assert n.b1.shape == (8, 32) and n.w1.shape == (8, 32, 32)
    assert n.b2.shape == (8,) and n.w2.shape == (8, 32)
    assert not n.w1[:, :, 30:].any()          # fc_1 padding columns are zero in this net
    t = n.arrays()
    assert all(a.flags.c_contiguous for a in t)
    assert t.w0t.shape == (8, 1024, 16) and t.w0t[3, 100, 7] == n.w0[3, 7, 100]
    assert t.params.tolist() == [architecture.GEN_SF15_1, 0, 0]      # generation, FT shift, no scheme


def test_write_round_trip_is_byte_identical(sf_net, net_bytes_15, tmp_path):
    out = tmp_path / "copy.nnue"
    write_net(sf_net, out)
    assert out.stat().st_size == SIZE
    assert out.read_bytes() == net_bytes_15
    assert sha256_of(out) == DEFAULT_NET_SHA256
    again = load_net(out)
    assert np.array_equal(again.ft_weights, sf_net.ft_weights) and np.array_equal(again.w1, sf_net.w1)


def test_missing_file(tmp_path):
    with pytest.raises(NetFileError, match="net file not found"):
        load_net(tmp_path / "nope.nnue")


def test_truncated(net_bytes_15, tmp_path):
    with pytest.raises(NetFileError, match=r"truncated file: expected 47001499 bytes .*found 47001498"):
        load_net(_write(tmp_path, net_bytes_15[:-1]))
    with pytest.raises(NetFileError, match="truncated file: version needs 4 bytes"):
        load_net(_write(tmp_path, net_bytes_15[:2]))
    with pytest.raises(NetFileError, match="truncated file: description needs 75 bytes"):
        load_net(_write(tmp_path, net_bytes_15[:40]))


def test_a_raw_net_of_another_width_with_bytes_added_or_cut(tmp_path):
    """Quantfish's own net (raw layout, L1 = 512) with a byte added or cut is not its raw size, so the reader
    looks for a Stockfish 16+ net's LEB128 magic; the message says both, with the raw size and the difference
    (it said only "wrong LEB128 magic", for a file that had just one byte too many)."""
    from quantfish.nnue.locate import OWN_NET_NAME, package_nets_dir
    own = (package_nets_dir() / OWN_NET_NAME).read_bytes()
    # Its raw size, from the format: 12 header bytes and a 54-byte description; the feature transformer's hash,
    # 512 int16 biases, 22528 x 512 int16 weights and 22528 x 8 int32 PSQT weights; 8 layer stacks, each a hash,
    # fc_0 (16 int32 biases, 16 x 512 int8 weights), fc_1 (32, 32 x 32) and fc_2 (1, 32).
    stack = 4 + 4 * 16 + 16 * 512 + 4 * 32 + 32 * 32 + 4 + 32
    raw = 12 + 54 + 4 + 2 * 512 + 2 * 22528 * 512 + 4 * 8 * 22528 + 8 * stack
    for data, words in ((own + b"\0", f"{raw + 1} (1 too many)"), (own[:-1000], f"{raw - 1000} (1000 too few)")):
        with pytest.raises(NetFileError, match=rf"wrong LEB128 magic before FT biases at offset 70: expected "
                                               rf"b'COMPRESSED_LEB128', found .*; nor is it a raw net of L1 = 512, "
                                               rf"which has {raw} bytes: this file has {re.escape(words)}"):
            load_net(_write(tmp_path, data))


def test_trailing_bytes(net_bytes_15, tmp_path):
    with pytest.raises(NetFileError, match=r"trailing bytes: expected end of file at offset 47001499, found 3 extra"):
        load_net(_write(tmp_path, net_bytes_15 + b"\0\0\0"))


def test_bad_version(net_bytes_15, tmp_path):
    with pytest.raises(NetFileError, match=r"bad version: expected 0x7AF32F20, found 0x7AF32F21"):
        load_net(_write(tmp_path, _flip(net_bytes_15, 0)))


def test_flipped_header_hash(net_bytes_15, tmp_path):
    with pytest.raises(NetFileError, match=r"header hash mismatch: expected 0x1C102EF2 .*found 0x1C102EF3"):
        load_net(_write(tmp_path, _flip(net_bytes_15, 4)))


def test_flipped_ft_hash(net_bytes_15, tmp_path):
    with pytest.raises(NetFileError, match=r"feature transformer hash mismatch: expected 0x7F2344B8, found 0xFF2344B8"):
        load_net(_write(tmp_path, _flip(net_bytes_15, 87 + 3, 7)))


def test_flipped_layer_stack_hash(net_bytes_15, tmp_path):
    off = 46_860_379 + 5 * 17_640
    with pytest.raises(NetFileError, match=r"layer stack 5 hash mismatch: expected 0x63336A4A, found 0x63336A4B"):
        load_net(_write(tmp_path, _flip(net_bytes_15, off)))


def test_messages_are_distinct(net_bytes_15, tmp_path):
    cases = [net_bytes_15[:-1], net_bytes_15 + b"x", _flip(net_bytes_15, 0), _flip(net_bytes_15, 4),
             _flip(net_bytes_15, 88)]
    msgs = set()
    for i, data in enumerate(cases):
        with pytest.raises(NetFileError) as exc:
            load_net(_write(tmp_path, data, f"c{i}.nnue"))
        msgs.add(str(exc.value).split(": ", 1)[1].split(":")[0])
    msgs.add("not found")
    assert len(msgs) == len(cases) + 1


# A weight of Stockfish 15.1's net (FT weights start at offset 91 + 2048; any byte there is some weight).
WEIGHT_OFFSET = 1_000_000


def test_a_flipped_weight_loads_unless_the_name_is_a_hash(net_bytes_15, tmp_path):
    """Stockfish's format has no checksum: a flipped weight bit loads. Nets are named by their sha256
    (nn-/qf- and its first 12 hex digits), so a file named so is checked against its name."""
    flipped = _flip(net_bytes_15, WEIGHT_OFFSET, 3)
    load_net(_write(tmp_path, flipped, "mynet.nnue"))
    with pytest.raises(NetFileError, match=r"nn-ad9b42354671.nnue is corrupt: its sha256 begins [0-9a-f]{12}, "
                                           r"but its name says ad9b42354671"):
        load_net(_write(tmp_path, flipped, "nn-ad9b42354671.nnue"))
    with pytest.raises(NetFileError, match=r"is corrupt: its sha256 begins ad9b42354671, but its name says "
                                           r"ad9b42354670"):
        load_net(_write(tmp_path, net_bytes_15, "nn-ad9b42354670.nnue"))
    with pytest.raises(NetFileError, match=r"but its name says 000000000000"):
        load_net(_write(tmp_path, net_bytes_15, "qf-000000000000.nnue"))
    assert load_net(_write(tmp_path, net_bytes_15, "nn-ad9b42354671.nnue")).arch.l1 == 1024
    for name in ("nn-ad9b42354670.nnue.bak", "nn-AD9B42354670.nnue", "xnn-ad9b42354670.nnue", "nn-ad9b4235467.nnue"):
        load_net(_write(tmp_path, net_bytes_15, name))            # not the pattern: no claim


def test_a_link_claims_the_name_of_its_target(net_bytes_15, tmp_path):
    """A symbolic link under a net's name to a file of another name (as the 17.1 tests name the synthetic nets)
    claims nothing; a link to a hash-named file is checked by the target's name."""
    target = _write(tmp_path, net_bytes_15, "anything.nnue")
    (tmp_path / "nn-000000000000.nnue").symlink_to(target)
    load_net(tmp_path / "nn-000000000000.nnue")
    bad = _write(tmp_path, _flip(net_bytes_15, WEIGHT_OFFSET), "nn-ad9b42354671.nnue")
    (tmp_path / "plain.nnue").symlink_to(bad)
    with pytest.raises(NetFileError, match="is corrupt"):
        load_net(tmp_path / "plain.nnue")


def test_leb128_codec():
    vals = np.array([0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, -32768, 32767], np.int64)
    out = np.zeros(64, np.uint8)
    n = leb128.encode(vals, out)
    assert n == leb128.encoded_size(vals)
    assert list(out[:2]) == [0x00, 0x01] and out[2] == 0x7F
    back = np.zeros(len(vals), np.int64)
    assert leb128.decode(out[:n], len(vals), 16, back) == n
    assert back.tolist() == vals.tolist()
    assert leb128.decode(out[:n - 1], len(vals), 16, back) == -1


def test_compressed_net_round_trip(tmp_path):
    """A Stockfish 16+-style net (LEB128 FT, another L1) is read from its own hash and written back."""
    rng = np.random.default_rng(5)
    arch = Architecture(l1=128, compressed_ft=True)
    nf = arch.num_features
    net = Net(arch, b"synthetic test net",
              rng.integers(-300, 300, 128).astype(np.int16),
              rng.integers(-2000, 2000, (nf, 128)).astype(np.int16),
              rng.integers(-100000, 100000, (nf, 8)).astype(np.int32),
              rng.integers(-5000, 5000, (8, 16)).astype(np.int32),
              rng.integers(-128, 128, (8, 16, 128)).astype(np.int8),
              rng.integers(-5000, 5000, (8, 32)).astype(np.int32),
              rng.integers(-128, 128, (8, 32, 32)).astype(np.int8),
              rng.integers(-5000, 5000, 8).astype(np.int32),
              rng.integers(-128, 128, (8, 32)).astype(np.int8))
    p = tmp_path / "small.nnue"
    write_net(net, p)
    data = p.read_bytes()
    assert struct.unpack("<I", data[4:8])[0] == 0x1C103C92
    back = load_net(p)
    assert back.arch == arch
    for name in ("ft_bias", "ft_weights", "ft_psqt", "b0", "w0", "b1", "w1", "b2", "w2"):
        assert np.array_equal(getattr(back, name), getattr(net, name)), name
    assert net_bytes(back) == data
    with pytest.raises(NetFileError, match="trailing bytes"):
        load_net(_write(tmp_path, data + b"\0", "t.nnue"))
    with pytest.raises(NetFileError, match="truncated file"):
        load_net(_write(tmp_path, data[:-10], "u.nnue"))


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.delenv("QUANTFISH_NET", raising=False)
    p = resolve_net_path()
    assert p.name == "nn-ad9b42354671.nnue" and p.parent.name == "nets"
    monkeypatch.setenv("QUANTFISH_NET", str(tmp_path))
    assert resolve_net_path() == tmp_path / "nn-ad9b42354671.nnue"
    monkeypatch.setenv("QUANTFISH_NET", str(tmp_path / "x.nnue"))
    assert resolve_net_path() == tmp_path / "x.nnue"
    assert resolve_net_path(tmp_path / "y.nnue") == tmp_path / "y.nnue"
