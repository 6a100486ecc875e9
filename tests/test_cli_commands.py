"""Every documented subcommand is registered: a module that fails to import must fail the command line,
not make its subcommand vanish from it."""
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from quantfish.cli.main import main

REPO = Path(__file__).resolve().parent.parent
DOCUMENTED = {"perft", "bench", "eval", "gendata", "data", "train", "export"}    # design.md "Command line" and README "Usage"


def _listed(help_text):
    """Command names in the "Commands:" section of click's help."""
    lines = help_text.split("Commands:", 1)[1].splitlines()
    return {line.split()[0] for line in lines if line.startswith("  ") and line.strip()}


def test_group_has_every_documented_subcommand():
    ctx = click.Context(main)
    assert DOCUMENTED <= set(main.list_commands(ctx))
    for name in DOCUMENTED:
        assert isinstance(main.get_command(ctx, name), click.Command), name


def test_a_broken_command_module_fails_loudly(monkeypatch):
    """A subcommand whose module does not import is an error when used, not a command that vanishes."""
    from quantfish.cli import main as cli
    monkeypatch.setitem(cli.LAZY_COMMANDS, "broken", ("uci.no_such_module", "command"))
    res = CliRunner().invoke(main, ["broken"])
    assert res.exit_code != 0 and isinstance(res.exception, ModuleNotFoundError)


def test_help_lists_every_documented_subcommand():
    res = CliRunner().invoke(main, ["--help"])
    assert res.exit_code == 0, res.output
    assert DOCUMENTED <= _listed(res.output)


def test_help_of_a_fresh_process_lists_them():
    """The console script's entry point as a new process sees, with nothing imported beforehand."""
    proc = subprocess.run([sys.executable, "-m", "quantfish.cli.main", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert DOCUMENTED <= _listed(proc.stdout)


def test_registering_them_stays_cheap():
    """Importing the command line loads no engine, net, Numba, numpy or python-chess code (subcommands load when
    used): UCI mode and `quantfish perft` start at once."""
    probe = ("import sys, quantfish.cli.main; print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'numba', 'numpy', 'chess'} or m.split('.')[:2] in (['quantfish', p] for p in "
             "('core', 'nnue', 'search', 'tablebase', 'runtime'))))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("command", [
    [sys.executable, "-X", "importtime", "-m", "quantfish"],
    [sys.executable, "-X", "importtime", "-c", "import sys; sys.argv = ['quantfish']; import quantfish.cli; quantfish.cli.entry()"],
], ids=["python -m quantfish", "quantfish script"])
def test_uci_mode_starts_without_the_command_line_library(command):
    """With no arguments (how a GUI starts an engine) `uciok` comes before click is imported (~40 ms)."""
    proc = subprocess.run(command, input="uci\nquit\n", capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "uciok" in proc.stdout
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "quantfish.uci.protocol" in imported
    assert "click" not in imported
