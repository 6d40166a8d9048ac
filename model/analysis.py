"""Read-outs of attention maps and of the model itself, for the UI: head statistics, word-level merging,
the parts of the input embedding, parameter counts per block, and how spread out a model's attention is."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .transformer import Transformer


def _diagonal_keys(q_len: int, k_len: int) -> torch.Tensor:
    """The key each query would hit on the (proportional) diagonal: q for self-attention, q*(K-1)/(Q-1) else."""
    if q_len == k_len or q_len == 1:
        return torch.arange(q_len).clamp(max=k_len - 1)
    return torch.round(torch.arange(q_len) * (k_len - 1) / (q_len - 1)).long()


def _row_entropy(w: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each attention row [..., K] -> [...]; masked (exactly 0) weights add nothing."""
    return -(w * torch.where(w > 0, w.log(), torch.zeros_like(w))).sum(-1)


def head_statistics(weights: torch.Tensor, special_keys: torch.Tensor, valid_queries: torch.Tensor
                    ) -> dict[str, torch.Tensor]:
    """Summaries of every head, each [L, H], averaged over the valid query rows.

    weights [L, H, Q, K]; special_keys bool [K] (BOS/EOS/PAD); valid_queries bool [Q].
    entropy: nats (0 = all on one key, log K = uniform); mean_distance: expected |q - k|;
    diagonality: weight on the (proportional) diagonal; max_weight: the row's largest weight;
    special_share: weight on special tokens (a head "parking" on EOS is doing little).
    """
    w = weights.double()  # [L, H, Q, K]
    q_len, k_len = w.shape[-2:]
    rows = valid_queries.to(w.device)
    entropy = _row_entropy(w)  # [L, H, Q]
    distance = (torch.arange(q_len)[:, None] - torch.arange(k_len)[None]).abs().to(w)  # [Q, K]
    diagonal = w.gather(-1, _diagonal_keys(q_len, k_len).view(1, 1, q_len, 1).expand(*w.shape[:2], q_len, 1))[..., 0]
    per_row = {
        "entropy": entropy,
        "mean_distance": (w * distance).sum(-1),
        "diagonality": diagonal,
        "max_weight": w.max(-1).values,
        "special_share": w[..., special_keys.to(w.device)].sum(-1),
    }
    return {name: value[..., rows].mean(-1).float() for name, value in per_row.items()}


def merge_to_words(weights: torch.Tensor, query_groups: list[list[int]], key_groups: list[list[int]]) -> torch.Tensor:
    """Piece-level attention [..., Q, K] -> word-level [..., Qw, Kw]: sum over a word's key pieces (the
    attention it receives), mean over its query pieces (rows stay distributions summing to 1)."""
    q_len, k_len = weights.shape[-2:]
    key_merge = torch.zeros(k_len, len(key_groups), dtype=weights.dtype)  # [K, Kw]
    for j, group in enumerate(key_groups):
        key_merge[group, j] = 1.0
    query_merge = torch.zeros(len(query_groups), q_len, dtype=weights.dtype)  # [Qw, Q]
    for i, group in enumerate(query_groups):
        query_merge[i, group] = 1.0 / len(group)
    return query_merge @ weights @ key_merge  # [..., Qw, Kw]


@torch.no_grad()
def embedding_parts(model: Transformer, ids: list[int]) -> dict[str, torch.Tensor]:
    """What the first layer reads, before dropout: token [L, D] = E[ids] * sqrt(d_model), positional [L, D]
    = PE[0..L-1], and their sum [L, D]."""
    index = torch.tensor(ids, device=model.embed.token.weight.device)
    token = model.embed.token(index) * model.embed.scale  # [L, D]
    positional = model.embed.positional[: len(ids)]  # [L, D]
    return {"token": token.cpu(), "positional": positional.cpu(), "sum": (token + positional).cpu()}


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def parameter_counts(model: Transformer) -> list[tuple[str, int]]:
    """(block, number of parameters) for every block; the counts add up to the whole model."""
    rows = [("Shared embedding / output layer", model.embed.token.weight.numel())]
    for i, layer in enumerate(model.encoder.layers, 1):
        rows += [(f"Encoder layer {i} · self-attention", _count(layer.self_attn)),
                 (f"Encoder layer {i} · feed-forward", _count(layer.feed_forward)),
                 (f"Encoder layer {i} · LayerNorms", _count(layer.sublayers))]
    for i, layer in enumerate(model.decoder.layers, 1):
        rows += [(f"Decoder layer {i} · masked self-attention", _count(layer.self_attn)),
                 (f"Decoder layer {i} · cross-attention", _count(layer.cross_attn)),
                 (f"Decoder layer {i} · feed-forward", _count(layer.feed_forward)),
                 (f"Decoder layer {i} · LayerNorms", _count(layer.sublayers))]
    final = _count(model.encoder.final_norm) + _count(model.decoder.final_norm)
    if final:
        rows.append(("Final LayerNorms (pre-norm only)", final))
    return rows


def _entropy_fraction(weights: torch.Tensor, key_valid: torch.Tensor, query_valid: torch.Tensor
                      ) -> tuple[float, int]:
    """Sum and count of row entropies as fractions of log(number of keys), over valid query rows of
    sentences with at least two keys. weights [B, H, Q, K]; key_valid [B, K], query_valid [B, Q] bool."""
    w = weights.double()
    entropy = _row_entropy(w)  # [B, H, Q]
    n_keys = key_valid.sum(-1).double()  # [B]
    fraction = entropy / n_keys.clamp_min(2).log()[:, None, None]  # [B, H, Q]
    rows = (query_valid & (n_keys > 1)[:, None])[:, None, :].expand_as(fraction)  # [B, H, Q]
    return float(fraction[rows].sum()), int(rows.sum())


@torch.no_grad()
def attention_entropy(model: Transformer, pairs: Sequence[tuple[list[int], list[int]]], max_tokens: int = 4096
                      ) -> dict[str, list[float]]:
    """Per layer, the mean entropy of encoder self-attention and cross-attention rows as a fraction of the
    uniform row's (1 = spread evenly over every key, 0 = all weight on one key), teacher-forced on pairs.

    Why: the loss alone hides *how* a model fails. Cross-attention near 1 in every layer means the decoder
    reads only the average of the source (a language model that barely translates); encoder
    self-attention near 0 means every head copies one fixed token, so the encoder's positions look alike.
    """
    from .data import iterate_batches, token_batches

    was_training = model.training
    model.eval()
    device = model.embed.token.weight.device
    sums: dict[str, list[list[float]]] = {}
    for _, batch in iterate_batches(pairs, token_batches(pairs, max_tokens), model.config.pad_id, model.config.bos_id):
        src, tgt_in = batch.src.to(device), batch.tgt_in.to(device)
        _, trace = model(src, tgt_in, return_attention=True)
        src_valid, tgt_valid = src != model.config.pad_id, batch.tgt_out.to(device) != model.config.pad_id
        for kind, layers, queries in (("encoder_self", trace.enc_self, src_valid), ("cross", trace.cross, tgt_valid)):
            acc = sums.setdefault(kind, [[0.0, 0] for _ in layers])
            for i, weights in enumerate(layers):
                total, count = _entropy_fraction(weights, src_valid, queries)
                acc[i][0] += total
                acc[i][1] += count
    model.train(was_training)
    return {kind: [round(total / max(count, 1), 3) for total, count in layers] for kind, layers in sums.items()}
