"""``quantfish net get``: keeps a good file, exports from Stockfish, explains when it cannot."""

import os
import shutil

import pytest
from click.testing import CliRunner

from quantfish.cli import net as get_net
from quantfish.nnue.locate import DEFAULT_NET_NAME, DEFAULT_NET_SHA256, sha256_of


def _get(dest):
    return CliRunner().invoke(get_net.net_group, ["get", "--dest", str(dest)])


def test_present_file_is_kept(sf_net_path, tmp_path, monkeypatch):
    shutil.copy(sf_net_path, tmp_path / DEFAULT_NET_NAME)
    monkeypatch.setattr(get_net, "try_download", lambda dest: pytest.fail("should not download"))
    res = _get(tmp_path)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(tmp_path / DEFAULT_NET_NAME)


def test_no_source_gives_instructions(tmp_path, monkeypatch):
    (tmp_path / DEFAULT_NET_NAME).write_bytes(b"corrupt")
    monkeypatch.setattr(get_net, "URL", "http://127.0.0.1:9/none.nnue")     # refused at once
    monkeypatch.setattr(get_net, "STOCKFISH_CANDIDATES", ())
    res = _get(tmp_path)
    assert res.exit_code == 1
    assert "sha256 is wrong" in res.stderr and "Could not obtain" in res.stderr and DEFAULT_NET_SHA256 in res.stderr


@pytest.mark.skipif(not get_net.find_stockfish(), reason="no Stockfish binary")
def test_export_from_stockfish(tmp_path, monkeypatch):
    monkeypatch.setattr(get_net, "URL", "http://127.0.0.1:9/none.nnue")
    if _get(tmp_path).exit_code != 0:
        pytest.skip("the installed Stockfish is not 15.1 (its net has another sha256)")
    assert sha256_of(tmp_path / DEFAULT_NET_NAME) == DEFAULT_NET_SHA256
    assert sorted(os.listdir(tmp_path)) == [DEFAULT_NET_NAME]


def test_list_names_the_folders_and_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("QUANTFISH_DATA_DIR", str(tmp_path))
    res = CliRunner().invoke(get_net.net_group, ["list"])
    assert res.exit_code == 0, res.output
    assert str(tmp_path / "nets") in res.stdout and "qf-" in res.stdout
    assert "default net:" in res.stdout
