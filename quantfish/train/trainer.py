"""The training loop: Adam(W) with an exponential, cosine or step learning-rate decay, weight clipping after
every step, quantisation-aware training in the last epochs (straight-through, DoReFa, PACT or WRPN), a held-back
validation split, checkpoints each epoch and resume; on one process, or on several started by ``torchrun``
(``config.ddp``, ``quantfish.train.ddp``), which take the same steps.

``train(data, config)`` takes any data source of ``quantfish.train.data`` (an object with ``batches(batch_size,
shuffle, seed)``, arrays, or a list of batches) and returns a ``TrainResult``. One epoch is one pass over the
training data. Each epoch prints one progress line (epoch, train loss, val loss, learning rate, positions/s)
through ``config.log``. Runs on the GPU when PyTorch sees one, else on the CPU.
"""

from __future__ import annotations

import inspect
import itertools
import math
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import torch

from quantfish.runtime.progress import progress_bar

from quantfish.train import ddp
from quantfish.train.alloc import keep_freed_memory
from quantfish.train import loss as loss_mod
from quantfish.train.checkpoint import check_arch, load_checkpoint, restore_model, save_checkpoint
from quantfish.train.data import DataError, TrainingArrays, as_source, share
from quantfish.train.model import NnueModel

LAST = "last.pt"


@dataclass
class TrainConfig:
    """Everything a run is made of (recorded in each checkpoint, except ``log``)."""

    l1: int = 256
    factoriser: bool = False             # HalfKAv2_hm^: virtual (piece, square) features, folded in at export
    epochs: int = 10                     # total epochs of the run (a resumed run continues up to it)
    batch_size: int = 16384
    lr: float = 8.75e-4                  # nnue-pytorch's starting rate for Adam
    lr_gamma: float = 0.992              # exponential: the rate times this after each epoch; step: at each step
    lr_schedule: str = "exponential"     # "exponential", "cosine" (to lr * lr_min_ratio at the end) or "step"
    lr_step_epochs: int = 10             # step: epochs between the steps
    lr_min_ratio: float = 0.0            # cosine: the last epoch's rate as a fraction of lr
    lr_by_batch: bool = False            # the schedule followed batch by batch (a one-epoch run still decays)
    optimizer: str = "adam"              # "adam" or "adamw"
    weight_decay: float = 0.0
    lambda_: float = loss_mod.DEFAULT_LAMBDA
    wdl_scale: float = loss_mod.WDL_SCALE
    loss_exponent: float = loss_mod.LOSS_EXPONENT
    val_fraction: float = 0.05
    fake_quant_epochs: int = 0           # the last N epochs train through the quantised net (``qat``'s way)
    qat: str = "ste"                     # "ste", "dorefa", "pact" or "wrpn" (quantfish.train.model)
    qat_bits: int = 8                    # dense weights' bits under DoReFa and WRPN
    seed: int = 0
    init_net: str | None = None          # a .nnue whose weights the run starts from (not with a resume)
    out_dir: str | None = None           # checkpoints epoch-NNNN.pt and last.pt; none when None
    checkpoint_minutes: float = 10.0     # also save last.pt this often within an epoch (0: at epoch ends only)
    device: str | None = None            # None: "cuda" if available, else "cpu"
    ddp: bool = False                    # one rank of a run launched by torchrun (quantfish.train.ddp)
    log: Callable[[str], None] | None = field(default=print, repr=False)
    progress: bool = field(default=False, repr=False)    # a bar over each epoch's positions on stderr

    def record(self) -> dict:
        d = asdict(self)
        d.pop("log")
        d.pop("progress")
        return d


class EpochStats(NamedTuple):
    epoch: int
    train_loss: float
    val_loss: float | None
    lr: float
    positions_per_s: float
    fake_quant: bool

    def line(self, epochs: int) -> str:
        val = f"{self.val_loss:.6f}" if self.val_loss is not None else "-"
        return (f"epoch {self.epoch}/{epochs}  train loss {self.train_loss:.6f}  val loss {val}  "
                f"lr {self.lr:.3g}  {self.positions_per_s:,.0f} pos/s" + ("  fake-quant" if self.fake_quant else ""))


class TrainResult(NamedTuple):
    model: NnueModel
    history: list
    checkpoint: Path | None
    interrupted: bool = False           # stopped by Ctrl-C; ``checkpoint`` is where it resumes


