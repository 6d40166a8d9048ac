"""Every intermediate of one attention sub-layer, recomputed with the model's own modules, so the UI can
show QK^T -> / sqrt(d_k) -> mask -> softmax -> weighted sum -> W^O with real numbers."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import MultiHeadAttention, scaled_dot_product
from .masks import decoder_self_mask
from .trace import KINDS
from .transformer import Transformer


@dataclass(frozen=True)
class AttentionInternals:
    """One attention call of one sentence (batch dimension dropped).

    x_query [Q, D] and x_key [K, D] are the sub-layer inputs; q [H, Q, d_k], k and v [H, K, d_k];
    qk = QK^T and scaled = QK^T / sqrt(d_k), both [H, Q, K]; mask bool [Q, K] (True = may attend);
    masked [H, Q, K] is the softmax input; weights [H, Q, K]; context [H, Q, d_k] = weights @ V;
    output [Q, D] = Concat(heads) W^O.
    """

    x_query: torch.Tensor
    x_key: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    qk: torch.Tensor
    scaled: torch.Tensor
    mask: torch.Tensor
    masked: torch.Tensor
    weights: torch.Tensor
    context: torch.Tensor
    output: torch.Tensor
    d_k: int


def _sublayer_input(model: Transformer, sublayer, x: torch.Tensor) -> torch.Tensor:
    return sublayer.norm(x) if model.config.norm_first else x


def _compute(mha: MultiHeadAttention, x_query: torch.Tensor, x_key: torch.Tensor, mask: torch.Tensor
             ) -> AttentionInternals:
    q = mha.split_heads(mha.w_q(x_query))  # [1, H, Q, d_k]
    k, v = mha.project_key_value(x_key)  # [1, H, K, d_k]
    mask = mask.expand(1, 1, q.size(2), k.size(2))  # [1, 1, Q, K]
    context, weights, masked = scaled_dot_product(q, k, v, mask, torch.nn.Identity())
    merged = context.transpose(1, 2).reshape(1, q.size(2), -1)  # [1, Q, D]
    qk = q @ k.transpose(-2, -1)  # [1, H, Q, K]
    return AttentionInternals(x_query[0], x_key[0], q[0], k[0], v[0], qk[0], qk[0] / mha.d_k ** 0.5, mask[0, 0],
                              masked[0], weights[0], context[0], mha.w_o(merged)[0], mha.d_k)


def _attention_inputs(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, kind: str, layer: int
                      ) -> tuple[MultiHeadAttention, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the model (as it is: call it in eval mode) up to attention ``kind`` of ``layer``.

    src [B, S] ends with EOS, tgt [B, T] is the decoder input starting with BOS (both may be right-padded).
    Returns (the attention module, its query input [B, Q, D], key/value input [B, K, D], mask [B, 1, Q|1, K]).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}")
    memory, src_mask, _ = model.encode(src)
    if kind == "enc_self":
        x = model.embed(src)  # [B, S, D]
        for enc_layer in model.encoder.layers[:layer]:
            x, _ = enc_layer(x, src_mask)
        target = model.encoder.layers[layer]
        h = _sublayer_input(model, target.sublayers[0], x)
        return target.self_attn, h, h, src_mask
    tgt_mask = decoder_self_mask(tgt, model.config.pad_id)  # [B, 1, T, T]
    memory_kv = model.memory_key_values(memory)
    y = model.embed(tgt)  # [B, T, D]
    for i, dec_layer in enumerate(model.decoder.layers[:layer]):
        y, _, _ = dec_layer(y, memory_kv[i], tgt_mask, src_mask)
    target = model.decoder.layers[layer]
    if kind == "dec_self":
        h = _sublayer_input(model, target.sublayers[0], y)
        return target.self_attn, h, h, tgt_mask
    y = target.sublayers[0](y, lambda h: target.self_attn(h, h, tgt_mask).output)
    return target.cross_attn, _sublayer_input(model, target.sublayers[1], y), memory, src_mask


@torch.no_grad()
def attention_internals(model: Transformer, source_ids: list[int], decoder_input_ids: list[int], kind: str,
                        layer: int) -> AttentionInternals:
    """Re-run the model (eval, no dropout) up to attention ``kind`` of ``layer`` and open it up.

    source_ids end with EOS; decoder_input_ids start with BOS (Translation.source.ids and BOS + output[:-1]).
    The weights equal AttentionTrace.weights(kind)[layer, 0] of the same teacher-forced forward.
    """
    device = model.embed.token.weight.device
    src = torch.tensor([source_ids], device=device)  # [1, S]
    tgt = torch.tensor([decoder_input_ids], device=device)  # [1, T]
    return _compute(*_attention_inputs(model, src, tgt, kind, layer))


@torch.no_grad()
def unmasked_scores(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, kind: str, layer: int
                    ) -> torch.Tensor:
    """QK^T / sqrt(d_k) of one attention sub-layer of a (padded) batch *before* the mask overwrites the
    forbidden cells: src [B, S], tgt [B, T] -> [B, H, Q, K]. Where the mask allows, these equal the
    trace's scores; elsewhere they are what the model computed and then threw away."""
    mha, x_query, x_key, _ = _attention_inputs(model, src, tgt, kind, layer)
    q = mha.split_heads(mha.w_q(x_query))  # [B, H, Q, d_k]
    k, _ = mha.project_key_value(x_key)  # [B, H, K, d_k]
    return q @ k.transpose(-2, -1) / mha.d_k ** 0.5  # [B, H, Q, K]
