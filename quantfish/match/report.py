"""What a match prints: a progress bar on stderr while it runs, a summary table and a JSON record after."""
from __future__ import annotations

import math

from tqdm import tqdm

from quantfish.match.config import MatchConfig
from quantfish.match.game import FAULT_KINDS, FAULT_LABELS
from quantfish.match.runner import MatchOutcome, Tally
from quantfish.match.stats import PENTANOMIAL_LABELS, Sprt


def _signed(value: float, digits: int = 1) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    text = f"{value:+.{digits}f}"
    return "+" + text[1:] if text.startswith("-") and float(text) == 0 else text


def elo_text(tally: Tally) -> str:
    estimate = tally.elo()
    if estimate is None:
        return "Elo n/a"
    if math.isinf(estimate.error) or math.isnan(estimate.error):
        return f"Elo {_signed(estimate.elo)} [{_signed(estimate.lower)}, {_signed(estimate.upper)}]"
    return f"Elo {_signed(estimate.elo)} +-{estimate.error:.1f}"


def llr_text(sprt: Sprt, tally: Tally) -> str:
    return f"LLR {sprt.llr(tally.penta):+.2f} [{sprt.lower:+.2f}, {sprt.upper:+.2f}]"


class Progress:
    """A tqdm bar of games on stderr with the running W-D-L of the first engine (counted as games finish),
    the Elo and the LLR (as pairs complete); ``enabled=None`` shows it only on a terminal."""

    def __init__(self, total_games: int, first: str, sprt: Sprt | None = None, enabled: bool | None = None):
        self.first = first
        self.sprt = sprt
        self.wdl = [0, 0, 0]
        self.bar = tqdm(total=total_games, unit="game", disable=None if enabled is None else not enabled,
                        dynamic_ncols=True, smoothing=0.05)

    def game(self, record, tally: Tally) -> None:
        points = record.points(self.first)
        self.wdl[0 if points == 1 else 1 if points == 0.5 else 2] += 1
        self.bar.update(1)
        self._postfix(tally)

    def pair(self, result, tally: Tally) -> None:
        self._postfix(tally)

    def _postfix(self, tally: Tally) -> None:
        text = "{}-{}-{} {}".format(*self.wdl, elo_text(tally))
        if self.sprt is not None:
            text += " " + llr_text(self.sprt, tally)
        self.bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        self.bar.close()


def summary_text(outcome: MatchOutcome, config: MatchConfig, sprt: Sprt | None = None) -> str:
    """The table printed after a match."""
    tally = outcome.tally
    first, second = config.names
    lines = [f"{first} vs {second}: {config.limits.describe()}, book {config.book} "
             f"({config.book_order}, seed {config.seed})"]
    status = {"complete": "all games played", "sprt": f"stopped: SPRT accepts {outcome.decision}",
              "failed": f"stopped: {outcome.not_played} of {outcome.requested_games} games could not be played",
              "interrupted": "interrupted"}[outcome.status]
    lines.append(f"Games      {tally.played} of {outcome.requested_games} in {outcome.seconds:.1f} s ({status})")
    if tally.played:
        lines.append(f"Score      {first} {tally.wins + tally.draws / 2:g}/{tally.played} "
                     f"({100 * tally.score:.1f}%)  W {tally.wins}  D {tally.draws}  L {tally.losses}")
        lines.append(f"Colours    White wins {tally.white_wins}, Black wins {tally.black_wins}, "
                     f"draws {tally.draws}")
    estimate = tally.elo()
    if estimate is not None:
        nelo = f"nElo {_signed(estimate.nelo)}" + (f" +-{estimate.nelo_error:.1f}"
                                                     if math.isfinite(estimate.nelo_error) else "")
        lines.append(f"Elo        {_signed(estimate.elo)} [{_signed(estimate.lower)}, {_signed(estimate.upper)}] "
                     f"({100 * estimate.confidence:g}%)  {nelo}  LOS {100 * estimate.los:.1f}%")
    penta = ", ".join(f"{label} {count}" for label, count in zip(PENTANOMIAL_LABELS, tally.penta))
    lines.append(f"Pairs      {tally.pairs} [{penta}]"
                 + (f"; {tally.incomplete_pairs} incomplete, not in Elo" if tally.incomplete_pairs else ""))
    if sprt is not None:
        verdict = {"H0": "H0 accepted", "H1": "H1 accepted"}.get(outcome.decision, "no decision")
        lines.append(f"SPRT       elo0 {sprt.elo0:g}, elo1 {sprt.elo1:g} (logistic), alpha {sprt.alpha:g}, "
                     f"beta {sprt.beta:g}: {llr_text(sprt, tally)} {verdict}")
    width = max(12, len(first), len(second))
    lines.append(f"Faults     {'':14}{first:>{width}} {second:>{width}}")
    for kind in FAULT_KINDS:
        lines.append(f"           {FAULT_LABELS[kind]:14}{tally.faults[first][kind]:>{width}} "
                     f"{tally.faults[second][kind]:>{width}}")
    if tally.reasons:
        endings = ", ".join(f"{reason} {count}" for reason, count in tally.reasons.most_common())
        lines.append(f"Endings    {endings}")
    if outcome.error and outcome.status == "failed":
        lines.append(f"Error      {outcome.error}")
    return "\n".join(lines)


def summary_json(outcome: MatchOutcome, config: MatchConfig, sprt: Sprt | None = None) -> dict:
    """The summary as plain data; infinite Elo values become None."""
    def number(value):
        return None if value is None or math.isinf(value) or math.isnan(value) else value

    tally = outcome.tally
    estimate = tally.elo()
    data = {
        "engines": [{"name": spec.name, "command": list(spec.command), "options": dict(spec.options)}
                    for spec in config.engines],
        "limits": config.limits.describe(),
        "book": config.book, "book_order": config.book_order, "seed": config.seed,
        "status": outcome.status, "error": outcome.error, "seconds": outcome.seconds,
        "games": {"requested": outcome.requested_games, "played": tally.played, "unplayed": tally.unplayed,
                  "aborted": tally.aborted, "not_played": outcome.not_played},
        "wins": tally.wins, "draws": tally.draws, "losses": tally.losses,
        "white_wins": tally.white_wins, "black_wins": tally.black_wins,
        "pentanomial": list(tally.penta), "pairs": tally.pairs, "incomplete_pairs": tally.incomplete_pairs,
        "faults": tally.faults, "endings": dict(tally.reasons),
        "elo": None if estimate is None else {
            "elo": number(estimate.elo), "lower": number(estimate.lower), "upper": number(estimate.upper),
            "confidence": estimate.confidence, "score": estimate.score, "variance": estimate.variance,
            "los": estimate.los, "nelo": number(estimate.nelo), "nelo_error": number(estimate.nelo_error)},
        "sprt": None if sprt is None else {
            "elo0": sprt.elo0, "elo1": sprt.elo1, "alpha": sprt.alpha, "beta": sprt.beta,
            "llr": sprt.llr(tally.penta), "lower": sprt.lower, "upper": sprt.upper, "decision": outcome.decision},
    }
    return data
