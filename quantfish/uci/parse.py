"""UCI command lines as values: what ``setoption``, ``position`` and ``go`` ask for, or ``UciError`` saying what is
wrong. Pure text handling: no engine state is read or changed here."""
from __future__ import annotations

GO_VALUE_MAX = 2**31 - 1  # go's numbers are capped here (times in ms: 24 days) ...
GO_NODES_MAX = 2**62      # ... and nodes here
GO_INTS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "movetime", "mate")
GO_FLAGS = ("infinite", "ponder")


class UciError(Exception):
    """A command that cannot be carried out; its text goes to the GUI as an info string."""


def int_arg(text, what, lo, hi=None):
    """``text`` as an integer in lo..hi (no upper bound when hi is None), else UciError."""
    try:
        value = int(text)
    except ValueError:
        raise UciError(f"{what} must be an integer, got {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        raise UciError(f"{what} must be {'at least ' + str(lo) if hi is None else f'between {lo} and {hi}'}, "
                       f"got {value}")
    return value


def parse_setoption(args):
    """(name, value or None) of ``setoption name <name> [value <value>]``."""
    if not args or args[0] != "name":
        raise UciError("setoption needs: setoption name <name> [value <value>]")
    rest = args[1:]
    if "value" in rest:
        i = rest.index("value")
        return " ".join(rest[:i]), " ".join(rest[i + 1:])
    return " ".join(rest), None


def parse_position(args, starting_fen):
    """(fen, moves) of ``position startpos|fen <fen> [moves ...]``; the moves as text, checked later."""
    if not args:
        raise UciError("position needs startpos or fen")
    if args[0] == "startpos":
        fen, rest = starting_fen, args[1:]
    elif args[0] == "fen":
        if "moves" in args:
            i = args.index("moves")
            fen, rest = " ".join(args[1:i]), args[i:]
        else:
            fen, rest = " ".join(args[1:]), []
    else:
        raise UciError(f"position needs startpos or fen, got {args[0]!r}")
    if rest and rest[0] != "moves":
        raise UciError(f"unexpected {rest[0]!r} in position command")
    return fen, rest[1:]


def parse_go(args, limits, parse_move):
    """Fills ``limits`` (a ``quantfish.search.driver.Limits``) from ``go``'s arguments; ``parse_move(text)``
    turns a ``searchmoves`` entry into a move or raises ``ValueError``."""
    i = 0
    while i < len(args):
        tok = args[i]
        if tok in GO_INTS:
            if i + 1 >= len(args):
                raise UciError(f"go {tok} needs a number")
            try:
                value = int(args[i + 1])
            except ValueError:
                raise UciError(f"go {tok} needs a number, got {args[i + 1]!r}") from None
            if tok in ("wtime", "btime"):
                value = max(value, 0)
            elif value < 0 or (value == 0 and tok in ("depth", "nodes", "movestogo", "mate")):
                raise UciError(f"go {tok} must be positive, got {value}")
            # Larger than any game needs, and small enough for the clock's timer and the int64 node limit.
            setattr(limits, tok, min(value, GO_NODES_MAX if tok == "nodes" else GO_VALUE_MAX))
            i += 2
        elif tok in GO_FLAGS:
            setattr(limits, tok, True)
            i += 1
        elif tok == "searchmoves":
            i += 1
            while i < len(args) and args[i] not in GO_INTS and args[i] not in GO_FLAGS:
                try:
                    limits.searchmoves.append(parse_move(args[i]))
                except ValueError:
                    raise UciError(f"searchmoves: illegal move {args[i]}") from None
                i += 1
        else:
            raise UciError(f"unknown go parameter {tok!r}")
    return limits
