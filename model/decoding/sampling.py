"""Sampling: draw each next piece from the model's distribution, reshaped by a temperature and cut to the most
probable pieces (top-k, top-p), instead of searching for the most probable sentence.

``model.decoding.search.sample_steps`` is a step generator like ``greedy_steps`` (the same DecodeStep, one hypothesis),
so the UI streams it the same way; each step also says what the sampler did (``DecodeStep.sample``, a SampleChoice):
the distribution before and after the temperature and the cut, and the piece drawn. A seeded generator makes a
sample repeatable; temperature 0 is greedy decoding.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from model.network.config import Sampling


@dataclass(frozen=True)
class SampleChoice:
    """What the sampler did at one step. ``ids`` [k] are the k pieces the model found most probable (k = the
    DecodeConfig's display top_k), ``before`` [k] their probabilities as the model gave them, ``after`` [k] after the
    temperature and the cut, renormalised (0 = cut away); ``kept`` counts the pieces left after the cut, ``token`` is
    the piece drawn and ``token_before`` / ``token_after`` its two probabilities."""

    ids: torch.Tensor
    before: torch.Tensor
    after: torch.Tensor
    kept: int
    token: int
    token_before: float
    token_after: float


def reshape(log_probs: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The distribution to draw from: log_probs [V] (log-probabilities, -inf where impossible) -> probabilities [V].

    p_i ∝ exp(log p_i / T); temperature 0 puts all the mass on the most probable piece. top_k keeps the k most
    probable pieces; top_p keeps the smallest set of most probable pieces whose probability reaches p (the piece
    that crosses p included, so at least one is always kept). Both cuts apply to the tempered distribution."""
    if sampling.temperature == 0:
        return torch.zeros_like(log_probs).scatter_(0, log_probs.argmax().view(1), 1.0)
    probs = (log_probs / sampling.temperature).softmax(dim=-1)  # [V]
    if sampling.top_k:
        cutoff = probs.topk(min(sampling.top_k, probs.numel())).values[-1]
        probs = torch.where(probs >= cutoff, probs, torch.zeros_like(probs))
    if sampling.top_p < 1:
        ordered, order = probs.sort(descending=True)  # [V]
        before = ordered.cumsum(0) - ordered  # mass of the more probable pieces
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter_(0, order, before < sampling.top_p * probs.sum())
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    return probs / probs.sum()


def draw(log_probs: torch.Tensor, sampling: Sampling, generator: torch.Generator, shown: int) -> SampleChoice:
    """Draw one piece from ``reshape(log_probs)``; the choice records the ``shown`` most probable pieces."""
    probs = reshape(log_probs, sampling)  # [V]
    token = int(torch.multinomial(probs, 1, generator=generator))
    model_probs = log_probs.exp()  # [V]
    top, ids = model_probs.topk(min(shown, model_probs.numel()))  # [k]
    return SampleChoice(ids=ids, before=top, after=probs[ids], kept=int((probs > 0).sum()), token=token,
                        token_before=float(model_probs[token]), token_after=float(probs[token]))
