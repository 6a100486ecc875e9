"""The quantisation toolkit's parts on a small random float net (L1 = 64): fast, and no Stockfish net needed.

Requantisation arithmetic, the schemes' records, refusals that name the layer, the clip rules, an
independent scalar implementation of the record's arithmetic against the vectorised simulator, and the
Quantfish file format.
"""

import json
from dataclasses import replace

import numpy as np
import pytest

from quantfish.quant.schemes import is_stockfish
from quantfish.nnue.architecture import FC0_OUT, FC1_IN, FC1_OUT, LAYER_STACKS, NUM_FEATURES
from quantfish.nnue.net import P_SCHEME, NetFileError
from quantfish.nnue.io import load_net
from quantfish.quant import build, calibrate, schemes
from quantfish.nnue.io import quantfish as qformat
from quantfish.quant.build import Choices, QuantError, plan, quantise
from quantfish.quant.calibrate import Site, kl_clip, mse_clip, range_clip
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.positions import PositionError, from_boards, parse_lines
from quantfish.quant.report import compare
from quantfish.nnue.scheme import Requant, Scheme, requant_for
from quantfish.quant.simulator import requant, simulate

L1 = 64


def _net(seed=1) -> FloatNet:
    rng = np.random.default_rng(seed)
    s = LAYER_STACKS
    return FloatNet(ft_bias=rng.uniform(0.2, 0.8, L1), ft_weights=rng.normal(0, 0.06, (NUM_FEATURES, L1)),
                    ft_psqt=rng.normal(0, 0.3, (NUM_FEATURES, 8)), w0=rng.uniform(-0.4, 0.4, (s, FC0_OUT, L1)),
                    b0=rng.uniform(-0.3, 0.3, (s, FC0_OUT)), w1=rng.uniform(-0.9, 0.9, (s, FC1_OUT, FC1_IN)),
                    b1=rng.uniform(-0.3, 0.5, (s, FC1_OUT)), w2=rng.uniform(-1.2, 1.2, (s, FC1_OUT)),
                    b2=rng.uniform(-0.2, 0.2, s), description=b"synthetic")


