"""The engine runs Quantfish-format nets: its integers equal the reference simulator's, on both paths.

``quantfish.quant.simulator`` defines what a scheme's integers are; the engine's compiled forward pass
(``quantfish.nnue.layers.forward_scheme`` with ``quantfish.nnue.requant``) must give the same psqt, positional and raw for
every bucket, from a fresh refresh and from incrementally updated accumulators, on the Numba path and on the
C kernel's path (whose accumulator steps it shares). Stockfish's own arithmetic written as a Quantfish file
must give Stockfish 15.1's reference integers, and the search, UCI and ``eval`` must take such a net.
"""

import json
import random

import chess
import chess.engine
import numpy as np
import pytest

from quantfish.quant.schemes import is_stockfish
from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.accumulator import make_stack
from quantfish.nnue.formulas import eval_report
from quantfish.nnue.layers import make_scratch
from quantfish.nnue.net import P_SCHEME, NetFileError
from quantfish.nnue.io import load_net
from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty, side_to_move
from quantfish.quant import calibrate, schemes
from quantfish.nnue.io import quantfish as qformat
from quantfish.quant.floatnet import FloatNet
from quantfish.quant.positions import from_boards, parse_lines
from quantfish.nnue.scheme import Requant
from quantfish.quant.simulator import accumulate, simulate
from quantfish.nnue.requant import pack_scheme
from quantfish.nnue.stack import net_output_any, refresh_ply
from tests.test_quant_schemes import _net, _positions, random_boards
from tests.test_quant_sf import _reference_rows

COMBOS = [(name, r, res) for name in schemes.NAMES for r, res in (("floor", 127), ("nearest", 255),
                                                                   ("nearest", 127), ("floor", 255))]


@pytest.fixture(scope="module")
def small():
    """A random float net of L1 = 64 and its calibration statistics."""
    fnet = _net()
    return fnet, calibrate.collect(fnet, _positions(200, 3), min_per_stack=64)


@pytest.fixture(scope="module", params=["scalar", "avx2", "avx512", "avx512vnni"])
def c_kernel(request):
    """Each variant of the C kernel this machine runs (the others skip, saying why)."""
    kernel = ckernel.load_kernel("c", variant=request.param)
    if not kernel.is_c or kernel.variant != request.param:
        pytest.skip(f"C kernel variant {request.param} not usable here: {kernel.reason}")
    return kernel.funcs


def _written(qnet, path):
    qformat.write_qnet(qnet, path)
    net = load_net(path)
    assert net.scheme == qnet.scheme and net.arrays().params[P_SCHEME] == 1
    return net


def _traces(qnet, pos):
    accs = accumulate(qnet, pos)
    return [simulate(qnet, pos, stack=k, accumulators=accs) for k in range(8)], simulate(qnet, pos,
                                                                                         accumulators=accs)


def _check_reports(net, qnet, boards):
    pos = from_boards([b for b, _ in boards], [s for _, s in boards])
    per_stack, own = _traces(qnet, pos)
    for i, (board, side) in enumerate(boards):
        rep = eval_report(net, board, side, 0)
        assert rep.psqt == [int(t.psqt[i]) for t in per_stack], i
        assert rep.positional == [int(t.positional[i]) for t in per_stack], i
        assert rep.nnue_raw == int(own.raw[i]), i
    return per_stack


@pytest.mark.parametrize("name,rounding,resolution", COMBOS)
def test_numba_path_equals_the_simulator_for_every_scheme(small, tmp_path, name, rounding, resolution):
    fnet, stats = small
    qnet = schemes.make(name, fnet, stats, rounding, resolution)
    net = _written(qnet, tmp_path / "net.qfnn")
    _check_reports(net, qnet, random_boards(40, 11))


@pytest.mark.parametrize("name,rounding,resolution", [("range-row", "nearest", 255), ("dfp", "floor", 127),
                                                      ("mse", "nearest", 127), ("sf", "nearest", 255)])
