"""Training checkpoints: model, optimiser and schedule state, epoch, and the architecture they belong to.

A checkpoint records its format version and the net's shape (L1, feature set, layer sizes), and is checked
against the model before any tensor is loaded, so a mismatch is one clear ``CheckpointError`` rather than a
PyTorch size error. Loaded with ``weights_only=True``: a checkpoint holds tensors and plain values only.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from quantfish.nnue.architecture import FC0_OUT, FC1_OUT, FEATURE_SET_NAME, LAYER_STACKS, NUM_FEATURES, PSQT_BUCKETS

FORMAT = "quantfish-nnue-train"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or belongs to another architecture or format."""


def arch_record(l1: int, factoriser: bool = False, qat: str = "ste", qat_bits: int = 8) -> dict:
    """Everything about the shape and meaning a checkpoint's tensors have (a factorised model's FT table has
    the factoriser's rows too; DoReFa's dense weights are latent, PACT adds its clips)."""
    record = {"features": FEATURE_SET_NAME, "num_features": NUM_FEATURES, "l1": l1, "fc0_out": FC0_OUT,
              "fc1_out": FC1_OUT, "layer_stacks": LAYER_STACKS, "psqt_buckets": PSQT_BUCKETS}
    if factoriser:
        record["factoriser"] = True
    if qat != "ste":
        record["qat"] = qat
        record["qat_bits"] = qat_bits
    return record


def model_record(model) -> dict:
    return arch_record(model.l1, model.factoriser, model.qat, model.qat_bits)


def save_checkpoint(path, model, optimizer=None, scheduler=None, epoch: int = 0, config: dict | None = None,
                    history: list | None = None, within_epoch: dict | None = None) -> Path:
    """Write atomically (a temporary file renamed), so an interrupted save never leaves half a checkpoint.
    ``epoch`` counts the finished epochs; ``within_epoch`` (``batch``, ``epoch_loss``, ``epoch_count``) says how
    far the next one had gone, for a checkpoint saved in the middle of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"format": FORMAT, "version": FORMAT_VERSION, "arch": model_record(model),
             "model": model.state_dict(), "epoch": int(epoch), "config": dict(config or {}),
             "history": list(history or []),
             "optimizer": optimizer.state_dict() if optimizer is not None else None,
             "scheduler": scheduler.state_dict() if scheduler is not None else None, **(within_epoch or {})}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def read_state(path):
    """Whatever a checkpoint file holds (tensors and plain values only), or a ``CheckpointError``."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:       # torch raises many types for a damaged or foreign file
        raise CheckpointError(f"{path}: not a readable training checkpoint ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}); a checkpoint holding "
                              f"Python objects (a Lightning .ckpt with hyperparameters, a whole pickled model) "
                              f"is not unpickled: save its state_dict alone with torch.save") from None


def load_checkpoint(path) -> dict:
    """Read and validate the format of a checkpoint (not yet its shape: see ``check_arch``)."""
    return check_format(read_state(path), path)


def check_format(state, path) -> dict:
    """``state`` if it is a Quantfish training checkpoint of this format version."""
    path = Path(path)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a Quantfish training checkpoint (format {FORMAT!r} expected)")
    if state.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {state.get('version')}, this trainer reads "
                              f"version {FORMAT_VERSION}")
    return state


def check_arch(state: dict, l1: int, path="checkpoint", factoriser: bool = False, qat: str = "ste",
               qat_bits: int = 8) -> None:
    """Refuse a checkpoint whose recorded architecture differs from a model of width ``l1``."""
    want = {**arch_record(l1), "factoriser": factoriser, "qat": qat, "qat_bits": qat_bits}
    have = {"factoriser": False, "qat": "ste", "qat_bits": 8, **state.get("arch", {})}
    diff = [f"{k} {have.get(k)!r} (model: {v!r})" for k, v in want.items() if have.get(k) != v]
    if diff:
        raise CheckpointError(f"{path}: checkpoint shape does not match the model: " + ", ".join(diff)
                              + (f"; use --l1 {have['l1']} or start a new run" if "l1" in have else ""))


def restore_model(state: dict, model, path="checkpoint") -> None:
    """Load the model's tensors after checking the architecture."""
    check_arch(state, model.l1, path, model.factoriser, model.qat, model.qat_bits)
    model.load_state_dict(state["model"])
