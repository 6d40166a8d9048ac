"""Training on several processes with PyTorch's own engine: torchrun starts one process per GPU (or per CPU
slot), DistributedDataParallel averages their gradients.

    torchrun --nproc_per_node N -m training.train --task en-de --out runs/en-de

Each rank trains on its own shard of the length-bucketed batches (rank r takes batches r, r + N, ...), so one
optimizer step consumes N batches; only rank 0 writes checkpoints, logs and the card. Without torchrun's
environment (RANK, WORLD_SIZE) everything here is the single-process no-op.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job: rank (0 = the one that writes), world size, device."""

    rank: int
    world: int
    device: torch.device

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1


def start(device: torch.device) -> Ranks:
    """Join torchrun's process group (gloo on CPU, NCCL on CUDA) when launched by it; otherwise one rank."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Ranks(0, 1, device)
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Ranks(rank, world, device)


def stop(ranks: Ranks) -> None:
    if ranks.distributed and dist.is_initialized():
        dist.destroy_process_group()


def wrap(model: nn.Module, ranks: Ranks) -> nn.Module:
    """The module whose forward trains: DistributedDataParallel over ``model`` when distributed."""
    if not ranks.distributed:
        return model
    return nn.parallel.DistributedDataParallel(model, device_ids=[ranks.device.index] if ranks.device.type == "cuda"
                                               else None)


def total(value: int, ranks: Ranks) -> int:
    """The sum of ``value`` over all ranks (e.g. target tokens in this step's global batch)."""
    if not ranks.distributed:
        return value
    tensor = torch.tensor([value], dtype=torch.long, device=ranks.device)
    dist.all_reduce(tensor)
    return int(tensor.item())


def barrier(ranks: Ranks) -> None:
    """Wait for every rank (e.g. until rank 0 has written the checkpoint the others will read)."""
    if ranks.distributed:
        dist.barrier()
