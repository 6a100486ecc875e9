"""The C kernel's pass for Quantfish-format nets (``forward_scheme``) against numpy, record by record.

The SIMD variants compute fc_0's input ``clamp(R(a * b), 0, x_hi)`` by one of several code paths, chosen from
the record (shifts alone in 16-bit lanes when ``ft_hi <= 256``, a multiplier in 16-bit lanes when
``ft_hi <= 362``, 32-bit lanes when the product and its multiplier fit 32 bits, plain C otherwise); without
VNNI, fc_0's non-zero groups holding an input above 127 take a widened path when their weights could saturate
``vpmaddubsw`` (``ckernel.fc0_saturating_groups``). The head runs in registers for
records whose activation sites have divisor 1, no wrap and clamps up to 255 (int32 for shifts, 64-bit products
for multipliers), in plain C otherwise. The records below reach every path and its edges (the largest 16-bit
multiplier, shifts past 16, a rounding bit in the top position, divisors and wrapping that force plain C), and
each is checked on fc_0's input, the non-zero list (through fc_0's outputs) and the positional output, in every
variant this CPU runs. The whole-net tests (tests/test_quant_engine.py) cover real schemes end to end.
"""

import zlib
from dataclasses import dataclass, replace

import numpy as np
import pytest

from quantfish.nnue.kernel.loader import fc0_grouped, fc0_saturating_groups
from quantfish.nnue.requant import (
    Q_DIV, Q_HI, Q_MUL, Q_ROUND, Q_SHIFT, Q_WRAP, R_FLOOR, R_NEAREST, R_TRUNC, S_AC0, S_AC1, S_FT, S_PSQT, S_SQR,
    S_SQR_LIMIT, S_X,
    head_scheme, pack_scheme, requant, transform_half_scheme,
)
from quantfish.quant import schemes
from quantfish.nnue.scheme import Requant
from tests.test_ckernel import I16_EXTREMES, _p, kernel_lib, kf  # noqa: F401  (fixtures)
from tests.test_quant_schemes import _net

FC0_OUT, FC1_IN, FC1_OUT = 16, 32, 32


@dataclass(frozen=True)
class XRecord:
    """The FT clamp and fc_0's input requantisation of a record."""
    ft_hi: int
    x_hi: int
    mul: int
    shift: int
    rounding: int = R_FLOOR
    div: int = 1
    wrap: int = 0


