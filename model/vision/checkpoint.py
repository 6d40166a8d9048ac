"""Vision checkpoints: one directory with model.safetensors and config.json ({"format", "kind", "model", "meta"}).

Validated like the text checkpoints (model.checkpoints.files, whose CheckpointError and file names are shared): a
missing file, bad JSON, an unknown kind, a bad config or weights that do not fit become a CheckpointError
naming the problem. These files are small and shipped by this project: the checks are plain, after reading.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save_file
from torch import nn

from model.checkpoints.files import CONFIG, WEIGHTS
from model.checkpoints.header import CheckpointError
from model.vision.config import SwinConfig, ViTConfig
from model.vision.swin import Swin
from model.vision.vit import ViT

FORMAT_VERSION = 1
MAX_WEIGHTS_BYTES = 16 * 2**20  # the shipped vision models are a few hundred kB
MAX_CONFIG_BYTES = 2**20
KINDS: dict[str, tuple[type[ViTConfig] | type[SwinConfig], type]] = {"vit": (ViTConfig, ViT),
                                                                     "swin": (SwinConfig, Swin)}
VisionConfig = ViTConfig | SwinConfig


@dataclass
class VisionCheckpoint:
    model: ViT | Swin
    config: VisionConfig
    kind: str
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def kind_of(model: nn.Module) -> str:
    for kind, (_, cls) in KINDS.items():
        if isinstance(model, cls):
            return kind
    raise TypeError(f"not a vision model: {type(model).__name__}")


def save_vision(model: ViT | Swin, directory: str | Path, dtype: torch.dtype = torch.float32,
                meta: dict[str, Any] | None = None) -> Path:
    """Write model.safetensors (in ``dtype``; float16 halves what ships) and config.json."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(directory / WEIGHTS), metadata={"format": str(FORMAT_VERSION)})
    payload = {"format": FORMAT_VERSION, "kind": kind_of(model), "model": model.config.to_dict(), "meta": meta or {}}
    (directory / CONFIG).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return directory


def _read_config(directory: Path) -> tuple[str, VisionConfig, dict[str, Any]]:
    path = directory / CONFIG
    if not path.is_file():
        raise CheckpointError(f"{CONFIG} is missing in {directory}")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise CheckpointError(f"{CONFIG} is larger than {MAX_CONFIG_BYTES // 2**10} kB")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        kind = payload["kind"]
        if kind not in KINDS:
            raise CheckpointError(f"{CONFIG}: unknown model kind {kind!r}; expected one of {sorted(KINDS)}")
        config = KINDS[kind][0].from_dict(payload["model"])
        meta = payload.get("meta", {})
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{CONFIG} is not valid JSON ({exc})") from None
    except (KeyError, TypeError) as exc:
        raise CheckpointError(f"{CONFIG} has no usable 'kind' and 'model' sections ({exc})") from None
    except CheckpointError:
        raise
    except ValueError as exc:
        raise CheckpointError(f"{CONFIG}: {exc}") from None
    return kind, config, meta if isinstance(meta, dict) else {}


def read_weights(data: bytes, model: nn.Module) -> dict[str, torch.Tensor]:
    """Parse safetensors bytes and check they fit ``model`` name for name and shape for shape, finite floats."""
    try:
        weights = load_safetensors_bytes(data)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{WEIGHTS} is not a valid safetensors file ({exc})") from None
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{WEIGHTS} does not match the config: missing {missing[:5]}, "
                              f"unexpected {unexpected[:5]}")
    for name, tensor in weights.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise CheckpointError(f"{WEIGHTS}: {name} has shape {tuple(tensor.shape)}, "
                                  f"the config needs {tuple(expected[name].shape)}")
        if not tensor.is_floating_point() or not torch.isfinite(tensor).all():
            raise CheckpointError(f"{WEIGHTS}: {name} must hold finite floating-point values ({tensor.dtype})")
    return {k: v.float() for k, v in weights.items()}


def load_vision(directory: str | Path, device: torch.device | str = "cpu") -> VisionCheckpoint:
    """Load and validate a vision checkpoint; the model comes back in eval mode on ``device``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    kind, config, meta = _read_config(directory)
    weights_path = directory / WEIGHTS
    if not weights_path.is_file():
        raise CheckpointError(f"{WEIGHTS} is missing in {directory}")
    if weights_path.stat().st_size > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{WEIGHTS} is larger than {MAX_WEIGHTS_BYTES // 2**20} MB")
    model = KINDS[kind][1](config)
    model.load_state_dict(read_weights(weights_path.read_bytes(), model), strict=True)
    return VisionCheckpoint(model=model.to(device).eval(), config=config, kind=kind, meta=meta, path=directory)
