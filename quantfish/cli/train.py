"""``quantfish train`` and ``quantfish export``: train our own net with PyTorch, then write it as a .nnue file.

PyTorch is an optional extra (``make train-deps``); without it both commands say so in one line. Nothing here
imports torch at module level, so ``quantfish`` itself starts without it.

    quantfish train --data FILE [--data FILE ...] --out DIR [--l1 256] [--epochs 10] [--batch-size 16384]
                    [--lr 8.75e-4] [--lambda 1.0] [--val-fraction 0.05] [--fake-quant-epochs 0]
                    [--resume CKPT] [--seed 0] [--threads N]
    torchrun --standalone --nproc-per-node=N -m quantfish train --ddp ...     (N processes, one run)
    quantfish train --source MODULE:FUNCTION --out DIR ...     (a Python-level data source)
    quantfish export CKPT -o NET.nnue

Data files (32-byte records of ``quantfish gendata``) are read by ``quantfish.train.features.training_arrays``;
``--source`` names a callable (no arguments) returning a data source (an object with ``batches(batch_size,
shuffle, seed)``) or training arrays. Checkpoints go to DIR/epoch-NNNN.pt and DIR/last.pt.
"""

from __future__ import annotations

import importlib

import click

TORCH_MISSING = "PyTorch is not installed: make train-deps"


def _require_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise click.ClickException(TORCH_MISSING) from None


def _errors():
    """The exception types of the training modules that become one-line errors."""
    from quantfish.nnue.net import NetFileError
    from quantfish.train.checkpoint import CheckpointError
    from quantfish.train.data import DataError
    from quantfish.train.quantize import QuantisationError
    return (CheckpointError, DataError, QuantisationError, NetFileError, OSError, ValueError)


def _load_source(spec: str):
    """The data source a ``MODULE:FUNCTION`` spec names (the function is called with no arguments)."""
    module_name, sep, func_name = spec.partition(":")
    if not sep or not module_name or not func_name:
        raise click.BadParameter("expected MODULE:FUNCTION", param_hint="--source")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec}: {exc}", param_hint="--source") from None
    return func()


@click.command("train")
@click.option("--data", "data_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Training data file (repeatable), read by quantfish.data.records.")
@click.option("--source", default=None, metavar="MODULE:FUNCTION",
              help="A Python callable returning a data source or training arrays (instead of --data).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for the checkpoints (epoch-NNNN.pt, last.pt).")
@click.option("--l1", type=click.IntRange(32, 4096), default=None,
              help="Accumulator width: 128, 256, 512 or 1024 (default 256, or the checkpoint's with --resume).")
@click.option("--factoriser", is_flag=True, default=False,
              help="Train with virtual (piece, square) features shared by every king square, folded into the net "
                   "at export (HalfKAv2_hm^); a resumed run keeps its checkpoint's choice.")
@click.option("--epochs", type=click.IntRange(1, None), default=10, show_default=True,
              help="Total epochs (a resumed run continues up to this).")
@click.option("--batch-size", type=click.IntRange(1, None), default=16384, show_default=True)
@click.option("--lr", type=click.FloatRange(0, None, min_open=True), default=8.75e-4, show_default=True,
              help="Starting learning rate.")
@click.option("--lr-gamma", type=click.FloatRange(0, 1, min_open=True), default=0.992, show_default=True,
              help="Exponential schedule: factor after each epoch; step schedule: factor at each step.")
@click.option("--lr-schedule", type=click.Choice(["exponential", "cosine", "step"]), default="exponential",
              show_default=True, help="How the learning rate falls from epoch to epoch (or batch to batch: "
                                      "--lr-by-batch).")
@click.option("--lr-by-batch", is_flag=True, default=False,
              help="Follow the schedule batch by batch, at the run's fractional epoch, so that even a "
                   "one-epoch run decays (a cosine then ends at --lr-min-ratio on the last batch).")