X_RECORDS = {
    # the shift-only 16-bit path (no multiplier, shift 1..16): Stockfish's arithmetic, its 255 variant, a shift
    # of 1 rounded to nearest, the longest shift; a shift of 17 goes to the multiplier path
    "sf floor": XRecord(127, 127, 1, 7),
    "sf nearest 255": XRecord(127, 254, 1, 6, R_NEAREST),
    "shift 1 nearest": XRecord(255, 255, 1, 1, R_NEAREST),
    "shift 16 floor": XRecord(255, 255, 1, 16),
    "shift 17": XRecord(255, 255, 1, 17, R_NEAREST),
    # an FT clamp of 256 (dfp's): 256 * 256 leaves 16 bits and is patched in; with a shift of 1 its value is
    # past the signed pack's range
    "ft_hi 256": XRecord(256, 255, 1, 8, R_NEAREST),
    "ft_hi 256 shift 1": XRecord(256, 255, 1, 1, R_NEAREST),
    "ft_hi 256 shift 16": XRecord(256, 255, 1, 16),
    # the 16-bit path with a multiplier: a calibrated one, the largest with the smallest shift, multipliers and
    # shifts that are normalised first, a shift that leaves nothing
    "calibrated 255": XRecord(255, 255, 27736, 23, R_NEAREST),
    "largest multiplier": XRecord(255, 255, 32767, 17, R_NEAREST),
    "small shift": XRecord(200, 255, 3, 5, R_NEAREST),
    "shift 16": XRecord(255, 255, 1, 16, R_NEAREST),
    "shift 40": XRecord(255, 200, 5000, 40, R_NEAREST),
    "trunc": XRecord(181, 255, 7, 9, R_TRUNC),
    # no multiplier: the Numba path's literal shifts when the FT clamp is at most 127 and the clamp of x cannot
    # bite, its int32 loop when it can or the FT clamp is larger
    "shift 8": XRecord(127, 127, 1, 8),
    "shift 8 ft_hi 255": XRecord(255, 255, 1, 8),
    "shift 5": XRecord(63, 255, 1, 5, R_NEAREST),
    "shift 5 clamped": XRecord(127, 255, 1, 5, R_NEAREST),
    "shift 6 clamped": XRecord(127, 200, 1, 6),
    # FT clamps 256..362 (17-bit products) with a multiplier: range-row's clamp and multiplier on Stockfish's
    # net, the largest clamp with the largest multiplier, floor
    "ft_hi 278": XRecord(278, 255, 27736, 23, R_NEAREST),
    "ft_hi 362 largest multiplier": XRecord(362, 255, 32767, 17, R_NEAREST),
    "ft_hi 300 floor": XRecord(300, 200, 3, 20),
    # the 32-bit path: clamps above 362, multipliers above 32767, a shift of 1
    "ft_hi 363": XRecord(363, 255, 32767, 17, R_NEAREST),
    "multiplier 40000": XRecord(255, 255, 40000, 24),
    "ft_hi 1000": XRecord(1000, 255, 3000, 30, R_NEAREST),
    "ft_hi 32767": XRecord(32767, 255, 1, 31, R_NEAREST),
    "shift 1": XRecord(255, 255, 1, 1, R_TRUNC),
    # ... whose value before the clamp of x passes 32767 (a clamp of x far below the FT's products; the 32-bit
    # lanes must be clamped before they are packed to 16 bits), 65535, or nearly 2^31
    "x clamp far below, 40000": XRecord(400, 255, 1, 2),
    "x clamp far below, 69000": XRecord(5965, 255, 1, 9, R_NEAREST),
    "x clamp far below, near 2^31": XRecord(32767, 200, 4, 1),
    # the 64-bit path: products past 32 bits (the FT clamps of nets trained here: calibrated records of
    # one of Quantfish's own nets), the largest FT clamp and multiplier with the longest shift, floor
    "past 32 bits": XRecord(1000, 255, 5000, 30, R_NEAREST),
    "ft_hi 5023 calibrated 255": XRecord(5023, 255, 21701, 31, R_NEAREST),
    "ft_hi 5023 calibrated 127": XRecord(5023, 127, 21616, 32, R_NEAREST),
    "largest product": XRecord(32767, 255, 2 ** 32 - 1, 62, R_NEAREST),
    "64-bit, x clamp far below": XRecord(5965, 100, 40000, 12),
    # (the Numba path splits such products at bit 15 in int32 lanes while its bound allows: the largest FT
    # clamp and multiplier it takes; past the bound, by the rounding addend of a shift of 46, the int64 loop)
    "split at its bound": XRecord(32767, 255, 65535, 31, R_NEAREST),
    "split past its bound": XRecord(32767, 255, 65535, 46, R_NEAREST),
    # plain C: a divisor, a multiplier of 2^32, no shift, wrapping
    "divisor 3": XRecord(127, 127, 1, 7, R_NEAREST, div=3),
    "multiplier 2^32": XRecord(300, 255, 2 ** 32, 40, R_NEAREST),
    "no shift": XRecord(15, 255, 1, 0),
    "wrap": XRecord(127, 127, 1, 7, wrap=1),
}


@pytest.fixture(scope="module")
def base_records():
    """Real packed records of one stack (Stockfish's arithmetic at 127 and at 255) to build on."""
    fnet = _net()
    return {res: pack_scheme(schemes.make("sf", fnet, None, "floor" if res == 127 else "nearest", res).scheme)[0]
            for res in (127, 255)}


def _with_x(base, rec: XRecord):
    qs = base.copy()
    qs[S_FT, Q_HI:Q_HI + FC1_OUT] = rec.ft_hi
    row = qs[S_X]
    row[Q_SHIFT], row[Q_DIV], row[Q_ROUND], row[Q_WRAP] = rec.shift, rec.div, rec.rounding, rec.wrap
    row[Q_MUL:Q_MUL + FC1_OUT] = rec.mul
    row[Q_HI:Q_HI + FC1_OUT] = rec.x_hi
    return qs


