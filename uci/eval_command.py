"""``quantfish eval FEN [--net PATH] [--json]``: the static NNUE evaluation of a position, explained.

Human output follows Stockfish 15.1's ``eval``: the per-bucket table (values / 16 truncated, then / 361,
side-to-move view as Stockfish prints it, with the side named in the heading), then "NNUE evaluation"
(raw, White's view) and "Final evaluation" (the NNUE branch of Stockfish's eval with optimism 0, White's
view). ``--json`` prints raw integers from the side to move's view; with no FEN it reads one FEN per line
from stdin and writes one JSON object per line, reporting bad lines in-band.
"""

from __future__ import annotations

import json
import sys

import click

PAWN = 361


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _cell(v: int) -> str:
    """Stockfish's aligned cell: sign, then |v|/361 in 6 columns with 2 decimals."""
    sign = "-" if v < 0 else "+" if v > 0 else " "
    return f"{sign}{abs(v) / PAWN:6.2f}"


def format_table(report, side: int) -> str:
    """The bucket table as Stockfish 15.1 prints it (side-to-move view)."""
    sep = "+------------+------------+------------+------------+"
    lines = [f" NNUE network contributions ({'White' if side == 0 else 'Black'} to move)", sep,
             "|   Bucket   |  Material  | Positional |   Total    |",
             "|            |   (PSQT)   |  (Layers)  |            |", sep]
    for b in range(len(report.psqt)):
        p = _tdiv(report.psqt[b], 16)
        q = _tdiv(report.positional[b], 16)
        line = f"|  {b:<10}|  {_cell(p)}   |  {_cell(q)}   |  {_cell(p + q)}   |"
        if b == report.bucket:
            line += " <-- this bucket is used"
        lines.append(line)
    lines.append(sep)
    return "\n".join(lines)


def format_human(report, side: int) -> str:
    white = 1 if side == 0 else -1
    return "\n".join([
        format_table(report, side), "", "",
        f"{'NNUE evaluation':<23}{white * report.nnue_raw / PAWN:+.2f} (white side)",
        f"{'Final evaluation':<23}{white * report.final / PAWN:+.2f} (white side) [NNUE branch, optimism 0]",
    ])


def as_dict(fen: str, report) -> dict:
    return {"fen": fen, "bucket": report.bucket, "psqt": report.psqt, "positional": report.positional,
            "nnue_raw": report.nnue_raw, "nnue_adjusted": report.nnue_adjusted, "final": report.final}


def _evaluate_fen(net, fen: str):
    from engine.fen import parse_fen
    from nnue.evaluate import eval_report
    pos = parse_fen(fen)
    return eval_report(net, pos.board, pos.side, pos.halfmove), pos.side


def _load(net_path):
    from nnue.netfile import load_net
    from nnue.netpath import resolve_net_path
    try:
        return load_net(resolve_net_path(net_path))
    except ValueError as exc:          # NetFileError
        raise click.ClickException(str(exc)) from None


def _batch(net) -> None:
    out = sys.stdout
    for line in sys.stdin:
        fen = line.strip()
        if not fen:
            continue
        try:
            report, _ = _evaluate_fen(net, fen)
            obj = as_dict(fen, report)
        except Exception as exc:       # report and continue: one bad line must not stop the batch
            obj = {"fen": fen, "error": str(exc) or type(exc).__name__}
        out.write(json.dumps(obj) + "\n")
        out.flush()


def _eval(fen, net_path, as_json):
    """Static NNUE evaluation of FEN (Stockfish 15.1's net and formulas)."""
    fen = " ".join(fen).strip()
    if not fen and not as_json:
        raise click.UsageError("give a FEN, or --json with no FEN to read FENs from stdin")
    net = _load(net_path)
    if not fen:
        _batch(net)
        return
    try:
        report, side = _evaluate_fen(net, fen)
    except ValueError as exc:          # FenError
        raise click.ClickException(f"bad FEN {fen!r}: {exc}") from None
    click.echo(json.dumps(as_dict(fen, report)) if as_json else format_human(report, side))


eval_command = click.command("eval")(
    click.argument("fen", nargs=-1)(
        click.option("--net", "net_path", default=None, metavar="PATH",
                     help="Net file (default: $QUANTFISH_NET, else nets/ next to the package).")(
            click.option("--json", "as_json", is_flag=True,
                         help="Raw integers (side-to-move view) as JSON; no FEN: one FEN per stdin line.")(
                _eval))))
