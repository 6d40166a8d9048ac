"""Relative position buckets (Raffel et al., 2020, T5): instead of adding a position code to the embeddings, every
self-attention adds a learned scalar per head to the score of a (query, key) pair, chosen by the bucket of the
offset key - query. Small offsets get a bucket each; larger ones share logarithmically wider buckets up to
max_distance; an encoder tells before from after, a decoder only looks back. The paper's alternative to sinusoids,
as a pure function that can be plotted, and the module one stack shares across its layers.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def relative_buckets(offset: torch.Tensor, bidirectional: bool, n_buckets: int, max_distance: int) -> torch.Tensor:
    """The bucket of each offset key - query (any shape, long) -> the same shape, in [0, n_buckets).

    Bidirectional: half the buckets for keys after the query. Then offsets below half the (remaining) buckets each
    have their own; the rest are spaced logarithmically up to max_distance, beyond which all share the last one.
    """
    buckets = torch.zeros_like(offset)
    if bidirectional:
        n_buckets //= 2
        buckets += (offset > 0).long() * n_buckets
        distance = offset.abs()
    else:
        distance = (-offset).clamp(min=0)  # a decoder's keys are never after its query
    exact = n_buckets // 2
    # log-spaced above `exact`; the clamp keeps log(0) out of the branch torch.where discards
    far = exact + (torch.log(distance.clamp(min=1).float() / exact) / math.log(max_distance / exact)
                   * (n_buckets - exact)).long()
    far = far.clamp(max=n_buckets - 1)
    return buckets + torch.where(distance < exact, distance, far)


class RelativePositionBias(nn.Module):
    """One learned bias per bucket and head, looked up for every (query, key) pair of a self-attention call."""

    def __init__(self, n_buckets: int, max_distance: int, n_heads: int, bidirectional: bool) -> None:
        super().__init__()
        self.table = nn.Embedding(n_buckets, n_heads)  # [buckets, H]
        self.n_buckets, self.max_distance, self.bidirectional = n_buckets, max_distance, bidirectional
        self._last: tuple[tuple, torch.Tensor] | None = None

    def forward(self, n_queries: int, n_keys: int) -> torch.Tensor:
        """The bias of queries at the last ``n_queries`` of ``n_keys`` positions (a decoding step's one query is the
        newest position) -> [1, H, Q, K]. Every layer of the stack asks for the same one in a pass or a step: without
        gradients (decoding, the pages) it is computed once and kept until the shape or the table changes; with them
        (training) it is computed afresh, since a kept one's graph may already have been freed by a backward pass."""
        weight = self.table.weight
        key = (n_queries, n_keys, weight.device, weight._version, weight.data_ptr())
        if torch.is_grad_enabled():
            self._last = None
        elif self._last is not None and self._last[0] == key:
            return self._last[1]
        query = torch.arange(n_keys - n_queries, n_keys, device=weight.device)[:, None]  # [Q, 1]
        keys = torch.arange(n_keys, device=weight.device)[None, :]  # [1, K]
        buckets = relative_buckets(keys - query, self.bidirectional, self.n_buckets, self.max_distance)  # [Q, K]
        bias = self.table(buckets).permute(2, 0, 1)[None]  # [1, H, Q, K]
        if not torch.is_grad_enabled():
            self._last = (key, bias)
        return bias
