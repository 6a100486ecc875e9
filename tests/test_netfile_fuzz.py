"""Fuzzing the net loader (issue 16): truncated, bit-flipped, oversized and empty nets of every format the
engine meets, each refused by the loader (``quantfish.nnue.loader.load_nets`` and the reader ``quantfish.nnue.io.stockfish.load_net``)
with a message naming the problem, never a stray IndexError, struct.error or numpy error; and through UCI,
``setoption name EvalFile value <bad>`` leaves the previous net live (same eval, same search) with an info string.

Formats: Stockfish 15.1's net, Quantfish's own shipped net (same raw format, L1 = 512), a Quantfish-format file
(``quantfish.nnue.io.quantfish``, made here from the own net, which the engine plays; its scheme record has a CRC),
and the synthetic Stockfish 17.1 nets (LEB128 feature transformer; the big one only where it fails early, its
full decode taking seconds).

Each mutation is tried under two names of one file (a hard link): ``nn-``/``qf-`` + the first 12 hex digits of
the original's sha256, which the loader holds the content to, so every mutation is refused; and a plain name,
under which damage to the header and the structure (hashes, LEB128 magic and byte counts, sizes) is refused and a
flipped weight or description bit may load (Stockfish's format has no checksum): there only "no crash" is
asserted. The file regions come from a walk written here from ``quantfish.nnue.architecture``'s declarations, not from the
reader under test. The mutations are drawn from a fixed seed; the number of loads is printed to stderr.
"""
import hashlib
import os
import random
import re
import struct
import sys
import time

import pytest

from quantfish.quant.schemes import is_stockfish
from quantfish.nnue.architecture import LEB128_MAGIC, architecture_from_header_hash
from quantfish.nnue.net import QF_VERSION, NetFileError
from quantfish.nnue.io import load_net
from quantfish.nnue.loader import NetPairError, load_nets
from quantfish.nnue.locate import DEFAULT_NET_NAME, OWN_NET_NAME, package_nets_dir, resolve_net_path
from tests.ucipipe import Engine, output_problem

# A refusal names what is wrong with numbers (offsets, sizes, hashes) or names the format.
SPECIFIC = re.compile("|".join((
    r"truncated file: .* needs \d+ bytes at offset \d+, but the file has \d+ bytes",
    r"truncated file: expected \d+ bytes for .*, found \d+",
    r"trailing bytes: expected end of file at offset \d+, found \d+ extra bytes",
    r"bad version: expected 0x[0-9A-F]{8}, found 0x[0-9A-F]{8}",
    r"header hash mismatch: (expected 0x[0-9A-F]{8} .*)?found 0x[0-9A-F]{8}",
    r"(feature transformer|layer stack \d) hash mismatch: expected 0x[0-9A-F]{8}, found 0x[0-9A-F]{8}",
    r"wrong LEB128 magic before .* at offset \d+",
    r"truncated LEB128 payload of .*: the byte count says \d+ bytes at offset \d+, but only \d+ bytes are left",
    r"LEB128 (byte count of .* too (small|large)|value (too wide|out of range) in .*: value \d+)",
    r"is corrupt: its sha256 begins [0-9a-f]{12}, but its name says [0-9a-f]{12}",
    r"scheme section magic b'QFSCHEME' missing at offset \d+",
    r"scheme record CRC mismatch: the file says 0x[0-9A-F]{8}, the \d+ bytes of the record give 0x[0-9A-F]{8}",
)))


def layout(data):
    """(kind, what, start, end) of each region of a net file: kind "header" (version, hash, description length),
    "description", "structure" (hashes, LEB128 magics and byte counts, the Quantfish scheme section) or
    "weights" (a tensor, or a LEB128 payload)."""
    version, hhash, dlen = struct.unpack_from("<III", data)
    arch = architecture_from_header_hash(hhash)
    regions = [("header", "version", 0, 4), ("header", "header hash", 4, 8), ("header", "description length", 8, 12),
               ("description", "description", 12, 12 + dlen)]
    pos = 12 + dlen

    def add(kind, what, n):
        nonlocal pos
        regions.append((kind, what, pos, pos + n))
        pos += n
    add("structure", "FT hash", 4)
    compressed = data[pos:pos + len(LEB128_MAGIC)] == LEB128_MAGIC
    for t in arch.ft_tensors:
        if compressed:
            add("structure", f"{t.what} LEB128 magic", len(LEB128_MAGIC))
            count = struct.unpack_from("<I", data, pos)[0]
            add("structure", f"{t.what} LEB128 byte count", 4)
            add("weights", f"{t.what} LEB128 payload", count)
        else:
            add("weights", t.what, t.nbytes)
    for s in range(arch.layer_stacks):
        add("structure", f"stack {s} hash", 4)
        for t in arch.stack_tensors:
            add("weights", f"stack {s} {t.what}", t.nbytes)
    if version == QF_VERSION:
        add("structure", "scheme section magic", 8)
        record = struct.unpack_from("<I", data, pos)[0]
        add("structure", "scheme record length", 4)
        add("structure", "scheme record (under its CRC)", record)
        add("structure", "scheme record CRC", 4)
    assert pos == len(data), (pos, len(data))
    return regions


