"""Small computations the concept pages show, kept here so the app only draws (design: no tensor math in app/).

Each function illustrates one claim of the paper on real numbers: relative offsets of the
sinusoidal encoding are a linear map, softmax turns scores into weights, hard attention picks one
value, and unscaled dot products saturate the softmax as d_k grows.
"""
from __future__ import annotations

import math

import torch

from .positional import sinusoidal_encoding
from .score_functions import hard_attention


def pe_similarity(max_len: int, d_model: int) -> torch.Tensor:
    """Dot products of every pair of positional encodings, PE PE^T. -> [max_len, max_len].

    Depends only on the offset between the two positions (sum of cos(w_i * offset)), which is why
    the band structure is the same along every diagonal.
    """
    pe = sinusoidal_encoding(max_len, d_model)  # [P, D]
    return pe @ pe.T  # [P, P]


def offset_map(d_model: int, offset: int) -> torch.Tensor:
    """The matrix M_k with PE[p + k] = PE[p] @ M_k for every position p. -> [D, D].

    Block diagonal: one 2x2 rotation by angle w_i * k per (sin, cos) pair, from
    sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b - sin a sin b.
    """
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    angle = inv_freq * offset  # [D/2]
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx + 1, idx] = torch.cos(angle), torch.sin(angle)
    m[idx, idx + 1], m[idx + 1, idx + 1] = -torch.sin(angle), torch.cos(angle)
    return m


def offset_error(max_len: int, d_model: int, offset: int) -> float:
    """Largest |PE[p + k] - PE[p] @ M_k| over all positions that fit: float32 rounding, about 1e-6."""
    pe = sinusoidal_encoding(max_len, d_model).double()  # [P, D]
    if not 0 < offset < max_len:
        raise ValueError(f"offset must be in [1, {max_len}), got {offset}")
    shifted = pe[:-offset] @ offset_map(d_model, offset)  # [P - k, D]
    return float((pe[offset:] - shifted).abs().max())


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Weights from scores along the last axis (the step every score function in the table ends with)."""
    return scores.double().softmax(dim=-1)


def soft_vs_hard(weights: torch.Tensor, values: torch.Tensor) -> dict[str, torch.Tensor]:
    """Soft attention (the given weights [K]) vs hard attention (one-hot of their argmax [K]), and what each
    passes on: the weighted sum of values [K, d] -> [d]. Keys "soft", "hard", "soft_output", "hard_output"."""
    hard = hard_attention(weights)
    return {"soft": weights, "hard": hard, "soft_output": weights.to(values.dtype) @ values,
            "hard_output": hard.to(values.dtype) @ values}


def smoothed_loss_floor(vocab_size: int, epsilon: float) -> float:
    """Lowest label-smoothed cross-entropy any model can reach: the entropy (nats) of the smoothed target
    (1 - eps + eps/V on the true piece, eps/V on the V - 1 others)."""
    if not 0.0 <= epsilon < 1.0 or vocab_size < 2:
        raise ValueError(f"need 0 <= epsilon < 1 and vocab_size >= 2, got {epsilon}, {vocab_size}")
    low, high = epsilon / vocab_size, 1.0 - epsilon + epsilon / vocab_size
    return -(high * math.log(high) + (vocab_size - 1) * (low * math.log(low) if low > 0 else 0.0))


def sample_softmax(d_k: int, n_keys: int = 10, seed: int = 0) -> dict[str, torch.Tensor]:
    """One query against ``n_keys`` keys with unit-variance entries (so q.k has variance d_k).

    Returns "unscaled" softmax(q K^T) and "scaled" softmax(q K^T / sqrt(d_k)), each [n_keys]: the
    same sample for every caller, so a slider over d_k shows the effect of the width alone.
    """
    if d_k < 1 or n_keys < 1:
        raise ValueError(f"need d_k >= 1 and n_keys >= 1, got {d_k}, {n_keys}")
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
    scores = k @ q  # [n_keys]
    return {"unscaled": scores.softmax(-1), "scaled": (scores / math.sqrt(d_k)).softmax(-1)}