def random_boards(n, seed):
    """(mailbox, side to move) of ``n`` random positions: two kings and up to 30 other pieces anywhere."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        board = np.zeros(64, np.int8)
        sq = rng.permutation(64)
        board[sq[0]], board[sq[1]] = 6, 14
        k = int(rng.integers(0, 31))
        board[sq[2:2 + k]] = rng.choice([1, 2, 3, 4, 5, 9, 10, 11, 12, 13], size=k)
        out.append((board, int(rng.integers(0, 2))))
    return out


def _positions(n, seed):
    boards = random_boards(n, seed)
    return from_boards([b for b, _ in boards], [s for _, s in boards])


@pytest.fixture(scope="module")
def fnet():
    return _net()


@pytest.fixture(scope="module")
def stats(fnet):
    return calibrate.collect(fnet, _positions(200, 3), min_per_stack=64)


@pytest.fixture(scope="module")
def evaluation():
    return _positions(150, 4)


# -- requantisation ------------------------------------------------------------------------------------------

def test_requant_roundings():
    v = np.arange(-5, 6)
    assert requant(Requant((1,), 1, 1, "floor"), v).tolist() == [-3, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2]
    assert requant(Requant((1,), 0, 2, "trunc"), v).tolist() == [-2, -2, -1, -1, 0, 0, 0, 1, 1, 2, 2]
    assert requant(Requant((1,), 1, 1, "nearest"), v).tolist() == [-2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3]
    assert requant(Requant((3,), 2, 1, "floor"), [5]).tolist() == [3]          # 15 >> 2
    assert requant(Requant((2, 3), 0, 1, "floor"), [[1, 1]]).tolist() == [[2, 3]]     # a multiplier per row
    # C++ int arithmetic: Stockfish's skip wraps the product to int32 before dividing.
    assert requant(Requant((9600,), 0, 8128, "trunc", int32=True), [250_000]).tolist() == [
        int(np.int32(np.int64(250_000 * 9600) - 2**32)) // 8128 + 1]


def test_requant_for_shift_multiplier_and_shift_only():
    assert requant_for(1 / 64, "floor") == Requant((1,), 6, 1, "floor")
    assert requant_for(4.0, "floor") == Requant((4,), 0, 1, "floor")
    rq = requant_for([0.3, 0.2], "nearest")
    assert all(2**13 <= m < 2**15 for m in rq.mul)
    np.testing.assert_allclose(rq.ratio, [0.3, 0.2], rtol=1e-4)
    assert requant_for(0.3, "floor", shifts_only=True) == Requant((1,), 2, 1, "floor")   # 0.25
    with pytest.raises(ValueError):
        requant_for([0.25, 0.5], "floor", shifts_only=True)


# -- schemes -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", schemes.NAMES)
@pytest.mark.parametrize("rounding,resolution", [("floor", 127), ("nearest", 255)])
def test_every_scheme_builds_and_its_record_survives_json(fnet, stats, evaluation, name, rounding, resolution):
    q = schemes.make(name, fnet, stats, rounding, resolution)
    rec = q.scheme
    assert Scheme.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    assert (rec.rounding, rec.resolution) == (rounding, resolution)
    assert is_stockfish(rec) == (name == "sf" and rounding == "floor" and resolution == 127)
    assert all(max(st.ac_1.hi) <= resolution and max(st.ac_0.hi) <= resolution for st in rec.stacks)
    e = compare(q, fnet, evaluation, layers=False).end_to_end
    if name != "kl":                              # KL clips fc_0's input far below its range
        assert e.mae < 15 and e.sign > 0.9, (name, e)


def test_weights_are_quantised_against_their_exact_input_scales(fnet, stats):
    """w_int / (acc_scale[o] / in_scale[i]) is the float weight to half a step, per row and per column."""
    q = schemes.make("range-row", fnet, stats, "nearest", 255)
    for s, st in enumerate(q.scheme.stacks):
        a1 = np.asarray(st.fc_1.acc_scale)[:, None]
        in1 = np.concatenate([st.ac_sqr_0.scale, st.ac_0.scale])[None, :]
        step = in1 / a1
        assert np.all(np.abs(q.w1[s, :, :FC1_IN] * step - fnet.w1[s]) <= step / 2 + 1e-12)
        assert np.abs(q.w1[s]).max(axis=1).min() >= 126          # per row: every row uses its range


def test_dfp_scales_are_powers_of_two(fnet, stats):
    """Every DFP scale is a power of two, up to the 128/127 factors the function itself carries (the pairwise
    product and the square are * 127/128), and every hidden requantisation is a plain shift."""
    rec = schemes.make("dfp", fnet, stats, "nearest", 127).scheme
    pow2 = lambda v: any(np.allclose(np.log2(np.asarray(v) * (127 / 128) ** k),
                                     np.round(np.log2(np.asarray(v) * (127 / 128) ** k))) for k in range(4))
    assert pow2(rec.ft_scale) and pow2(rec.x.scale) and rec.x.requant.mul == (1,)
    for st in rec.stacks:
        assert pow2(np.asarray(st.fc_0.acc_scale) / rec.x.scale[0])          # fc_0 weight scale
        for act in (st.ac_0, st.ac_sqr_0, st.ac_1):
            assert pow2(act.scale) and act.requant.mul == (1,) and act.requant.div == 1


def test_report_shows_a_clip_below_the_range(fnet, stats, evaluation):
    """A clip of fc_0's input below the values it takes shows as clipped and saturated values."""
    ch = schemes.choices("range", fnet, stats, "nearest", 127)
    q = quantise(fnet, plan(replace(ch, clip_x=0.3), fnet, fnet.stacks))
    rows = {r.layer: r for r in compare(q, fnet, evaluation).layers}
    full = {r.layer: r for r in compare(quantise(fnet, plan(ch, fnet, fnet.stacks)), fnet, evaluation).layers}
    assert q.scheme.x.clip == 0.3 and q.scheme.x.hi == (127,)
    assert rows["x (fc_0 input)"].clipped > 0.05 and rows["x (fc_0 input)"].saturated > 0.05
    assert full["x (fc_0 input)"].clipped == 0 and rows["x (fc_0 input)"].sqnr < full["x (fc_0 input)"].sqnr


# -- refusals ------------------------------------------------------------------------------------------------

def _with(fnet, **changes):
    fields = {k: getattr(fnet, k).copy() for k in ("ft_bias", "ft_weights", "ft_psqt", "w0", "b0", "w1", "b1",
                                                    "w2", "b2")}
    for k, (index, value) in changes.items():
        fields[k][index] = value
    return FloatNet(**fields)


@pytest.mark.parametrize("change,layer", [
    ({"w0": ((2, 3, 5), 2.5)}, "stack 2 fc_0 weights overflow int8"),
    ({"b0": ((0, 1), 3e5)}, "stack 0 fc_0 biases overflow int32"),
    ({"w2": ((7, 4), 3.0)}, "stack 7 fc_2 weights overflow int8"),
    ({"ft_bias": (3, 300.0)}, "feature transformer biases overflow int16"),
    ({"ft_weights": (slice(0, 32), 9.0)}, "feature transformer accumulator"),
])
def test_overflow_is_refused_naming_the_layer(fnet, change, layer):
    with pytest.raises(QuantError, match=layer):
        schemes.make("sf", _with(fnet, **change))


