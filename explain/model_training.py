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

from model.network.transformer import Transformer, count_parameters


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
    """(block, number of parameters) for every block; the counts add up to the whole model, whatever its family
    (learned positions, embedding norms, a relative bias or an output layer of its own have rows of their own)."""
    embed, norms = model.embed, "RMSNorms" if model.config.norm == "rms" else "LayerNorms"
    rows = [("Shared embedding" + (" / output layer" if model.output is None else ""), embed.token.weight.numel())]
    if embed.learned is not None:
        rows.append(("Learned positions (encoder + decoder)", count_parameters(embed.learned)))
    if embed.norms is not None:
        rows.append(("Embedding LayerNorms", count_parameters(embed.norms)))
    for i, layer in enumerate(model.encoder.layers, 1):
        rows += [(f"Encoder layer {i} · self-attention", count_parameters(layer.self_attn)),
                 (f"Encoder layer {i} · feed-forward", count_parameters(layer.feed_forward)),
                 (f"Encoder layer {i} · {norms}", count_parameters(layer.sublayers))]
    for i, dec_layer in enumerate(model.decoder.layers, 1):
        rows += [(f"Decoder layer {i} · masked self-attention", count_parameters(dec_layer.self_attn)),
                 (f"Decoder layer {i} · cross-attention", count_parameters(dec_layer.cross_attn)),
                 (f"Decoder layer {i} · feed-forward", count_parameters(dec_layer.feed_forward)),
                 (f"Decoder layer {i} · {norms}", count_parameters(dec_layer.sublayers))]
    relative = sum(count_parameters(stack.relative_bias) for stack in (model.encoder, model.decoder)
                   if stack.relative_bias is not None)
    if relative:
        rows.append(("Relative position bias (encoder + decoder)", relative))
    final = count_parameters(model.encoder.final_norm) + count_parameters(model.decoder.final_norm)
    if final:
        rows.append((f"Final {norms} (pre-norm only)", final))
    if model.final_logits_bias is not None:
        rows.append(("Final logits bias", model.final_logits_bias.numel()))
    if model.output is not None:
        rows.append(("Output layer (its own)", model.output.weight.numel()))
    return rows


