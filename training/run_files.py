"""The files of a run directory besides its checkpoints: Adam's state (safetensors + JSON, no pickle), the CSV logs
(appended row by row, cut back to the checkpoint a resume starts from), the kept epochs for averaging, and the run's
settings as a recipe file.

    <out>/recipe.toml     the settings of the run's latest launch (python -m training.train --recipe <out>/recipe.toml)
    <out>/log.csv         every step;  <out>/epochs.csv: every epoch
    <out>/last/           checkpoint + optimizer.safetensors + optimizer.json + state.json
    <out>/epochs/<n>      the last --keep-epochs epochs
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from model.checkpoints.files import save_checkpoint
from model.checkpoints.shards import SHARD_BYTES
from model.network.transformer import Transformer
from model.tokenization.joint import Tokenizer

from .config import TrainConfig, to_toml

RECIPE_FILE = "recipe.toml"


def save_recipe(config: TrainConfig, out: Path) -> None:
    """The run's settings as <out>/recipe.toml, a recipe file that reruns (resumes) it."""
    (out / RECIPE_FILE).write_text(f"# the settings of the latest launch of {out}\n" + to_toml(config))


def save_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Adam's moments as safetensors and its hyper-parameters as JSON: no pickle anywhere."""
    state = optimizer.state_dict()
    tensors = {f"{pid}.{key}": (v if torch.is_tensor(v) else torch.tensor(v)).contiguous()
               for pid, entry in state["state"].items() for key, v in entry.items()}
    save_file(tensors, str(directory / "optimizer.safetensors"))
    (directory / "optimizer.json").write_text(json.dumps(state["param_groups"]))


def load_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    tensors = load_file(str(directory / "optimizer.safetensors"))
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": json.loads((directory / "optimizer.json").read_text())})


def append_csv(path: Path, fields: list[str], row: dict[str, Any]) -> None:
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerow(row)


def truncate_log(path: Path, key: str, limit: int) -> None:
    """Drop log rows written after the checkpoint we resume from (they will be redone)."""
    if not path.exists():
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r[key]) <= limit]
        fields = list(rows[0].keys()) if rows else None
    if fields is None:
        path.unlink()
        return
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def keep_epoch(model: Transformer, tokenizer: Tokenizer, directory: Path, epoch: int, keep: int,
               meta: dict[str, Any]) -> None:
    """Save this epoch's weights as directory/<epoch> and drop epochs older than the last ``keep``."""
    if keep <= 0:
        return
    save_checkpoint(model, tokenizer, directory / str(epoch), meta=meta, max_shard_bytes=SHARD_BYTES)
    for old in directory.iterdir():
        if old.name.isdigit() and int(old.name) <= epoch - keep:
            shutil.rmtree(old)
