"""Swin's windows (Liu et al., 2021, section 3.2): partition, cyclic shift, the shifted-window mask and the
relative position index. Pure functions of the grid, so the page can draw them without a model.

Attention runs inside M x M windows only: cost linear in the image, not quadratic. Every second block shifts
the grid by M // 2 so information crosses window borders. Shifting cyclically (torch.roll) keeps the number of
windows fixed, but the windows on the bottom and right edges then hold pixels from opposite sides of the
image: the mask stops those from attending to each other (bool, True = may attend, as everywhere here).
"""
from __future__ import annotations

import torch


def window_partition(x: torch.Tensor, window: int) -> torch.Tensor:
    """[B, R, R, D] -> [B * nW, M*M, D]; windows row-major, tokens row-major inside each window."""
    b, r, _, d = x.shape
    n = r // window
    x = x.view(b, n, window, n, window, d).permute(0, 1, 3, 2, 4, 5)  # [B, wi, wj, mi, mj, D]
    return x.reshape(b * n * n, window * window, d)


def window_reverse(windows: torch.Tensor, window: int, resolution: int) -> torch.Tensor:
    """The inverse of window_partition: [B * nW, M*M, D] -> [B, R, R, D]."""
    n = resolution // window
    d = windows.size(-1)
    x = windows.view(-1, n, n, window, window, d).permute(0, 1, 3, 2, 4, 5)  # [B, wi, mi, wj, mj, D]
    return x.reshape(-1, resolution, resolution, d)


def cyclic_shift(x: torch.Tensor, shift: int) -> torch.Tensor:
    """Roll the grid [B, R, R, D] up and left by ``shift`` (negative shift rolls back)."""
    return torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))


def region_labels(resolution: int, window: int, shift: int) -> torch.Tensor:
    """Which region each position of the *shifted* grid belongs to: [R, R] long, 0..8.

    Along each axis the shifted grid has three bands: [0, R-M) and [R-M, R-s) are pixels that did not wrap,
    split at the last window's border, and [R-s, R) are the pixels that wrapped round from the other side.
    """
    bands = torch.zeros(resolution, dtype=torch.long)
    bands[resolution - window:] = 1
    bands[resolution - shift:] = 2
    return bands[:, None] * 3 + bands[None, :]  # [R, R]


def shifted_window_mask(resolution: int, window: int, shift: int) -> torch.Tensor:
    """[nW, M*M, M*M] bool: True where two tokens of a shifted window come from the same region (may attend).

    Without a shift every pair may attend; with it, only tokens that were also neighbours before the roll.
    """
    labels = region_labels(resolution, window, shift) if shift else torch.zeros(resolution, resolution,
                                                                                 dtype=torch.long)
    per_window = window_partition(labels[None, :, :, None], window)[..., 0]  # [nW, M*M]
    return per_window[:, :, None] == per_window[:, None, :]  # [nW, M*M, M*M]


def relative_position_index(window: int) -> torch.Tensor:
    """[M*M, M*M] long: for query i and key j of a window, the row of the bias table [(2M-1)^2, H] that holds
    the bias of their offset (dy, dx), each in -(M-1)..M-1, as (dy + M - 1) * (2M - 1) + (dx + M - 1)."""
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                        indexing="ij")).flatten(1)  # [2, M*M]
    offset = coords[:, :, None] - coords[:, None, :] + window - 1  # [2, M*M, M*M], each in 0..2M-2
    return offset[0] * (2 * window - 1) + offset[1]  # [M*M, M*M]


def token_windows(resolution: int, window: int, shift: int) -> torch.Tensor:
    """Which window each token of the (unshifted) grid falls into in a block with this shift: [R, R] long."""
    n = resolution // window
    ids = torch.arange(n)[:, None] * n + torch.arange(n)[None, :]  # [n, n]
    in_shifted = ids.repeat_interleave(window, 0).repeat_interleave(window, 1)  # [R, R], shifted positions
    return cyclic_shift(in_shifted[None, :, :, None], -shift)[0, :, :, 0]  # back to each token's own position


def reach(resolution: int, window: int, shift: int) -> torch.Tensor:
    """[R*R, R*R] bool: token i (row-major, unshifted) may attend to token j in a block with this shift."""
    ids = torch.arange(resolution * resolution).view(1, resolution, resolution, 1)
    windows = window_partition(cyclic_shift(ids, shift), window)[..., 0]  # [nW, M*M] token ids
    allowed = shifted_window_mask(resolution, window, shift)  # [nW, M*M, M*M]
    result = torch.zeros(resolution * resolution, resolution * resolution, dtype=torch.bool)
    queries = windows[:, :, None].expand_as(allowed)
    keys = windows[:, None, :].expand_as(allowed)
    result[queries[allowed], keys[allowed]] = True
    return result


def window_tokens(resolution: int, window: int, shift: int) -> torch.Tensor:
    """[nW, M*M] long: the token (row-major index in the unshifted grid) at each place of each window."""
    ids = torch.arange(resolution * resolution).view(1, resolution, resolution, 1)
    return window_partition(cyclic_shift(ids, shift), window)[..., 0]


def window_to_tokens(per_window: torch.Tensor, resolution: int, window: int, shift: int, fill: float) -> torch.Tensor:
    """Per-window maps [B, nW, H, M*M, M*M] as one token-by-token map per head [B, H, R*R, R*R] in the unshifted
    grid's row-major order: the same numbers, each at its (query token, key token) cell, ``fill`` where a pair
    shares no window (0 for weights, the masked score for scores)."""
    ids = window_tokens(resolution, window, shift)  # [nW, M*M]
    b, n_windows, h, n, _ = per_window.shape
    full = per_window.new_full((b, h, resolution ** 2, resolution ** 2), fill)  # [B, H, N, N]
    rows, cols = ids[:, :, None].expand(n_windows, n, n), ids[:, None, :].expand(n_windows, n, n)  # [nW, M*M, M*M]
    full[:, :, rows, cols] = per_window.permute(0, 2, 1, 3, 4)  # [B, H, nW, M*M, M*M]
    return full


def tokens_to_window(full: torch.Tensor, resolution: int, window: int, shift: int) -> torch.Tensor:
    """The inverse of window_to_tokens: [B, H, N, N] -> [B, nW, H, M*M, M*M] (rows and columns in each window's own
    order, rolled coordinates for a shifted block)."""
    ids = window_tokens(resolution, window, shift)  # [nW, M*M]
    return full[:, :, ids[:, :, None], ids[:, None, :]].permute(0, 2, 1, 3, 4)  # [B, nW, H, M*M, M*M]
