"""Where the model runs: CUDA when present, the CPU otherwise, unless the caller says."""
from __future__ import annotations

import torch


def resolve_device(choice: str | None = "auto") -> torch.device:
    """'auto' (or None) -> cuda if available else cpu; 'cpu' / 'cuda' / 'cuda:N' as given."""
    if choice in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(choice)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA was requested but no CUDA device is available")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {choice!r}: use auto, cpu or cuda")
    return device


def describe(device: torch.device) -> str:
    """Human-readable device name for the UI and the CLI."""
    if device.type == "cuda":
        return f"CUDA ({torch.cuda.get_device_name(device)})"
    return f"CPU ({torch.get_num_threads()} threads)"
