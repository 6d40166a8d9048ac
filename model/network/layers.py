"""One encoder layer and one decoder layer (paper section 3.1), and the position-wise FFN (3.3)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from model.network.attention import AttentionOutput, Capture, KeyValue, MultiHeadAttention

# The FFN's non-linearity by config name (model.network.config.ACTIVATIONS): the paper's ReLU, or GELU and swish (SiLU,
# x * sigmoid(x)) as other models use them (Marian opus-mt: swish); functions, so nothing is added to the weights.
ACTIVATION_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu, "gelu": F.gelu, "swish": F.silu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


@dataclass(frozen=True)
class LayerOptions:
    """How a layer departs from the paper (every default is the paper's): the norm (LayerNorm or T5's RMSNorm) and
    its epsilon, biases in the linear maps, scores divided by sqrt(d_k), a gated FFN, and a head width of its own."""

    norm: str = "layer"
    norm_eps: float = 1e-5
    bias: bool = True
    scale: bool = True
    gated: bool = False
    d_k: int | None = None

    def make_norm(self, d_model: int) -> nn.Module:
        return nn.RMSNorm(d_model, eps=self.norm_eps) if self.norm == "rms" else nn.LayerNorm(d_model, self.norm_eps)


PAPER = LayerOptions()


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, the same two linear maps applied at every position (with ``activation``
    "gelu", "gelu_tanh" or "swish", that function replaces max(0, .)). ``gated`` (T5 v1.1): the activation is
    multiplied by a second map of x, FFN(x) = (act(x W1) * x W_gate) W2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu",
                 options: LayerOptions = PAPER) -> None:
        super().__init__()
        if activation not in ACTIVATION_FUNCTIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATION_FUNCTIONS)}, got {activation!r}")
        self.linear1 = nn.Linear(d_model, d_ff, bias=options.bias)
        self.gate = nn.Linear(d_model, d_ff, bias=options.bias) if options.gated else None
        self.linear2 = nn.Linear(d_ff, d_model, bias=options.bias)
        self.dropout = nn.Dropout(dropout)
        self.activation = ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.activation(self.linear1(x))  # [B, L, d_ff]
        if self.gate is not None:
            hidden = hidden * self.gate(x)  # [B, L, d_ff]
        return self.linear2(self.dropout(hidden) if self.training else hidden)  # [B, L, D]; no call in eval


class SublayerConnection(nn.Module):
    """Residual connection plus LayerNorm around one sub-layer.

    Post-norm (the paper): LayerNorm(x + Dropout(Sublayer(x))). Pre-norm (optional, trains more
    stably when deep): x + Dropout(Sublayer(LayerNorm(x))). T5 normalises with RMSNorm (options.norm).
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, options: LayerOptions = PAPER) -> None:
        super().__init__()
        self.norm = options.make_norm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        out = sublayer(self.norm(x) if self.norm_first else x)  # [B, L, D]
        if self.training:  # dropout is the identity in eval: skip the call, decoding runs this per step
            out = self.dropout(out)
        return x + out if self.norm_first else self.norm(x + out)


def attention(d_model: int, n_heads: int, dropout: float, options: LayerOptions) -> MultiHeadAttention:
    return MultiHeadAttention(d_model, n_heads, dropout, options.d_k, options.bias, options.scale)


