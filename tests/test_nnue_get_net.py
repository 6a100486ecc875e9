"""``python -m nnue.tools.get_net``: keeps a good file, exports from Stockfish, explains when it cannot."""

import os
import shutil

import pytest

from nnue.netpath import DEFAULT_NET_NAME, DEFAULT_NET_SHA256, sha256_of
from nnue.tools import get_net


def test_present_file_is_kept(nnue_net, tmp_path, monkeypatch):
    shutil.copy(nnue_net.path, tmp_path / DEFAULT_NET_NAME)
    monkeypatch.setattr(get_net, "try_download", lambda dest: pytest.fail("should not download"))
    assert get_net.main(["--dest", str(tmp_path)]) == 0


def test_no_source_gives_instructions(tmp_path, monkeypatch, capsys):
    (tmp_path / DEFAULT_NET_NAME).write_bytes(b"corrupt")
    monkeypatch.setattr(get_net, "URL", "http://127.0.0.1:9/none.nnue")     # refused at once
    monkeypatch.setattr(get_net, "STOCKFISH_CANDIDATES", ())
    assert get_net.main(["--dest", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "sha256 is wrong" in err and "Could not obtain" in err and DEFAULT_NET_SHA256 in err


@pytest.mark.skipif(not get_net.find_stockfish(), reason="no Stockfish binary")
def test_export_from_stockfish(tmp_path, monkeypatch):
    monkeypatch.setattr(get_net, "URL", "http://127.0.0.1:9/none.nnue")
    if get_net.main(["--dest", str(tmp_path)]) != 0:
        pytest.skip("the installed Stockfish is not 15.1 (its net has another sha256)")
    assert sha256_of(tmp_path / DEFAULT_NET_NAME) == DEFAULT_NET_SHA256
    assert sorted(os.listdir(tmp_path)) == [DEFAULT_NET_NAME]
