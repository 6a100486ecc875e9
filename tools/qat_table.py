"""The quantisation-aware training methods side by side: the same net trained with each, then measured.

    python -m tools.qat_table --data FILE --heldout FILE [--l1 256] [--epochs 2] [--qat-epochs 1]
                              [--methods ste,dorefa,pact,wrpn] [--bits 8] [--threads 2] [--json FILE]

Each method trains from the same seed on the same data (the last ``--qat-epochs`` epochs quantisation-aware),
is exported, and is measured on held-out records (``--heldout``, distillation data of another seed): the
quantised net's mean absolute distance from its own float model (what quantisation costs), and the float
model's and the quantised net's distance from the labels (the teacher's raw output), all in centipawns.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from quantfish.data.records import read_records
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE
from quantfish.train.features import batch_features
from quantfish.train.ftkernel import set_threads
from quantfish.train.quanterror import compare
from quantfish.train.quantize import quantise
from quantfish.train.stream import load_data_files
from quantfish.train.trainer import TrainConfig, train

CP = 100.0 / PAWN_VALUE_NORMALIZE


def measure(model, batch) -> dict:
    bucket = (batch.count - 1) // 4
    model.fake_quant = False
    with torch.no_grad():
        flt = model(batch.white.astype(np.int64), batch.black.astype(np.int64), batch.stm, bucket).double().numpy()
    integer = compare(quantise(model), batch.white, batch.black, batch.stm, bucket).integer
    flt, integer = flt * CP, integer * CP
    return {"quant_error_cp": float(np.abs(integer - flt).mean()),
            "float_vs_teacher_cp": float(np.abs(flt - batch.score).mean()),
            "int_vs_teacher_cp": float(np.abs(integer - batch.score).mean())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, action="append")
    p.add_argument("--heldout", required=True)
    p.add_argument("--heldout-limit", type=int, default=20000)
    p.add_argument("--l1", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--qat-epochs", type=int, default=1)
    p.add_argument("--methods", default="ste,dorefa,pact,wrpn")
    p.add_argument("--bits", type=int, default=8, help="dense weights' bits for dorefa and wrpn")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    a = p.parse_args()
    set_threads(a.threads)
    batch = batch_features(read_records(a.heldout)[:a.heldout_limit])
    rows = []
    for method in a.methods.split(","):
        t0 = time.perf_counter()
        config = TrainConfig(l1=a.l1, epochs=a.epochs, fake_quant_epochs=a.qat_epochs, qat=method,
                             qat_bits=a.bits, lr=a.lr, lr_gamma=0.3, val_fraction=0.0, seed=a.seed, log=None)
        result = train(load_data_files(a.data), config)
        row = {"method": method, "bits": a.bits if method in ("dorefa", "wrpn") else 8,
               "train_loss": result.history[-1]["train_loss"], **measure(result.model, batch),
               "seconds": time.perf_counter() - t0}
        rows.append(row)
        print(f"{method:7} bits {row['bits']}  quantised vs own float {row['quant_error_cp']:.2f} cp  "
              f"float vs teacher {row['float_vs_teacher_cp']:.2f} cp  quantised vs teacher "
              f"{row['int_vs_teacher_cp']:.2f} cp  ({row['seconds']:.0f} s)", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"args": vars(a), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
