"""Greedy and beam-search decoding as step generators (the UI streams every step).

``greedy_steps`` / ``beam_steps`` yield a frozen DecodeStep after each step; ``greedy_decode`` /
``beam_search`` just drain them. Both use the KV cache of ``Transformer.step`` and decode all beams of
one sentence as one batch. Each step keeps, per decoded row, the attention that produced its
next-token distribution, so the rows stacked along a hypothesis' path equal the maps of one
teacher-forced forward of that output.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from .config import DecodeConfig
from .transformer import StepOutput, Transformer


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty (Wu et al., 2016): lp(Y) = ((5 + |Y|) / 6) ** alpha.

    Hypotheses are ranked by log P(Y) / lp(Y); alpha = 0 gives lp = 1 (raw log-probability, which
    favours short outputs), larger alpha favours longer ones. |Y| counts generated tokens, EOS included.
    """
    return ((5.0 + length) / 6.0) ** alpha


@dataclass(frozen=True)
class Hypothesis:
    """A complete output. ``tokens`` exclude BOS (EOS included when it ended on EOS); ``path[t]`` is the
    row of step t that this hypothesis extended, to look up that step's attention and probabilities."""

    tokens: tuple[int, ...]
    log_prob: float
    score: float
    path: tuple[int, ...]
    ended_with_eos: bool


@dataclass(frozen=True)
class Candidate:
    """One of the top 2 x beam continuations considered at a step. status: kept | finished | pruned."""

    row: int
    token: int
    log_prob: float
    status: str


@dataclass(frozen=True)
class DecodeStep:
    """Everything about decoding step ``step`` (= tokens generated before it).

    prefixes [R, step+1] are the R rows decoded at this step (BOS + tokens so far) with cumulative
    log-probs prefix_scores [R]; topk_ids / topk_probs [R, k] their next-token distributions;
    dec_self [L, R, H, step+1] and cross [L, R, H, S] the attention rows behind them (None when
    attention was not asked for). beams [R', step+2], beam_scores [R'] and parents [R'] (index into
    the rows) are the live hypotheses after the step; finished holds every completed hypothesis so
    far, best first.
    """

    step: int
    prefixes: torch.Tensor
    prefix_scores: torch.Tensor
    topk_ids: torch.Tensor
    topk_probs: torch.Tensor
    dec_self: torch.Tensor | None
    cross: torch.Tensor | None
    candidates: tuple[Candidate, ...]
    beams: torch.Tensor
    beam_scores: torch.Tensor
    parents: torch.Tensor
    finished: tuple[Hypothesis, ...]
    done: bool

    def best_tokens(self) -> tuple[int, ...]:
        """The best output so far (a finished one if any beats the live beams), without BOS."""
        if self.finished and (self.beams.size(0) == 0 or self.done):
            return self.finished[0].tokens
        return tuple(self.beams[0, 1:].tolist())


@dataclass(frozen=True)
class DecodeResult:
    """The n-best list (best first) and every step that led to it."""

    hypotheses: tuple[Hypothesis, ...]
    steps: tuple[DecodeStep, ...]

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]

    def attention_for(self, hypothesis: Hypothesis | None = None) -> dict[str, torch.Tensor]:
        """The attention behind a hypothesis, rows stacked along its path: dec_self [L, H, T, T] (future
        keys 0) and cross [L, H, T, S], T = len(tokens). Needs decoding with return_attention=True."""
        hyp = hypothesis or self.best
        if not hyp.path or self.steps[0].cross is None:
            raise ValueError("no attention was recorded for this decode")
        length = len(hyp.path)
        layers, _, heads, _ = self.steps[0].dec_self.shape
        dec_self = self.steps[0].dec_self.new_zeros(layers, heads, length, length)  # [L, H, T, T]
        cross_rows = []
        for t, row in enumerate(hyp.path):
            dec_self[:, :, t, : t + 1] = self.steps[t].dec_self[:, row]  # [L, H, t+1]
            cross_rows.append(self.steps[t].cross[:, row])  # [L, H, S]
        return {"dec_self": dec_self, "cross": torch.stack(cross_rows, dim=2)}  # cross [L, H, T, S]


def _prepare(model: Transformer, src: torch.Tensor) -> torch.Tensor:
    if src.dim() == 1:
        src = src[None]
    if src.size(0) != 1:
        raise ValueError("decoding works on one sentence at a time: src must be [S] or [1, S]")
    return src.to(next(model.parameters()).device)


def _selectable(log_probs: torch.Tensor, bos_id: int, pad_id: int) -> torch.Tensor:
    """The model's log-probs with BOS and PAD made impossible: they are never valid outputs. [R, V]"""
    log_probs = log_probs.clone()
    log_probs[:, [bos_id, pad_id]] = float("-inf")
    return log_probs


def _step_attention(out: StepOutput) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    if out.dec_self is None:
        return None, None
    dec_self = torch.stack([w[:, :, 0] for w in out.dec_self])  # [L, R, H, t+1]
    cross = torch.stack([w[:, :, 0] for w in out.cross])  # [L, R, H, S]
    return dec_self, cross


