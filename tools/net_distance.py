"""How far a net's raw output is from a record file's labels, or from another net, in centipawns.

    python -m tools.net_distance NET --data FILE [--against NET2] [--limit N] [--within CP ...] [--by-pieces]
    python -m tools.net_distance NET --pgn GAMES.pgn [--pgn ...] --against TEACHER [--skip-plies N] ...

The net's output is the engine's integer ``nnue_raw`` ((psqt + positional) / 16, before ``evaluate()``'s
material scaling and optimism), from the side to move's view. Without ``--against`` it is compared with the
records' labels: for distillation data (``quantfish gendata --sample``) those are the teacher's own raw
output, so this is the student's distance from its teacher on those positions. Prints the mean and median
absolute distance, the root mean square and the share of positions within 10, 25 and 50 cp; each ``--within CP``
adds a line for the positions whose reference value is at most CP from zero (near equality the search decides
most; far from it the training loss's sigmoid barely weighs an error), and ``--by-pieces`` a line for each band
of piece counts (kings included) of those within the first ``--within`` (or of all, without one).

``--pgn`` takes the positions of played games instead (each game's main line after ``--skip-plies`` plies, the
side to move not in check and the game not over, each position once), where a net meets the positions a real
search reaches rather than those of the training data; they carry no label, so ``--against`` names the
reference (the teacher).
"""

from __future__ import annotations

import argparse

import chess
import chess.pgn
import numpy as np

from quantfish.data.records import read_records
from quantfish.data.text import parse_lines
from quantfish.nnue.io import load_net
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
from quantfish.train.features import batch_features
from quantfish.train.quanterror import compare

CP = 100.0 / PAWN_VALUE_NORMALIZE


def raw_cp(net, batch) -> np.ndarray:
    """The net's integer raw output of each position of a ``Batch``, in centipawns."""
    bucket = (batch.count - 1) // 4
    return compare(net, batch.white, batch.black, batch.stm, bucket).integer * CP


PIECE_BANDS = ((2, 8), (9, 14), (15, 20), (21, 26), (27, 32))


def game_positions(paths, skip_plies: int = 0) -> np.ndarray:
    """Records (score 0, a draw: no label) of the distinct quiet positions of the games' main lines."""
    seen: dict[str, str] = {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as stream:
            while (game := chess.pgn.read_game(stream)) is not None:
                board = game.board()
                for ply, move in enumerate(game.mainline_moves(), 1):
                    board.push(move)
                    if ply <= skip_plies or board.is_check() or board.is_game_over():
                        continue
                    seen.setdefault(board.epd(), board.fen())
    return parse_lines(f"{fen} | 0 | 0.5" for fen in seen.values())


def distance(a: np.ndarray, b: np.ndarray) -> dict:
    d = np.abs(a - b)
    return {"positions": len(d), "mean_cp": float(d.mean()), "median_cp": float(np.median(d)),
            "rms_cp": float(np.sqrt((d * d).mean())),
            **{f"within_{k}cp": float((d <= k).mean()) for k in (10, 25, 50)}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("net")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="record file (quantfish gendata)")
    source.add_argument("--pgn", action="append", help="PGN file of played games (repeatable; needs --against)")
    p.add_argument("--against", help="a second net instead of the labels")
    p.add_argument("--limit", type=int, default=0, help="first N records only")
    p.add_argument("--within", type=float, action="append", default=[],
                   help="also the positions whose reference is within CP of zero (repeatable)")
    p.add_argument("--skip-plies", type=int, default=0, help="with --pgn: leave out each game's first N plies")
    p.add_argument("--by-pieces", action="store_true",
                   help="also each band of piece counts (within the first --within, if any)")
    a = p.parse_args()
    if a.pgn and not a.against:
        p.error("--pgn needs --against: played positions carry no label")
    records = game_positions(a.pgn, a.skip_plies) if a.pgn else read_records(a.data)
    if a.limit:
        records = records[:a.limit]
    if len(records) == 0:
        p.error("no positions to compare")
    batch = batch_features(records)
    ours = raw_cp(load_net(a.net), batch)
    other = raw_cp(load_net(a.against), batch) if a.against else batch.score
    lines = [("all", np.ones(len(ours), bool))] + [(f"|ref|<={w:g}cp", np.abs(other) <= w) for w in a.within]
    if a.by_pieces:
        near = lines[1] if a.within else lines[0]
        lines += [(f"{near[0]} pieces {lo}-{hi}", near[1] & (batch.count >= lo) & (batch.count <= hi))
                  for lo, hi in PIECE_BANDS]
    for label, rows in lines:
        if not np.any(rows):
            print(f"{label}  no positions")
            continue
        result = distance(ours[rows], other[rows])
        print(label + "  " + "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in result.items()))


if __name__ == "__main__":
    main()
