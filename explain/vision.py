"""The Vision page: what a ViT and a Swin read from one digit, and the math drawn around it.

ViT: the class probabilities, every layer's attention, attention rollout (Abnar & Zuidema, 2020), how the
learned position embeddings resemble each other (against the sinusoids of the text model). Swin: every
block's window attention, an attention row put back on the image, the relative position bias as offset maps,
and which pixels a token can have read after each block (its receptive field).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F

from explain.attribution import rollout
from model.network.attention import Capture
from model.network.positional import sinusoidal_encoding
from model.network.trace import AttentionTrace
from model.vision.swin import Swin, SwinBlock
from model.vision.vit import ViT
from model.vision.windows import reach, tokens_to_window


def _batch_of_one(image: np.ndarray | torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(np.asarray(image, dtype=np.float32))[None]  # [1, S, S], ink 0..16


@dataclass(frozen=True)
class ViTReading:
    """One digit through the ViT: probabilities [10], attention [L, H, N+1, N+1] (token 0 = [CLS]) and its
    rollout [N+1, N+1]."""

    probabilities: torch.Tensor
    attention: torch.Tensor
    rollout: torch.Tensor


@torch.no_grad()
def read_vit(model: ViT, image: np.ndarray | torch.Tensor) -> ViTReading:
    logits, trace = model(_batch_of_one(image), capture=Capture.WEIGHTS)
    attention = trace.weights("enc_self")[:, 0]  # [L, H, N+1, N+1]
    return ViTReading(probabilities=logits.softmax(-1)[0], attention=attention, rollout=rollout(attention))


def cosine_similarity(vectors: torch.Tensor) -> torch.Tensor:
    """[N, D] -> [N, N] cosine of every pair."""
    unit = F.normalize(vectors.float(), dim=-1)
    return unit @ unit.T


def position_similarity(model: ViT) -> torch.Tensor:
    """Cosine similarity of the learned position embeddings of the patches ([CLS] left out): [N, N]."""
    return cosine_similarity(model.position.detach()[0, 1:])


def sinusoid_similarity(n: int, d_model: int) -> torch.Tensor:
    """The same for the text model's 1-D sinusoids of positions 0..n-1, the patches read row by row: [n, n]."""
    return cosine_similarity(sinusoidal_encoding(n, d_model))


def neighbour_similarity(sim: torch.Tensor, grid: int) -> tuple[float, float, float]:
    """Mean similarity of patches side by side, of patches one above the other, and of all other pairs:
    the three numbers that tell a 1-D code from a 2-D one."""
    rows, cols = torch.arange(grid * grid).div(grid, rounding_mode="floor"), torch.arange(grid * grid) % grid
    dy, dx = (rows[:, None] - rows[None]).abs(), (cols[:, None] - cols[None]).abs()
    side, above = (dy == 0) & (dx == 1), (dy == 1) & (dx == 0)
    rest = ~(side | above) & (dy + dx > 0)
    return float(sim[side].mean()), float(sim[above].mean()), float(sim[rest].mean())


@dataclass(frozen=True)
class SwinBlockView:
    """One Swin block's attention as the Vision page reads it: where the block sits (stage, index), its grid and
    windows, the mask of a shifted block [nW, M*M, M*M] (None for a regular one) and its token-by-token weights
    [B, H, N, N] from the model's AttentionTrace."""

    stage: int
    block: int
    resolution: int
    window: int
    shift: int
    mask: torch.Tensor | None
    weights: torch.Tensor

    def window_weights(self) -> torch.Tensor:
        """The same weights window by window: [B, nW, H, M*M, M*M] (rolled coordinates for a shifted block)."""
        return tokens_to_window(self.weights, self.resolution, self.window, self.shift)


@dataclass(frozen=True)
class SwinReading:
    """One digit through the Swin: probabilities [10], the pass's AttentionTrace and a view of each block."""

    probabilities: torch.Tensor
    trace: AttentionTrace
    blocks: list[SwinBlockView]


@torch.no_grad()
def read_swin(model: Swin, image: np.ndarray | torch.Tensor) -> SwinReading:
    logits, trace = model(_batch_of_one(image), capture=Capture.WEIGHTS)
    blocks = [SwinBlockView(stage=s, block=i, resolution=b.resolution, window=b.window, shift=b.shift, mask=b.mask,
                            weights=weights) for (s, i, b), weights in zip(model.blocks(), trace.enc_self, strict=True)]
    return SwinReading(probabilities=logits.softmax(-1)[0], trace=trace, blocks=blocks)


def attention_on_grid(block: SwinBlockView, head: int, token: int) -> torch.Tensor:
    """Token ``token``'s attention row in this block on the unshifted grid: [R, R] (0 outside its window and where
    the mask blocked it). ``head`` -1 = mean over heads."""
    weights = block.weights[0]  # [H, N, N]
    row = weights.mean(0)[token] if head < 0 else weights[head, token]  # [N]
    return row.view(block.resolution, block.resolution)


def bias_offsets(model: Swin) -> list[torch.Tensor]:
    """Each block's relative position bias table as maps over offsets: [H, 2M-1, 2M-1], entry (dy, dx) + M - 1
    is the bias a query adds to a key dy rows below and dx columns right of it."""
    tables = []
    for stage in model.stages:
        for block in cast(Iterable[SwinBlock], stage):
            table = block.attention.bias_table.detach()  # [(2M-1)^2, H]
            side = 2 * block.window - 1
            tables.append(table.T.reshape(-1, side, side))
    return tables


def receptive_fields(model: Swin, row: int, col: int) -> list[torch.Tensor]:
    """Which input pixels can have reached the token that covers pixel (row, col), after each block: one bool
    map [S, S] per block. Window attention mixes a token with the tokens it may attend to; patch merging joins
    2x2 tokens; the feed-forward network mixes nothing."""
    c = model.config
    side, p = c.image_size, c.image_size // c.resolutions[0]  # input pixels per first-stage token side
    pixel_token = torch.arange(c.resolutions[0] ** 2).view(c.resolutions[0], -1)
    pixel_token = pixel_token.repeat_interleave(p, 0).repeat_interleave(p, 1).reshape(-1)  # [S*S]
    covers = F.one_hot(pixel_token, c.resolutions[0] ** 2).T.bool()  # [L, S*S]: token -> its pixels
    maps = []
    for s, stage in enumerate(model.stages):
        r = c.resolutions[s]
        for block in cast(Iterable[SwinBlock], stage):
            covers = (reach(r, block.window, block.shift).float() @ covers.float()) > 0  # [L, S*S]
            scale = side // r
            maps.append(covers[(row // scale) * r + col // scale].view(side, side))
        if s < len(model.merges):
            grid = covers.view(r, r, -1)
            covers = (grid[0::2, 0::2] | grid[1::2, 0::2] | grid[0::2, 1::2] | grid[1::2, 1::2]).reshape(
                (r // 2) ** 2, -1)  # [L/4, S*S]
    return maps
