"""The Mechanics page: one attention call opened up with the numbers the forward pass computed, the classic
alignment score functions side by side, soft vs hard attention, and why scores are divided by sqrt(d_k).

``attention_internals`` runs the model's own forward at the "internals" capture level, so Q, K, V, QK^T,
the weights and the weighted sum shown are exactly the forward pass's, never a second hand-written stack.
Only scaled dot-product attention is trained in our model; the weight matrices of the additive, general
and location-based scores are random (seeded) here, to show their form, not trained behaviour.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from model.network.attention import Capture
from model.network.trace import KINDS
from model.network.transformer import Transformer


@dataclass(frozen=True)
class AttentionInternals:
    """One attention call of one sentence: model.network.attention.Intermediates with the batch dimension dropped, under
    the same names, plus the steps the Mechanics page shows between them.

    From the forward: query_input [Q, D] (the sub-layer's input), q [H, Q, d_k], k and v [H, K, d_k], unmasked
    = QK^T / sqrt(d_k) [H, Q, K] as this model computes it (T5: no division, plus its position bias), context
    [H, Q, d_k] = weights @ V, output [Q, D] = Concat(heads) W^O. Added:
    qk = QK^T [H, Q, K] before the scaling; mask bool [Q, K] (True = may attend); masked [H, Q, K], the softmax
    input; weights [H, Q, K]; d_k; whether this model divides by sqrt(d_k) (``scaled``: T5 does not) and adds a
    relative position bias to these scores (``position_bias``: T5's self-attention), so that ``unmasked`` is named
    for what it is.
    """

    query_input: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    qk: torch.Tensor
    unmasked: torch.Tensor
    mask: torch.Tensor
    masked: torch.Tensor
    weights: torch.Tensor
    context: torch.Tensor
    output: torch.Tensor
    d_k: int
    scaled: bool = True
    position_bias: bool = False

    @property
    def scores_label(self) -> str:
        """What ``unmasked`` is: "QKᵀ / √64", or T5's "QKᵀ + position bias" (no division)."""
        scores = f"QKᵀ / √{self.d_k}" if self.scaled else "QKᵀ"
        return scores + (" + position bias" if self.position_bias else "")


@torch.no_grad()
def attention_internals(model: Transformer, source_ids: list[int], decoder_input_ids: list[int], kind: str,
                        layer: int) -> AttentionInternals:
    """Run the teacher-forced forward (eval, no dropout) keeping every intermediate, and open up attention
    ``kind`` of ``layer``.

    source_ids end with EOS; decoder_input_ids start with BOS (Translation.source.ids and BOS + output[:-1]).
    The weights are AttentionTrace.weights(kind)[layer, 0] of that same forward.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}")
    device = model.embed.token.weight.device
    src = torch.tensor([source_ids], device=device)  # [1, S]
    tgt = torch.tensor([decoder_input_ids], device=device)  # [1, T]
    _, trace = model(src, tgt, capture=Capture.INTERNALS)
    parts = trace.internals[kind][layer]
    q, k = parts.q[0], parts.k[0]  # [H, Q, d_k], [H, K, d_k]
    return AttentionInternals(
        query_input=parts.query_input[0], q=q, k=k, v=parts.v[0], qk=q @ k.transpose(-2, -1),
        unmasked=parts.unmasked[0], mask=trace.mask(kind)[0, 0], masked=trace.scores(kind)[layer, 0],
        weights=trace.weights(kind)[layer, 0], context=parts.context[0], output=parts.output[0], d_k=q.size(-1),
        scaled=model.config.attention_scale,
        position_bias=model.config.positional_layout == "relative" and kind != "cross")


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Weights from scores along the last axis (the step every score function in the table ends with)."""
    return scores.double().softmax(dim=-1)


def soft_vs_hard(weights: torch.Tensor, values: torch.Tensor) -> dict[str, torch.Tensor]:
    """Soft attention (the given weights [K]) vs hard attention (one-hot of their argmax [K]), and what each
    passes on: the weighted sum of values [K, d] -> [d]. Keys "soft", "hard", "soft_output", "hard_output"."""
    hard = hard_attention(weights)
    return {"soft": weights, "hard": hard, "soft_output": weights.to(values.dtype) @ values,
            "hard_output": hard.to(values.dtype) @ values}


def sample_softmax(d_k: int, n_keys: int = 10, seed: int = 0) -> dict[str, torch.Tensor]:
    """One query against ``n_keys`` keys with unit-variance entries (so q.k has variance d_k).

    Returns "unscaled" softmax(q K^T) and "scaled" softmax(q K^T / sqrt(d_k)), each [n_keys]: the
    same sample for every caller, so a slider over d_k shows the effect of the width alone.
    """
    if d_k < 1 or n_keys < 1:
        raise ValueError(f"need d_k >= 1 and n_keys >= 1, got {d_k}, {n_keys}")
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
    scores = k @ q  # [n_keys]
    return {"unscaled": scores.softmax(-1), "scaled": (scores / math.sqrt(d_k)).softmax(-1)}


def _random(shape: tuple[int, ...], generator: torch.Generator, fan_in: int) -> torch.Tensor:
    return torch.randn(*shape, generator=generator) / math.sqrt(fan_in)


def compare_scores(query: torch.Tensor, keys: torch.Tensor, seed: int = 0) -> dict[str, torch.Tensor]:
    """Scores [K] of query s [d] against keys h_i [K, d] under each function:
    additive v^T tanh(W [s; h_i]) (Bahdanau), general s^T W h_i, dot s^T h_i (Luong), scaled dot s^T h_i / sqrt(d)."""
    d = query.numel()
    g = torch.Generator().manual_seed(seed)
    w_add, v_add, w_gen = _random((d, 2 * d), g, 2 * d), _random((d,), g, d), _random((d, d), g, d)
    pairs = torch.cat([query.expand_as(keys), keys], dim=-1)  # [K, 2d]
    return {
        "additive": torch.tanh(pairs @ w_add.T) @ v_add,  # [K]
        "general": keys @ (w_gen.T @ query),
        "dot": keys @ query,
        "scaled dot": keys @ query / math.sqrt(d),
    }


def score_function_weights(internals: AttentionInternals, head: int, query: int) -> dict[str, torch.Tensor]:
    """The weights [K'] each score function of the notes gives one head's query over the K' keys it may attend
    to, all on the same projected vectors: additive, general, dot and scaled dot (then softmax), and
    location-based (from the query alone)."""
    allowed = internals.mask[query]  # [K]
    q = internals.q[head, query].float().cpu()  # [d_k]
    keys = internals.k[head][allowed].float().cpu()  # [K', d_k]
    weights = {name: softmax(scores) for name, scores in compare_scores(q, keys).items()}
    weights["location-based"] = location_based(q, keys.size(0))
    return weights


def location_based(query: torch.Tensor, n_keys: int, seed: int = 0) -> torch.Tensor:
    """Luong's location-based alignment softmax(W_a s): weights [K] from the query alone, ignoring the keys."""
    g = torch.Generator().manual_seed(seed + 1)
    return (_random((n_keys, query.numel()), g, query.numel()) @ query).softmax(-1)


def hard_attention(weights: torch.Tensor) -> torch.Tensor:
    """Hard (local) attention picks one key: the one-hot of the soft weights' argmax. [..., K] -> [..., K]."""
    return torch.nn.functional.one_hot(weights.argmax(-1), weights.size(-1)).to(weights.dtype)


def softmax_saturation(d_ks: list[int], n_keys: int = 10, samples: int = 200, seed: int = 0) -> dict[str, torch.Tensor]:
    """Why divide by sqrt(d_k): with unit-variance q, k the dot product has variance d_k, so unscaled
    softmax saturates (entropy -> 0, max weight -> 1) and its gradient vanishes as d_k grows.

    Returns per d_k (tensors [len(d_ks)]): entropy, max weight and mean Frobenius norm of the softmax
    Jacobian diag(p) - p p^T, each with and without scaling.
    """
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {f"{m}_{s}": [] for m in ("entropy", "max_weight", "grad_norm")
                                   for s in ("scaled", "unscaled")}
    for d_k in d_ks:
        q = torch.randn(samples, 1, d_k, generator=g, dtype=torch.float64)
        k = torch.randn(samples, n_keys, d_k, generator=g, dtype=torch.float64)
        dots = (q * k).sum(-1)  # [samples, K]
        for name, scores in (("scaled", dots / math.sqrt(d_k)), ("unscaled", dots)):
            p = scores.softmax(-1)  # [samples, K]
            entropy = -(p * p.clamp_min(1e-300).log()).sum(-1)
            jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # [samples, K, K]
            out[f"entropy_{name}"].append(float(entropy.mean()))
            out[f"max_weight_{name}"].append(float(p.max(-1).values.mean()))
            out[f"grad_norm_{name}"].append(float(jacobian.flatten(1).norm(dim=-1).mean()))
    return {key: torch.tensor(values) for key, values in out.items()}


