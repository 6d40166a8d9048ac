"""The Model and training page: label smoothing's target distribution and its loss floor, and where the
parameters sit.

Training calls ``F.cross_entropy(..., label_smoothing=eps)``; ``smoothed_targets`` spells out the
distribution that PyTorch uses, (1 - eps) * one_hot + eps / V, so the page can draw it and a test can
check the two agree.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from model.transformer import Transformer, count_parameters


def smoothed_targets(target: torch.Tensor | Sequence[int], vocab_size: int, epsilon: float) -> torch.Tensor:
    """target ids [N] -> target distributions [N, V]: 1 - eps + eps/V on the true token, eps/V elsewhere."""
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    target = torch.as_tensor(target)
    dist = torch.full((target.numel(), vocab_size), epsilon / vocab_size)  # [N, V]
    dist[torch.arange(target.numel()), target.flatten()] += 1.0 - epsilon
    return dist


def smoothed_loss_floor(vocab_size: int, epsilon: float) -> float:
    """Lowest label-smoothed cross-entropy any model can reach: the entropy (nats) of the smoothed target
    (1 - eps + eps/V on the true piece, eps/V on the V - 1 others)."""
    if not 0.0 <= epsilon < 1.0 or vocab_size < 2:
        raise ValueError(f"need 0 <= epsilon < 1 and vocab_size >= 2, got {epsilon}, {vocab_size}")
    low, high = epsilon / vocab_size, 1.0 - epsilon + epsilon / vocab_size
    return -(high * math.log(high) + (vocab_size - 1) * (low * math.log(low) if low > 0 else 0.0))


def parameter_counts(model: Transformer) -> list[tuple[str, int]]:
    """(block, number of parameters) for every block; the counts add up to the whole model."""
    rows = [("Shared embedding / output layer", model.embed.token.weight.numel())]
    for i, layer in enumerate(model.encoder.layers, 1):
        rows += [(f"Encoder layer {i} · self-attention", count_parameters(layer.self_attn)),
                 (f"Encoder layer {i} · feed-forward", count_parameters(layer.feed_forward)),
                 (f"Encoder layer {i} · LayerNorms", count_parameters(layer.sublayers))]
    for i, layer in enumerate(model.decoder.layers, 1):
        rows += [(f"Decoder layer {i} · masked self-attention", count_parameters(layer.self_attn)),
                 (f"Decoder layer {i} · cross-attention", count_parameters(layer.cross_attn)),
                 (f"Decoder layer {i} · feed-forward", count_parameters(layer.feed_forward)),
                 (f"Decoder layer {i} · LayerNorms", count_parameters(layer.sublayers))]
    final = count_parameters(model.encoder.final_norm) + count_parameters(model.decoder.final_norm)
    if final:
        rows.append(("Final LayerNorms (pre-norm only)", final))
    if model.final_logits_bias is not None:
        rows.append(("Final logits bias (Marian)", model.final_logits_bias.numel()))
    return rows