def with_residual(out: AttentionOutput, x: torch.Tensor) -> AttentionOutput:
    """``out`` with the residual stream x [B, L, D] that entered its sub-layer kept in its intermediates (only at
    the "internals" capture level): where a caller can start the layer again with this attention changed."""
    if out.intermediates is not None:
        out.intermediates = replace(out.intermediates, residual_input=x)
    return out


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the FFN, each wrapped in residual + LayerNorm."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, norm_first: bool = False,
                 activation: str = "relu", options: LayerOptions = PAPER) -> None:
        super().__init__()
        self.self_attn = attention(d_model, n_heads, dropout, options)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout, activation, options)
        self.sublayers = nn.ModuleList([SublayerConnection(d_model, dropout, norm_first, options) for _ in range(2)])

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor, capture: Capture = Capture.NONE,
                heads: torch.Tensor | None = None) -> tuple[torch.Tensor, AttentionOutput]:
        """x [B, S, D], src_mask [B, 1, 1, S], heads [B or 1, H] (1 = on) -> ([B, S, D], the self-attention output)."""
        record: list[AttentionOutput] = []

        def attend(h: torch.Tensor) -> torch.Tensor:
            record.append(self.self_attn(h, h, src_mask, capture=capture, head_mask=heads))
            return record[-1].output

        attended = self.sublayers[0](x, attend)
        return self.sublayers[1](attended, self.feed_forward), with_residual(record[0], x)

    def forward_joined(self, x: torch.Tensor | None, src_mask: torch.Tensor, join: tuple[torch.Tensor, torch.Tensor]
                       ) -> torch.Tensor:
        """Rows that run on from inside this layer, in one batch with rows that run all of it: x [R, S, D] (or
        None) runs the whole layer; join = (the residual entering self-attention [G, S, D], the attention output
        that replaces it [G, S, D]), e.g. an ablation that changed one head's share. -> [R + G, S, D], x's rows
        first. The rows joining skip the attention itself, the largest saving when every head is switched off
        in turn (explain.heads.head_importance)."""
        joined = self.sublayers[0](join[0], lambda _h: join[1])  # [G, S, D]
        if x is not None:
            attended = self.sublayers[0](x, lambda h: self.self_attn(h, h, src_mask).output)  # [R, S, D]
            joined = torch.cat([attended, joined])
        return self.sublayers[1](joined, self.feed_forward)


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder (cross) attention, then the FFN."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, norm_first: bool = False,
                 activation: str = "relu", options: LayerOptions = PAPER) -> None:
        super().__init__()
        self.self_attn = attention(d_model, n_heads, dropout, options)
        self.cross_attn = attention(d_model, n_heads, dropout, options)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout, activation, options)
        self.sublayers = nn.ModuleList([SublayerConnection(d_model, dropout, norm_first, options) for _ in range(3)])

    def forward(self, y: torch.Tensor, memory_kv: KeyValue, self_mask: torch.Tensor | None,
                cross_mask: torch.Tensor | None, past: KeyValue | None = None, capture: Capture = Capture.NONE,
                heads: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, AttentionOutput, AttentionOutput]:
        """y [B, T_new, D]; memory_kv = this layer's projected encoder keys/values [B, H, S, d_k];
        self_mask [B, 1, T_new, T_past+T_new]; cross_mask [B, 1, 1, S]; past = cached self keys/values;
        heads = (self-attention, cross-attention) head masks, each [B or 1, H] (1 = on).

        Returns (y [B, T_new, D], self-attention output (its key_value is the updated cache), cross output).
        """
        record: list[AttentionOutput] = []
        self_heads, cross_heads = heads if heads is not None else (None, None)

        def self_attend(h: torch.Tensor) -> torch.Tensor:
            record.append(self.self_attn(h, h, self_mask, past=past, capture=capture,
                                         head_mask=self_heads))
            return record[-1].output

        def cross_attend(h: torch.Tensor) -> torch.Tensor:
            record.append(self.cross_attn(h, None, cross_mask, past=memory_kv, capture=capture,
                                          head_mask=cross_heads))
            return record[-1].output

        after_self = self.sublayers[0](y, self_attend)
        after_cross = self.sublayers[1](after_self, cross_attend)
        return (self.sublayers[2](after_cross, self.feed_forward), with_residual(record[0], y),
                with_residual(record[1], after_self))

    def forward_joined(self, y: torch.Tensor | None, memory_kv: KeyValue, self_mask: torch.Tensor,
                       cross_mask: torch.Tensor | None, *, self_done: bool = False,
                       self_join: tuple[torch.Tensor, torch.Tensor] | None = None,
                       cross_join: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """Rows that run on from inside this layer, in one batch with rows that run all of it. y [R, T, D] (or
        None) runs the whole layer (``self_done``: y is already past self-attention, it joins at cross-attention);
        self_join = (the residual entering self-attention [G, T, D], the output replacing it) joins there;
        cross_join = (the residual entering cross-attention, the output replacing it) joins there. Cross-attention
        reads ``memory_kv`` [R + G, H, S, d_k] for the rows before it. -> [R + G + G', T, D] in that order."""
        if y is not None and not self_done:
            y = self.sublayers[0](y, lambda h: self.self_attn(h, h, self_mask).output)  # [R, T, D]
        if self_join is not None:
            joined = self.sublayers[0](self_join[0], lambda _h: self_join[1])  # [G, T, D]
            y = joined if y is None else torch.cat([y, joined])
        if y is not None:
            y = self.sublayers[1](y, lambda h: self.cross_attn(h, None, cross_mask, past=memory_kv).output)
        if cross_join is not None:
            joined = self.sublayers[1](cross_join[0], lambda _h: cross_join[1])  # [G', T, D]
            y = joined if y is None else torch.cat([y, joined])
        return self.sublayers[2](y, self.feed_forward)