class Subject:
    """One net file under two names (a hard link): ``named`` claims the original's sha256 prefix, ``plain``
    claims nothing. Mutations change the file in place and are undone."""

    def __init__(self, directory, data, prefix, label, stats):
        directory.mkdir()
        self.data, self.label, self.stats = data, label, stats
        self.named = directory / f"{prefix}-{hashlib.sha256(data).hexdigest()[:12]}.nnue"
        self.plain = directory / "plain.nnue"
        self.named.write_bytes(data)
        os.link(self.named, self.plain)
        self.regions = layout(data)

    def check(self, what, must_refuse_plain, corrupt_named=False, intact=False):
        """Load under both names: the plain name through ``load_nets`` (the front door), the hash name
        through ``load_net`` (the reader)."""
        for path, refuse, loader in ((self.plain, must_refuse_plain, load_nets),
                                     (self.named, not intact, load_net)):
            self.stats["loads"] += 1
            where = f"{self.label}, {what}, {path.name}"
            try:
                loader(str(path))
            except NetPairError as exc:           # it loaded, as a 17.1 net missing its partner
                assert not refuse, f"{where}: refused for pairing, not for the damage: {exc}"
                continue
            except NetFileError as exc:
                text = str(exc)
                assert str(path) in text, f"{where}: the message does not name the file: {text}"
                assert SPECIFIC.search(text), f"{where}: unspecific message: {text}"
                if corrupt_named and path == self.named:
                    assert "is corrupt: its sha256 begins" in text, f"{where}: {text}"
                self.stats["refused"] += 1
                self.stats["messages"].add(re.sub(r"\d+|0x[0-9A-F]{8}|[0-9a-f]{12}", "#",
                                                  text.split(": ", 1)[-1])[:70])
                continue
            except Exception as exc:
                raise AssertionError(f"{where}: {type(exc).__name__} escaped the loader: {exc}") from exc
            assert not refuse, f"{where}: loaded"

    def flip(self, offset, bit, what, must_refuse_plain):
        self.stats["flips"] += 1
        with open(self.named, "r+b") as fh:
            fh.seek(offset)
            byte = fh.read(1)[0]
            fh.seek(offset)
            fh.write(bytes([byte ^ (1 << bit)]))
        try:
            raw = not what.endswith("payload")
            self.check(f"bit {bit} of byte {offset} ({what}) flipped", must_refuse_plain,
                       corrupt_named=not must_refuse_plain and raw)
        finally:
            with open(self.named, "r+b") as fh:
                fh.seek(offset)
                fh.write(bytes([byte]))

    def oversize(self, extra):
        with open(self.named, "ab") as fh:
            fh.write(extra)
        try:
            self.check(f"{len(extra)} bytes appended", True)
        finally:
            os.truncate(self.named, len(self.data))

    def truncations(self, cuts):
        """Cut to each length, longest first (one file shortened step by step); leaves the file cut."""
        for cut in sorted(set(cuts), reverse=True):
            os.truncate(self.named, cut)
            self.check(f"cut to {cut} of {len(self.data)} bytes", True)