class _StopRequest:
    """Ctrl-C during training: the first finishes the step under way and stops the run there (saving where
    it was), a second stops at once. Only the main thread can take the signal; elsewhere this does nothing.
    A rank of a distributed run also takes SIGTERM so, which is how torchrun passes a Ctrl-C on to its workers,
    and counts the signals of the next ``grace`` seconds as the same request: a Ctrl-C in a terminal reaches each
    worker directly and again through torchrun."""

    def __init__(self, signals=(signal.SIGINT,), grace: float = 0.0):
        self.signals = signals
        self.grace = grace

    def __enter__(self):
        self.count = 0
        self._first = None
        self._old = {}
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._handler) for s in self.signals}
        return self

    def _handler(self, signum, frame):
        now = time.monotonic()
        if self._first is not None and now - self._first < self.grace:
            return
        self._first = self._first if self._first is not None else now
        self.count += 1
        if self.count > 1:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        for s, old in self._old.items():
            signal.signal(s, old)
        return False


def pick_device(name: str | None = None) -> torch.device:
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_optimizer(model: NnueModel, config: TrainConfig) -> torch.optim.Optimizer:
    """Adam or AdamW, fused (one pass over each tensor: the 22529 x (L1 + 8) FT table dominates a small step,
    and the unfused update took 4x longer on it)."""
    kinds = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
    if config.optimizer not in kinds:
        raise ValueError(f"unknown optimizer {config.optimizer!r} (adam or adamw)")
    return kinds[config.optimizer](model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True)


def lr_factor(config: TrainConfig, e: float) -> float:
    """The schedule's factor of ``lr`` at epoch ``e`` (0 at the start; fractional when followed by batch). By
    epoch, a cosine reaches its low at the last epoch; by batch, at the run's last batch."""
    if config.lr_schedule == "exponential":
        return config.lr_gamma ** e
    if config.lr_schedule == "step":
        return config.lr_gamma ** (e // max(1, config.lr_step_epochs))
    if config.lr_schedule == "cosine":
        span = float(config.epochs) if config.lr_by_batch else float(max(1, config.epochs - 1))
        low = config.lr_min_ratio
        return low + (1 - low) * 0.5 * (1 + math.cos(math.pi * min(e, span) / span))
    raise ValueError(f"unknown learning-rate schedule {config.lr_schedule!r} (exponential, cosine or step)")


def make_scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig):
    """The learning rate by epoch: exponential decay, a cosine from ``lr`` down to ``lr * lr_min_ratio`` over
    the run's epochs, or steps of ``lr_gamma`` every ``lr_step_epochs`` epochs (``lr_factor``). A run that
    follows its schedule by batch sets the rate itself before each step (``_set_batch_lr``)."""
    lr_factor(config, 0)   # an unknown schedule fails here, before any training
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: lr_factor(config, e))


def _restore_scheduler(scheduler, saved: dict) -> None:
    """A checkpoint's schedule state. The rate is a function of the epoch alone (``lr_factor``), so the state of
    a checkpoint written under torch's exponential or step scheduler (which has no ``lr_lambdas``) resumes the
    same way."""
    saved = dict(saved)
    saved.setdefault("lr_lambdas", [None] * len(scheduler.base_lrs))
    scheduler.load_state_dict(saved)


def _set_batch_lr(optimizer: torch.optim.Optimizer, config: TrainConfig, epoch: int, count: int, size: int):
    """The rate of the batch after ``count`` of the epoch's ``size`` positions (epoch counted from 1): it
    depends on where the run is alone, so a resumed run takes the rates the uninterrupted one took."""
    rate = config.lr * lr_factor(config, epoch - 1 + min(count, size) / size)
    for group in optimizer.param_groups:
        group["lr"] = rate


def _batches(source, batch_size: int, shuffle: bool, seed: int, skip: int = 0, ranks: ddp.Ranks = ddp.SINGLE):
    """The epoch's batches after the first ``skip`` (a run resumed within an epoch): skipped unread by a source
    that takes ``skip``, read and dropped otherwise; of each, this rank's share alone (only that share read by
    a source that takes ``part``, the batch cut otherwise)."""
    takes = inspect.signature(source.batches).parameters
    kwargs = {}
    if skip and "skip" in takes:
        kwargs["skip"], skip = skip, 0
    cut = ranks.world > 1 and "part" not in takes
    if ranks.world > 1 and not cut:
        kwargs["part"] = (ranks.rank, ranks.world)
    batches = source.batches(batch_size, shuffle, seed, **kwargs)
    if skip:
        batches = itertools.islice(batches, skip, None)
    if cut:
        batches = (b.take(slice(*share(len(b.stm), ranks.rank, ranks.world))) for b in batches)
    return batches


def _batch_loss(model: NnueModel, batch: TrainingArrays, config: TrainConfig, device) -> torch.Tensor:
    """The mean loss over the batch; over an empty one (a rank's share of a batch smaller than the ranks),
    a zero that every parameter takes part in, so that every rank's gradients exist to be averaged."""
    out = model(batch.white_idx, batch.black_idx, batch.stm, batch.bucket)
    if len(batch.stm) == 0:
        return out.sum() + sum(p.sum() for p in model.parameters()) * 0.0
    score = torch.as_tensor(np.asarray(batch.score), dtype=torch.float32, device=device)
    result = torch.as_tensor(np.asarray(batch.result), dtype=torch.float32, device=device)
    return loss_mod.loss_fn(out, score, result, config.lambda_, config.wdl_scale, config.loss_exponent)


