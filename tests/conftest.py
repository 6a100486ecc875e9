"""Shared pytest fixtures.

NNUE: ``nnue_net`` loads Stockfish 15.1's net once per session from the default path
(``$QUANTFISH_NET`` or ``nets/``); tests that need it fail with a hint when it is absent.
"""

import pytest


@pytest.fixture(scope="session")
def nnue_net():
    from nnue.netfile import load_net
    from nnue.netpath import resolve_net_path
    path = resolve_net_path()
    if not path.is_file():
        pytest.fail(f"net {path} not found (run: make net)")
    return load_net(path)


@pytest.fixture(scope="session")
def nnue_arrays(nnue_net):
    return nnue_net.arrays()