@click.option("--lr-min-ratio", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Cosine schedule: the last epoch's rate as a fraction of --lr.")
@click.option("--lr-step-epochs", type=click.IntRange(1, None), default=10, show_default=True,
              help="Step schedule: epochs between the steps.")
@click.option("--optimizer", type=click.Choice(["adam", "adamw"]), default="adam", show_default=True)
@click.option("--lambda", "lambda_", type=click.FloatRange(0, 1), default=1.0, show_default=True,
              help="Weight of the score against the game result in the target (1: the score alone).")
@click.option("--wdl-scale", type=click.FloatRange(0, None, min_open=True), default=361.0, show_default=True,
              help="Internal units of evaluation per unit of the sigmoid that maps it to an expected score.")
@click.option("--loss-exponent", type=click.FloatRange(1, None), default=2.6, show_default=True,
              help="The loss is |expected score - target| to this power.")
@click.option("--shuffle-buffer", type=click.IntRange(1, None), default=1 << 22, show_default=True,
              help="Records shuffled together (the data files are streamed through a buffer of this size).")
@click.option("--checkpoint-minutes", type=click.FloatRange(0, None), default=10.0, show_default=True,
              help="Also save last.pt this often within an epoch, so a stopped run resumes there (0: never).")
@click.option("--val-fraction", type=click.FloatRange(0, 0.9), default=0.05, show_default=True,
              help="Share of the positions held back for the validation loss.")
@click.option("--fake-quant-epochs", type=click.IntRange(0, None), default=0, show_default=True,
              help="Train the last N epochs through the quantised net, the --qat way.")
@click.option("--qat", type=click.Choice(["ste", "dorefa", "pact", "wrpn"]), default="ste", show_default=True,
              help="Quantisation-aware training: ste rounds the weights (straight-through gradient); dorefa "
                   "trains tanh-normalised dense weights; pact learns the FT and fc_1 clips; wrpn clips the "
                   "weights (see --qat-bits); the last three also floor the activations to their int8 steps. "
                   "A resumed run keeps its checkpoint's choice.")
@click.option("--qat-bits", type=click.IntRange(2, 8), default=8, show_default=True,
              help="Bits of the dense layers' weights under dorefa and wrpn (8: the format's int8).")
@click.option("--resume", type=click.Path(dir_okay=False), default=None, help="Continue from a checkpoint.")
@click.option("--init-net", type=click.Path(dir_okay=False), default=None,
              help="Start from the weights of a .nnue net (Stockfish 15.1's format; the factoriser's rows at "
                   "zero) instead of random ones: a new run that continues a net's training. A net narrower than "
                   "--l1 is widened: the same function, with new neurons to train.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--threads", type=click.IntRange(1, None), default=None,
              help="CPU threads (PyTorch and the feature-transformer kernels; default: every core, shared out "
                   "between the processes of a --ddp run on this machine).")
@click.option("--ddp", is_flag=True, default=False,
              help="One process of a distributed run started by torchrun (gloo on the CPU, NCCL on GPUs): every "
                   "process trains on its share of each batch, and the run takes the steps one process would.")
def train_command(data_paths, source, out_dir, l1, factoriser, epochs, batch_size, lr, lr_gamma, lr_schedule,
                  lr_min_ratio, lr_by_batch, lr_step_epochs, optimizer, lambda_, wdl_scale, loss_exponent, shuffle_buffer,
                  checkpoint_minutes, val_fraction, fake_quant_epochs, qat, qat_bits, resume, init_net, seed, threads,
                  ddp):
    """Train a HalfKAv2_hm net (Stockfish 15.1 topology) on scored positions."""
    _require_torch()
    leader = True
    if ddp:
        from quantfish.train.ddp import LaunchError, launched_ranks
        try:
            ranks = launched_ranks()
        except LaunchError as exc:
            raise click.ClickException(str(exc)) from None
        leader = ranks.leader
        if not threads:
            import os
            threads = max(1, (os.cpu_count() or 1) // ranks.local_world)
    if resume and init_net:
        raise click.UsageError("--init-net starts a new run; a resumed run continues from its checkpoint")
    if bool(data_paths) == bool(source):
        raise click.UsageError("give training data: --data FILE (repeatable) or --source MODULE:FUNCTION")
    from quantfish.train.checkpoint import load_checkpoint
    from quantfish.train.data import as_source
    from quantfish.train.stream import load_data_files
    from quantfish.train.trainer import LAST, TrainConfig, pick_device, train
    if threads:
        from quantfish.train.ftkernel import set_threads
        set_threads(threads)
    try:
        if resume:
            arch = load_checkpoint(resume)["arch"]
            l1 = l1 or int(arch["l1"])
            factoriser = bool(arch.get("factoriser", False))
            qat, qat_bits = str(arch.get("qat", "ste")), int(arch.get("qat_bits", 8))
        if init_net and not l1:
            from quantfish.nnue.io import load_net
            l1 = load_net(init_net).arch.l1
        l1 = l1 or 256
        data = as_source(_load_source(source)) if source else load_data_files(data_paths, shuffle_buffer)
        config = TrainConfig(l1=l1, factoriser=factoriser, epochs=epochs, batch_size=batch_size, lr=lr,
                             lr_gamma=lr_gamma, lr_schedule=lr_schedule, lr_min_ratio=lr_min_ratio,
                             lr_step_epochs=lr_step_epochs, lr_by_batch=lr_by_batch,
                             optimizer=optimizer, lambda_=lambda_, wdl_scale=wdl_scale, loss_exponent=loss_exponent,
                             val_fraction=val_fraction, fake_quant_epochs=fake_quant_epochs, seed=seed, qat=qat, qat_bits=qat_bits,
                             init_net=init_net,
                             out_dir=out_dir, checkpoint_minutes=checkpoint_minutes, ddp=ddp,
                             log=lambda s: click.echo(s, err=True), progress=True)
        size = f", {len(data):,} positions" if hasattr(data, "__len__") else ""
        if leader:
            where = f"{ranks.world} processes on {pick_device().type}" if ddp else str(pick_device())
            click.echo(f"training L1={l1} on {where}{size}", err=True)
        result = train(data, config, resume=resume)
    except _errors() as exc:
        raise click.ClickException(str(exc)) from None
    if result.interrupted:
        raise SystemExit(130)
    if leader:
        click.echo(f"checkpoint: {out_dir}/{LAST} (write the net with: quantfish export {out_dir}/{LAST} -o NET.nnue)",
                   err=True)


@click.command("export")
@click.argument("checkpoint", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The .nnue file to write.")
@click.option("--description", default=None, help="Description stored in the net's header.")
def export_command(checkpoint, output, description):
    """Quantise a training checkpoint into a Stockfish .nnue file (refuses values that would overflow)."""
    _require_torch()
    from quantfish.train.quantize import DEFAULT_DESCRIPTION, export
    from quantfish.train.trainer import model_from_checkpoint
    try:
        model = model_from_checkpoint(checkpoint)
        desc = description.encode("utf-8") if description is not None else DEFAULT_DESCRIPTION
        net = export(model, output, desc)
    except _errors() as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {output}: {net.arch.describe()}")


def register(group: click.Group) -> None:
    """Add ``train`` and ``export`` to the ``quantfish`` command group."""
    group.add_command(train_command, "train")
    group.add_command(export_command, "export")