@torch.inference_mode()
def greedy_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(),
                 return_attention: bool = True) -> Iterator[DecodeStep]:
    """Pick the most probable next token at every step. src [S] or [1, S] (ids, EOS-terminated)."""
    src = _prepare(model, src)
    cfg = model.config
    state, _ = model.start(src)
    prefix = torch.tensor([[cfg.bos_id]], device=src.device)  # [1, 1]
    score = torch.zeros(1, device=src.device)
    for t in range(config.max_len):
        out = model.step(state, prefix[:, -1:], return_attention)
        state = out.state
        topk_probs, topk_ids = out.log_probs.exp().topk(min(config.top_k, out.log_probs.size(-1)), dim=-1)  # [1, k]
        token = int(_selectable(out.log_probs, cfg.bos_id, cfg.pad_id)[0].argmax())
        new_score = score + out.log_probs[0, token]
        beams = torch.cat([prefix, prefix.new_tensor([[token]])], dim=1)  # [1, t+2]
        ended = token == cfg.eos_id
        done = ended or t + 1 == config.max_len
        path = tuple([0] * (t + 1))
        finished = (Hypothesis(tuple(beams[0, 1:].tolist()), float(new_score), float(new_score)
                               / length_penalty(t + 1, config.length_penalty), path, ended),) if done else ()
        dec_self, cross = _step_attention(out)
        yield DecodeStep(t, prefix, score, topk_ids, topk_probs, dec_self, cross,
                         (Candidate(0, token, float(new_score), "finished" if done else "kept"),),
                         beams[:0] if ended else beams, new_score[:0] if ended else new_score,
                         torch.zeros(0 if ended else 1, dtype=torch.long), finished, done)
        if done:
            return
        prefix, score = beams, new_score


def _select(scores: torch.Tensor, eos_id: int, beam_size: int) -> list[Candidate]:
    """Look at the top 2 x beam continuations (so finished hypotheses do not starve the beam): an EOS among
    the first beam_size finishes a hypothesis, others fill the beam until it holds beam_size, the rest are pruned.
    scores [R, V] are cumulative log-probs of every continuation."""
    vocab = scores.size(1)
    top_scores, top_idx = scores.flatten().topk(min(2 * beam_size, scores.numel()))  # [2k]
    chosen, kept = [], 0
    for rank, (s, idx) in enumerate(zip(top_scores.tolist(), top_idx.tolist())):
        row, token = divmod(idx, vocab)
        if token == eos_id:
            status = "finished" if rank < beam_size else "pruned"
        elif kept < beam_size:
            status, kept = "kept", kept + 1
        else:
            status = "pruned"
        chosen.append(Candidate(row, token, s, status))
    return chosen


@torch.inference_mode()
def beam_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(beam_size=4),
               return_attention: bool = True) -> Iterator[DecodeStep]:
    """Beam search with GNMT length penalty; all beams of the sentence are one batch.

    Stops when beam_size hypotheses have finished, no live beam is left, or max_len tokens were
    generated (live beams are then finished without EOS). src [S] or [1, S].
    """
    src = _prepare(model, src)
    cfg, device = model.config, src.device
    state, _ = model.start(src)
    prefixes = torch.tensor([[cfg.bos_id]], device=device)  # [R, 1]
    scores = torch.zeros(1, device=device)  # [R]
    paths: list[tuple[int, ...]] = [()]
    finished: list[Hypothesis] = []
    for t in range(config.max_len):
        out = model.step(state, prefixes[:, -1:], return_attention)
        probs = out.log_probs.exp()  # [R, V]
        topk_probs, topk_ids = probs.topk(min(config.top_k, probs.size(-1)), dim=-1)  # [R, k]
        candidates = _select(scores[:, None] + _selectable(out.log_probs, cfg.bos_id, cfg.pad_id),
                             cfg.eos_id, config.beam_size)
        last = t + 1 == config.max_len
        for c in candidates:
            if c.status == "finished" or (last and c.status == "kept"):
                tokens = tuple(prefixes[c.row, 1:].tolist()) + (c.token,)
                finished.append(Hypothesis(tokens, c.log_prob, c.log_prob / length_penalty(
                    len(tokens), config.length_penalty), paths[c.row] + (c.row,), c.token == cfg.eos_id))
        kept = [c for c in candidates if c.status == "kept"]
        parents = torch.tensor([c.row for c in kept], dtype=torch.long, device=device)  # [R']
        new_tokens = torch.tensor([[c.token] for c in kept], dtype=torch.long, device=device).view(-1, 1)
        beams = torch.cat([prefixes.index_select(0, parents), new_tokens], dim=1)  # [R', t+2]
        beam_scores = torch.tensor([c.log_prob for c in kept], device=device)  # [R']
        finished.sort(key=lambda h: h.score, reverse=True)
        done = last or not kept or len(finished) >= config.beam_size
        dec_self, cross = _step_attention(out)
        yield DecodeStep(t, prefixes, scores, topk_ids, topk_probs, dec_self, cross, tuple(candidates),
                         beams, beam_scores, parents, tuple(finished), done)
        if done:
            return
        state = out.state.reorder(parents)
        paths = [paths[c.row] + (c.row,) for c in kept]
        prefixes, scores = beams, beam_scores


def _drain(steps: Iterator[DecodeStep], n_best: int) -> DecodeResult:
    collected = tuple(steps)
    return DecodeResult(collected[-1].finished[:n_best], collected)


def greedy_decode(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(),
                  return_attention: bool = True) -> DecodeResult:
    return _drain(greedy_steps(model, src, config, return_attention), 1)


def beam_search(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(beam_size=4),
                return_attention: bool = True) -> DecodeResult:
    return _drain(beam_steps(model, src, config, return_attention), config.beam_size)


def decode_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig,
                 return_attention: bool = True) -> Iterator[DecodeStep]:
    """Greedy for beam_size 1, beam search otherwise."""
    if config.beam_size == 1:
        return greedy_steps(model, src, config, return_attention)
    return beam_steps(model, src, config, return_attention)
