"""Training on several processes or machines: PyTorch's DistributedDataParallel, started by ``torchrun``.

    torchrun --standalone --nproc-per-node=2 -m quantfish train --ddp --data a.bin --data b.bin --out run/

Every rank draws the same global batches from the same seed and trains on its own share of each: rows
``quantfish.train.data.share(n, rank, world)`` of a batch of ``n``, whose features only that rank computes (a record stream
decodes only the rank's rows). Gradients are averaged by DDP's all-reduce, with each rank's loss weighted by
its share of the global batch, so a step of N ranks is the step one process would take on the whole batch:
the same run, within float rounding, whatever the number of ranks. Rank 0 writes the checkpoints and the log;
a stop asked of any rank (Ctrl-C, or the SIGTERM torchrun sends its workers) stops all of them after the same
step. Gloo carries the tensors on the CPU, NCCL on GPUs.
"""
from __future__ import annotations

import inspect
import os
from typing import NamedTuple

import torch
import torch.distributed as dist


class Ranks(NamedTuple):
    """Where this process stands in the run: one process alone is rank 0 of 1."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1

    @property
    def leader(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1 or dist.is_initialized()


SINGLE = Ranks()
_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class LaunchError(RuntimeError):
    """``--ddp`` outside a launcher that says where the process stands (torchrun's environment)."""


def launched_ranks() -> Ranks:
    """The ranks torchrun (or any launcher setting its variables) gives this process."""
    missing = [name for name in _ENV if name not in os.environ]
    if missing:
        raise LaunchError("--ddp needs torchrun's environment (missing " + ", ".join(missing) + "): start it as "
                          "torchrun --standalone --nproc-per-node=N -m quantfish train --ddp ...")
    return Ranks(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"]),
                 int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])))


def start(device: torch.device) -> Ranks:
    """Join the process group of the launched run (gloo on the CPU, NCCL on CUDA devices)."""
    ranks = launched_ranks()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return ranks


def stop(wait: bool = False) -> None:
    """Leave the process group. ``wait`` (a run that ended normally): first meet every other rank, so that none
    tears the group down while another is still in its last exchange (gloo then aborts that process)."""
    if dist.is_initialized():
        if wait:
            dist.barrier()
        dist.destroy_process_group()


def all_sum(values, ranks: Ranks, device) -> list[float]:
    """The sums over the ranks of a few numbers (float64), in one all-reduce; the numbers alone for one process."""
    if not ranks.distributed:
        return [float(v) for v in values]
    t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def wrap(model: torch.nn.Module, ranks: Ranks, device: torch.device) -> torch.nn.Module:
    """The model as the training steps call it: itself for one process, a DDP module for several (which also
    makes every rank start from rank 0's weights)."""
    if not ranks.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel
    ids = [device.index if device.index is not None else ranks.local_rank] if device.type == "cuda" else None
    # The model's one buffer (the FT columns' scales) is a constant: synced once at the start, not every step.
    quiet = ({"forward_sync_buffers": False} if "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters
             else {"broadcast_buffers": False})
    wrapped = DistributedDataParallel(model, device_ids=ids, **quiet)
    if hasattr(model, "weights_overwritten"):
        model.weights_overwritten()     # the broadcast wrote rank 0's weights past the tensors' version counters
    return wrapped
