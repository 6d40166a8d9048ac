"""The alignment score functions in the study notes, side by side on the same vectors, and the
saturation argument for scaling by sqrt(d_k).

Only scaled dot-product attention is trained in our model; the weight matrices of the additive,
general and location-based scores are random (seeded) here, to show their form, not trained behaviour.
"""
from __future__ import annotations

import math

import torch


def _random(shape: tuple[int, ...], generator: torch.Generator, fan_in: int) -> torch.Tensor:
    return torch.randn(*shape, generator=generator) / math.sqrt(fan_in)


def compare_scores(query: torch.Tensor, keys: torch.Tensor, seed: int = 0) -> dict[str, torch.Tensor]:
    """Scores [K] of query s [d] against keys h_i [K, d] under each function:
    additive v^T tanh(W [s; h_i]) (Bahdanau), general s^T W h_i, dot s^T h_i (Luong), scaled dot s^T h_i / sqrt(d)."""
    d = query.numel()
    g = torch.Generator().manual_seed(seed)
    w_add, v_add, w_gen = _random((d, 2 * d), g, 2 * d), _random((d,), g, d), _random((d, d), g, d)
    pairs = torch.cat([query.expand_as(keys), keys], dim=-1)  # [K, 2d]
    return {
        "additive": torch.tanh(pairs @ w_add.T) @ v_add,  # [K]
        "general": keys @ (w_gen.T @ query),
        "dot": keys @ query,
        "scaled dot": keys @ query / math.sqrt(d),
    }


def location_based(query: torch.Tensor, n_keys: int, seed: int = 0) -> torch.Tensor:
    """Luong's location-based alignment softmax(W_a s): weights [K] from the query alone, ignoring the keys."""
    g = torch.Generator().manual_seed(seed + 1)
    return (_random((n_keys, query.numel()), g, query.numel()) @ query).softmax(-1)


def hard_attention(weights: torch.Tensor) -> torch.Tensor:
    """Hard (local) attention picks one key: the one-hot of the soft weights' argmax. [..., K] -> [..., K]."""
    return torch.nn.functional.one_hot(weights.argmax(-1), weights.size(-1)).to(weights.dtype)


def softmax_saturation(d_ks: list[int], n_keys: int = 10, samples: int = 200, seed: int = 0) -> dict[str, torch.Tensor]:
    """Why divide by sqrt(d_k): with unit-variance q, k the dot product has variance d_k, so unscaled
    softmax saturates (entropy -> 0, max weight -> 1) and its gradient vanishes as d_k grows.

    Returns per d_k (tensors [len(d_ks)]): entropy, max weight and mean Frobenius norm of the softmax
    Jacobian diag(p) - p p^T, each with and without scaling.
    """
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {f"{m}_{s}": [] for m in ("entropy", "max_weight", "grad_norm")
                                   for s in ("scaled", "unscaled")}
    for d_k in d_ks:
        q = torch.randn(samples, 1, d_k, generator=g, dtype=torch.float64)
        k = torch.randn(samples, n_keys, d_k, generator=g, dtype=torch.float64)
        dots = (q * k).sum(-1)  # [samples, K]
        for name, scores in (("scaled", dots / math.sqrt(d_k)), ("unscaled", dots)):
            p = scores.softmax(-1)  # [samples, K]
            entropy = -(p * p.clamp_min(1e-300).log()).sum(-1)
            jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # [samples, K, K]
            out[f"entropy_{name}"].append(float(entropy.mean()))
            out[f"max_weight_{name}"].append(float(p.max(-1).values.mean()))
            out[f"grad_norm_{name}"].append(float(jacobian.flatten(1).norm(dim=-1).mean()))
    return {key: torch.tensor(values) for key, values in out.items()}
