"""The engine's one net loader: a single net, or Stockfish 17.1's two nets (big L1 = 3072, small L1 = 128).

``load_nets`` is the front door for UCI (``EvalFile`` / ``EvalFileSmall``), ``quantfish eval`` and
``quantfish bench`` (``--net`` / ``--net-small``) and the Python API, so they resolve and pair nets the same way:

* the main file: the given value (a path; a directory means the default name inside it; a bare file name
  that is not a file here is looked for in the nets folders), else $QUANTFISH_NET (file or directory), else
  the nets folders (``quantfish.nnue.locate``); where a folder is meant, Stockfish 15.1's default name if
  that file exists, else 17.1's big default (``nn-1c0000000000.nnue``), else Quantfish's own net (shipped in
  the package, so a machine with no Stockfish and no network still plays);
* the pair decision: a Stockfish 17.1 main net is the big net of a pair and needs its small net, found as the
  given value (resolved like the main file), else $QUANTFISH_NET_SMALL, else the small default name next to
  the big net, else the nets folders; ``check_pair`` refuses swapped or mismatched nets. Any other main net (15.1,
  16.x) evaluates alone: a small net given with it is an error, or is ignored (``ignore_unpaired_small``, for
  UCI, where a GUI may set ``EvalFileSmall`` before ``EvalFile``).

Errors are ``NetFileError`` / ``NetPairError`` (``ValueError``s) naming the file and the problem.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Union

from quantfish.nnue.architecture import GEN_SF17_1, SF17_1_BIG_L1, SF17_1_SMALL_L1
from quantfish.nnue.net import Net, NetFileError
from quantfish.nnue.io import load_net
from quantfish.nnue.locate import (BIG_NET_NAME, DEFAULT_NET_NAME, ENV_VAR, OWN_NET_NAME, SMALL_ENV_VAR, SMALL_NET_NAME,
                          resolve_named, resolve_net_path)


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


def resolve_small_path(path=None, big_path=None) -> Path:
    """The small net's file (see the module docstring); ``big_path`` is the resolved big net file."""
    if path or os.environ.get(SMALL_ENV_VAR):
        return resolve_named(path, SMALL_NET_NAME, SMALL_ENV_VAR)
    if big_path is not None:
        beside = Path(big_path).parent / SMALL_NET_NAME
        if beside.is_file():
            return beside
    return resolve_net_path(None, SMALL_NET_NAME, env_var="")


def resolve_main_path(path=None) -> Path:
    """The main net's file (see the module docstring)."""
    candidates = [resolve_named(path, name, ENV_VAR) for name in (DEFAULT_NET_NAME, BIG_NET_NAME, OWN_NET_NAME)]
    return next((p for p in candidates if p.is_file()), candidates[0])


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
    """A 17.1 pair for tools and tests that want one: the big net defaults to its own name
    (``nn-1c0000000000.nnue``), not to the 15.1 net; resolution and checks as in ``load_nets``."""
    big_path = resolve_named(big, BIG_NET_NAME, ENV_VAR)
    big_net = load_net(big_path)
    small_net = load_net(resolve_small_path(small, big_path))
    check_pair(big_net, small_net)
    return NetPair(big_net, small_net)


def pairs_with_small(net: Net) -> bool:
    """The pair decision: a Stockfish 17.1 net evaluates with a small partner, every other net alone."""
    return net.arch.generation == GEN_SF17_1


def load_nets(net=None, small=None, ignore_unpaired_small: bool = False) -> Union[Net, NetPair]:
    """One net, or a 17.1 pair, by the generation of the main file (see the module docstring)."""
    main_path = resolve_main_path(net)
    main = load_net(main_path)
    if not pairs_with_small(main):
        if small and not ignore_unpaired_small:
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
           "check_pair", "load_nets", "load_pair", "pairs_with_small", "resolve_main_path", "resolve_small_path"]
