"""Where the model runs: CUDA when present, the CPU otherwise, unless the caller says."""
from __future__ import annotations

import re

import torch

DEVICE = re.compile(r"auto|cpu|cuda(:\d{1,3})?")


def resolve_device(choice: str | None = "auto") -> torch.device:
    """'auto' (or None) -> cuda if available else cpu; 'cpu' / 'cuda' / 'cuda:N' as given. Anything else, or a
    CUDA device this machine lacks, is a ValueError whose message names the choices."""
    if choice in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(choice, str) or not DEVICE.fullmatch(choice):
        raise ValueError(f"unsupported device {str(choice)[:40]!r}: use auto, cpu, cuda or cuda:N")
    device = torch.device(choice)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA was requested but no CUDA device is available")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"no CUDA device {device.index}: this machine has {torch.cuda.device_count()}")
    return device


def describe(device: torch.device) -> str:
    """Human-readable device name for the UI and the CLI."""
    if device.type == "cuda":
        return f"CUDA ({torch.cuda.get_device_name(device)})"
    threads = torch.get_num_threads()
    return f"CPU ({threads} thread{'s' if threads != 1 else ''})"