def _with_requant(q, site, mul):
    """``q`` with one requantisation's multipliers replaced: ``site`` is "x", "out 3" or "ac_0 3" (a stack)."""
    sch = q.scheme
    if site == "x":
        return replace(q, scheme=replace(sch, x=replace(sch.x, requant=replace(sch.x.requant, mul=(mul,)))))
    name, s = site.split()
    st = sch.stacks[int(s)]
    if name == "out":
        st = replace(st, out=replace(st.out, mul=(mul,)))
    else:
        st = replace(st, ac_0=replace(st.ac_0, requant=replace(st.ac_0.requant, mul=(mul,))))
    stacks = list(sch.stacks)
    stacks[int(s)] = st
    return replace(q, scheme=replace(sch, stacks=tuple(stacks)))


@pytest.mark.parametrize("site,mul,layer", [
    ("x", 2 ** 40, "fc_0 input .* beyond int64"),
    ("ac_0 3", 2 ** 55, "stack 3 ClippedReLU of fc_0 .* beyond int64"),
    ("out 5", 2 ** 40, "stack 5 positional output .* beyond int32"),
])
def test_requantisation_overflow_is_refused_naming_the_site(fnet, stats, tmp_path, site, mul, layer):
    """A record whose requantisation could pass int64 (where the engine's paths would wrap, each its own way)
    or whose positional output could leave int32 (the C kernel returns it in 32 bits) is refused, when it is
    built and when a file holding it is read; the record as the scheme made it is not."""
    q = schemes.make("range-row", fnet, stats)
    build.check_requants(q)
    bad = _with_requant(q, site, mul)
    with pytest.raises(QuantError, match=layer):
        build.check_requants(bad)
    qformat.write_qnet(bad, tmp_path / "bad.qfnn")
    with pytest.raises(NetFileError, match=layer):
        load_net(tmp_path / "bad.qfnn")


def test_range_schemes_do_not_overflow_what_fixed_scales_refuse(fnet, stats):
    big = _with(fnet, w0=((2, 3, 5), 2.5))
    q = schemes.make("range", big, stats)                     # its scale makes room for the large weight
    assert np.abs(q.w0).max() == 127


# -- clip rules ----------------------------------------------------------------------------------------------

def test_clip_rules():
    rng = np.random.default_rng(0)
    uniform = Site(1.0, rng.uniform(0, 1, 100_000), 100, True)
    assert range_clip(uniform) == 1.0
    assert mse_clip(uniform, 127, "nearest") > 0.95             # nothing to gain from clipping a uniform
    assert kl_clip(uniform, 128) > 0.9
    spiky = np.concatenate([np.zeros(90_000), rng.exponential(0.01, 9_990), rng.uniform(0.5, 1, 10)])
    site = Site(float(spiky.max()), spiky, 100, True)
    assert kl_clip(site, 128) < 0.2                            # entropy calibration cuts the rare large values
    assert mse_clip(site, 127, "nearest") < site.max


# -- the simulator against an independent scalar reading of the record --------------------------------------

