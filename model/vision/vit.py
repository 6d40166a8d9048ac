"""Vision Transformer (Dosovitskiy et al., 2020, "An Image is Worth 16x16 Words"), small enough for 8x8 digits.

Patches are embedded linearly, a learned [CLS] token is prepended, learned position embeddings are added
(no sinusoids: the model must discover the 2-D layout itself), then pre-norm encoder layers, the very
EncoderLayer and MultiHeadAttention of the text model, so attention is captured the same way and comes back in
the same container: an AttentionTrace whose only kind is encoder self-attention (what a ViT is: an encoder).
"""
from __future__ import annotations

import torch
from torch import nn

from model.network.attention import Capture
from model.network.layers import EncoderLayer
from model.network.trace import AttentionTrace
from model.vision.config import ViTConfig
from model.vision.patches import ink_to_unit, patchify


class ViT(nn.Module):
    """images [B, S, S] (ink 0..16) -> class logits [B, n_classes], read from the [CLS] token."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.patch_embed = nn.Linear(config.patch_size ** 2, d)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.position = nn.Parameter(torch.empty(1, config.n_patches + 1, d))  # row 0 belongs to [CLS]
        nn.init.trunc_normal_(self.position, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(EncoderLayer(d, config.n_heads, config.d_ff, config.dropout, norm_first=True)
                                    for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, config.n_classes)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """The token sequence layer 1 reads: [CLS] + embedded patches, plus positions. -> [B, N+1, D]."""
        patches = patchify(ink_to_unit(images), self.config.patch_size)  # [B, N, p*p]
        tokens = self.patch_embed(patches)  # [B, N, D]
        cls = self.cls_token.expand(tokens.size(0), -1, -1)  # [B, 1, D]
        x = torch.cat([cls, tokens], dim=1) + self.position  # [B, N+1, D]
        return self.dropout(x) if self.training else x

    def forward(self, images: torch.Tensor, capture: Capture = Capture.NONE
                ) -> torch.Tensor | tuple[torch.Tensor, AttentionTrace]:
        """Logits [B, n_classes]; with ``capture`` also the AttentionTrace of the pass: enc_self holds each
        layer's weights [B, H, N+1, N+1] (post-softmax, pre-dropout; token 0 is [CLS], token 1 + i is patch i,
        row-major); no decoder kinds, no mask (every token sees every token)."""
        x = self.embed(images)  # [B, N+1, D]
        outputs = []
        for layer in self.layers:
            x, attention = layer(x, None, capture)
            outputs.append(attention)
        logits = self.head(self.norm(x[:, 0]))  # [B, n_classes]
        return (logits, AttentionTrace.from_outputs(outputs, [], [])) if capture else logits
