"""Label smoothing (paper section 5.4) as the target distribution the loss compares against.

Training calls ``F.cross_entropy(..., label_smoothing=eps)``; this function spells out the
distribution that PyTorch uses, (1 - eps) * one_hot + eps / V, so the UI can draw it and a test can
check the two agree.
"""
from __future__ import annotations

import torch


def smoothed_targets(target: torch.Tensor, vocab_size: int, epsilon: float) -> torch.Tensor:
    """target ids [N] -> target distributions [N, V]: 1 - eps + eps/V on the true token, eps/V elsewhere."""
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    dist = torch.full((target.numel(), vocab_size), epsilon / vocab_size)  # [N, V]
    dist[torch.arange(target.numel()), target.flatten()] += 1.0 - epsilon
    return dist
