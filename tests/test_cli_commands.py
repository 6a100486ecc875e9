"""Every documented subcommand is registered: a module that fails to import must fail the command line,
not make its subcommand vanish from it."""
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from uci.cli import main

REPO = Path(__file__).resolve().parent.parent
DOCUMENTED = {"perft", "bench", "eval", "gendata", "data"}    # design.md "Command line" and README "Usage"


def _listed(help_text):
    """Command names in the "Commands:" section of click's help."""
    lines = help_text.split("Commands:", 1)[1].splitlines()
    return {line.split()[0] for line in lines if line.startswith("  ") and line.strip()}


def test_group_has_every_documented_subcommand():
    assert DOCUMENTED <= set(main.commands)


def test_help_lists_every_documented_subcommand():
    res = CliRunner().invoke(main, ["--help"])
    assert res.exit_code == 0, res.output
    assert DOCUMENTED <= _listed(res.output)


def test_help_of_a_fresh_process_lists_them():
    """The console script's entry point as a new process sees, with nothing imported beforehand."""
    proc = subprocess.run([sys.executable, "-m", "uci.cli", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert DOCUMENTED <= _listed(proc.stdout)


def test_registering_them_stays_cheap():
    """Importing the command line loads no engine, Numba, numpy or compiled net code (only the pure-Python display
    units and the nnue package's cache check): `quantfish perft` starts at once."""
    probe = ("import sys, uci.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'engine', 'nnue', 'numba', 'numpy', 'chess'}))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert set(eval(proc.stdout)) <= {"nnue", "nnue.cachecheck", "nnue.units"}, proc.stdout
