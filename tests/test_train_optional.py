"""PyTorch stays optional: importing the engine, quantfish.train or the CLI never imports it, and the training
commands say how to install it, in one line, when it is missing."""

import subprocess
import sys

import pytest

from tests.testdata import ROOT

NO_TORCH = "import sys; sys.modules['torch'] = None\n"      # any 'import torch' now raises ImportError


def _run(code: str):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_imports_do_not_pull_torch():
    proc = _run("import sys, quantfish.cli.main, quantfish.nnue, quantfish.train, quantfish.train.data, quantfish.nnue.scales, "
                "quantfish.train.quanterror, quantfish.train.distill, quantfish.cli.train\n"
                "print('torch' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("args", [["train", "--source", "tests.trainset:tiny_source", "--out", "/tmp/qf-x"],
                                  ["export", "missing.pt", "-o", "x.nnue"]])
def test_commands_without_torch_say_how_to_install_it(args):
    proc = _run(NO_TORCH + f"from quantfish.cli.main import main\nmain({args!r})")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "Error: PyTorch is not installed: make train-deps"
    assert "Traceback" not in proc.stderr
