"""Stockfish 17.1's two nets, loaded together: the big net (L1 = 3072) and the small net (L1 = 128).

Default file names are Stockfish 17.1's (``EvalFile`` / ``EvalFileSmall``): ``nn-1c0000000000.nnue`` and
``nn-37f18f62d772.nnue``. Paths resolve like ``netpath.resolve_net_path``:

* big: the given path (a directory means ``dir/nn-1c0000000000.nnue``), else $QUANTFISH_NET (file or
  directory), else ``<repo>/nets/nn-1c0000000000.nnue``;
* small: the given path (a directory means ``dir/nn-37f18f62d772.nnue``), else $QUANTFISH_NET_SMALL, else
  the small default name next to the big net if that file exists, else ``<repo>/nets/nn-37f18f62d772.nnue``.

``load_pair`` checks the generations: both files must be Stockfish 17.1 nets (LEB128 FT, 17.1 hashes), the
big one with L1 = 3072 and the small one with L1 = 128; anything else raises ``NetPairError`` (a
``NetFileError``, so a ``ValueError``) saying which file is wrong and why. ``load_nets`` is the front door for
the command line and UCI: one 15.1 net, or a 17.1 pair, by the generation of the big/main file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Union

from nnue.architecture import GEN_SF15_1, GEN_SF17_1, SF17_1_BIG_L1, SF17_1_SMALL_L1
from nnue.netfile import Net, NetFileError, load_net
from nnue.netpath import DEFAULT_NET_NAME, ENV_VAR, resolve_net_path

BIG_NET_NAME = "nn-1c0000000000.nnue"
SMALL_NET_NAME = "nn-37f18f62d772.nnue"
SMALL_ENV_VAR = "QUANTFISH_NET_SMALL"


class NetPairError(NetFileError):
    """The two files do not form a Stockfish 17.1 big + small pair."""


class NetPair(NamedTuple):
    big: Net
    small: Net

    def arrays(self) -> tuple:
        """(big arrays, small arrays) for ``evaluate.evaluate_pair``."""
        return self.big.arrays(), self.small.arrays()

    @property
    def l1(self) -> tuple:
        return self.big.arch.l1, self.small.arch.l1


def resolve_big_path(path=None) -> Path:
    return resolve_net_path(path, BIG_NET_NAME)


def resolve_small_path(path=None, big_path=None) -> Path:
    """The small net's file (see the module docstring); ``big_path`` is the resolved big net file."""
    if path or os.environ.get(SMALL_ENV_VAR):
        return resolve_net_path(path, SMALL_NET_NAME, SMALL_ENV_VAR)
    if big_path is not None:
        beside = Path(big_path).parent / SMALL_NET_NAME
        if beside.is_file():
            return beside
    return resolve_net_path(None, SMALL_NET_NAME, env_var="")


def _describe(net: Net) -> str:
    return f"a Stockfish {net.arch.generation_name} net with L1 = {net.arch.l1}"


def check_pair(big: Net, small: Net) -> None:
    """Raise ``NetPairError`` unless ``big``/``small`` are a 17.1 big (L1 3072) and small (L1 128) net."""
    if (big.arch.generation == GEN_SF17_1 and small.arch.generation == GEN_SF17_1
            and big.arch.l1 == SF17_1_SMALL_L1 and small.arch.l1 == SF17_1_BIG_L1):
        raise NetPairError(f"the nets are swapped: {big.path} is the small net (L1 = 128) and {small.path} the "
                           f"big one (L1 = 3072); pass the big net as EvalFile / --net and the small one as "
                           f"EvalFileSmall / --net-small")
    for net, role, l1 in ((big, "big", SF17_1_BIG_L1), (small, "small", SF17_1_SMALL_L1)):
        if net.arch.generation != GEN_SF17_1 or net.arch.l1 != l1:
            raise NetPairError(f"{net.path}: not a Stockfish 17.1 {role} net: expected a 17.1 net with "
                               f"L1 = {l1} (LEB128 feature transformer), found {_describe(net)}")


def load_pair(big=None, small=None) -> NetPair:
    """Load and check a 17.1 pair (paths resolved as in the module docstring)."""
    big_path = resolve_big_path(big)
    big_net = load_net(big_path)
    small_net = load_net(resolve_small_path(small, big_path))
    check_pair(big_net, small_net)
    return NetPair(big_net, small_net)


def load_nets(net=None, small=None) -> Union[Net, NetPair]:
    """One 15.1 net or a 17.1 pair, by the generation of the main file.

    The main file is ``net``, else $QUANTFISH_NET, else ``nets/``; where that is a directory, the 15.1
    default name (``nn-ad9b42354671.nnue``) is taken if present, else the 17.1 big default
    (``nn-1c0000000000.nnue``); the other way round when only ``small`` is given. A 17.1 main file needs its
    small partner (found by ``resolve_small_path``); a 15.1 main file refuses a ``small`` net.
    """
    names = (BIG_NET_NAME, DEFAULT_NET_NAME) if (small and not net) else (DEFAULT_NET_NAME, BIG_NET_NAME)
    candidates = [resolve_net_path(net, name) for name in names]
    main_path = next((p for p in candidates if p.is_file()), candidates[0])
    main = load_net(main_path)
    if main.arch.generation == GEN_SF15_1:
        if small:
            raise NetPairError(f"{main.path}: a small net ({small}) was given, but the main net is "
                               f"{_describe(main)}; a small net pairs only with a Stockfish 17.1 big net")
        return main
    small_path = resolve_small_path(small, main_path)
    if not small_path.is_file():
        raise NetPairError(f"{main.path} is {_describe(main)} and needs the small net of its pair: "
                           f"{small_path} not found (give it with --net-small / EvalFileSmall)")
    pair = NetPair(main, load_net(small_path))
    check_pair(*pair)
    return pair


__all__ = ["BIG_NET_NAME", "SMALL_NET_NAME", "SMALL_ENV_VAR", "ENV_VAR", "NetPair", "NetPairError",
           "check_pair", "load_nets", "load_pair", "resolve_big_path", "resolve_small_path"]