def test_c_kernel_path_equals_the_simulator(small, c_kernel, tmp_path, name, rounding, resolution):
    """Accumulators by the C kernel (plain refresh), then the scheme's forward, as ``net_output`` runs it."""
    fnet, stats = small
    qnet = schemes.make(name, fnet, stats, rounding, resolution)
    net = _written(qnet, tmp_path / "net.qfnn")
    arrays, cnet = net.arrays(), ckernel.make_cnet(net)
    l1 = qnet.l1
    boards = random_boards(40, 12)
    pos = from_boards([b for b, _ in boards], [s for _, s in boards])
    per_stack, _ = _traces(qnet, pos)
    scratch = ckernel.make_cscratch(l1)
    for i, (board, side) in enumerate(boards):
        acc, psqt, computed, dirty, ndirty = stack = ckernel.make_cstack(l1, 2)
        refresh_ply(arrays, acc, psqt, computed, 0, board, scratch, c_kernel, cnet)
        kw, kb = int(np.flatnonzero(board == 6)[0]), int(np.flatnonzero(board == 14)[0])
        for k in range(8):
            p, q = net_output_any(arrays, stack, 0, board, kw, kb, side, k, scratch, None, c_kernel, cnet)
            assert (p, q) == (int(per_stack[k].psqt[i]), int(per_stack[k].positional[i])), (i, k)


def test_incremental_evaluation_along_games_equals_the_simulator(small, tmp_path):
    _walk_games(small, tmp_path, None)


def test_incremental_evaluation_on_the_c_path_equals_the_simulator(small, tmp_path, c_kernel):
    _walk_games(small, tmp_path, c_kernel)


def _walk_games(small, tmp_path, kf):
    """Random games through the search stack's lazy updates (C when ``kf``, else Numba), every ply against
    the simulator."""
    use_c = kf is not None
    fnet, stats = small
    qnet = schemes.make("range-row", fnet, stats, "nearest", 255)
    net = _written(qnet, tmp_path / "net.qfnn")
    arrays = net.arrays()
    cnet = ckernel.make_cnet(net) if use_c else None
    l1, max_ply = qnet.l1, 96
    stack = ckernel.make_cstack(l1, max_ply) if use_c else make_stack(l1, max_ply)
    acc, psqt, computed, dirty, ndirty = stack
    scratch = ckernel.make_cscratch(l1) if use_c else make_scratch(l1)
    rng = random.Random(5)
    boards, got = [], []
    for _ in range(4):
        board = chess.Board()
        computed[:] = 0
        refresh_ply(arrays, acc, psqt, computed, 0, mailbox(board), scratch, kf, cnet)
        for ply in range(1, max_ply):
            if board.is_game_over():
                break
            move = rng.choice(list(board.legal_moves))
            rows = dirty_pieces(board, move)
            board.push(move)
            set_dirty(dirty, ndirty, ply, rows)
            computed[ply] = 0
            m, side = mailbox(board), side_to_move(board)
            bucket = (len(board.piece_map()) - 1) // 4
            got.append(net_output_any(arrays, stack, ply, m, board.king(chess.WHITE), board.king(chess.BLACK), side,
                                  bucket, scratch, None, kf, cnet))
            boards.append((m, side))
    assert len(boards) > 200
    pos = from_boards([b for b, _ in boards], [s for _, s in boards])
    own = simulate(qnet, pos)
    assert got == list(zip(own.psqt.tolist(), own.positional.tolist()))


def test_pack_scheme_refuses_what_compiled_code_cannot_follow(small):
    from dataclasses import replace
    fnet, stats = small
    rec = schemes.make("range-row", fnet, stats, "nearest", 255).scheme
    st = rec.stacks[0]
    bad = replace(rec, stacks=(replace(st, skip=Requant((3, 4), 1, 1, "floor")),) + rec.stacks[1:])
    with pytest.raises(ValueError, match="stack 0 skip: 2 multipliers"):
        pack_scheme(bad)
    bad = replace(rec, stacks=(replace(st, ac_1=replace(st.ac_1, hi=(5, 6, 7))),) + rec.stacks[1:])
    with pytest.raises(ValueError, match="stack 0 ac_1: 3 clamps"):
        pack_scheme(bad)


def test_a_record_the_engine_cannot_follow_is_refused_when_loading(small, tmp_path):
    from dataclasses import replace
    fnet, stats = small
    qnet = schemes.make("range", fnet, stats, "nearest", 127)
    st = qnet.scheme.stacks[2]
    qnet.scheme = replace(qnet.scheme, stacks=qnet.scheme.stacks[:2] + (replace(st, out=Requant((3, 4))),)
                          + qnet.scheme.stacks[3:])
    path = tmp_path / "bad.qfnn"
    qformat.write_qnet(qnet, path)
    with pytest.raises(NetFileError, match="scheme record the engine cannot follow: stack 2 out"):
        load_net(path)


