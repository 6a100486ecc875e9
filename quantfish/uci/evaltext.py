"""An evaluation report as text: Stockfish's ``eval`` table (UCI ``eval``, ``quantfish eval``) and the
dictionary behind ``quantfish eval --json``."""
from __future__ import annotations

from quantfish.nnue.units import PAWN_VALUE_NORMALIZE as PAWN
from quantfish.nnue.units import to_cp, wdl_a


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
