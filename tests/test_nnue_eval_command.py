"""``quantfish eval``: JSON fields equal the reference data, batch mode, errors without tracebacks."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from quantfish.cli.eval import eval_command
from tests.testdata import NNUE_DATA, require

TSV = NNUE_DATA / "sf15.1_reference.tsv"
REPO = Path(__file__).resolve().parent.parent
STOCKFISH = "/usr/games/stockfish"


def _rows(n):
    with open(require(TSV)) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return rows[::len(rows) // n][:n]


def _expected(r):
    return {"fen": r["fen"], "bucket": int(r["bucket"]),
            "psqt": [int(r[f"psqt_{k}"]) for k in range(8)],
            "positional": [int(r[f"positional_{k}"]) for k in range(8)],
            "nnue_raw": int(r["nnue_evaluate_raw"]), "nnue_adjusted": int(r["nnue_evaluate_adjusted"]),
            "final": int(r["final_eval_nnue_path"]),
            "quantisation": {"format": "stockfish", "scheme": "sf", "rounding": "floor", "resolution": 127}}


def test_json_matches_reference(sf_net):
    runner = CliRunner()
    for r in _rows(12):
        res = runner.invoke(eval_command, [r["fen"], "--json", "--net", sf_net.path])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout) == _expected(r)


def test_unquoted_fen_words(sf_net):
    res = CliRunner().invoke(eval_command, ["--json", *"8/8/8/8/8/8/8/K6k w - - 0 1".split()])
    assert res.exit_code == 0 and json.loads(res.stdout)["bucket"] == 0


def test_batch_with_bad_line(sf_net):
    rows = _rows(5)
    lines = [rows[0]["fen"], "not a fen", "", rows[1]["fen"], "8/8/8/8/8/8/8/8 w - - 0 1", rows[2]["fen"]]
    res = CliRunner().invoke(eval_command, ["--json"], input="\n".join(lines) + "\n")
    assert res.exit_code == 0
    out = [json.loads(line) for line in res.output.splitlines()]
    assert len(out) == 5
    assert out[0] == _expected(rows[0]) and out[2] == _expected(rows[1]) and out[4] == _expected(rows[2])
    assert out[1]["fen"] == "not a fen" and "fields" in out[1]["error"]
    assert "king" in out[3]["error"] and set(out[3]) == {"fen", "error"}


def test_bad_fen_and_bad_net(tmp_path, sf_net):
    runner = CliRunner()
    res = runner.invoke(eval_command, ["xx w - - 0 1"])
    assert res.exit_code == 1 and "bad FEN" in res.output and "Traceback" not in res.output
    res = runner.invoke(eval_command, ["8/8/8/8/8/8/8/K6k w - - 0 1", "--net", str(tmp_path / "none.nnue")])
    assert res.exit_code == 1 and "net file not found" in res.output
    bad = tmp_path / "bad.nnue"
    bad.write_bytes(b"\x20\x2f\xf3\x7a" + b"\0" * 20)
    res = runner.invoke(eval_command, ["8/8/8/8/8/8/8/K6k w - - 0 1", "--net", str(bad)])
    assert res.exit_code == 1 and "header hash mismatch" in res.output


def test_process_errors_go_to_stderr(tmp_path, sf_net):
    """A real process: one line on stderr, status 1, no traceback."""
    code = "from quantfish.cli.eval import eval_command; eval_command(prog_name='quantfish eval')"
    proc = subprocess.run([sys.executable, "-c", code, "8/8/8/8/8/8/8/K6k w - - 0 1", "--net",
                           str(tmp_path / "missing.nnue")], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "net file not found" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.skipif(not os.access(STOCKFISH, os.X_OK), reason="Stockfish 15.1 not installed")
def test_human_table_matches_stockfish(sf_net):
    fens = ["r1b1k1nr/1p1p1ppp/2p1nq2/pP6/1b6/2N1PP1N/P2Q2PP/R3KB1R b KQkq - 2 14",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"] + [r["fen"] for r in _rows(4)]
    script = "".join(f"position fen {f}\neval\n" for f in fens) + "quit\n"
    sf = subprocess.run([STOCKFISH], input=script, capture_output=True, text=True, timeout=60).stdout
    blocks = sf.split(" NNUE network contributions")[1:]
    assert len(blocks) == len(fens)
    runner = CliRunner()
    for fen, block in zip(fens, blocks):
        ours = runner.invoke(eval_command, [fen]).output
        sf_table = (" NNUE network contributions" + block).splitlines()[:14]
        assert ours.splitlines()[:14] == sf_table, fen
        sf_nnue = [l for l in block.splitlines() if l.startswith("NNUE evaluation")][0]
        assert sf_nnue in ours
