"""AttentionTrace: every attention weight one forward pass used, returned as data.

The model is shared by every browser session, so nothing is stored on modules or captured with
hooks: a forward with ``return_attention=True`` builds one of these and hands it back.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

KINDS = ("enc_self", "dec_self", "cross")
KIND_LABELS = {
    "enc_self": "Encoder self-attention",
    "dec_self": "Decoder self-attention (masked)",
    "cross": "Encoder-decoder (cross) attention",
}


@dataclass
class AttentionTrace:
    """Per layer, per head attention of one forward pass.

    Weights (post-softmax, pre-dropout): enc_self [B, H, S, S], dec_self [B, H, T, T],
    cross [B, H, T, S], one tensor per layer. Scores are the matching softmax inputs
    (QK^T / sqrt(d_k), masked with finfo.min). src_mask [B, 1, 1, S] and tgt_mask [B, 1, T, T]
    are the bool masks applied (True = may attend).
    """

    enc_self: list[torch.Tensor]
    dec_self: list[torch.Tensor]
    cross: list[torch.Tensor]
    enc_self_scores: list[torch.Tensor]
    dec_self_scores: list[torch.Tensor]
    cross_scores: list[torch.Tensor]
    src_mask: torch.Tensor
    tgt_mask: torch.Tensor

    def weights(self, kind: str) -> torch.Tensor:
        """All layers of one kind stacked: [L, B, H, Q, K]."""
        return torch.stack(getattr(self, _check(kind)))

    def scores(self, kind: str) -> torch.Tensor:
        """Softmax inputs of one kind stacked: [L, B, H, Q, K]."""
        return torch.stack(getattr(self, _check(kind) + "_scores"))

    def mask(self, kind: str) -> torch.Tensor:
        """The bool mask a kind used, expanded to [B, 1, Q, K]."""
        kind = _check(kind)
        src, tgt = self.src_mask, self.tgt_mask
        if kind == "enc_self":
            return src.expand(-1, -1, src.size(-1), -1)
        if kind == "dec_self":
            return tgt
        return src.expand(-1, -1, tgt.size(-1), -1)

    @property
    def n_layers(self) -> dict[str, int]:
        return {kind: len(getattr(self, kind)) for kind in KINDS}


def _check(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {KINDS}")
    return kind
