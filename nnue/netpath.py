"""Where the engine finds its net: an explicit path, else $QUANTFISH_NET, else <repo root>/nets/.

The repo root is found from this file's location, so it works from any working directory.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DEFAULT_NET_NAME = "nn-ad9b42354671.nnue"
DEFAULT_NET_SHA256 = "ad9b423546714137916bd38978af6fd68d7b8951bef25ff76bf43da72d6cb786"
DEFAULT_NET_SIZE = 47_001_499
ENV_VAR = "QUANTFISH_NET"


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


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
