"""Guided alignment of copies (Garg et al., 2019, "Jointly Learning to Align and Translate with Transformer
Models"): one cross-attention head is taught to look at the source piece the decoder is about to copy.

A name or a number that German writes as English does is a piece standing on both sides of a pair. Where the
decoder's next piece is such a piece, the supervised head should put its weight on that piece's place(s) in the
source; the extra loss is -log of the weight it puts there, times a small factor, added to the cross-entropy.
Other target positions are left free. The head becomes a pointer the decoder can read a copy from, and one a
lecture can point at on the Heads page. No external aligner is needed: a copy aligns itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from model.tokenization.pieces import SPECIAL_PIECES


@dataclass(frozen=True)
class CopyAlignment:
    """Which head is supervised and how much its loss weighs. ``layer`` and ``head`` count from 0."""

    weight: float  # the alignment loss's factor against the cross-entropy (Garg et al.: 0.05)
    layer: int
    head: int
    copyable: torch.Tensor  # [V] bool: pieces that can be a copy (a letter or a digit in them; no special piece)

    @classmethod
    def for_vocabulary(cls, pieces: list[str], weight: float, layer: int, head: int) -> CopyAlignment:
        """``pieces`` lists the vocabulary's pieces by id (``Tokenizer.id_to_piece``)."""
        copyable = torch.tensor([i not in SPECIAL_PIECES and any(c.isalnum() for c in piece)
                                 for i, piece in enumerate(pieces)])  # [V]
        return cls(weight=weight, layer=layer, head=head, copyable=copyable)

    def targets(self, src: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
        """src [B, S], tgt_out [B, T] (the pieces each decoder position predicts) -> [B, T, S] bool: True where
        the piece predicted at t is copyable and stands at source position s. Padding is never copyable."""
        copyable = self.copyable.to(tgt_out.device)[tgt_out]  # [B, T]
        return (tgt_out[:, :, None] == src[:, None, :]) & copyable[:, :, None]  # [B, T, S]

    def loss_sum(self, cross: torch.Tensor, src: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
        """The weighted alignment loss summed over the copied target pieces. cross [B, H, T, S] is the supervised
        layer's cross-attention (post-softmax): the head's mass on the piece's source places is pushed towards 1."""
        match = self.targets(src, tgt_out)  # [B, T, S]
        copied = match.any(dim=-1)  # [B, T]
        mass = (cross[:, self.head].float() * match).sum(dim=-1)  # [B, T]
        return -self.weight * mass[copied].clamp_min(1e-9).log().sum()

    def meta(self) -> dict:
        """How a checkpoint records it: the weight, and the head as the app numbers it (from 1)."""
        return {"align_copies": self.weight, "align_head": [self.layer + 1, self.head + 1]}