def evaluate_loss(model: NnueModel, source, config: TrainConfig, device=None,
                  ranks: ddp.Ranks = ddp.SINGLE) -> float | None:
    """Mean loss over a source, weighted by batch size (None for an empty source); each rank of a distributed
    run evaluates its share of each batch."""
    device = device or next(model.parameters()).device
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in _batches(source, config.batch_size, False, 0, ranks=ranks):
            n = len(batch.stm)
            if n:
                total += float(_batch_loss(model, batch, config, device)) * n
                count += n
    total, count = ddp.all_sum([total, count], ranks, device)
    return total / count if count else None


def _split(data, val_data, config: TrainConfig):
    train_src = as_source(data)
    if val_data is not None:
        return train_src, as_source(val_data)
    if config.val_fraction <= 0:
        return train_src, None
    if not hasattr(train_src, "split"):
        raise DataError("this data source cannot hold back a validation split (it has no split method): give "
                        "a separate validation source or val_fraction 0")
    return train_src.split(config.val_fraction, config.seed)


def train(data, config: TrainConfig, resume=None, val_data=None) -> TrainResult:
    """Train (or resume from checkpoint ``resume``) for ``config.epochs`` epochs in total."""
    keep_freed_memory()
    device = pick_device(config.device)
    ranks = ddp.start(device) if config.ddp else ddp.SINGLE
    if ranks.distributed and device.type == "cuda" and device.index is None:
        device = torch.device("cuda", ranks.local_rank)
        torch.cuda.set_device(device)
    try:
        result = _train(data, config, resume, val_data, device, ranks)
    except BaseException:
        if config.ddp:
            ddp.stop()
        raise
    if config.ddp:
        ddp.stop(wait=True)
    return result


def _train(data, config, resume, val_data, device, ranks) -> TrainResult:
    log = (config.log if ranks.leader else None) or (lambda s: None)
    torch.manual_seed(config.seed)
    train_src, val_src = _split(data, val_data, config)

    state = None
    if resume is not None:
        state = load_checkpoint(resume)
        check_arch(state, config.l1, resume, config.factoriser, config.qat, config.qat_bits)
    model = NnueModel(config.l1, seed=config.seed, factoriser=config.factoriser, qat=config.qat,
                      qat_bits=config.qat_bits)
    if state is None and config.init_net:
        _start_from_net(model, config.init_net)
        log(f"starting from the weights of {config.init_net}")
    model = model.to(device)
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, config)
    start, history, done, partial = 0, [], 0, (0.0, 0)
    if state is not None:
        restore_model(state, model, resume)
        if state.get("optimizer") is not None:
            optimizer.load_state_dict(state["optimizer"])
        if state.get("scheduler") is not None:
            _restore_scheduler(scheduler, state["scheduler"])
        start, history = state["epoch"], list(state.get("history", []))
        done = int(state.get("batch", 0))
        partial = (float(state.get("epoch_loss", 0.0)), int(state.get("epoch_count", 0)))
        log(f"resumed from {resume} after epoch {start}" + (f" and {done} batches of epoch {start + 1}" if done
                                                            else ""))
        if start >= config.epochs:
            log(f"nothing to do: the checkpoint has {start} epochs, the run asks for {config.epochs}")

    out = Path(config.out_dir) if config.out_dir else None
    signals = (signal.SIGINT, signal.SIGTERM) if ranks.distributed else (signal.SIGINT,)
    with _StopRequest(signals, grace=5.0 if ranks.distributed else 0.0) as stop:
        return _epochs(model, optimizer, scheduler, train_src, val_src, config, device, log,
                       out if ranks.leader else None, start, history, done, partial, stop, ranks)


def _start_from_net(model: NnueModel, path) -> None:
    """The model's weights set to a .nnue net's, divided by the fixed scales (``quantize.dequantise``); the
    factoriser's virtual rows start at zero, so the model starts as the net's function and a longer training
    continues from it (nnue-pytorch's start from a model). A net narrower than the model is widened
    (``NnueModel.widen_from``): the same function, with new neurons for the training to use."""
    from quantfish.nnue.io import load_net
    from quantfish.train.quantize import dequantise
    if model.qat == "dorefa":
        raise ValueError("--init-net cannot start a --qat dorefa run: its weights are the tanh image of latent "
                         "ones, which a net's weights do not give")
    net = load_net(path)
    if net.arch.l1 < model.l1:
        model.widen_from(dequantise(net))
    else:
        dequantise(net, model)
    model.clip_weights()


