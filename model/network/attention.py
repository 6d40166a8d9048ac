"""Multi-head scaled dot-product attention (paper section 3.2), our own so it can return its weights.

``nn.MultiheadAttention`` averages or hides what we need to show, so the projections and the
softmax are written out here. With ``capture=Capture.NONE`` the fused
``F.scaled_dot_product_attention`` does the same computation faster.
"""
from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

KeyValue = tuple[torch.Tensor, torch.Tensor]  # keys and values, each [B, H, K, d_k]


class Capture(enum.Enum):
    """How much a forward pass keeps of its attention: the one switch of every capture in the model.

    NONE keeps nothing (the fused kernel runs), WEIGHTS the post-softmax weights and the scores they came from,
    INTERNALS also Q, K, V, the scores before masking and the weighted sum (the Mechanics and Masks pages).
    ``bool(capture)`` is whether anything is kept, so ``if capture:`` reads as it says."""

    NONE = "none"
    WEIGHTS = "weights"
    INTERNALS = "internals"

    def __bool__(self) -> bool:
        return self is not Capture.NONE


@dataclass(frozen=True)
class Intermediates:
    """What one attention call computed on its way, kept only at the "internals" capture level, so a page can
    show Q, K, V, QK^T and the weighted sum exactly as the forward pass computed them.

    query_input [B, Q, D] (what the attention read: the sub-layer's input, after its LayerNorm in pre-norm);
    q [B, H, Q, d_k]; k, v [B, H, K, d_k]; unmasked [B, H, Q, K] = QK^T / sqrt(d_k) before the mask overwrote
    anything; context [B, H, Q, d_k] = weights @ V; output [B, Q, D] = Concat(heads) W^O; residual_input [B, Q, D]
    the residual stream entering the sub-layer (set by the layer: the attention call does not see it).
    """

    query_input: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    unmasked: torch.Tensor
    context: torch.Tensor
    output: torch.Tensor
    residual_input: torch.Tensor | None = None


@dataclass
class AttentionOutput:
    """What one attention call produced.

    ``weights`` are post-softmax, pre-dropout probabilities per head [B, H, Q, K] (masked entries
    exactly 0); ``scores`` are QK^T / sqrt(d_k) after masking, i.e. the softmax input
    [B, H, Q, K] (masked entries = finfo.min). Both are None unless attention was asked for.
    ``key_value`` are the projected keys/values used, for a KV cache; ``intermediates`` the rest, on request.
    """

    output: torch.Tensor  # [B, Q, D]
    key_value: KeyValue
    weights: torch.Tensor | None = None
    scores: torch.Tensor | None = None
    intermediates: Intermediates | None = None


