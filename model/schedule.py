"""The paper's learning-rate schedule (section 5.3): linear warm-up, then inverse square root decay."""
from __future__ import annotations


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), for step >= 1.

    Rises linearly for ``warmup`` steps, peaks at factor * (d_model * warmup)^-0.5, then decays as
    1/sqrt(step). The paper used warmup 4000 (of 100k steps) and factor 1; a small corpus wants a
    shorter warm-up.
    """
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
