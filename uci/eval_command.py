"""``quantfish eval FEN [--net PATH] [--net-small PATH] [--optimism N] [--json]``: a static NNUE evaluation,
explained.

The formulas follow the net's generation (``nnue.netpair.load_nets``): one Stockfish 15.1 net, or a Stockfish
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

from nnue.units import PAWN_VALUE_NORMALIZE as PAWN
from nnue.units import to_cp, wdl_a


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _cell(v: int) -> str:
    """Stockfish's aligned cell: sign, then |v|/361 in 6 columns with 2 decimals."""
    sign = "-" if v < 0 else "+" if v > 0 else " "
    return f"{sign}{abs(v) / PAWN:6.2f}"


def format_table(report, side: int, psqt=None, positional=None, cell=_cell, title: str = "") -> str:
    """The bucket table as Stockfish 15.1 prints it (side-to-move view); ``psqt``/``positional`` (raw, all
    buckets) default to the report's, ``cell`` formats one value, ``title`` is appended to the heading."""
    psqt = report.psqt if psqt is None else psqt
    positional = report.positional if positional is None else positional
    sep = "+------------+------------+------------+------------+"
    lines = [f" NNUE network contributions ({'White' if side == 0 else 'Black'} to move){title}", sep,
             "|   Bucket   |  Material  | Positional |   Total    |",
             "|            |   (PSQT)   |  (Layers)  |            |", sep]
    for b in range(len(psqt)):
        p = _tdiv(psqt[b], 16)
        q = _tdiv(positional[b], 16)
        line = f"|  {b:<10}|  {cell(p)}   |  {cell(q)}   |  {cell(p + q)}   |"
        if b == report.bucket:
            line += " <-- this bucket is used"
        lines.append(line)
    lines.append(sep)
    return "\n".join(lines)


def scheme_of(net) -> dict:
    """How the net's integers are computed: Stockfish's fixed arithmetic, or a Quantfish-format net's scheme."""
    scheme = getattr(net, "scheme", None)
    if scheme is None:
        return {"format": "stockfish", "scheme": "sf", "rounding": "floor", "resolution": 127}
    return {"format": "quantfish", "scheme": scheme.name, "rounding": scheme.rounding,
            "resolution": scheme.resolution}


def describe_scheme(net) -> str:
    s = scheme_of(net)
    what = "Stockfish's fixed arithmetic" if s["format"] == "stockfish" else "Quantfish format"
    return f"{s['scheme']}, {s['rounding']} rounding, activations 0..{s['resolution']} ({what})"


def format_human(report, side: int, optimism: int = 0, net=None) -> str:
    white = 1 if side == 0 else -1
    return "\n".join([
        format_table(report, side), "", "",
        f"{'Quantisation':<23}{describe_scheme(net)}",
        f"{'NNUE evaluation':<23}{white * report.nnue_raw / PAWN:+.2f} (white side)",
        f"{'Final evaluation':<23}{white * report.final / PAWN:+.2f} (white side) "
        f"[NNUE branch, optimism {optimism}]",
    ])


def format_human_pair(report, side: int, board, l1s, optimism: int = 0) -> str:
    """Both nets' bucket tables (pawns by ``to_cp``), the net used and why, NNUE and final evaluations."""
    a = wdl_a(board)

    def cell(v):
        cp = to_cp(v, a)
        sign = "-" if cp < 0 else "+" if cp > 0 else " "
        return f"{sign}{abs(cp) / 100:6.2f}"

    white = 1 if side == 0 else -1
    if report.used_net == "small":
        why = f"|simple eval| {abs(report.simple_eval)} > 962 and the small net's |nnue| {abs(report.nnue)} >= 236"
    elif report.reeval_big:
        why = (f"|simple eval| {abs(report.simple_eval)} > 962, but the small net's |nnue| < 236: "
               f"re-evaluated with the big net")
    else:
        why = f"|simple eval| {abs(report.simple_eval)} <= 962"
    return "\n".join([
        format_table(report, side, report.big_psqt, report.big_positional, cell, f" - big net, L1 = {l1s[0]}"),
        "",
        format_table(report, side, report.small_psqt, report.small_positional, cell,
                     f" - small net, L1 = {l1s[1]}"),
        "", "",
        f"{'Net used':<23}{report.used_net} ({why})",
        f"{'NNUE evaluation':<23}{white * to_cp(report.big_raw, a) / 100:+.2f} (white side) [big net]",
        f"{'Final evaluation':<23}{white * to_cp(report.final, a) / 100:+.2f} (white side) "
        f"[Stockfish 17.1 Eval::evaluate, optimism {optimism}]",
    ])


def as_dict(fen: str, report, net=None) -> dict:
    return {"fen": fen, "bucket": report.bucket, "psqt": report.psqt, "positional": report.positional,
            "nnue_raw": report.nnue_raw, "nnue_adjusted": report.nnue_adjusted, "final": report.final,
            "quantisation": scheme_of(net)}


def as_dict_pair(fen: str, report) -> dict:
    return {"fen": fen, "bucket": report.bucket, "big_psqt": report.big_psqt,
            "big_positional": report.big_positional, "small_psqt": report.small_psqt,
            "small_positional": report.small_positional, "used_net": report.used_net, "nnue": report.nnue,
            "nnue_raw": report.big_raw, "final": report.final, "quantisation": scheme_of(None)}


def _is_pair(net) -> bool:
    return isinstance(net, tuple)      # netpair.NetPair


def _evaluate_fen(net, fen: str, optimism: int = 0):
    """(report, side, board) of ``fen`` with a 15.1 net or a 17.1 pair."""
    from engine.fen import parse_fen
    pos = parse_fen(fen)
    if _is_pair(net):
        from nnue.evaluate import eval_report_pair
        report = eval_report_pair(net.big, net.small, pos.board, pos.side, pos.halfmove, optimism)
    else:
        from nnue.evaluate import eval_report
        report = eval_report(net, pos.board, pos.side, pos.halfmove, optimism)
    return report, pos.side, pos.board


def _to_dict(net, fen, report) -> dict:
    return as_dict_pair(fen, report) if _is_pair(net) else as_dict(fen, report, net)


def _load(net_path, small_path=None):
    from nnue.netpair import load_nets
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
