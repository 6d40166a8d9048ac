"""Swin Transformer (Liu et al., 2021, "Hierarchical Vision Transformer using Shifted Windows"), small.

Each block is pre-norm attention + FFN (this project's SublayerConnection, PositionwiseFeedForward and
MultiHeadAttention), the attention restricted to windows, with a learned relative position bias passed as
``score_bias``; every second block shifts the windows. Patch merging between stages halves the grid and
doubles the width, so a token of a later stage stands for a larger part of the image. No absolute positions:
the relative bias and the windows are all the model knows about where a token is.

Its attention comes back in the text model's container, an AttentionTrace whose kind is encoder self-attention:
one token-by-token map [B, H, N, N] per block (N = the block's tokens, fewer after each merge), the window weights
put at their tokens' cells and exactly 0 between tokens that share no window or that the shifted mask keeps apart.
"""
from __future__ import annotations

from typing import cast

import torch
from torch import nn

from model.network.attention import AttentionOutput, Capture, MultiHeadAttention
from model.network.layers import PositionwiseFeedForward, SublayerConnection
from model.network.trace import AttentionTrace
from model.vision.config import SwinConfig
from model.vision.patches import ink_to_unit, patchify, upsample
from model.vision.windows import (
    cyclic_shift,
    relative_position_index,
    shifted_window_mask,
    window_partition,
    window_reverse,
    window_to_tokens,
)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside each window, plus a learned bias per head and relative offset."""

    index: torch.Tensor  # a buffer: relative_position_index(window)

    def __init__(self, dim: int, n_heads: int, window: int, dropout: float) -> None:
        super().__init__()
        self.window = window
        self.attn = MultiHeadAttention(dim, n_heads, dropout)
        self.bias_table = nn.Parameter(torch.empty((2 * window - 1) ** 2, n_heads))  # [(2M-1)^2, H]
        nn.init.trunc_normal_(self.bias_table, std=0.02)
        self.register_buffer("index", relative_position_index(window), persistent=False)  # [M*M, M*M]

    def position_bias(self) -> torch.Tensor:
        """The table looked up for every (query, key) pair of a window: [H, M*M, M*M]."""
        n = self.window ** 2
        return self.bias_table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)  # [H, M*M, M*M]

    def forward(self, windows: torch.Tensor, mask: torch.Tensor | None, capture: Capture) -> AttentionOutput:
        """windows [B*nW, M*M, D], mask [nW, M*M, M*M] (True = may attend) -> output [B*nW, M*M, D]."""
        batched = None
        if mask is not None:
            batched = mask.repeat(windows.size(0) // mask.size(0), 1, 1)[:, None]  # [B*nW, 1, M*M, M*M]
        return self.attn(windows, windows, batched, capture=capture,
                         score_bias=self.position_bias())


class SwinBlock(nn.Module):
    """x + WindowAttention(LN(x)) on (shifted) windows, then x + FFN(LN(x))."""

    def __init__(self, dim: int, n_heads: int, resolution: int, window: int, shift: int, d_ff: int,
                 dropout: float) -> None:
        super().__init__()
        self.resolution, self.window, self.shift = resolution, window, shift
        self.attention = WindowAttention(dim, n_heads, window, dropout)
        self.feed_forward = PositionwiseFeedForward(dim, d_ff, dropout)
        self.sublayers = nn.ModuleList([SublayerConnection(dim, dropout, norm_first=True) for _ in range(2)])
        self.mask: torch.Tensor | None  # a buffer, None for a block that does not shift
        self.register_buffer("mask", shifted_window_mask(resolution, window, shift) if shift else None,
                             persistent=False)  # [nW, M*M, M*M]

    def forward(self, x: torch.Tensor, capture: Capture = Capture.NONE) -> tuple[torch.Tensor, AttentionOutput | None]:
        """x [B, R*R, D] -> (x [B, R*R, D], with ``capture`` the attention as one call over all tokens:
        weights and scores [B, H, R*R, R*R], in the unshifted grid's token order)."""
        b, length, d = x.shape
        r, m = self.resolution, self.window
        record: list[AttentionOutput] = []

        def attend(h: torch.Tensor) -> torch.Tensor:
            grid = cyclic_shift(h.view(b, r, r, d), self.shift)  # [B, R, R, D]
            record.append(self.attention(window_partition(grid, m), self.mask, capture))
            merged = window_reverse(record[-1].output, m, r)  # [B, R, R, D]
            return cyclic_shift(merged, -self.shift).reshape(b, length, d)

        x = self.sublayers[0](x, attend)
        x = self.sublayers[1](x, self.feed_forward)
        out = record[0]
        if out.weights is None or out.scores is None:  # both or neither
            return x, None

        def per_token(maps: torch.Tensor, fill: float) -> torch.Tensor:
            return window_to_tokens(maps.view(b, -1, *maps.shape[1:]), r, m, self.shift, fill)  # [B, H, N, N]
        return x, AttentionOutput(output=out.output, key_value=out.key_value, weights=per_token(out.weights, 0.0),
                                  scores=per_token(out.scores, torch.finfo(out.scores.dtype).min))


class PatchMerging(nn.Module):
    """Each 2x2 group of tokens -> one token: concatenate (4D), LayerNorm, project to 2D."""

    def __init__(self, dim: int, resolution: int) -> None:
        super().__init__()
        self.resolution = resolution
        self.norm = nn.LayerNorm(4 * dim)
        self.reduce = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, R*R, D] -> [B, (R/2)^2, 2D]."""
        b, _, d = x.shape
        grid = x.view(b, self.resolution, self.resolution, d)
        parts = [grid[:, i::2, j::2] for j in (0, 1) for i in (0, 1)]  # 4 x [B, R/2, R/2, D]
        merged = torch.cat(parts, dim=-1).view(b, -1, 4 * d)  # [B, (R/2)^2, 4D]
        return self.reduce(self.norm(merged))  # [B, (R/2)^2, 2D]


class Swin(nn.Module):
    """images [B, S, S] (ink 0..16) -> class logits [B, n_classes], from the mean of the last stage's tokens."""

    def __init__(self, config: SwinConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.patch_embed = nn.Linear(c.patch_size ** 2, c.d_model)
        self.embed_norm = nn.LayerNorm(c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.stages = nn.ModuleList()
        self.merges = nn.ModuleList()
        for s in range(c.n_stages):
            dim, r, m = c.dims[s], c.resolutions[s], c.windows[s]
            self.stages.append(nn.ModuleList(
                SwinBlock(dim, c.heads[s], r, m, c.shifts[s] if i % 2 else 0, dim * c.mlp_ratio, c.dropout)
                for i in range(c.depths[s])))
            if s + 1 < c.n_stages:
                self.merges.append(PatchMerging(dim, r))
        self.norm = nn.LayerNorm(c.dims[-1])
        self.head = nn.Linear(c.dims[-1], c.n_classes)

    def forward(self, images: torch.Tensor, capture: Capture = Capture.NONE
                ) -> torch.Tensor | tuple[torch.Tensor, AttentionTrace]:
        """Logits [B, n_classes]; with ``capture`` also the AttentionTrace of the pass: enc_self holds one
        token-by-token map [B, H, N, N] per block, in order (blocks() names them)."""
        pixels = upsample(ink_to_unit(images), self.config.upsample)  # [B, fS, fS]
        x = self.embed_norm(self.patch_embed(patchify(pixels, self.config.patch_size)))  # [B, L, D]
        x = self.dropout(x) if self.training else x
        outputs: list[AttentionOutput] = []
        for s, stage in enumerate(self.stages):
            for block in cast(nn.ModuleList, stage):
                x, out = block(x, capture)
                outputs += [out] if out is not None else []
            if s < len(self.merges):
                x = self.merges[s](x)
        logits = self.head(self.norm(x).mean(dim=1))  # [B, n_classes]
        return (logits, AttentionTrace.from_outputs(outputs, [], [])) if capture else logits

    def blocks(self) -> list[tuple[int, int, SwinBlock]]:
        """(stage, index in the stage, block) of every block, in the order the trace holds their maps."""
        return [(s, i, cast(SwinBlock, block)) for s, stage in enumerate(self.stages)
                for i, block in enumerate(cast(nn.ModuleList, stage))]
