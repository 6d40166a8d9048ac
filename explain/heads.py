"""Read-outs of attention maps for the Translate page: per-head statistics and word-level merging.

They summarise the weights the model returned; they never change them.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from model.tokenizer import SPECIAL_PIECES


def _diagonal_keys(q_len: int, k_len: int) -> torch.Tensor:
    """The key each query would hit on the (proportional) diagonal: q for self-attention, q*(K-1)/(Q-1) else."""
    if q_len == k_len or q_len == 1:
        return torch.arange(q_len).clamp(max=k_len - 1)
    return torch.round(torch.arange(q_len) * (k_len - 1) / (q_len - 1)).long()


def row_entropy(w: torch.Tensor) -> torch.Tensor:
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
    entropy = row_entropy(w)  # [L, H, Q]
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


def piece_head_statistics(weights: torch.Tensor, key_pieces: Sequence[str]) -> dict[str, torch.Tensor]:
    """head_statistics of one sentence's map [L, H, Q, K] at piece level, every query row counted and the
    special pieces (<s>, </s>, <pad>, <unk>) among ``key_pieces`` counted as special."""
    special = torch.tensor([p in SPECIAL_PIECES.values() for p in key_pieces])  # [K]
    valid = torch.ones(weights.size(-2), dtype=torch.bool)  # [Q]
    return head_statistics(weights.float().cpu(), special, valid)


def merge_to_words(weights: torch.Tensor, query_groups: list[list[int]], key_groups: list[list[int]]) -> torch.Tensor:
    """Piece-level attention [..., Q, K] -> word-level [..., Qw, Kw]: sum over a word's key pieces (the
    attention it receives), mean over its query pieces (rows stay distributions summing to 1)."""
    weights = weights.float().cpu()
    q_len, k_len = weights.shape[-2:]
    key_merge = torch.zeros(k_len, len(key_groups), dtype=weights.dtype)  # [K, Kw]
    for j, group in enumerate(key_groups):
        key_merge[group, j] = 1.0
    query_merge = torch.zeros(len(query_groups), q_len, dtype=weights.dtype)  # [Qw, Q]
    for i, group in enumerate(query_groups):
        query_merge[i, group] = 1.0 / len(group)
    return query_merge @ weights @ key_merge  # [..., Qw, Kw]