def scaled_dot_product(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                       dropout: nn.Dropout, score_bias: torch.Tensor | None = None, scale: float | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(mask(QK^T / sqrt(d_k) + bias)) V, keeping the intermediate scores and weights (``scale`` replaces
    1 / sqrt(d_k): T5 multiplies by 1).

    q [B, H, Q, d_k], k and v [B, H, K, d_k], mask bool broadcastable to [B, H, Q, K] (True = attend),
    score_bias (e.g. Swin's relative position bias) float broadcastable to [B, H, Q, K], added before masking.
    Returns (context [B, H, Q, d_k], weights [B, H, Q, K], scores [B, H, Q, K], the scores before masking
    [B, H, Q, K]). Masked scores are
    filled with the dtype's most negative finite value, then the weights there are set to exactly 0,
    so a fully masked row gives zeros rather than NaN.
    """
    b, h, n_q, d_k = q.shape
    alpha = 1.0 / math.sqrt(d_k) if scale is None else scale
    # One fused batched GEMM with the 1/sqrt(d_k) folded in: decoding calls this per step, so op count matters.
    scores = torch.baddbmm(q.new_empty(()), q.reshape(b * h, n_q, d_k), k.reshape(b * h, -1, d_k).transpose(1, 2),
                           beta=0.0, alpha=alpha).view(b, h, n_q, -1)  # [B, H, Q, K]
    if score_bias is not None:
        scores = scores + score_bias  # [B, H, Q, K]
    unmasked = scores
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # [B, H, Q, K]
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    attended = dropout(weights) if dropout.training else weights  # dropout after capture; no call in eval
    context = attended @ v  # [B, H, Q, d_k]
    return context, weights, scores, unmasked


def _fused_mask(mask: torch.Tensor | None, score_bias: torch.Tensor | None, dtype: torch.dtype
                ) -> torch.Tensor | None:
    """The fused kernel takes one attn_mask: the bool mask as is, or the bias with masked cells at finfo.min."""
    if score_bias is None:
        return mask
    bias = score_bias.to(dtype)
    return bias if mask is None else bias.masked_fill(~mask, torch.finfo(dtype).min)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O with head_i = Attention(Q W^Q_i, K W^K_i, V W^V_i).

    The paper's heads are d_model / h wide, their linear maps have biases and the scores are divided by sqrt(d_k);
    T5 sets its own head width ``d_k``, drops the biases (``bias``), does not divide (``scale``) and adds a relative
    position bias its stack shares (``use_relative_bias``)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, d_k: int | None = None, bias: bool = True,
                 scale: bool = True) -> None:
        super().__init__()
        if d_k is None and d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_heads, self.d_k = n_heads, d_k or d_model // n_heads
        inner = n_heads * self.d_k
        self.w_q = nn.Linear(d_model, inner, bias=bias)
        self.w_k = nn.Linear(d_model, inner, bias=bias)
        self.w_v = nn.Linear(d_model, inner, bias=bias)
        self.w_o = nn.Linear(inner, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.scale = 1.0 / math.sqrt(self.d_k) if scale else 1.0
        self._relative: Callable[[int, int], torch.Tensor] | None = None

    def use_relative_bias(self, bias: nn.Module) -> None:
        """Add ``bias(n_queries, n_keys)`` [1, H, Q, K] to every call's scores: the stack's one
        RelativePositionBias, held by reference (its parameters belong to the stack, not to this module)."""
        object.__setattr__(self, "_relative", bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, L, D] -> [B, H, L, d_k]."""
        return x.view(x.size(0), x.size(1), self.n_heads, self.d_k).transpose(1, 2)

    def project_key_value(self, x: torch.Tensor) -> KeyValue:
        """Keys and values of x [B, K, D], each [B, H, K, d_k]; computed once for cross-attention."""
        return self.split_heads(self.w_k(x)), self.split_heads(self.w_v(x))

    def forward(self, query: torch.Tensor, key_value_input: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, *, past: KeyValue | None = None,
                capture: Capture = Capture.NONE, head_mask: torch.Tensor | None = None,
                score_bias: torch.Tensor | None = None) -> AttentionOutput:
        """Attend from ``query`` [B, Q, D] to keys ``past ++ project(key_value_input)``.

        Self-attention passes the same tensor as query and key_value_input; a KV cache passes the
        earlier steps' keys/values as ``past``; cross-attention passes the encoder's precomputed
        keys/values as ``past`` and no key_value_input. ``mask`` [B or 1, 1, Q, K], True = attend.
        ``capture`` is how much to keep (see ``Capture``). ``head_mask`` [B or 1, H] (1 = on, 0 = off)
        scales each head's output before W^O: a head switched off contributes nothing, its weights are unchanged
        (Michel et al., 2019). ``score_bias`` [.., H, Q, K] is added to the scaled scores (a relative position
        bias, as in Swin); the paper's attention has none.
        """
        q = self.split_heads(self.w_q(query))  # [B, H, Q, d_k]
        k, v = past if past is not None else (None, None)
        if key_value_input is not None:
            k_new, v_new = self.project_key_value(key_value_input)  # [B, H, K_new, d_k]
            k = k_new if k is None else torch.cat([k, k_new], dim=2)  # [B, H, K, d_k]
            v = v_new if v is None else torch.cat([v, v_new], dim=2)
        if k is None or v is None:  # both or neither
            raise ValueError("attention needs keys: pass key_value_input or past")
        if self._relative is not None:
            relative = self._relative(q.size(2), k.size(2))  # [1, H, Q, K]
            score_bias = relative if score_bias is None else score_bias + relative
        weights = scores = unmasked = None
        if capture:
            context, weights, scores, unmasked = scaled_dot_product(q, k, v, mask, self.dropout, score_bias,
                                                                    self.scale)
        else:
            context = F.scaled_dot_product_attention(
                q, k, v, attn_mask=_fused_mask(mask, score_bias, q.dtype),
                dropout_p=self.dropout.p if self.training else 0.0, scale=self.scale)  # [B, H, Q, d_k]
        if head_mask is not None:
            context = context * head_mask[:, :, None, None].to(context.dtype)  # [B, H, Q, d_k]
        merged = context.transpose(1, 2).reshape(query.size(0), query.size(1), -1)  # [B, Q, D]
        output = self.w_o(merged)  # [B, Q, D]
        kept = None
        if capture is Capture.INTERNALS and unmasked is not None:  # capture is on: scaled_dot_product ran
            kept = Intermediates(query_input=query, q=q, k=k, v=v, unmasked=unmasked, context=context, output=output)
        return AttentionOutput(output=output, key_value=(k, v), weights=weights, scores=scores, intermediates=kept)
