"""Weights split over several safetensors files, in Hugging Face's layout.

A large checkpoint is saved as ``model-00001-of-00003.safetensors`` ... plus ``model.safetensors.index.json``,
whose ``weight_map`` says which file holds each tensor (``{"metadata": {"total_size": N}, "weight_map": {name:
file}}``). Files of a bounded size travel where one big file cannot (a GPU machine hands back files of at most
16 MiB), and the same reader opens a sharded Hugging Face folder. The index comes from anyone too, so it is
read as untrusted: bounded in size, file names matched against the shard pattern (no paths), every tensor in
exactly one file.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors.torch import save_file

from model.network.config import format_bytes

SINGLE, INDEX = "model.safetensors", "model.safetensors.index.json"
SHARD = re.compile(r"model-(\d{5})-of-(\d{5})\.safetensors")
SHARD_BYTES = 16 * 2**20  # what training writes: every file fits through a 16 MiB transfer
MAX_INDEX_BYTES = 4 * 2**20  # ~100 bytes per tensor name: room for tens of thousands
ENTRY_BYTES = 256  # a tensor's entry in a file's JSON header (name, dtype, shape, offsets), at the most
HEADER_BYTES = 1024  # the header's length field, braces and metadata


class ShardError(ValueError):
    """An index that cannot be used; the message is one line naming what is wrong."""


def plan_shards(sizes: dict[str, int], max_bytes: int) -> list[list[str]]:
    """Tensor names grouped in order into files of at most ``max_bytes`` (a larger tensor gets a file alone)."""
    groups: list[list[str]] = [[]]
    used = 0
    for name, size in sizes.items():
        if groups[-1] and used + size > max_bytes:
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += size
    return groups


def save_weights(weights: dict[str, torch.Tensor], directory: Path, metadata: dict[str, str],
                 max_bytes: int | None = None) -> list[Path]:
    """Write ``weights`` as one model.safetensors, or as shards + index when the file would exceed ``max_bytes``
    (every shard file is then at most ``max_bytes``, unless one tensor alone is larger).
    Files of the other layout left by an earlier save are removed, so a directory never holds both."""
    sizes = {name: t.numel() * t.element_size() for name, t in weights.items()}
    on_disk = {name: size + ENTRY_BYTES for name, size in sizes.items()}  # a file's size, header included
    if max_bytes and sum(on_disk.values()) + HEADER_BYTES > max_bytes:  # too big for one file
        groups = plan_shards(on_disk, max_bytes - HEADER_BYTES)
    else:
        groups = [list(weights)]
    stale = [directory / SINGLE, directory / INDEX, *(p for p in directory.glob("model-*-of-*.safetensors"))]
    for path in stale:
        path.unlink(missing_ok=True)
    if len(groups) == 1:
        save_file(weights, str(directory / SINGLE), metadata=metadata)
        return [directory / SINGLE]
    files = [f"model-{i:05d}-of-{len(groups):05d}.safetensors" for i in range(1, len(groups) + 1)]
    for file, names in zip(files, groups, strict=True):
        save_file({name: weights[name] for name in names}, str(directory / file), metadata=metadata)
    index = {"metadata": {"total_size": sum(sizes.values())},
             "weight_map": {name: file for file, names in zip(files, groups, strict=True) for name in names}}
    (directory / INDEX).write_text(json.dumps(index, indent=2) + "\n")
    return [directory / file for file in files]


def has_weights(directory: Path) -> bool:
    return (directory / SINGLE).is_file() or (directory / INDEX).is_file()


def read_index(directory: Path) -> dict[Path, list[str]]:
    """Shard file -> the tensor names it holds, from ``directory``'s index; ShardError if the index is unusable."""
    path = directory / INDEX
    size = path.stat().st_size
    if size > MAX_INDEX_BYTES:
        raise ShardError(f"{INDEX} has {format_bytes(size)}, more than the limit of {format_bytes(MAX_INDEX_BYTES)}")
    try:
        weight_map = json.loads(path.read_bytes()).get("weight_map")
    except (ValueError, AttributeError):
        raise ShardError(f"{INDEX} is not a JSON object") from None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ShardError(f"{INDEX} has no weight_map (tensor name -> file)")
    files: dict[Path, list[str]] = {}
    for name, file in weight_map.items():
        if not isinstance(file, str) or not SHARD.fullmatch(file):
            raise ShardError(f"{INDEX}: {name!r:.60} is mapped to {file!r:.60}, not a shard file name "
                             "(model-NNNNN-of-NNNNN.safetensors)")
        files.setdefault(directory / file, []).append(name)
    missing = [p.name for p in files if not p.is_file()]
    if missing:
        raise ShardError(f"{INDEX} names {', '.join(sorted(missing)[:3])}, missing in {directory}")
    return files
