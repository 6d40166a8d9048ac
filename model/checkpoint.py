"""Checkpoints: one directory with safetensors weights, a JSON config and the tokenizer model.

safetensors carries no code, so loading a file a user hands us cannot execute anything; every
problem (missing file, bad JSON, wrong names or shapes, vocabulary mismatch) becomes a
CheckpointError whose message names it.
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

from .config import ModelConfig
from .tokenizer import Tokenizer, TokenizerError
from .transformer import Transformer

WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.model"
FORMAT_VERSION = 1
MAX_WEIGHTS_BYTES = 400 * 2**20  # the shipped model is ~15 MB; refuse to read anything absurd into memory


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message says what is wrong."""


@dataclass
class Checkpoint:
    model: Transformer
    tokenizer: Tokenizer
    config: ModelConfig
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def save_checkpoint(model: Transformer, tokenizer: Tokenizer, directory: str | Path,
                    dtype: torch.dtype = torch.float32, meta: dict[str, Any] | None = None) -> Path:
    """Write model.safetensors (in ``dtype``, e.g. float16 to ship), config.json and tokenizer.model."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(directory / WEIGHTS), metadata={"format": str(FORMAT_VERSION)})
    payload = {"format": FORMAT_VERSION, "model": model.config.to_dict(), "meta": meta or {}}
    (directory / CONFIG).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    (directory / TOKENIZER).write_bytes(tokenizer.model_proto)
    return directory


Number = (int, float)
# Training facts the app and the model card read from meta, with the types they need. A checkpoint's
# meta is free-form JSON (an uploaded one says whatever its author wrote), so anything else is dropped.
META_TYPES: dict[str, tuple[type, ...]] = {
    "task": (str,), "steps": (int,), "epochs": (int,), "train_seconds": Number, "warmup": (int,),
    "lr_factor": Number, "max_tokens": (int,), "label_smoothing": Number, "bf16": (bool,),
    "valid_loss": Number, "valid_bleu": Number, "averaged": (list,), "continued_from": (dict,),
}
CONTINUED_TYPES = {"step": (int,), "epoch": (int,), "lr_factor": Number, "warmup": (int,), "max_tokens": (int,),
                   "bf16": (bool,), "earlier": (dict,)}


def _typed(values: dict, types: dict[str, tuple[type, ...]]) -> dict:
    """The entries whose type is the expected one (bool is not a number here)."""
    return {k: v for k, v in values.items() if k in types and isinstance(v, types[k])
            and not (isinstance(v, bool) and bool not in types[k])}


def clean_meta(meta: Any) -> dict[str, Any]:
    """meta restricted to META_TYPES; each continued_from link of the chain to CONTINUED_TYPES."""
    meta = _typed(meta, META_TYPES) if isinstance(meta, dict) else {}
    link, parent = meta.get("continued_from"), meta
    while link is not None:
        parent["continued_from" if parent is meta else "earlier"] = link = _typed(link, CONTINUED_TYPES)
        parent, link = link, link.get("earlier")
    return meta


def read_config(directory: Path) -> tuple[ModelConfig, dict[str, Any]]:
    path = directory / CONFIG
    if not path.is_file():
        raise CheckpointError(f"{CONFIG} is missing in {directory}")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        return ModelConfig.from_dict(payload["model"]), clean_meta(payload.get("meta", {}))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{CONFIG} is not valid JSON ({exc})") from None
    except (KeyError, TypeError) as exc:
        raise CheckpointError(f"{CONFIG} has no usable 'model' section ({exc})") from None
    except ValueError as exc:
        raise CheckpointError(f"{CONFIG}: {exc}") from None


def read_weights(data: bytes, model: Transformer) -> dict[str, torch.Tensor]:
    """Parse safetensors bytes and check they fit ``model`` name for name and shape for shape."""
    try:
        weights = load_safetensors_bytes(data)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{WEIGHTS} is not a valid safetensors file ({exc})") from None
    expected = model.state_dict()
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{WEIGHTS} does not match the config: missing {missing[:5]}"
                              f"{'...' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}"
                              f"{'...' if len(unexpected) > 5 else ''}")
    for name, tensor in weights.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise CheckpointError(f"{WEIGHTS}: {name} has shape {tuple(tensor.shape)}, "
                                  f"the config needs {tuple(expected[name].shape)}")
        if not tensor.is_floating_point():
            raise CheckpointError(f"{WEIGHTS}: {name} is {tensor.dtype}, expected floating point")
        if not torch.isfinite(tensor).all():
            raise CheckpointError(f"{WEIGHTS}: {name} contains NaN or infinite values")
    return {k: v.float() for k, v in weights.items()}


def load_checkpoint(directory: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    """Load and validate a checkpoint directory; the model comes back in eval mode on ``device``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    config, meta = read_config(directory)
    try:
        tokenizer = Tokenizer.load(directory / TOKENIZER)
    except TokenizerError as exc:
        raise CheckpointError(f"{TOKENIZER}: {exc}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"vocabulary mismatch: the tokenizer has {tokenizer.vocab_size} pieces, "
                              f"the model config says {config.vocab_size}")
    weights_path = directory / WEIGHTS
    if not weights_path.is_file():
        raise CheckpointError(f"{WEIGHTS} is missing in {directory}")
    if weights_path.stat().st_size > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{WEIGHTS} is larger than {MAX_WEIGHTS_BYTES // 2**20} MB")
    model = Transformer(config)
    model.load_state_dict(read_weights(weights_path.read_bytes(), model), strict=True)
    return Checkpoint(model=model.to(device).eval(), tokenizer=tokenizer, config=config, meta=meta, path=directory)