def _r(v: int, rq: Requant, row: int = 0) -> int:
    mul = rq.mul[row] if len(rq.mul) > 1 else rq.mul[0]
    p = v * mul
    if rq.int32:
        p = (p + 2**31) % 2**32 - 2**31
    d = rq.div * 2**rq.shift
    if rq.rounding == "floor":
        return p // d
    if rq.rounding == "trunc":
        return -(-p // d) if p < 0 else p // d
    return (p + d // 2) // d


def _scalar_raw(q, pos, i) -> int:
    sch = q.scheme
    s = int(pos.bucket[i])
    st = sch.stacks[s]
    persp = [pos.white[i], pos.black[i]]
    us, them = persp[pos.stm[i]], persp[1 - pos.stm[i]]
    x = []
    for idx in (us, them):
        acc = [int(q.ft_bias[j]) + sum(int(q.ft_weights[f, j]) for f in idx if f >= 0) for j in range(L1)]
        a = [min(max(v, 0), sch.ft_hi) for v in acc]
        x += [min(max(_r(a[j] * a[j + L1 // 2], sch.x.requant), 0), sch.x.hi[0]) for j in range(L1 // 2)]
    ps = [sum(int(q.ft_psqt[f, s]) for f in idx if f >= 0) for idx in (us, them)]
    psqt = _r(ps[0] - ps[1], sch.psqt)
    z0 = [int(q.b0[s, o]) + sum(int(q.w0[s, o, j]) * x[j] for j in range(L1)) for o in range(16)]
    sq = [min(_r(min(abs(z0[o]), st.ac_sqr_0.limit[o]) ** 2, st.ac_sqr_0.requant, o), st.ac_sqr_0.hi[o])
          for o in range(15)]
    h = [min(max(_r(z0[o], st.ac_0.requant, o), 0), st.ac_0.hi[o]) for o in range(15)]
    l1in = sq + h + [0, 0]
    z1 = [int(q.b1[s, o]) + sum(int(q.w1[s, o, j]) * l1in[j] for j in range(32)) for o in range(32)]
    c1 = [min(max(_r(z1[o], st.ac_1.requant, o), 0), st.ac_1.hi[o]) for o in range(32)]
    z2 = int(q.b2[s]) + sum(int(q.w2[s, j]) * c1[j] for j in range(32))
    return _r(psqt + _r(z2, st.out) + _r(z0[15], st.skip), sch.final)


@pytest.mark.parametrize("name,rounding,resolution", [("range-row", "nearest", 255), ("dfp", "floor", 127),
                                                      ("sf", "nearest", 255), ("mse", "floor", 255)])
def test_simulator_follows_the_record(fnet, stats, evaluation, name, rounding, resolution):
    q = schemes.make(name, fnet, stats, rounding, resolution)
    some = evaluation.take(slice(0, 6))
    assert simulate(q, some).raw.tolist() == [_scalar_raw(q, some, i) for i in range(6)]


# -- file format and positions -------------------------------------------------------------------------------

def test_quantfish_format_round_trip_and_refusals(fnet, stats, tmp_path):
    q = schemes.make("range", fnet, stats, "nearest", 255)
    path = tmp_path / "net.qfnn"
    qformat.write_qnet(q, path)
    back = qformat.read_qnet(path)
    assert back.scheme == q.scheme and back.description == q.description
    for k in ("ft_bias", "ft_weights", "ft_psqt", "b0", "w0", "b1", "w1", "b2", "w2"):
        assert np.array_equal(getattr(back, k), getattr(q, k)), k
    net = load_net(path)                                   # the engine's reader takes it, with its record
    assert net.scheme == q.scheme and net.arrays().params[P_SCHEME] == 1
    data = bytearray(path.read_bytes())
    data[-10] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(NetFileError, match="CRC"):
        qformat.read_qnet(path)
    with pytest.raises(NetFileError, match="CRC"):
        load_net(path)


def test_a_file_whose_sums_could_leave_int32_is_refused_naming_the_layer(fnet, stats, tmp_path):
    # the C kernel sums in int32: a file (hand-made, or from another tool) whose sums may not fit is refused
    q = schemes.make("range", fnet, stats)
    q.b1[3, 5] = 2**31 - 1                                 # any positive input on top of it leaves int32
    path = tmp_path / "wide.qfnn"
    qformat.write_qnet(q, path)
    with pytest.raises(NetFileError, match="stack 3 fc_1 sum could reach"):
        qformat.read_qnet(path)
    with pytest.raises(NetFileError, match="stack 3 fc_1 sum"):
        load_net(path)


def test_stockfish_record_needs_no_net():
    rec = schemes.stockfish_record()
    assert is_stockfish(rec) and rec.x.scale == (127.0,)
    with pytest.raises(ValueError, match="need the float net"):
        plan(Choices("r", weights="tensor"), None, LAYER_STACKS)


def test_positions_parse_fen_and_epd_and_refuse_bad_lines():
    pos = parse_lines(["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                       "# comment", "", "4k3/8/8/8/8/8/8/4K3 b - - hmvc 2; id \"x\";"])
    assert len(pos) == 2 and pos.bucket.tolist() == [7, 0] and pos.stm.tolist() == [0, 1]
    with pytest.raises(PositionError, match="line 1|:1:"):
        parse_lines(["8/8/8/8/8/8/8/8 w - - 0 1"])
    with pytest.raises(PositionError):
        parse_lines(["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1"])


def test_a_net_of_another_format_is_refused_by_the_toolkit():
    """The toolkit's fixed scales invert Stockfish 15.1's storage only: a net marked as a later generation's (its
    feature transformer compressed, hence doubled at load) is refused, naming the file, not read at half scale."""
    from quantfish.nnue.locate import OWN_NET_NAME, package_nets_dir
    net = load_net(package_nets_dir() / OWN_NET_NAME)
    assert FloatNet.from_net(net).l1 == net.arch.l1
    later = replace(net, arch=net.arch._replace(compressed_ft=True), path="later.nnue")
    with pytest.raises(ValueError, match=r"later.nnue: a net of Stockfish 15.1's format is needed"):
        FloatNet.from_net(later)
