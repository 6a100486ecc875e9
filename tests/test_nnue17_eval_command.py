"""``quantfish eval`` with a Stockfish 17.1 pair: JSON fields equal the reference data, both bucket tables in
the human output, --optimism, batch mode, and clear errors for wrong pairs."""

import csv
import json

import pytest
from click.testing import CliRunner

from quantfish.nnue.units import to_cp, wdl_a
from quantfish.cli.eval import eval_command
from tests.testdata import NNUE_DATA, require

TSV = NNUE_DATA / "sf17.1_reference.tsv"


@pytest.fixture(scope="module")
def rows():
    with open(require(TSV)) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    picked = rows[::len(rows) // 8][:8]
    picked += [next(r for r in rows if r["reeval_big"] == "1"), next(r for r in rows if r["used_net"] == "small")]
    return picked


@pytest.fixture(scope="module")
def net_args(nnue17_dir):
    return ["--net", str(nnue17_dir / "synthetic_big.nnue"), "--net-small", str(nnue17_dir / "synthetic_small.nnue")]


def _expected(r, final_col="final_eval"):
    out = {"fen": r["fen"], "bucket": int(r["bucket"])}
    for name in ("big_psqt", "big_positional", "small_psqt", "small_positional"):
        out[name] = [int(r[f"{name}_{k}"]) for k in range(8)]
    out.update(used_net=r["used_net"], nnue=int(r["nnue"]), final=int(r[final_col]),
               nnue_raw=int(r["big_psqt16"]) + int(r["big_pos16"]),       # internal units, as for every format
               quantisation={"format": "stockfish", "scheme": "sf", "rounding": "floor", "resolution": 127})
    return out


def test_json_matches_reference(rows, net_args):
    runner = CliRunner()
    for r in rows:
        res = runner.invoke(eval_command, [r["fen"], "--json", *net_args])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout) == _expected(r)
    for opt, col in (("100", "final_opt_p100"), ("-57", "final_opt_m57")):
        r = rows[3]
        res = runner.invoke(eval_command, [r["fen"], "--json", "--optimism", opt, *net_args])
        assert json.loads(res.stdout) == _expected(r, col)


def test_batch_mode_with_a_pair(rows, net_args):
    lines = [rows[0]["fen"], "not a fen", rows[1]["fen"]]
    res = CliRunner().invoke(eval_command, ["--json", *net_args], input="\n".join(lines) + "\n")
    assert res.exit_code == 0
    out = [json.loads(line) for line in res.output.splitlines()]
    assert out[0] == _expected(rows[0]) and out[2] == _expected(rows[1]) and "error" in out[1]


def test_human_output_shows_both_nets(rows, net_args):
    from quantfish.core.fen import parse_fen
    for r in (rows[-1], rows[-2], rows[0]):
        out = CliRunner().invoke(eval_command, [r["fen"], *net_args]).output
        assert "big net, L1 = 3072" in out and "small net, L1 = 128" in out
        assert out.count("<-- this bucket is used") == 2
        used = [line for line in out.splitlines() if line.startswith("Net used")][0]
        assert used.split()[2] == r["used_net"]
        if r["reeval_big"] == "1":
            assert "re-evaluated with the big net" in used
        pos = parse_fen(r["fen"])
        white = 1 if pos.side == 0 else -1
        final = [line for line in out.splitlines() if line.startswith("Final evaluation")][0]
        assert f"{white * to_cp(int(r['final_eval']), wdl_a(pos.board)) / 100:+.2f}" in final


def test_to_cp_start_position():
    from quantfish.core.fen import parse_fen
    a = wdl_a(parse_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1").board)
    assert abs(a - 378.5) < 0.1 and to_cp(378, a) == 100


def test_pair_errors(nnue17_dir, nnue_net):
    runner = CliRunner()
    fen = "8/8/8/8/8/8/8/K6k w - - 0 1"
    res = runner.invoke(eval_command, [fen, "--net", nnue_net.path, "--net-small",
                                       str(nnue17_dir / "synthetic_small.nnue")])
    assert res.exit_code == 1 and "pairs only with a Stockfish 17.1 big net" in res.output
    res = runner.invoke(eval_command, [fen, "--net", str(nnue17_dir / "synthetic_small.nnue"), "--net-small",
                                       str(nnue17_dir / "synthetic_big.nnue")])
    assert res.exit_code == 1 and "swapped" in res.output and "Traceback" not in res.output