def _x_reference(acc_us, acc_them, rec: XRecord):
    """fc_0's input by the record's definition (numpy int64; a * b >= 0, so trunc is floor)."""
    def one(acc):
        half = acc.shape[0] // 2
        a = np.clip(acc[:half].astype(np.int64), 0, rec.ft_hi)
        b = np.clip(acc[half:].astype(np.int64), 0, rec.ft_hi)
        p = a * b * rec.mul
        if rec.wrap:
            p = p.astype(np.uint64).astype(np.uint32).astype(np.int32).astype(np.int64)
        d = rec.div << rec.shift
        v = (p + d // 2) // d if rec.rounding == R_NEAREST else np.where(p < 0, -((-p) // d), p // d)
        return np.clip(v, 0, rec.x_hi).astype(np.uint8)
    return np.concatenate([one(acc_us), one(acc_them)])


def _acc(rng, l1, ft_hi):
    """Accumulator values around the clamp (so products reach their largest), with int16 extremes."""
    acc = rng.integers(-40, min(ft_hi + 60, 32767), size=l1, endpoint=True).astype(np.int16)
    idx = rng.choice(l1, size=l1 // 4, replace=False)
    acc[idx] = rng.choice(np.concatenate([I16_EXTREMES, [ft_hi, ft_hi - 1, 0]]).astype(np.int16), size=idx.size)
    acc[rng.choice(l1, size=l1 // 4, replace=False)] = 0       # zero groups for the non-zero list
    return acc


def _layers(rng, l1, w0_kind="full"):
    """Random layers; fc_0's weights span int8 (``full``: nearly every group could saturate vpmaddubsw), or are
    small but for a few groups that could (``mostly safe``, as on Stockfish's net)."""
    w0 = rng.integers(-128, 127, size=(1, FC0_OUT, l1), endpoint=True).astype(np.int8)
    if w0_kind == "mostly safe":
        small = rng.integers(-64, 64, size=w0.shape, endpoint=True).astype(np.int8)
        keep = np.zeros(l1 // 4, bool)
        keep[rng.choice(l1 // 4, size=max(2, l1 // 32), replace=False)] = True
        w0 = np.where(np.repeat(keep, 4)[None, None, :], w0, small)
    b0 = rng.integers(-100000, 100000, size=FC0_OUT).astype(np.int32)
    w1 = rng.integers(-128, 127, size=(FC1_OUT, FC1_IN), endpoint=True).astype(np.int8)
    w1[:, 2 * (FC0_OUT - 1):] = 0
    b1 = rng.integers(-20000, 20000, size=FC1_OUT).astype(np.int32)
    w2 = rng.integers(-128, 127, size=FC1_OUT, endpoint=True).astype(np.int8)
    w1g = np.ascontiguousarray(w1.reshape(FC1_OUT, FC1_IN // 4, 4).transpose(1, 0, 2))
    return w0, np.ascontiguousarray(fc0_grouped(w0)[0]), b0, w1, w1g, b1, w2, int(rng.integers(-5000, 5000))


def _run(kf, acc_us, acc_them, qs, w0g, b0, w1g, b1, w2, b2, sat="map"):
    """forward_scheme with fc_0's saturating groups as the engine passes them (``sat="map"``), a given map,
    or None (NULL: every group may saturate)."""
    l1 = acc_us.shape[0]
    x = np.zeros(l1, np.uint8)
    nnz = np.zeros(l1 // 4 + 16, np.int32)
    fc0 = np.zeros(FC0_OUT, np.int32)
    if isinstance(sat, str):
        sat = fc0_saturating_groups(w0g[None])[0]
    pos = kf.forward_scheme(_p(acc_us), _p(acc_them), l1, _p(qs), _p(w0g), None if sat is None else _p(sat),
                            _p(b0), _p(w1g), _p(b1), _p(w2), b2, _p(x), _p(nnz), _p(fc0))
    return x, fc0, pos


def _head(fc0, qs, b1, w1, b2, w2):
    return int(head_scheme(fc0, b1, w1, b2, w2, np.zeros(FC1_IN, np.int64), np.zeros(FC1_OUT, np.int64), qs))


# fc_0's weights and the map of its saturating groups: with mostly small weights, inputs above 127 meet groups
# that take vpmaddubsw and groups that must not (records whose inputs stay <= 127 never split, so one case)
FC0_CASES = [(name, weights, sat) for name, rec in X_RECORDS.items()
             for weights, sat in ((("full", "map"), ("mostly safe", "map"), ("mostly safe", None))
                                  if rec.x_hi > 127 else (("full", "map"),))]


@pytest.mark.parametrize("name, weights, sat", FC0_CASES)
@pytest.mark.parametrize("l1", [64, 256, 96])
def test_fc0_input_and_outputs_equal_numpy(kf, base_records, name, l1, weights, sat):
    """l1 = 64 and 256 fill whole AVX2 and AVX-512 blocks (256 both); 96 leaves a tail, which runs in C."""
    rec = X_RECORDS[name]
    qs = _with_x(base_records[255 if rec.x_hi > 127 else 127], rec)
    rng = np.random.default_rng(zlib.crc32(f"{name} {l1}".encode()))
    w0, w0g, b0, w1, w1g, b1, w2, b2 = _layers(rng, l1, weights)
    for trial in range(12):
        us, them = _acc(rng, l1, rec.ft_hi), _acc(rng, l1, rec.ft_hi)
        if trial == 0:
            us[:], them[:] = rec.ft_hi, 32767          # every product at its largest
        x, fc0, pos = _run(kf, us, them, qs, w0g, b0, w1g, b1, w2, b2, sat)
        want = _x_reference(us, them, rec)
        assert np.array_equal(x, want), (name, trial, np.flatnonzero(x != want)[:8])
        z0 = (b0.astype(np.int64) + w0[0].astype(np.int64) @ want.astype(np.int64))
        assert np.array_equal(fc0, z0.astype(np.uint64).astype(np.uint32).astype(np.int32)), (name, trial)
        assert pos == _head(fc0, qs, b1, w1, b2, w2), (name, trial)


@pytest.mark.parametrize("name", list(X_RECORDS))
def test_fc0_input_for_every_product(kf, base_records, name):
    """Every pair (a, b) of clamped values up to 255 (a sample beyond), 256 products a call, against numpy:
    each rounding boundary the record can reach is crossed."""
    rec = X_RECORDS[name]
    qs = _with_x(base_records[255 if rec.x_hi > 127 else 127], rec)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    l1 = 256
    w0, w0g, b0, w1, w1g, b1, w2, b2 = _layers(rng, l1)
    top = min(rec.ft_hi, 255)
    a, b = np.meshgrid(np.arange(top + 1), np.arange(top + 1))
    a, b = a.ravel(), b.ravel()
    if rec.ft_hi > 255:
        extra = rng.integers(0, rec.ft_hi + 1, size=(2, 8192))
        a, b = np.concatenate([a, extra[0], [rec.ft_hi]]), np.concatenate([b, extra[1], [rec.ft_hi]])
    pad = -a.size % l1
    a, b = np.concatenate([a, np.zeros(pad, a.dtype)]), np.concatenate([b, np.zeros(pad, b.dtype)])
    for k in range(0, a.size, l1):
        us = np.concatenate([a[k:k + 128], b[k:k + 128]]).astype(np.int16)
        them = np.concatenate([a[k + 128:k + 256], b[k + 128:k + 256]]).astype(np.int16)
        x, _, _ = _run(kf, us, them, qs, w0g, b0, w1g, b1, w2, b2)
        want = _x_reference(us, them, rec)
        assert np.array_equal(x, want), (name, k, np.flatnonzero(x != want)[:8])


def test_saturating_groups_are_those_whose_products_can_leave_int16():
    """A group is marked exactly when, for some output, x_a * w_a + x_b * w_b over inputs 0..x_max (the largest
    and smallest sums are at the corners) leaves int16, here on the edges (for 255: 127 + 1 = 128 is safe, 129
    not, -128 alone is safe, -128 - 1 not; 151 * 217 = 32767 and 128 * -256 = -32768 exactly) and on random
    weights of several sizes."""
    rng = np.random.default_rng(5)
    edges = [(127, 1), (127, 2), (64, 64), (65, 64), (-128, 0), (-128, -1), (-64, -64), (-65, -64), (127, -128),
             (-128, 127), (0, 0), (127, 90), (127, 91), (-128, -128)]
    w0 = np.zeros((3, FC0_OUT, 4 * 64), np.int8)
    for g, (a, b) in enumerate(edges):
        w0[0, g % FC0_OUT, 4 * g + 2 * (g % 2):4 * g + 2 * (g % 2) + 2] = (a, b)
    for s, top in ((1, 80), (2, 127)):
        w0[s] = rng.integers(-top - (top == 127), top, size=(FC0_OUT, 4 * 64), endpoint=True)
    w0g = fc0_grouped(w0)
    for x_max in (255, 151, 129, 128, 127):
        bits = np.unpackbits(fc0_saturating_groups(w0g, x_max), axis=1, bitorder="little")
        w = w0g.astype(np.int64).reshape(3, 64, FC0_OUT, 2, 2)
        corners = [w[..., 0] * xa + w[..., 1] * xb for xa in (0, x_max) for xb in (0, x_max)]
        want = np.any([(c > 32767) | (c < -32768) for c in corners], axis=0).any(axis=(2, 3))
        assert np.array_equal(bits[:, :64].astype(bool), want), x_max
        if x_max == 255:
            assert [bool(bits[0, g]) for g in range(11)] == [False, True, False, True, False, True, False, True,
                                                             False, False, False]
            assert 0 < want[1].sum() < 64 and want[2].sum() > 48     # both kinds occur in the random stacks
        exact_edges = {151: [False, True, True], 128: [False, False, False], 129: [False, False, True]}
        if x_max in exact_edges:
            assert [bool(bits[0, g]) for g in (11, 12, 13)] == exact_edges[x_max], x_max


@pytest.mark.parametrize("name", list(X_RECORDS))
def test_numba_fc0_input_equals_numpy(base_records, name):
    """The Numba path's fc_0 input (an int32 loop when the products fit, int64 otherwise) on the same records."""
    rec = X_RECORDS[name]
    qs = _with_x(base_records[255 if rec.x_hi > 127 else 127], rec)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for trial in range(20):
        us = _acc(rng, 256, rec.ft_hi)
        if trial == 0:
            us[:] = rec.ft_hi
        x = np.zeros(128, np.uint8)
        transform_half_scheme(us, x, qs)
        assert np.array_equal(x, _x_reference(us, us, rec)[:128]), (name, trial)


@pytest.mark.parametrize("act_hi", [127, 255, 40000])
def test_fc1_with_wide_activations_equals_the_numba_head(kf, base_records, act_hi):
    """fc_1 widens its weights for inputs up to 32767; larger inputs (a record with huge clamps) take C."""
    qs = base_records[255].copy()
    for site in (S_SQR, S_AC0):
        qs[site, Q_HI:Q_HI + FC1_OUT] = act_hi
    qs[S_AC0, Q_SHIFT] = 0 if act_hi > 255 else qs[S_AC0, Q_SHIFT]
    qs[S_AC1, Q_HI:Q_HI + FC1_OUT] = min(act_hi, 255)
    rng = np.random.default_rng(act_hi)
    l1 = 64
    w0, w0g, b0, w1, w1g, b1, w2, b2 = _layers(rng, l1)
    b0[:] = rng.integers(-60000, 60000, size=FC0_OUT)
    for trial in range(20):
        us, them = _acc(rng, l1, 127), _acc(rng, l1, 127)
        _, fc0, pos = _run(kf, us, them, qs, w0g, b0, w1g, b1, w2, b2)
        assert pos == _head(fc0, qs, b1, w1, b2, w2), trial


def test_power_of_two_divisors_pack_as_shifts():
    """A divisor 2**k packs as k more bits of shift; the value is the division's for every rounding."""
    values = np.array([-1000, -33, -32, -31, -17, -16, -15, -9, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 17, 31, 32,
                       33, 1000, -(2**40) - 5, 2**40 + 7], np.int64)
    rec = schemes.make("sf", _net()).scheme
    for div in (2, 16, 3):
        for shift in (0, 3):
            for rounding in ("floor", "trunc", "nearest"):
                row = pack_scheme(replace(rec, psqt=Requant((5,), shift, div, rounding)))[0][S_PSQT]
                if div & (div - 1) == 0:
                    assert (row[Q_DIV], row[Q_SHIFT]) == (1, shift + div.bit_length() - 1)
                else:
                    assert (row[Q_DIV], row[Q_SHIFT]) == (div, shift)
                d = div << shift
                for v in values:
                    p = int(v) * 5
                    want = {"floor": p // d, "trunc": -((-p) // d) if p < 0 else p // d,
                            "nearest": (p + d // 2) // d}[rounding]
                    assert requant(np.int64(v), row, 0) == want, (div, shift, rounding, int(v))


@dataclass(frozen=True)
class HeadRecord:
    """Changes to a base record (Stockfish's arithmetic at resolution ``res``): per activation site
    ``(site, (shift, rounding, mul, hi))`` (None keeps the field), the square's limits, a divisor, a wrap."""
    res: int
    sites: tuple = ()
    limit: object = None
    div: tuple = ()         # (site, divisor)
    wrap: int = -1          # a site that wraps to int32


HEAD_RECORDS = {
    # shift records, whose head runs in int32 (vpmaddubsw for fc_1 when its inputs stay <= 127, split bytes above)
    "sf floor": HeadRecord(127),
    "sf nearest 255": HeadRecord(255),
    "no shifts": HeadRecord(255, ((S_SQR, (0, R_FLOOR, None, None)), (S_AC0, (0, R_NEAREST, None, None)),
                                  (S_AC1, (0, R_TRUNC, None, None)))),
    "shift 1 nearest": HeadRecord(255, ((S_AC0, (1, R_NEAREST, None, None)), (S_AC1, (1, R_NEAREST, None, None)))),
    "shift 30 and trunc": HeadRecord(127, ((S_SQR, (30, R_TRUNC, None, None)), (S_AC0, (30, R_TRUNC, None, None)),
                                           (S_AC1, (30, R_NEAREST, None, None)))),
    "clamps per row": HeadRecord(255, ((S_SQR, (None, None, None, [0, 1, 127, 128, 255] * 3)),
                                       (S_AC0, (None, None, None, [255, 128, 127, 1, 0] * 3)),
                                       (S_AC1, (None, None, None, [3, 255, 128, 127] * 8)))),
    "clamps 127, fc_1 out 255": HeadRecord(127, ((S_AC1, (None, None, None, [255] * 32)),)),
    "limits per row": HeadRecord(255, limit=[0, 1, 2, 100, 181, 8160, 16304, 32767] * 2),
    # sites with multipliers (64-bit products in the same head): a calibrated record's, one site alone, a shift
    # past 30 with multiplier 1, the largest multiplier and shift
    "calibrated": HeadRecord(255, ((S_SQR, (35, R_NEAREST, [3514, 4783, 5596, 4000, 5123] * 3, None)),
                                   (S_AC0, (21, R_NEAREST, [10752, 12544, 13568, 11000, 13001] * 3, None)),
                                   (S_AC1, (20, R_NEAREST, [2322, 2580, 2838, 3354] * 8, None))),
                             limit=[24363, 19766, 16498, 24000] * 4),
    "multiplier 2": HeadRecord(127, ((S_AC0, (None, None, [2] * 15, None)),)),
    "shift 40": HeadRecord(255, ((S_AC1, (40, R_FLOOR, None, None)),)),
    "largest multiplier": HeadRecord(255, ((S_SQR, (62, R_NEAREST, [2 ** 31 - 1] * 15, None)),
                                           (S_AC1, (45, R_TRUNC, [2 ** 31 - 1] * 32, None)))),
    "products past 2^32": HeadRecord(255, ((S_AC0, (0, R_FLOOR, [2 ** 31 - 1] * 15, None)),
                                           (S_AC1, (3, R_NEAREST, [2 ** 20 + 1] * 32, None)))),
    # square limits past 32767 (range-row's on Stockfish's net reach 110,000): squares up to 2^62, which the SIMD
    # heads hold in 64-bit lanes (the scalar one takes the general head)
    "limit 32768": HeadRecord(255, limit=[32768] * 16),
    "limit 65536": HeadRecord(255, ((S_SQR, (24, R_NEAREST, None, None)),), limit=[65536, 46341, 54864, 1] * 4),
    "limit 2^31 - 1, shift 30": HeadRecord(127, ((S_SQR, (30, R_FLOOR, None, None)),),
                                           limit=[2 ** 31 - 1, 110282, 3, 2 ** 20] * 4),
    "limits 110282, multipliers": HeadRecord(255, ((S_SQR, (35, R_NEAREST, [32130, 16833, 2 ** 31 - 1, 1] * 4,
                                                            None)),), limit=[110282, 83808, 65535, 49885] * 4),
    # the general head: a multiplier of 2^32, a clamp above 255, a limit of 2^31, a square times its multiplier
    # past 2^63 with the rounding addend (int64 wraps there, in the Numba head and, -fwrapv, in C's general head
    # alike), a divisor, wrapping
    "multiplier 2^32": HeadRecord(255, ((S_AC0, (40, R_NEAREST, [2 ** 32] * 15, None)),)),
    "ac_1 clamp 256": HeadRecord(255, ((S_AC1, (None, None, None, [256] * 32)),)),
    "limit 2^31": HeadRecord(255, limit=[2 ** 31] * 16),
    "square past 2^63": HeadRecord(255, ((S_SQR, (62, R_NEAREST, [2 ** 31 - 1] * 15, None)),), limit=[65535] * 16),
    "divisor": HeadRecord(127, div=(S_AC1, 3)),
    "wrap": HeadRecord(127, wrap=S_AC0),
}


def _with_head(base_records, rec: HeadRecord):
    qs = base_records[rec.res].copy()
    for site, (shift, rounding, mul, hi) in rec.sites:
        row = qs[site]
        if shift is not None:
            row[Q_SHIFT] = shift
        if rounding is not None:
            row[Q_ROUND] = rounding
        if mul is not None:
            row[Q_MUL:Q_MUL + len(mul)] = mul
        if hi is not None:
            row[Q_HI:Q_HI + len(hi)] = hi
    if rec.limit is not None:
        qs[S_SQR_LIMIT, Q_HI:Q_HI + len(rec.limit)] = rec.limit
    if rec.div:
        qs[rec.div[0], Q_DIV] = rec.div[1]
    if rec.wrap >= 0:
        qs[rec.wrap, Q_WRAP] = 1
    return qs


def _edge_values(qs, rng):
    """fc_0 outputs at the edges of the record's arithmetic: int32's ends, each rounding step of each site's
    shift, each clamp and square limit crossed, and random values."""
    vals = [np.iinfo(np.int32).max, np.iinfo(np.int32).max - 1, np.iinfo(np.int32).min,
            np.iinfo(np.int32).min + 1, 0, 1, -1]
    for site in (S_SQR, S_AC0, S_AC1):
        sh = int(qs[site, Q_SHIFT])
        for m in {max(int(x), 1) for x in qs[site, Q_MUL:Q_MUL + 4]}:
            for k in (1, 2, 3, 127, 128, 254, 255, 256):
                for d in (-1, 0, 1):
                    # where v * m crosses k * 2^s, and its rounding point half a step below
                    vals += [(k << sh) // m + d, -((k << sh) // m) + d, ((k << sh) - (1 << max(sh - 1, 0))) // m + d]
    for lim in qs[S_SQR_LIMIT, Q_HI:Q_HI + FC0_OUT]:
        vals += [int(lim) - 1, int(lim), int(lim) + 1, -int(lim)]
    vals += [int(v) for v in rng.integers(-(1 << 31), 1 << 31, size=64)]
    vals += [int(v) for v in rng.integers(-(1 << 16), 1 << 16, size=64)]
    lo, hi = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)
    return np.array([min(max(v, lo), hi) for v in vals], np.int64)


@pytest.mark.parametrize("name", list(HEAD_RECORDS))
def test_head_equals_the_numba_head_for_every_record(kf, base_records, name):
    """The head on fc_0 outputs chosen at every rounding and clamp edge (fc_0's weights zero, so its outputs
    are the biases), then on real sums; the C kernel's head (in registers, or the general one for the last
    records) must equal the Numba path's for every record."""
    rec = HEAD_RECORDS[name]
    qs = _with_head(base_records, rec)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    l1 = 64
    w0, w0g, b0, w1, w1g, b1, w2, b2 = _layers(rng, l1)
    zero_w0g = np.zeros_like(w0g)
    edges = _edge_values(qs, rng)
    us, them = _acc(rng, l1, 127), _acc(rng, l1, 127)
    for trial in range(60):
        b0 = rng.choice(edges, size=FC0_OUT).astype(np.int32)
        _, fc0, pos = _run(kf, us, them, qs, zero_w0g, b0, w1g, b1, w2, b2)
        assert np.array_equal(fc0, b0), (name, trial)
        assert pos == _head(fc0, qs, b1, w1, b2, w2), (name, trial, b0)
    for trial in range(20):
        us, them = _acc(rng, l1, 127), _acc(rng, l1, 127)
        b0 = rng.integers(-(1 << 20), 1 << 20, size=FC0_OUT).astype(np.int32)
        _, fc0, pos = _run(kf, us, them, qs, w0g, b0, w1g, b1, w2, b2)
        assert pos == _head(fc0, qs, b1, w1, b2, w2), (name, trial)


# ------------------------------------------------------------------------------------------------------
# Random records: the plans chosen per call (transform modes, lean or general head) against the definition over
# the whole space of records whose arithmetic stays in int64, not only over the records chosen above
# ------------------------------------------------------------------------------------------------------

def _random_x_record(rng):
    """A record of fc_0's input drawn across every plan: FT clamps up to 32767, multipliers up to 2^33, shifts
    up to 62, each rounding, divisors and wrapping now and then; its largest product stays below 2^62."""
    while True:
        ft_hi = int(rng.choice([rng.integers(0, 400), np.exp2(rng.uniform(0, 15)), 32767]))
        mul = 1 if rng.random() < 0.3 else int(np.exp2(rng.uniform(0, 33)))
        shift = int(rng.integers(0, 63))
        rec = XRecord(min(ft_hi, 32767), int(rng.integers(0, 256)), mul, shift,
                      int(rng.choice([R_FLOOR, R_TRUNC, R_NEAREST])),
                      div=1 if rng.random() < 0.85 else int(rng.integers(2, 1000)), wrap=int(rng.random() < 0.05))
        if rec.ft_hi ** 2 * rec.mul + ((rec.div << rec.shift) >> 1) < 2 ** 62:
            return rec


@pytest.mark.parametrize("seed", range(8))
def test_fc0_input_for_random_records(kf, base_records, seed):
    """Random records (``_random_x_record``), 40 a seed, each on accumulators around its FT clamp and at the
    largest product, against numpy."""
    rng = np.random.default_rng(1000 + seed)
    l1 = 256
    w0, w0g, b0, w1, w1g, b1, w2, b2 = _layers(rng, l1)
    for k in range(40):
        rec = _random_x_record(rng)
        qs = _with_x(base_records[255 if rec.x_hi > 127 else 127], rec)
        for trial in range(4):
            us, them = _acc(rng, l1, rec.ft_hi), _acc(rng, l1, rec.ft_hi)
            if trial == 0:
                us[:], them[:] = rec.ft_hi, 32767
            x, _, _ = _run(kf, us, them, qs, w0g, b0, w1g, b1, w2, b2)
            want = _x_reference(us, them, rec)
            assert np.array_equal(x, want), (rec, trial, np.flatnonzero(x != want)[:8])


def _random_head_record(rng, base_records):
    """A head record drawn across the lean heads and the general one: per activation site a shift, a rounding,
    multipliers (all 1, or per row up to 2^31) and clamps (mostly 0..255); square limits up to 2^31; a divisor
    or wrapping now and then. Every product stays in int64, the definition's arithmetic: fc_0's and fc_1's
    outputs are int32, the multipliers below 2^31, and a square times its multiplier is kept below 2^62 (past
    int64 the heads wrap in different places and need not agree)."""
    while True:
        rec = _draw_head_record(rng)
        qs = _with_head(base_records, rec)
        lim = qs[S_SQR_LIMIT, Q_HI:Q_HI + FC0_OUT - 1].astype(object)
        if all(int(l) ** 2 * int(m) < 2 ** 62 for l, m in zip(lim, qs[S_SQR, Q_MUL:Q_MUL + FC0_OUT - 1])):
            return rec


def _draw_head_record(rng):
    sites = []
    for site, rows in ((S_SQR, FC0_OUT - 1), (S_AC0, FC0_OUT - 1), (S_AC1, FC1_OUT)):
        mul = None if rng.random() < 0.4 else [int(np.exp2(rng.uniform(0, 31))) for _ in range(rows)]
        hi = None if rng.random() < 0.5 else [int(rng.integers(0, 256)) if rng.random() < 0.95
                                              else int(rng.integers(256, 70000)) for _ in range(rows)]
        sites.append((site, (int(rng.integers(0, 63)), int(rng.choice([R_FLOOR, R_TRUNC, R_NEAREST])), mul, hi)))
    limit = None if rng.random() < 0.3 else [int(np.exp2(rng.uniform(0, 31.05))) for _ in range(FC0_OUT)]
    div = (int(rng.choice([S_SQR, S_AC0, S_AC1])), int(rng.integers(2, 100))) if rng.random() < 0.1 else ()
    wrap = int(rng.choice([S_SQR, S_AC0, S_AC1])) if rng.random() < 0.05 else -1
    return HeadRecord(int(rng.choice([127, 255])), tuple(sites), limit, div, wrap)


@pytest.mark.parametrize("seed", range(8))
def test_head_equals_the_numba_head_for_random_records(kf, base_records, seed):
    """Random head records (``_random_head_record``), 25 a seed, on fc_0 outputs at their edges: the C kernel's
    head must equal the Numba path's."""
    rng = np.random.default_rng(2000 + seed)
    l1 = 64
    w0, w0g, b0, w1, w1g, b1, w2, b2 = _layers(rng, l1)
    zero_w0g = np.zeros_like(w0g)
    us, them = _acc(rng, l1, 127), _acc(rng, l1, 127)
    for k in range(25):
        rec = _random_head_record(rng, base_records)
        qs = _with_head(base_records, rec)
        edges = _edge_values(qs, rng)
        for trial in range(12):
            b0 = rng.choice(edges, size=FC0_OUT).astype(np.int32)
            _, fc0, pos = _run(kf, us, them, qs, zero_w0g, b0, w1g, b1, w2, b2)
            assert pos == _head(fc0, qs, b1, w1, b2, w2), (rec, trial, b0)
