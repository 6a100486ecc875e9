"""Where the engine finds its nets: an explicit path, else $QUANTFISH_NET, else the user's nets folder, else the
nets shipped in the package.

The user's nets folder is ``nets`` in the user data folder (``quantfish.runtime.paths``), where ``quantfish net
get`` puts Stockfish 15.1's net. The package ships Quantfish's own net (``quantfish/nets``), the fallback when
Stockfish's cannot be had. The default file names live here, and nowhere else: Stockfish 15.1's net,
Quantfish's own net, and Stockfish 17.1's big and small nets (its ``EvalFile`` / ``EvalFileSmall`` defaults).
Standard library only: the UCI loop imports this before it answers ``uci``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from quantfish.runtime.paths import PACKAGE_DIR, data_dir

DEFAULT_NET_NAME = "nn-ad9b42354671.nnue"
DEFAULT_NET_SHA256 = "ad9b423546714137916bd38978af6fd68d7b8951bef25ff76bf43da72d6cb786"
DEFAULT_NET_SIZE = 47_001_499
ENV_VAR = "QUANTFISH_NET"
OWN_NET_NAME = "qf-06b7027a52df.nnue"       # Quantfish's own net, shipped in the package (quantfish/nets)
OWN_NET_SHA256 = "06b7027a52dfc7dc8b81b2949d783c57fc45c071f96c3deebacd63874ca465ce"
BIG_NET_NAME = "nn-1c0000000000.nnue"       # Stockfish 17.1's big net (L1 = 3072)
SMALL_NET_NAME = "nn-37f18f62d772.nnue"     # Stockfish 17.1's small net (L1 = 128)
SMALL_ENV_VAR = "QUANTFISH_NET_SMALL"


def user_nets_dir() -> Path:
    """The user's nets folder: where ``quantfish net get`` puts Stockfish's net."""
    return data_dir() / "nets"


def package_nets_dir() -> Path:
    """The nets shipped with the package (Quantfish's own)."""
    return PACKAGE_DIR / "nets"


def nets_dirs() -> tuple:
    """The folders a net's default name is looked for in, in order."""
    return user_nets_dir(), package_nets_dir()


def _in_nets_dirs(name: str) -> Path:
    """``name`` in the first nets folder that has it, else in the user's (where it would be put)."""
    for folder in nets_dirs():
        if (folder / name).is_file():
            return folder / name
    return user_nets_dir() / name


def resolve_net_path(path=None, name: str = DEFAULT_NET_NAME, env_var: str = ENV_VAR) -> Path:
    """Net file to load: ``path`` if given (a directory means ``path/name``), then ``$env_var`` (file or
    directory), then ``name`` in the user's nets folder or the package's. The file is not checked to exist."""
    for candidate in (path, os.environ.get(env_var) if env_var else None):
        if candidate:
            p = Path(candidate).expanduser()
            return p / name if p.is_dir() else p
    return _in_nets_dirs(name)


def resolve_named(value, name: str, env_var: str) -> Path:
    """The file an ``EvalFile``-style ``value`` names: None means $env_var, else the default ``name``; a
    directory means ``dir/name``; a bare file name that is not a file here is looked for in the nets folders."""
    path = resolve_net_path(value, name, env_var)
    if value and not path.exists() and Path(value).name == value:
        found = _in_nets_dirs(value)
        if found.is_file():
            return found
    return path


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