def fuzz(subject, rng, weight_flips=6, description_flips=2, structure_flips=None, header_flips=12, cuts_per_region=3,
         max_offset=None, cuts=(0, 1, 3, 4, 5, 8, 11, 12, 13)):
    """The mutations of one file: bytes appended; a flip in ``header_flips`` of the 12 header bytes (the version,
    header hash and description length words), in ``structure_flips`` of the structure regions (all by default),
    in ``description_flips`` description bytes and in ``weight_flips`` weights; ``cuts`` and ``cuts_per_region``
    cuts in each region.
    ``max_offset`` keeps to the bytes before it (the big 17.1 net, whose later damage is found only after
    seconds of decoding)."""
    regions = [r for r in subject.regions if max_offset is None or r[3] <= max_offset]
    size = len(subject.data)
    if max_offset is None:
        for extra in (b"\0", b"\xff" * 4, bytes(rng.getrandbits(8) for _ in range(1000))):
            subject.oversize(extra)
    structure = [r for r in regions if r[0] == "structure"]
    if structure_flips is not None:
        structure = structure[:2] + rng.sample(structure[2:], max(0, min(structure_flips - 2, len(structure) - 2)))
    header = {offset: what for kind, what, start, end in regions if kind == "header" for offset in range(start, end)}
    for offset in sorted(rng.sample(sorted(header), header_flips)):
        subject.flip(offset, rng.randrange(8), header[offset], True)
    for kind, what, start, end in structure:
        subject.flip(rng.randrange(start, end), rng.randrange(8), what, True)
    for kind in ("description", "weights"):
        spans = [r for r in regions if r[0] == kind and r[3] > r[2]]
        weights = [end - start for _, _, start, end in spans]
        for _ in range(description_flips if kind == "description" else weight_flips):
            _, what, start, end = rng.choices(spans, weights)[0]
            subject.flip(rng.randrange(start, end), rng.randrange(8), what, False)
    cuts = list(cuts)
    for _, _, start, end in regions if cuts_per_region else ():
        inside = [start, start + 1, (start + end) // 2, end - 1] + [rng.randrange(start, end) for _ in range(2)]
        cuts += rng.sample(inside, min(cuts_per_region, len(inside)))
    if max_offset is None:
        cuts.append(size - 1)
    subject.truncations([c for c in cuts if c < size])


@pytest.fixture(scope="module")
def stats():
    return {"nets": 0, "loads": 0, "refused": 0, "flips": 0, "messages": set(), "start": time.monotonic()}


def _own_net_bytes():
    path = package_nets_dir() / OWN_NET_NAME
    assert path.is_file(), f"{path} missing: it is committed"
    return path.read_bytes()


def _quantfish_format_bytes():
    """A Quantfish-format file: the own net requantised with Stockfish's scales rounding to nearest."""
    from quantfish.nnue.io import quantfish as qformat
    from quantfish.quant import schemes
    from quantfish.quant.floatnet import FloatNet
    qnet = schemes.make("sf", FloatNet.from_net(load_net(package_nets_dir() / OWN_NET_NAME)), None, "nearest", 127)
    assert not is_stockfish(qnet.scheme)
    return qformat.qnet_bytes(qnet)


@pytest.mark.parametrize("label", ["Stockfish 15.1", "own net", "Quantfish format", "Stockfish 17.1 small",
                                   "Stockfish 17.1 big"])
def test_damaged_nets_are_refused(label, tmp_path, stats, sf_net, nnue17_dir):
    rng = random.Random(f"netfile-fuzz {label}")
    if label == "Stockfish 15.1":
        data, prefix = open(sf_net.path, "rb").read(), "nn"
    elif label == "own net":
        data, prefix = _own_net_bytes(), "qf"
    elif label == "Quantfish format":
        data, prefix = _quantfish_format_bytes(), "qf"
    else:
        data, prefix = (nnue17_dir / f"synthetic_{label.split()[-1]}.nnue").read_bytes(), "nn"
    subject = Subject(tmp_path / "net", data, prefix, label, stats)
    if label != "Stockfish 17.1 big":
        subject.check("intact", False, intact=True)    # both names load (the plain one through load_nets)
    if label == "Stockfish 17.1 big":
        # Damage up to the FT weights' LEB128 byte count, and cuts inside that block's payload: all found before
        # the block is decoded (seconds; so is any damage the reader does not see, as a flipped weight); the
        # rest is tried on the small net, of the same format.
        what, start, end = subject.regions[10][1:]
        assert what.endswith("LEB128 payload")
        fuzz(subject, rng, weight_flips=0, description_flips=0, header_flips=3, cuts_per_region=0, max_offset=start,
             cuts=(0, 11, 200, start - 3, start + 1, (start + end) // 2))
    elif label == "Stockfish 15.1":             # 47 MB, each load ~0.1-0.3 s: fewer of the costly mutations
        fuzz(subject, rng, weight_flips=4, structure_flips=4, cuts_per_region=1)
    elif label == "Stockfish 17.1 small":       # a cut after the FT costs its LEB128 decode
        fuzz(subject, rng, cuts_per_region=1)
    else:
        fuzz(subject, rng)
    stats["nets"] += 1


def test_empty_files_are_refused(tmp_path, stats):
    """Zero bytes, under a plain name and under the name of the empty file's own sha256 (which it matches)."""
    for name in ("empty.nnue", f"nn-{hashlib.sha256(b'').hexdigest()[:12]}.nnue"):
        (tmp_path / name).write_bytes(b"")
        for loader in (load_net, load_nets):
            stats["loads"] += 1
            with pytest.raises(NetFileError, match=r"truncated file: version needs 4 bytes at offset 0, but the "
                                                   r"file has 0 bytes"):
                loader(str(tmp_path / name))
    stats["nets"] += 2


# ---------------------------------------------------------------------------------------------------------
# Through UCI: the previous net stays live


def _eval_and_search(engine):
    """The eval table and a fixed-depth search from a cleared hash (node count, score and pv), as lines."""
    engine.send(b"position fen r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3\neval\n")
    lines = engine.until(b"Final evaluation", prefix=True)
    engine.send(b"ucinewgame\ngo depth 6\n")
    search = engine.until(b"bestmove", prefix=True)
    last = [raw for raw in search if raw.startswith(b"info depth 6 ")][-1].split()
    for field in (b"nps", b"time"):                       # the only fields that vary from run to run
        del last[last.index(field):last.index(field) + 2]
    assert all(output_problem(raw) is None for raw in lines + search)
    return lines + [b" ".join(last), search[-1]]


def test_uci_keeps_the_previous_net(tmp_path, stats, sf_net, nnue17_dir):
    data = open(sf_net.path, "rb").read()
    bad = tmp_path / "bad"
    bad.mkdir()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    own = _own_net_bytes()
    qf = _quantfish_format_bytes()
    cases = {                                              # file -> what the info string must say
        "truncated/" + DEFAULT_NET_NAME: (data[:len(data) // 3], r"truncated file: expected 47001499 bytes"),
        "flipped/" + DEFAULT_NET_NAME: (bytes(flipped), r"is corrupt: its sha256 begins [0-9a-f]{12}, but its "
                                                        r"name says ad9b42354671"),
        "empty.nnue": (b"", r"truncated file: version needs 4 bytes at offset 0"),
        "quantfish-format.nnue": (qf[:-1] + bytes([qf[-1] ^ 1]), r"scheme record CRC mismatch"),
        "long/" + OWN_NET_NAME: (own + b"\0", r"nor is it a raw net of L1 = 512, which has 23866246 bytes: "
                                              r"this file has 23866247 \(1 too many\)"),
        "header.nnue": (data[:4] + bytes([data[4] ^ 1]) + data[5:], r"header hash mismatch"),
        "small-alone.nnue": ((nnue17_dir / "synthetic_small.nnue").read_bytes(), r"needs the small net of its pair"),
    }
    engine = Engine().start()
    try:
        before = _eval_and_search(engine)
        for name, (content, words) in cases.items():
            path = bad / name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(content)
            stats["loads"] += 1
            engine.send(f"setoption name EvalFile value {path}\n".encode())
            lines = engine.sync()
            strings = [raw.decode() for raw in lines if raw.startswith(b"info string")]
            assert len(strings) == 1 and "not loaded, keeping the previous net (" in strings[0], (name, lines)
            assert re.search(words, strings[0]), (name, strings[0])
            assert _eval_and_search(engine) == before, f"{name}: the live net changed"
        engine.send(f"setoption name EvalFile value {resolve_net_path()}\n".encode())
        assert engine.sync()[-1].startswith(b"info string NNUE evaluation using")
        assert _eval_and_search(engine) == before
        assert engine.quit() == 0
        assert "Traceback" not in engine.stderr, engine.stderr
    finally:
        engine.kill()


def test_summary(stats, capsys):
    from tests.conftest import skip_without_sf_net
    skip_without_sf_net()          # the fuzz of Stockfish's net and of the 17.1 nets made from it did not run
    with capsys.disabled():
        print(f"\nnet-file fuzz: {stats['nets']} net files, {stats['loads']} loads ({stats['flips']} bit flips), "
              f"{stats['refused']} refusals with {len(stats['messages'])} kinds of message, in "
              f"{time.monotonic() - stats['start']:.1f} s", file=sys.stderr)
    assert stats["nets"] >= 7 and stats["refused"] > 500
