"""``quantfish eval FEN [--net PATH] [--net-small PATH] [--optimism N] [--json]``: a static NNUE evaluation,
explained.

The formulas follow the net's generation (``quantfish.nnue.loader.load_nets``): one Stockfish 15.1 net, or a Stockfish
17.1 pair (big ``--net``, small ``--net-small``; a 17.1 big net finds its small partner by the default name
next to it when ``--net-small`` is not given).

15.1: human output follows Stockfish 15.1's ``eval``: the per-bucket table (values / 16 truncated, then / 361,
side-to-move view as Stockfish prints it, with the side named in the heading), then "NNUE evaluation"
(raw, White's view), "Final evaluation" (the NNUE branch of Stockfish's eval, White's view) and
"Quantisation" (Stockfish's fixed arithmetic, or a Quantfish-format net's scheme). ``--json`` gives ``fen,
bucket, psqt, positional, nnue_raw, nnue_adjusted, final, quantisation`` (format, scheme, rounding,
resolution); ``nnue_raw`` is in Stockfish's internal units (600 * 16 per unit of the float output before the
final / 16) for every format, so schemes compare on one scale.

17.1 pair: both nets' bucket tables (values / 16 truncated, in pawns by Stockfish 17.1's ``to_cp``), which net
was used and why, "NNUE evaluation" (the big net's psqt/16 + positional/16, White's view, as Stockfish 17.1
prints it) and "Final evaluation" (``Eval::evaluate``). ``--json`` gives ``fen, bucket, big_psqt,
big_positional, small_psqt, small_positional`` (8 raw ints each, before / 16), ``used_net`` ("big" or
"small"), ``nnue`` (the blended value of the used net), ``nnue_raw`` (the big net's psqt/16 + positional/16,
as the "NNUE evaluation" line), ``final`` and ``quantisation``.

``--json`` values are raw integers from the side to move's view; ``final`` uses ``--optimism`` (default 0,
the side to move's optimism, as Stockfish's ``eval`` command uses 0). With no FEN, ``--json`` reads one FEN
per line from stdin and writes one JSON object per line, reporting bad lines in-band.
"""

from __future__ import annotations

import json
import sys

import click

from quantfish.uci.evaltext import as_dict, as_dict_pair, format_human, format_human_pair


def _is_pair(net) -> bool:
    return isinstance(net, tuple)      # netpair.NetPair


def _evaluate_fen(net, fen: str, optimism: int = 0):
    """(report, side, board) of ``fen`` with a 15.1 net or a 17.1 pair."""
    from quantfish.core.fen import parse_fen
    pos = parse_fen(fen)
    if _is_pair(net):
        from quantfish.nnue.formulas import eval_report_pair
        report = eval_report_pair(net.big, net.small, pos.board, pos.side, pos.halfmove, optimism)
    else:
        from quantfish.nnue.formulas import eval_report
        report = eval_report(net, pos.board, pos.side, pos.halfmove, optimism)
    return report, pos.side, pos.board


def _to_dict(net, fen, report) -> dict:
    return as_dict_pair(fen, report) if _is_pair(net) else as_dict(fen, report, net)


def _load(net_path, small_path=None):
    from quantfish.nnue.loader import load_nets
    try:
        return load_nets(net_path, small_path)
    except ValueError as exc:          # NetFileError, NetPairError
        raise click.ClickException(str(exc)) from None


def _batch(net, optimism: int = 0) -> None:
    out = sys.stdout
    for line in sys.stdin:
        fen = line.strip()
        if not fen:
            continue
        try:
            report, _, _ = _evaluate_fen(net, fen, optimism)
            obj = _to_dict(net, fen, report)
        except Exception as exc:       # report and continue: one bad line must not stop the batch
            obj = {"fen": fen, "error": str(exc) or type(exc).__name__}
        out.write(json.dumps(obj) + "\n")
        out.flush()


def _eval(fen, net_path, small_path, optimism, as_json):
    """Static NNUE evaluation of FEN (Stockfish 15.1's net and formulas, or Stockfish 17.1's two nets)."""
    fen = " ".join(fen).strip()
    if not fen and not as_json:
        raise click.UsageError("give a FEN, or --json with no FEN to read FENs from stdin")
    net = _load(net_path, small_path)
    if not fen:
        _batch(net, optimism)
        return
    try:
        report, side, board = _evaluate_fen(net, fen, optimism)
    except ValueError as exc:          # FenError
        raise click.ClickException(f"bad FEN {fen!r}: {exc}") from None
    if as_json:
        click.echo(json.dumps(_to_dict(net, fen, report)))
    elif _is_pair(net):
        click.echo(format_human_pair(report, side, board, net.l1, optimism))
    else:
        click.echo(format_human(report, side, optimism, net))


eval_command = click.command("eval")(
    click.argument("fen", nargs=-1)(
        click.option("--net", "net_path", default=None, metavar="PATH",
                     help="Net file: Stockfish 15.1's, or 17.1's big net (default: $QUANTFISH_NET, else nets/ "
                          "next to the package).")(
            click.option("--net-small", "small_path", default=None, metavar="PATH",
                         help="Stockfish 17.1's small net (default: $QUANTFISH_NET_SMALL, else "
                              "nn-37f18f62d772.nnue next to the big net, else in nets/).")(
                click.option("--optimism", type=int, default=0, show_default=True,
                             help="Optimism of the side to move for the final evaluation.")(
                    click.option("--json", "as_json", is_flag=True,
                                 help="Raw integers (side-to-move view) as JSON; no FEN: one FEN per stdin "
                                      "line.")(
                        _eval))))))