# -- Stockfish 15.1's net ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sf_float(sf_net):
    return FloatNet.from_net(sf_net)


def test_stockfish_arithmetic_as_a_quantfish_file_gives_stockfish_integers(sf_float, tmp_path):
    """The ``sf`` record (floor, 127) written as a Quantfish file runs through the scheme path, not the fixed
    one, and still gives Stockfish 15.1's reference integers for all 8 buckets."""
    qnet = schemes.make("sf", sf_float)
    assert is_stockfish(qnet.scheme)
    net = _written(qnet, tmp_path / "sf.qfnn")
    from quantfish.core.fen import parse_fen
    for r in _reference_rows():
        p = parse_fen(r["fen"])
        rep = eval_report(net, p.board, p.side, p.halfmove)
        assert rep.psqt == [int(r[f"psqt_{k}"]) for k in range(8)], r["fen"]
        assert rep.positional == [int(r[f"positional_{k}"]) for k in range(8)], r["fen"]
        assert rep.nnue_raw == int(r["nnue_evaluate_raw"]), r["fen"]
        assert rep.final == int(r["final_eval_nnue_path"]), r["fen"]


@pytest.fixture(scope="module")
def sf_range_row(sf_float, tmp_path_factory):
    rows = _reference_rows(7)
    stats = calibrate.collect(sf_float, parse_lines([r["fen"] for r in rows[:300]]), min_per_stack=16)
    qnet = schemes.make("range-row", sf_float, stats, "nearest", 255)
    path = tmp_path_factory.mktemp("qnet") / "sf-range-row.qfnn"
    return qnet, _written(qnet, path), path


def test_calibrated_scheme_on_stockfish_net_equals_the_simulator(sf_range_row, c_kernel):
    qnet, net, _ = sf_range_row
    rows = _reference_rows(16)
    from quantfish.core.fen import parse_fen
    parsed = [parse_fen(r["fen"]) for r in rows]
    per_stack = _check_reports(net, qnet, [(p.board, p.side) for p in parsed])
    arrays, cnet = net.arrays(), ckernel.make_cnet(net)
    scratch = ckernel.make_cscratch(qnet.l1)
    for i, p in enumerate(parsed[:60]):
        acc, psqt, computed, dirty, ndirty = stack = ckernel.make_cstack(qnet.l1, 1)
        refresh_ply(arrays, acc, psqt, computed, 0, p.board, scratch, c_kernel, cnet)
        kw, kb = int(np.flatnonzero(p.board == 6)[0]), int(np.flatnonzero(p.board == 14)[0])
        b = (int(np.count_nonzero(p.board)) - 1) // 4
        assert net_output_any(arrays, stack, 0, p.board, kw, kb, p.side, b, scratch, None, c_kernel, cnet) == (
            int(per_stack[b].psqt[i]), int(per_stack[b].positional[i]))


def test_the_engine_searches_and_evaluates_with_a_quantfish_net(sf_range_row):
    from quantfish import Engine
    from quantfish.uci.evaltext import as_dict, format_human
    _, net, path = sf_range_row
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    with Engine(net=str(path)) as engine:
        move = engine.play(board, chess.engine.Limit(depth=6))
        assert move in board.legal_moves
    rep = eval_report(net, mailbox(board), 0, 2)
    d = json.loads(json.dumps(as_dict(board.fen(), rep, net)))
    assert d["quantisation"] == {"format": "quantfish", "scheme": "range-row", "rounding": "nearest",
                                 "resolution": 255}
    assert "range-row, nearest rounding, activations 0..255 (Quantfish format)" in format_human(rep, 0, 0, net)