def _epoch_size(positions: int | None) -> int:
    """The positions of one epoch, which a schedule followed by batch needs."""
    if not positions:
        raise ValueError("--lr-by-batch needs training data of a known size")
    return positions


def _epochs(model, optimizer, scheduler, train_src, val_src, config, device, log, out, start, history, done,
            partial, stop, ranks) -> TrainResult:
    """The epochs from ``start + 1``. ``out`` is None on every rank of a distributed run but the first, which
    alone saves (and logs)."""
    ckpt_path = None
    net = ddp.wrap(model, ranks, device)
    for epoch in range(start + 1, config.epochs + 1):
        model.fake_quant = epoch > config.epochs - config.fake_quant_epochs
        model.train()
        (total, count), t0, saved = partial, time.perf_counter(), time.monotonic()
        positions = len(train_src) if hasattr(train_src, "__len__") else None
        size = _epoch_size(positions) if config.lr_by_batch else 0
        if size:
            _set_batch_lr(optimizer, config, epoch, count, size)
        lr = optimizer.param_groups[0]["lr"]
        bar = progress_bar(positions, f"epoch {epoch}/{config.epochs}", "pos",
                           enabled=config.progress and ranks.leader, leave=False)
        bar.update(count)
        seen = 0
        for batch in _batches(train_src, config.batch_size, True, config.seed * 100003 + epoch, done, ranks):
            optimizer.zero_grad(set_to_none=True)
            if size:
                _set_batch_lr(optimizer, config, epoch, count, size)
            n = len(batch.stm)
            loss = _batch_loss(net, batch, config, device)
            if ranks.distributed:
                # DDP averages the ranks' gradients: weighted by its share, each rank's mean makes that average
                # the gradient of the whole batch's mean loss.
                (n_all,) = ddp.all_sum([n], ranks, device)
                (loss * (n * ranks.world / n_all)).backward()
            else:
                loss.backward()
            optimizer.step()
            model.clip_weights()
            step_total, n, stops = ddp.all_sum([float(loss.detach()) * n, n, stop.count], ranks, device)
            n = int(n)
            total += step_total
            count += n
            seen += n
            done += 1
            bar.update(n)
            if stops:
                bar.close()
                if out is None and not ranks.leader:
                    return TrainResult(model, history, None, True)
                if out is None:
                    log(f"stopped in epoch {epoch} after {done} batches (no --out: nothing saved)")
                    return TrainResult(model, history, None, True)
                path = save_checkpoint(out / LAST, model, optimizer, scheduler, epoch - 1, config.record(), history,
                                       {"batch": done, "epoch_loss": total, "epoch_count": count})
                log(f"stopped in epoch {epoch} after {done} batches; saved {path} (continue with --resume {path})")
                return TrainResult(model, history, path, True)
            if out is not None and config.checkpoint_minutes > 0 and \
                    time.monotonic() - saved >= 60 * config.checkpoint_minutes:
                save_checkpoint(out / LAST, model, optimizer, scheduler, epoch - 1, config.record(), history,
                                {"batch": done, "epoch_loss": total, "epoch_count": count})
                saved = time.monotonic()
        bar.close()
        done, partial = 0, (0.0, 0)
        elapsed = time.perf_counter() - t0
        if count == 0:
            raise DataError("the training data yielded no positions")
        scheduler.step()
        model.eval()
        val = evaluate_loss(model, val_src, config, device, ranks) if val_src is not None else None
        stats = EpochStats(epoch, total / count, val, lr, seen / max(elapsed, 1e-9), model.fake_quant)
        history.append(stats._asdict())
        log(stats.line(config.epochs))
        if out is not None:
            ckpt_path = save_checkpoint(out / f"epoch-{epoch:04d}.pt", model, optimizer, scheduler, epoch,
                                        config.record(), history)
            save_checkpoint(out / LAST, model, optimizer, scheduler, epoch, config.record(), history)
    return TrainResult(model, history, ckpt_path)


def model_from_checkpoint(path, l1: int | None = None) -> NnueModel:
    """The model of a checkpoint (CPU, evaluation mode); refuses a checkpoint of another width than ``l1``."""
    state = load_checkpoint(path)
    arch = state.get("arch", {})
    width = int(arch.get("l1", 0)) if l1 is None else l1
    factoriser = bool(arch.get("factoriser", False))
    qat, qat_bits = str(arch.get("qat", "ste")), int(arch.get("qat_bits", 8))
    check_arch(state, width, path, factoriser, qat, qat_bits)
    model = NnueModel(width, seed=None, factoriser=factoriser, qat=qat, qat_bits=qat_bits)
    restore_model(state, model, path)
    model.fake_quant = False
    model.eval()
    return model
