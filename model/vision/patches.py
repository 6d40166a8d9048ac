"""Cutting an image into patches: what turns a picture into a sequence a Transformer can attend over.

A patch flattened row by row is the image's "word"; a linear map then embeds it, exactly as a token id is
embedded on the text pages. Patches are numbered row-major (left to right, then top to bottom).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from model.vision.digits import MAX_INK


def ink_to_unit(images: torch.Tensor) -> torch.Tensor:
    """Ink counts 0..16 (any numeric dtype) -> float in [0, 1]: [B, S, S]."""
    return images.float() / MAX_INK


def upsample(images: torch.Tensor, factor: int) -> torch.Tensor:
    """[B, S, S] -> [B, fS, fS] by bilinear interpolation: more pixels, no more information, but a 2x2 patch of
    the result sees how the ink changes around one original pixel."""
    if factor == 1:
        return images
    return F.interpolate(images[:, None], scale_factor=factor, mode="bilinear", align_corners=False)[:, 0]


def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """[B, S, S] -> [B, (S/p)^2, p*p]: patch (i, j) is row i * (S/p) + j, its pixels flattened row by row."""
    b, side, _ = images.shape
    g = side // patch
    grid = images.reshape(b, g, patch, g, patch)  # [B, gi, pi, gj, pj]
    return grid.permute(0, 1, 3, 2, 4).reshape(b, g * g, patch * patch)  # [B, N, p*p]


def unpatchify(patches: torch.Tensor, patch: int) -> torch.Tensor:
    """The inverse of patchify: [B, N, p*p] -> [B, S, S]."""
    b, n, _ = patches.shape
    g = round(n ** 0.5)
    grid = patches.reshape(b, g, g, patch, patch).permute(0, 1, 3, 2, 4)  # [B, gi, pi, gj, pj]
    return grid.reshape(b, g * patch, g * patch)  # [B, S, S]
