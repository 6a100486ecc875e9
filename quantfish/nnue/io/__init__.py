"""Net files: ``load_net`` reads Stockfish's format (``stockfish``) and Quantfish's (``quantfish``, Stockfish's
layout plus a scheme record), telling them apart by the version word, and checks a net named by its hash
against it.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import threading
from pathlib import Path

from quantfish.nnue.architecture import Architecture
from quantfish.nnue.io.quantfish import parse_qnet
from quantfish.nnue.io.stockfish import parse_net
from quantfish.nnue.net import QF_VERSION, Net, NetFileError
from quantfish.nnue.requant import pack_scheme


# Stockfish and Quantfish name a net by its content: ``nn-`` or ``qf-`` and the first 12 hex digits of the file's
# sha256 (``quantfish/nets/README.md``). Stockfish's format has no checksum, so a flipped bit among the weights is otherwise
# invisible; a file named so must match its name.
HASH_NAME = re.compile(r"(nn|qf)-([0-9a-f]{12})\.nnue")


def claimed_sha256_prefix(path):
    """The sha256 prefix that the file's name states (the name after following symbolic links, so a link
    under a net's name to a file of another name claims nothing), or None."""
    match = HASH_NAME.fullmatch(os.path.basename(os.path.realpath(path)))
    return match.group(2) if match else None


def load_net(path) -> Net:
    """Read and validate a ``.nnue`` file; raise ``NetFileError`` with a clear message on any problem.

    A file whose name has the form ``nn-<12 hex>.nnue`` or ``qf-<12 hex>.nnue`` must also have a sha256 that
    begins with those digits. The hash is computed from the bytes already read, in a thread beside the parse
    (hashlib releases the GIL), so with a core to spare it costs no time."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise NetFileError(f"net file not found: {path}")
    if not os.path.isfile(path):
        raise NetFileError(f"net path is not a file: {path}")
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise NetFileError(f"cannot read net file {path}: {exc.strerror or exc}") from None
    claimed = claimed_sha256_prefix(path)
    if claimed is None:
        return _parse(data, path)
    digest = []
    hasher = threading.Thread(target=lambda: digest.append(hashlib.sha256(data).hexdigest()), daemon=True)
    hasher.start()
    net = _parse(data, path)       # a refusal does not wait for the hash (the thread ends by itself)
    hasher.join()
    if digest[0][:12] != claimed:
        raise NetFileError(f"{path} is corrupt: its sha256 begins {digest[0][:12]}, but its name says {claimed} "
                           f"(a net named nn-/qf-<12 hex digits> is named by its sha256)")
    return net


def _parse(data: bytes, path: str) -> Net:
    """The net of either format, by its version word."""
    if len(data) >= 4 and struct.unpack("<I", data[:4])[0] == QF_VERSION:
        return _parse_quantfish(data, path)
    return parse_net(data, path)


def _parse_quantfish(data: bytes, path: str) -> Net:
    """A Quantfish-format net as the engine's ``Net``, its scheme record checked to be one the engine follows."""
    qnet = parse_qnet(data, path)
    try:
        pack_scheme(qnet.scheme)
    except ValueError as exc:
        raise NetFileError(f"{path}: scheme record the engine cannot follow: {exc}") from None
    arch = Architecture(l1=qnet.l1, compressed_ft=False)
    return Net(arch, qnet.description, qnet.ft_bias, qnet.ft_weights, qnet.ft_psqt, qnet.b0, qnet.w0, qnet.b1,
               qnet.w1, qnet.b2, qnet.w2, path=path, scheme=qnet.scheme)