@pytest.mark.parametrize("kernel", ["numba", "c"])
def test_search_with_stockfish_arithmetic_as_a_quantfish_file_walks_the_same_tree(sf_float, sf_net, tmp_path,
                                                                                   kernel):
    """The search's own evaluation of a Quantfish-format net (its ``scheme`` flag, both paths): with the ``sf``
    record the tree, nodes, score and move equal the Stockfish net's."""
    from quantfish import Engine
    if kernel == "c" and not ckernel.load_kernel("auto").is_c:
        pytest.skip("no C kernel here")
    path = tmp_path / "sf.qfnn"
    qformat.write_qnet(schemes.make("sf", sf_float), path)
    fens = ["r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
            "8/5pk1/6p1/3R4/7P/6P1/r4PK1/8 b - - 1 40"]
    results = []
    for net in (sf_net.path, str(path)):
        with Engine(net=net, kernel=kernel) as engine:
            assert engine._searcher.eval_mode["scheme"] == (net == str(path))     # the scheme's own pass searched
            infos = [engine.analyse(chess.Board(f), chess.engine.Limit(depth=9)) for f in fens]
        results.append([(i["nodes"], i["score"], i["pv"][0]) for i in infos])
    assert results[0] == results[1]


def test_uci_loads_plays_and_names_a_quantfish_net(sf_range_row):
    from tests.ucipipe import Engine as UciEngine, output_problem
    _, _, path = sf_range_row
    engine = UciEngine().start()
    try:
        engine.send(f"setoption name EvalFile value {path}\n".encode())
        loaded = engine.sync()[-1]
        assert loaded.startswith(f"info string NNUE evaluation using {path}".encode()), loaded
        assert b"Quantfish format: scheme range-row, nearest, activations 0..255" in loaded, loaded
        engine.send(b"position startpos moves e2e4 e7e5\neval\n")
        lines = engine.until(b"Final evaluation", prefix=True)
        assert any(b"range-row, nearest rounding, activations 0..255 (Quantfish format)" in x for x in lines), lines
        engine.send(b"go depth 6\n")
        best = engine.until(b"bestmove", prefix=True)[-1].split()[1].decode()
        assert chess.Move.from_uci(best) in chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - "
                                                        "0 2").legal_moves
        assert engine.quit() == 0
        assert "Traceback" not in engine.stderr, engine.stderr
        assert [problem for problem in map(output_problem, lines) if problem] == []
    finally:
        engine.kill()


def test_net_speed_compares_a_quantfish_file_with_the_plain_net(sf_float, sf_net, tmp_path, capsys):
    """``tools.net_speed`` (the README's scheme speed figures): both nets search the same tree with the
    ``sf`` record, each gets its own timing, and a missing net is a message, not a traceback."""
    from tools import net_speed
    path = tmp_path / "sf.qfnn"
    qformat.write_qnet(schemes.make("sf", sf_float), path)
    rows = net_speed.compare([sf_net.path, str(path)], depth=5, rounds=1, positions=3)
    (_, nodes_a, secs_a, ratios_a), (_, nodes_b, secs_b, ratios_b) = rows
    assert nodes_a == nodes_b > 0 and secs_a > 0 and secs_b > 0
    assert ratios_a == [1.0] * 3 and len(ratios_b) == 3 and all(r > 0 for r in ratios_b)
    assert net_speed.main([str(tmp_path / "missing.nnue")]) == 1
    assert "net_speed:" in capsys.readouterr().err


def test_forward_speed_times_the_plain_and_the_scheme_pass(sf_float, sf_net, tmp_path, capsys):
    """``tools.forward_speed`` (the README's forward-call figures): a row a net, the first net's ratio 1,
    each pass timed; a missing net or an unknown kernel variant is a message, not a traceback."""
    from tools import forward_speed
    path = tmp_path / "sf255.qfnn"
    qformat.write_qnet(schemes.make("sf", sf_float, None, "nearest", 255), path)
    try:
        rows = forward_speed.measure([sf_net.path, str(path)], rounds=3, positions=20)
    except ckernel.KernelUnavailable as exc:
        pytest.skip(f"no C kernel here: {exc}")
    assert [r[0] for r in rows] == [sf_net.path, str(path)]
    assert rows[0][2] == 1.0 and all(r[1] > 0 and r[2] > 0 for r in rows)
    assert forward_speed.main([str(tmp_path / "missing.nnue")]) == 1
    assert forward_speed.main([sf_net.path, "--variant", "nonesuch"]) == 1
    err = capsys.readouterr().err
    assert err.count("forward_speed:") == 2 and "nonesuch" in err
