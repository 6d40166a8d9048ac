"""Greedy decoding of several sentences as one batch: what a room's concurrent requests cost together.

At one sentence a step is a matrix-vector product per weight matrix, bound by reading the weights; N sentences
in one batch read each weight once for N rows (the remedy serving engines use, and what CTranslate2's
``translate_batch`` does). The sources are padded to one length and the padding masked, so each sentence's
attention is exactly its own: its cross-attention rows give the padding weight 0 and are cut to its own source,
and a sentence that has ended leaves the batch (``reorder``), so the others go on without it. Each result equals
``greedy_decode`` of that sentence alone, tokens and every attention weight (tested with hypothesis). Works on a
Transformer or a StaticCacheDecoder (anything with ``config``, ``start`` and ``step``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn.utils.rnn import pad_sequence

from .config import DecodeConfig
from .decoding import forced_piece, selectable_log_probs
from .masks import causal_mask
from .trace import AttentionTrace
from .transformer import Transformer

STEP_FIELDS = ("dec_self", "dec_self_scores", "cross", "cross_scores")  # what a step adds to each sentence's trace


@dataclass(frozen=True)
class BatchTranslation:
    """One sentence of a batch: its output ``tokens`` (BOS excluded, EOS included when it ended on one), their
    summed log-probability, and the attention behind them as ``DecodeResult.attention_for`` lays it out (batch 1:
    enc_self [1, H, S, S], dec_self [1, H, T, T], cross [1, H, T, S], S this sentence's own length), or None."""

    tokens: tuple[int, ...]
    log_prob: float
    attention: AttentionTrace | None


def _check(config: DecodeConfig) -> None:
    if config.beam_size != 1 or config.sampling is not None or config.no_repeat_ngram:
        raise ValueError("batched decoding is greedy: beam_size 1, no sampling, no n-gram rule")


@torch.inference_mode()
def greedy_batch(model: Transformer, sources: Sequence[torch.Tensor], config: DecodeConfig = DecodeConfig(),
                 return_attention: bool = True) -> list[BatchTranslation]:
    """Greedy decoding of every source [S_i] (ids, EOS-terminated) in one batch -> one BatchTranslation each, in
    the order given."""
    _check(config)
    if not sources:
        return []
    cfg = model.config
    device = next(model.parameters()).device
    src = pad_sequence([s.to(device) for s in sources], batch_first=True, padding_value=cfg.pad_id)  # [N, S]
    state, encoder = model.start(src, return_attention)
    live = torch.arange(len(sources), device=device)  # [R]: the sentence each batch row decodes
    current = torch.full((len(sources), 1), cfg.bos_id, device=device)  # [R, 1]
    tokens: list[list[int]] = [[] for _ in sources]
    log_probs = torch.zeros(len(sources), device=device)  # [N]
    steps: list[tuple[torch.Tensor, AttentionTrace | None]] = []  # per step: (rows' sentences, that step's trace)
    for t in range(config.max_len):
        out = model.step(state, current, return_attention)
        forced = forced_piece(config, t, cfg.eos_id)
        selectable = selectable_log_probs(out.log_probs, cfg.bos_id, cfg.pad_id, forced, cfg.eos_id)  # [R, V]
        best = selectable.argmax(dim=-1)  # [R]
        log_probs[live] += selectable.gather(1, best[:, None])[:, 0]
        steps.append((live, out.attention))
        for sentence, token in zip(live.tolist(), best.tolist(), strict=True):
            tokens[sentence].append(token)
        going = (best != cfg.eos_id).nonzero()[:, 0]  # [R']
        if t + 1 == config.max_len or going.numel() == 0:
            break
        state = out.state if going.numel() == live.numel() else out.state.reorder(going)
        live, current = live[going], best[going, None]  # [R'], [R', 1]
    traces = _sentence_traces(steps, encoder, [s.numel() for s in sources], [len(t) for t in tokens]) \
        if return_attention else [None] * len(sources)
    return [BatchTranslation(tuple(t), float(lp), trace)
            for t, lp, trace in zip(tokens, log_probs.tolist(), traces, strict=True)]


def _sentence_traces(steps: list[tuple[torch.Tensor, AttentionTrace]], encoder: list, source_lengths: list[int],
                     output_lengths: list[int]) -> list[AttentionTrace]:
    """Every step's rows written into one map per field and layer for the whole batch ([L, N, H, T, K], keys a
    query could not see at 0 for weights and finfo.min for scores), then each sentence's own corner of it."""
    first = steps[0][1]
    low = torch.finfo(first.cross[0].dtype).min
    n, length, source = len(source_lengths), len(steps), first.cross[0].size(-1)
    layers, heads = len(first.cross), first.cross[0].size(1)
    keys = {"dec_self": length, "dec_self_scores": length, "cross": source, "cross_scores": source}
    maps = {field: first.cross[0].new_full((layers, n, heads, length, keys[field]), low if "scores" in field else 0.0)
            for field in STEP_FIELDS}  # [L, N, H, T, K]
    for t, (live, trace) in enumerate(steps):
        for field in STEP_FIELDS:
            rows = torch.stack(getattr(trace, field))[:, :, :, 0]  # [L, R, H, K_t]
            maps[field][:, live, :, t, :rows.size(-1)] = rows
    enc_weights = torch.stack([a.weights for a in encoder])  # [L, N, H, S, S]
    enc_scores = torch.stack([a.scores for a in encoder])
    traces = []
    for i, (s, t) in enumerate(zip(source_lengths, output_lengths, strict=True)):
        own = {field: list(maps[field][:, i:i + 1, :, :t, :(t if field.startswith("dec") else s)].unbind(0))
               for field in STEP_FIELDS}  # per layer [1, H, T_i, K_i]
        traces.append(AttentionTrace(
            enc_self=list(enc_weights[:, i:i + 1, :, :s, :s].unbind(0)),
            enc_self_scores=list(enc_scores[:, i:i + 1, :, :s, :s].unbind(0)), **own,
            src_mask=torch.ones(1, 1, 1, s, dtype=torch.bool, device=enc_weights.device),
            tgt_mask=causal_mask(t, enc_weights.device)))
    return traces


__all__ = ["BatchTranslation", "greedy_batch"]
