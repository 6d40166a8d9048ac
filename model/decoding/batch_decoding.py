"""Greedy decoding of several sentences as one batch: what a room's concurrent requests cost together.

At one sentence a step is a matrix-vector product per weight matrix, bound by reading the weights; N sentences
in one batch read each weight once for N rows (the remedy serving engines use, and what CTranslate2's
``translate_batch`` does). The sources are padded to one length and the padding masked, so each sentence's
attention is exactly its own: its cross-attention rows give the padding weight 0 and are cut to its own source,
and a sentence that has ended leaves the batch (``reorder``), so the others go on without it.

``greedy_batch_steps`` yields, per step, for each sentence still decoding, the very DecodeStep that
``decode_steps`` yields for that sentence decoded alone (model.decoding.search.path_step builds both), so a page can
stream one sentence of a batch as it streams a sentence alone; ``greedy_batch`` drains it. Each result equals
``greedy_decode`` of that sentence alone, tokens and every attention weight (tested with hypothesis). Works on a
Transformer or a StaticCacheDecoder (anything with ``config``, ``start`` and ``step``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from model.decoding.search import (
    DecodeResult,
    DecodeStep,
    check_forced_bos,
    forced_piece,
    path_step,
    selectable_log_probs,
    step_attention,
    top_next,
)
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.masks import padding_mask
from model.network.trace import KINDS, AttentionTrace
from model.network.transformer import Transformer


@dataclass(frozen=True)
class BatchTranslation:
    """One sentence of a batch: its output ``tokens`` (BOS excluded, EOS included when it ended on one), their
    summed log-probability, and the attention behind them as ``DecodeResult.attention_for`` lays it out (batch 1:
    enc_self [1, H, S, S], dec_self [1, H, T, T], cross [1, H, T, S], S this sentence's own length), or None."""

    tokens: tuple[int, ...]
    log_prob: float
    attention: AttentionTrace | None


def batchable(config: DecodeConfig) -> bool:
    """Whether a decode may share a batch: greedy, no sampling, no n-gram rule (those keep per-hypothesis state the
    batch does not carry; a head mask is the caller's to rule out, it is not part of the config)."""
    return config.beam_size == 1 and config.sampling is None and not config.no_repeat_ngram


def batch_key(config: DecodeConfig) -> DecodeConfig:
    """What sentences of one batch must share: everything but the length limit (each row stops at its own)."""
    return dataclasses.replace(config, max_len=1)


def _check(configs: Sequence[DecodeConfig]) -> None:
    if not all(batchable(c) for c in configs):
        raise ValueError("batched decoding is greedy: beam_size 1, no sampling, no n-gram rule")
    if len({batch_key(c) for c in configs}) > 1:
        raise ValueError("the sentences of one batch must share their decode settings (all but max_len)")


def _stacked(trace: AttentionTrace) -> dict[str, torch.Tensor]:
    """Each field a batch's trace holds, its layers stacked once for all rows: [L, B, H, Q, K] (a compiled step's
    as it returned them: ``AttentionTrace.stacked``)."""
    return {f: trace.stacked(f) for kind in KINDS for f in (kind, kind + "_scores") if getattr(trace, f)}


def _own_rows(trace: AttentionTrace, stacked: dict[str, torch.Tensor], row: int, source_len: int,
              src_mask: torch.Tensor | None) -> AttentionTrace:
    """Row ``row`` of a batch's trace (``stacked`` its fields) cut to its sentence's own ``source_len`` positions (no
    padding column or query) and copied once per field, so that a sentence's steps hold its own memory, not the
    batch's: per layer [1, H, Q', K']."""
    def own(field: str, layers: torch.Tensor) -> list[torch.Tensor]:  # [L, B, H, Q, K]
        if field.startswith("enc_self"):
            part = layers[:, row:row + 1, :, :source_len, :source_len]
        else:
            part = layers[:, row:row + 1, ..., :source_len] if field.startswith("cross") else layers[:, row:row + 1]
        return list(part.clone().unbind(0))
    own_fields: dict[str, Any] = {field: own(field, layers) for field, layers in stacked.items()}
    return dataclasses.replace(trace, **own_fields, src_mask=src_mask)


def _selectable(log_probs: torch.Tensor, forced: list[int | None], model: Transformer) -> torch.Tensor:
    """selectable_log_probs of every row [R, V], each with its own forced piece (rows end at their own limits)."""
    cfg = model.config
    if len(set(forced)) == 1:
        return selectable_log_probs(log_probs, cfg.bos_id, cfg.pad_id, forced[0], cfg.eos_id)  # [R, V]
    return torch.cat([selectable_log_probs(log_probs[r:r + 1], cfg.bos_id, cfg.pad_id, f, cfg.eos_id)
                      for r, f in enumerate(forced)])  # [R, V]


@torch.inference_mode()
def greedy_batch_steps(model: Transformer, sources: Sequence[torch.Tensor], configs: Sequence[DecodeConfig],
                       capture: Capture = Capture.WEIGHTS) -> Generator[dict[int, DecodeStep], None, None]:
    """Greedy decoding of every source [S_i] (ids, EOS-terminated) in one batch, source i under configs[i] (all
    alike but for max_len): per step, {i: the DecodeStep of sentence i decoded alone} for each sentence still
    decoding. Stopping the iteration stops the batch."""
    _check(configs)
    if not sources:
        return
    cfg = model.config
    check_forced_bos(model, configs[0])
    device = next(model.parameters()).device
    sources = [s.to(device) for s in sources]
    state, enc = model.start(pad_sequence(sources, batch_first=True, padding_value=cfg.pad_id),
                             capture)  # padded sources [N, S]
    encoder = AttentionTrace.from_outputs(enc, [], []) if capture else None
    encoders = [_own_rows(encoder, _stacked(encoder), i, s.numel(), padding_mask(s[None], cfg.pad_id))
                if encoder is not None else None for i, s in enumerate(sources)]
    live = list(range(len(sources)))  # the sentence each batch row decodes
    prefixes = [torch.full((1, 1), cfg.bos_id, device=device) for _ in sources]  # per sentence [1, t+1]
    scores = [torch.zeros(1, device=device) for _ in sources]  # per sentence [1]
    for t in range(max(c.max_len for c in configs)):
        current = torch.cat([prefixes[i][:, -1:] for i in live])  # [R, 1]
        out = model.step(state, current, capture)
        topk_probs, topk_ids = top_next(out.log_probs, configs[0].top_k)  # [R, k]
        selectable = _selectable(out.log_probs, [forced_piece(configs[i], t, cfg.eos_id) for i in live], model)
        best = selectable.argmax(dim=-1).tolist()  # [R]
        stacked = _stacked(out.attention) if out.attention is not None else {}
        steps = {i: path_step(t, prefixes[i], scores[i], (topk_ids[r:r + 1].clone(), topk_probs[r:r + 1].clone()),
                              None if out.attention is None else
                              step_attention(encoders[i],
                                             _own_rows(out.attention, stacked, r, sources[i].numel(), None)),
                              best[r], scores[i] + selectable[r, best[r]], cfg.eos_id, configs[i])
                 for r, i in enumerate(live)}
        yield steps
        going = [r for r, i in enumerate(live) if not steps[i].done]
        if not going:
            return
        state = out.state if len(going) == len(live) else out.state.reorder(torch.tensor(going, device=device))
        for i in live:
            prefixes[i], scores[i] = steps[i].beams, steps[i].beam_scores
        live = [live[r] for r in going]


@torch.inference_mode()
def greedy_batch(model: Transformer, sources: Sequence[torch.Tensor], config: DecodeConfig = DecodeConfig(),
                 capture: Capture = Capture.WEIGHTS) -> list[BatchTranslation]:
    """Greedy decoding of every source [S_i] (ids, EOS-terminated) in one batch -> one BatchTranslation each, in
    the order given: greedy_batch_steps drained, each sentence's steps assembled as DecodeResult does alone."""
    steps: list[list[DecodeStep]] = [[] for _ in sources]
    for step in greedy_batch_steps(model, sources, [config] * len(sources), capture):
        for i, own in step.items():
            steps[i].append(own)
    results = [DecodeResult.from_steps(own, 1) for own in steps]
    return [BatchTranslation(r.best.tokens, r.best.log_prob, r.attention_for() if capture else None)
            for r in results]


__all__ = ["BatchTranslation", "batch_key", "batchable", "greedy_batch", "greedy_batch_steps"]
