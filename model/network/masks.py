"""Every attention mask in the project is built here.

One convention: bool tensors, ``True`` = this query may attend to this key. Masks broadcast
against scores of shape [B, H, Q, K] and are combined with ``&``.
"""
from __future__ import annotations

import torch


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys that are real tokens. ids [B, S] -> mask [B, 1, 1, S]."""
    return (ids != pad_id)[:, None, None, :]  # [B, 1, 1, S]


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Position t may attend to positions <= t (no peeking at the future). -> [1, 1, T, T]."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]  # [1, 1, T, T]


def target_padding_mask(tgt_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys of decoder inputs that are real tokens. Position 0 is the start token, never padding, even when it is
    the pad id (Marian's decoder starts with <pad>). tgt_ids [B, T] -> [B, 1, 1, T]."""
    mask = padding_mask(tgt_ids, pad_id)  # [B, 1, 1, T]
    mask[..., 0] = True
    return mask


def decoder_self_mask(tgt_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Target padding AND causal. tgt_ids [B, T] (decoder inputs: the start token first) -> [B, 1, T, T]."""
    return target_padding_mask(tgt_ids, pad_id) & causal_mask(tgt_ids.size(1), tgt_ids.device)  # [B, 1, T, T]
