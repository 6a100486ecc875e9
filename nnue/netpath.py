"""Where the engine finds its nets: an explicit path, else $QUANTFISH_NET, else <repo root>/nets/.

The default file names live here, and nowhere else: Stockfish 15.1's net, Quantfish's own net (the fallback
when Stockfish's cannot be had), and Stockfish 17.1's big and small nets (its ``EvalFile`` / ``EvalFileSmall``
defaults). The repo root is found from this file's location, so it
works from any working directory. Standard library only: the UCI loop imports this before it answers ``uci``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DEFAULT_NET_NAME = "nn-ad9b42354671.nnue"
DEFAULT_NET_SHA256 = "ad9b423546714137916bd38978af6fd68d7b8951bef25ff76bf43da72d6cb786"
DEFAULT_NET_SIZE = 47_001_499
ENV_VAR = "QUANTFISH_NET"
OWN_NET_NAME = "qf-1c4595f65a07.nnue"       # Quantfish's own net, committed in nets/ (nets/README.md)
OWN_NET_SHA256 = "1c4595f65a078ca43fdf77c7e235dc5c82ea0295d9946035bae84cb3045fbbb0"
BIG_NET_NAME = "nn-1c0000000000.nnue"       # Stockfish 17.1's big net (L1 = 3072)
SMALL_NET_NAME = "nn-37f18f62d772.nnue"     # Stockfish 17.1's small net (L1 = 128)
SMALL_ENV_VAR = "QUANTFISH_NET_SMALL"


def repo_root() -> Path:
    """The directory that holds the ``nnue`` package (and ``nets/``)."""
    return Path(__file__).resolve().parent.parent


def default_nets_dir() -> Path:
    return repo_root() / "nets"


def resolve_net_path(path=None, name: str = DEFAULT_NET_NAME, env_var: str = ENV_VAR) -> Path:
    """Net file to load: ``path`` if given (a directory means ``path/name``), then $QUANTFISH_NET (file or
    directory; ``env_var`` names another variable), then ``<repo root>/nets/name``. The file is not checked
    to exist here."""
    for candidate in (path, os.environ.get(env_var) or None):
        if candidate:
            p = Path(candidate).expanduser()
            return p / name if p.is_dir() else p
    return default_nets_dir() / name


def resolve_named(value, name: str, env_var: str) -> Path:
    """The file an ``EvalFile``-style ``value`` names: None means $env_var, else ``nets/name``; a directory
    means ``dir/name``; a bare file name that is not a file here but is one in ``nets/`` means that one."""
    path = resolve_net_path(value, name, env_var)
    if value and not path.exists() and Path(value).name == value and (default_nets_dir() / value).is_file():
        return default_nets_dir() / value
    return path


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
