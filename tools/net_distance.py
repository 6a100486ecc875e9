"""How far a net's raw output is from a record file's labels, or from another net, in centipawns.

    python -m tools.net_distance NET --data FILE [--against NET2] [--limit N] [--within CP ...]

The net's output is the engine's integer ``nnue_raw`` ((psqt + positional) / 16, before ``evaluate()``'s
material scaling and optimism), from the side to move's view. Without ``--against`` it is compared with the
records' labels: for distillation data (``quantfish gendata --sample``) those are the teacher's own raw
output, so this is the student's distance from its teacher on those positions. Prints the mean and median
absolute distance, the root mean square and the share of positions within 10, 25 and 50 cp; each ``--within CP``
adds a line for the positions whose reference value is at most CP from zero (near equality the search decides
most; far from it the training loss's sigmoid barely weighs an error).
"""

from __future__ import annotations

import argparse

import numpy as np

from quantfish.data.records import read_records
from quantfish.nnue.io import load_net
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
from quantfish.train.features import batch_features
from quantfish.train.quanterror import compare

CP = 100.0 / PAWN_VALUE_NORMALIZE


def raw_cp(net, batch) -> np.ndarray:
    """The net's integer raw output of each position of a ``Batch``, in centipawns."""
    bucket = (batch.count - 1) // 4
    return compare(net, batch.white, batch.black, batch.stm, bucket).integer * CP


def distance(a: np.ndarray, b: np.ndarray) -> dict:
    d = np.abs(a - b)
    return {"positions": len(d), "mean_cp": float(d.mean()), "median_cp": float(np.median(d)),
            "rms_cp": float(np.sqrt((d * d).mean())),
            **{f"within_{k}cp": float((d <= k).mean()) for k in (10, 25, 50)}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("net")
    p.add_argument("--data", required=True, help="record file (quantfish gendata)")
    p.add_argument("--against", help="a second net instead of the labels")
    p.add_argument("--limit", type=int, default=0, help="first N records only")
    p.add_argument("--within", type=float, action="append", default=[],
                   help="also the positions whose reference is within CP of zero (repeatable)")
    a = p.parse_args()
    records = read_records(a.data)
    if a.limit:
        records = records[:a.limit]
    batch = batch_features(records)
    ours = raw_cp(load_net(a.net), batch)
    other = raw_cp(load_net(a.against), batch) if a.against else batch.score
    for label, rows in [("all", slice(None))] + [(f"|ref|<={w:g}cp", np.abs(other) <= w) for w in a.within]:
        if not np.any(np.ones(len(ours), bool)[rows]):
            print(f"{label}  no positions")
            continue
        result = distance(ours[rows], other[rows])
        print(label + "  " + "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in result.items()))


if __name__ == "__main__":
    main()
