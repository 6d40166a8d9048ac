"""Greedy and beam-search decoding as step generators (the UI streams every step).

``greedy_steps`` / ``beam_steps`` / ``sample_steps`` (model.decoding.sampling draws the piece) yield a frozen DecodeStep
after each step; ``greedy_decode`` / ``beam_search`` just drain them. All use the KV cache of ``Transformer.step``
and decode all beams of one sentence as one batch. Each step keeps, per decoded row, the attention that produced its
next-token distribution, so the rows stacked along a hypothesis' path equal the maps of one
teacher-forced forward of that output.
"""
from __future__ import annotations

import dataclasses
import itertools
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F

from model.decoding.beam_stopping import best_possible_length, search_is_over
from model.decoding.forcing import ForcedChoice, judge
from model.decoding.sampling import SampleChoice, draw
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.masks import causal_mask, padding_mask
from model.network.trace import AttentionTrace, HeadMask
from model.network.transformer import DecoderState, StepOutput, Transformer


def length_penalty(length: int, alpha: float, formula: str = "gnmt") -> float:
    """GNMT length penalty (Wu et al., 2016): lp(Y) = ((5 + |Y|) / 6) ** alpha; with ``formula`` "hf", Hugging
    Face's |Y| ** alpha (what generate() divides by, tested equal to its sequences_scores).

    Hypotheses are ranked by log P(Y) / lp(Y); alpha = 0 gives lp = 1 (raw log-probability, which
    favours short outputs), larger alpha favours longer ones. |Y| counts generated tokens, EOS included.
    """
    return float(length) ** alpha if formula == "hf" else ((5.0 + length) / 6.0) ** alpha


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
    ``attention`` the attention behind them (None when not asked for): the sentence's encoder
    self-attention and, per layer, this step's query rows dec_self [R, H, 1, step+1] and cross [R, H, 1, S].
    beams [R', step+2], beam_scores [R'] and parents [R'] (index into the rows) are the live hypotheses
    after the step; finished holds every completed hypothesis so far, best first.
    """

    step: int
    prefixes: torch.Tensor
    prefix_scores: torch.Tensor
    topk_ids: torch.Tensor
    topk_probs: torch.Tensor
    attention: AttentionTrace | None
    candidates: tuple[Candidate, ...]
    beams: torch.Tensor
    beam_scores: torch.Tensor
    parents: torch.Tensor
    finished: tuple[Hypothesis, ...]
    done: bool
    sample: SampleChoice | None = None  # what the sampler did (model.decoding.sampling), None for greedy and beam
    # search
    banks: tuple[int, ...] | None = None  # per live beam, the kept pieces it holds (model.decoding.constrained_beam),
    # else None
    forced: ForcedChoice | None = None  # how a piece the model was made to write stood in its distribution
    # (model.decoding.forcing), None for every search

    @property
    def dec_self(self) -> torch.Tensor | None:
        """This step's decoder self-attention rows, every layer: [L, R, H, step+1]."""
        return None if self.attention is None else self.attention.weights("dec_self")[:, :, :, 0]

    @property
    def cross(self) -> torch.Tensor | None:
        """This step's cross-attention rows, every layer: [L, R, H, S]."""
        return None if self.attention is None else self.attention.weights("cross")[:, :, :, 0]

    def best_tokens(self) -> tuple[int, ...]:
        """The best output so far (a finished one if any beats the live beams), without BOS."""
        if self.finished and (self.beams.size(0) == 0 or self.done):
            return self.finished[0].tokens
        return tuple(self.beams[0, 1:].tolist())


def _stack_rows(steps: Sequence[DecodeStep], path: Sequence[int], field: str, fill: float) -> list[torch.Tensor]:
    """Per layer, the query rows of one trace field (e.g. "cross" or "dec_self_scores") along a path, stacked
    into the map a teacher-forced forward gives: [1, H, T, K], the keys a row could not see yet (dec_self's
    future) set to ``fill``. All layers move at once. A static cache's steps hand back its whole capacity, their
    unseen keys already masked (``AttentionTrace.padded``): those rows stack as they are and are cut to K once."""
    whole = [cast(AttentionTrace, steps[t].attention).padded(field) for t in range(len(path))]  # [L, R_t, H, 1, K_t+]
    keys = cast(AttentionTrace, steps[len(path) - 1].attention).stacked(field).size(-1)  # the last step's: every key
    width = whole[0].size(-1)
    if all(rows.size(-1) == width for rows in whole):  # all as wide (cross, or one capacity): no padding
        if all(rows.size(1) == 1 for rows in whole):  # one row a step (greedy): the path is every row
            stacked = torch.cat(whole, dim=1)[:, :, :, 0, :keys].transpose(1, 2)  # [L, H, T, K]
        else:
            stacked = torch.cat([rows.select(1, row) for rows, row in zip(whole, path, strict=True)],
                                dim=2)[..., :keys]  # [L, H, T, K]: each step's row of the path
        stacked = stacked.contiguous()
    else:
        stacked = whole[0].new_full((whole[0].size(0), whole[0].size(2), len(whole), keys), fill)  # [L, H, T, K]
        for t, (rows, row) in enumerate(zip(whole, path, strict=True)):  # a row as wide as it is, up to K
            upto = min(rows.size(-1), keys)
            stacked[:, :, t, :upto] = rows[:, row, :, 0, :upto]
    return list(stacked[:, None].unbind(0))  # per layer [1, H, T, K]


@dataclass(frozen=True)
class DecodeResult:
    """The n-best list (best first) and every step that led to it."""

    hypotheses: tuple[Hypothesis, ...]
    steps: tuple[DecodeStep, ...]

    @classmethod
    def from_steps(cls, steps: Sequence[DecodeStep], n_best: int) -> DecodeResult:
        """The result once the last step is in: its finished hypotheses are the n-best list."""
        steps = tuple(steps)
        return cls(steps[-1].finished[:n_best], steps)

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]

    def attention_for(self, hypothesis: Hypothesis | None = None) -> AttentionTrace:
        """The attention behind a hypothesis, its step rows stacked along its path into the trace of one
        teacher-forced forward of that output (batch 1, T = len(tokens)): enc_self [1, H, S, S],
        dec_self [1, H, T, T] (future keys 0), cross [1, H, T, S], scores and masks alike. Needs decoding
        with capture=Capture.WEIGHTS; no second forward pass is run."""
        hyp = hypothesis or self.best
        first = self.steps[0].attention
        if not hyp.path or first is None:
            raise ValueError("no attention was recorded for this decode")
        low = torch.finfo(first.cross[0].dtype).min  # what a masked score holds in a forward pass
        causal = causal_mask(len(hyp.path), first.cross[0].device)  # [1, 1, T, T]
        return AttentionTrace(
            enc_self=first.enc_self, dec_self=_stack_rows(self.steps, hyp.path, "dec_self", 0.0),
            cross=_stack_rows(self.steps, hyp.path, "cross", 0.0), enc_self_scores=first.enc_self_scores,
            dec_self_scores=_stack_rows(self.steps, hyp.path, "dec_self_scores", low),
            cross_scores=_stack_rows(self.steps, hyp.path, "cross_scores", low), src_mask=first.src_mask,
            tgt_mask=causal)


def check_forced_bos(model: Transformer, config: DecodeConfig) -> None:
    """A forced first piece must be one of the model's ids (ValueError otherwise)."""
    if config.forced_bos is not None and config.forced_bos >= model.config.vocab_size:
        raise ValueError(f"forced_bos must be an id in [0, {model.config.vocab_size}), got {config.forced_bos}")


def _prepare(model: Transformer, src: torch.Tensor, config: DecodeConfig) -> torch.Tensor:
    check_forced_bos(model, config)
    if src.dim() == 1:
        src = src[None]
    if src.size(0) != 1:
        raise ValueError("decoding works on one sentence at a time: src must be [S] or [1, S]")
    return src.to(next(model.parameters()).device)


def repeated_ngram_pieces(prefix: list[int], n: int) -> list[int]:
    """The pieces that would make the last n-1 pieces of ``prefix`` (the start token included) an n-gram the prefix
    already has: generate()'s NoRepeatNGramLogitsProcessor, for one hypothesis."""
    if n < 1 or len(prefix) + 1 < n:
        return []
    tail = prefix[len(prefix) - n + 1:]  # the n-1 pieces the next one would follow
    return [prefix[i + n - 1] for i in range(len(prefix) - n + 1) if prefix[i:i + n - 1] == tail]


def selectable_log_probs(log_probs: torch.Tensor, bos_id: int, pad_id: int, forced: int | None = None,
                eos_id: int | None = None, banned: list[list[int]] | None = None) -> torch.Tensor:
    """The model's log-probs with the start token and PAD made impossible: they are never valid outputs (unless the
    start token is EOS itself, as in BART), and each row's ``banned`` pieces too (no_repeat_ngram). With ``forced``
    (an id) only that piece is possible, at log-prob 0: generate()'s ForcedBOS/ForcedEOSTokenLogitsProcessor, which
    come after the n-gram rule, so a forced piece adds nothing to a hypothesis' score. [R, V]"""
    if forced is not None:
        only = torch.full_like(log_probs, float("-inf"))  # [R, V]
        only[:, forced] = 0.0
        return only
    log_probs = log_probs.clone()
    log_probs[:, [pad_id] if bos_id == eos_id else [bos_id, pad_id]] = float("-inf")
    for row, pieces in enumerate(banned or []):
        log_probs[row, pieces] = float("-inf")
    return log_probs


def _banned(prefixes: torch.Tensor, config: DecodeConfig) -> list[list[int]] | None:
    """Per row of prefixes [R, t+1], the pieces no_repeat_ngram rules out; None when the rule is off."""
    if not config.no_repeat_ngram:
        return None
    return [repeated_ngram_pieces(row, config.no_repeat_ngram) for row in prefixes.tolist()]


def forced_piece(config: DecodeConfig, t: int, eos_id: int) -> int | None:
    """The id forced at step t, else None: EOS at the length limit when the config asks for it, else the config's
    forced_bos as the first piece (generate() applies both in this order, so EOS wins at a limit of 1)."""
    if config.forced_eos and t + 1 == config.max_len:
        return eos_id
    return config.forced_bos if t == 0 else None


def start_sentence(model: Transformer, src: torch.Tensor, capture: Capture, head_mask: HeadMask | None
                   ) -> tuple[DecoderState, AttentionTrace | None]:
    """Encode the source once; with attention, the encoder's part of every step's trace."""
    state, enc = model.start(src, capture, head_mask=head_mask)
    if not capture:
        return state, None
    return state, AttentionTrace.from_outputs(enc, [], [], padding_mask(src, model.config.pad_id))


def step_attention(encoder: AttentionTrace | None, step: AttentionTrace | None) -> AttentionTrace | None:
    """One step's query rows joined with the sentence's encoder self-attention."""
    if encoder is None or step is None:
        return None
    return step.with_encoder(encoder)


def _finished(tokens: tuple[int, ...], log_prob: float, path: tuple[int, ...], eos_id: int, config: DecodeConfig
              ) -> Hypothesis:
    """A completed output, scored by log-prob / length penalty (the config's α and formula)."""
    lp = length_penalty(len(tokens), config.length_penalty, config.length_penalty_formula)
    return Hypothesis(tokens=tokens, log_prob=log_prob, score=log_prob / lp,
                      path=path, ended_with_eos=tokens[-1] == eos_id)


def top_next(log_probs: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k most probable next tokens of each row and their probabilities ([R, k] each); exp of k values only."""
    top_log_probs, top_ids = log_probs.topk(min(k, log_probs.size(-1)), dim=-1)  # [R, k]
    return top_log_probs.exp(), top_ids


Ranked = list[tuple[float, int, int]]  # continuations (score, row, piece), best first


def ruled_out(bos_id: int, pad_id: int, eos_id: int, banned: list[list[int]] | None, rows: int) -> list[set[int]]:
    """Per row, the pieces ``selectable_log_probs`` makes impossible (without a forced piece)."""
    never = {pad_id} if bos_id == eos_id else {bos_id, pad_id}
    return [never | set(banned[row]) for row in range(rows)] if banned else [never] * rows


def top_with_room(log_probs: torch.Tensor, k: int, wanted: int, excluded: list[set[int]]
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's most probable pieces, best first ([R, m] log-probs and ids): the k a step shows, and enough that
    ``wanted`` + 1 selectable ones are among them unless a row rules out more than it allows for
    (``best_selectable`` then says so). One top-k serves both the display and the choice: a second one over the
    whole vocabulary (32,000 log-probs at beam 4) took 45 us of a step."""
    m = max(k, wanted + 1 + max(len(rows) for rows in excluded))
    return log_probs.topk(min(m, log_probs.size(-1)), dim=-1)  # [R, m]


def best_selectable(top: tuple[torch.Tensor, torch.Tensor], excluded: list[set[int]], n: int,
                    scores: torch.Tensor | None = None) -> Ranked | None:
    """The n best continuations over all rows (score = ``scores`` [R] + the piece's log-prob, or the log-prob), found
    among each row's most probable pieces ``top`` (``top_with_room``) without the pieces each row rules out. Exactly
    what ranking every selectable continuation gives, or None when ``top`` cannot tell: a row with n or fewer
    selectable pieces in it, a tie among the n + 1 best, or an impossible one (-inf) among the n."""
    totals = (top[0] if scores is None else scores[:, None] + top[0]).tolist()  # [R, m]: the sums a full ranking adds
    pool: Ranked = []
    for row, (row_totals, row_ids) in enumerate(zip(totals, top[1].tolist(), strict=True)):
        mine = [(total, row, piece) for total, piece in zip(row_totals, row_ids, strict=True)
                if piece not in excluded[row]][:n + 1]
        if len(mine) <= n:
            return None
        pool += mine  # any continuation of this row left out ranks below its (n + 1)th: never among the n best
    pool.sort(key=lambda continuation: continuation[0], reverse=True)
    best = [total for total, _, _ in pool[:n + 1]]
    if best[n - 1] == float("-inf") or any(a == b for a, b in itertools.pairwise(best)):
        return None
    return pool[:n]


Choose = Callable[[torch.Tensor], tuple[int, SampleChoice | None]]  # selectable log-probs [V] -> piece, record


def _argmax(selectable: torch.Tensor) -> tuple[int, None]:
    """Greedy's choice: the most probable selectable piece of [V] (the first of equals)."""
    return int(selectable.argmax()), None


def _one_path(model: Transformer, src: torch.Tensor, config: DecodeConfig, capture: Capture,
              head_mask: HeadMask | None, choose: Choose | None) -> Iterator[DecodeStep]:
    """Decode one hypothesis, ``choose`` picking each next piece from the step's log-probs (BOS and PAD made
    impossible): sampling draws; None is greedy, the argmax. src [S] or [1, S]."""
    src = _prepare(model, src, config)
    cfg = model.config
    state, encoder = start_sentence(model, src, capture, head_mask)
    prefix = torch.tensor([[cfg.bos_id]], device=src.device)  # [1, 1]
    score = torch.zeros(1, device=src.device)
    written, total = [cfg.bos_id], 0.0  # the prefix's ids and its log-prob, as Python values
    for t in range(config.max_len):
        out = model.step(state, prefix[:, -1:], capture)
        state = out.state
        forced = forced_piece(config, t, cfg.eos_id)
        banned = _banned(prefix, config)
        excluded = ruled_out(cfg.bos_id, cfg.pad_id, cfg.eos_id, banned, 1)
        top = top_with_room(out.log_probs, config.top_k, 1, excluded)  # [1, m]
        best = best_selectable(top, excluded, 1) if choose is None and forced is None else None
        if best is not None:  # greedy's choice among the most probable pieces: the argmax, without a pass over V
            (log_prob, _, token), sample = best[0], None
        else:
            selectable = selectable_log_probs(out.log_probs, cfg.bos_id, cfg.pad_id, forced, cfg.eos_id,
                                              banned)[0]  # [V]
            token, sample = (forced, None) if forced is not None else (choose or _argmax)(selectable)
            log_prob = float(selectable[token])
        shown = top if top[0].size(1) == config.top_k else (top[0][:, :config.top_k], top[1][:, :config.top_k])
        total = float32_sum(total, log_prob)
        step = path_step(t, prefix, score, (shown[1], shown[0].exp()), step_attention(encoder, out.attention),
                         token, total, cfg.eos_id, config, sample, written)  # shown: the k a step shows [1, k]
        yield step
        if step.done:
            return
        prefix, score = step.beams, step.beam_scores
        written = [*written, token]


def float32_sum(a: float, b: float) -> float:
    """a + b as float32 adds them, for two float32 values held as Python floats: their sum in double rounded once
    to float32 is the correctly rounded float32 sum (a double has more than 2 x 24 + 2 bits), so a score summed so
    equals the tensor sum bit for bit, without a tensor call a step."""
    return cast(float, struct.unpack("f", struct.pack("f", a + b))[0])


def path_step(t: int, prefix: torch.Tensor, score: torch.Tensor, top: tuple[torch.Tensor, torch.Tensor],
              attention: AttentionTrace | None, token: int, new_score: torch.Tensor | float, eos_id: int,
              config: DecodeConfig, sample: SampleChoice | None = None, written: Sequence[int] | None = None
              ) -> DecodeStep:
    """Step t of a one-hypothesis decode (greedy or sampled, alone or as a row of model.decoding.batch_decoding's
    batch): prefix [1, t+1] with its log-prob score [1], extended by ``token`` to new_score ([1], or its float32 value
    as a float); top = (topk_ids, topk_probs) [1, k]; ``written``: the prefix's ids as a list, when the caller keeps
    them (the beam is then made from it). Once done, the one finished hypothesis is the output."""
    if written is None:
        beams = F.pad(prefix, (0, 1), value=token)  # [1, t+2]: the prefix and the token (a third of torch.cat's time)
    else:
        beams = torch.tensor([[*written, token]], device=prefix.device)  # [1, t+2]
    if isinstance(new_score, float):
        value, new_score = new_score, torch.tensor([new_score], dtype=score.dtype, device=score.device)  # [1]
    else:
        value = float(new_score)
    ended = token == eos_id
    done = ended or t + 1 == config.max_len
    finished = (_finished((*written[1:], token) if written is not None else tuple(beams[0, 1:].tolist()), value,
                          (0,) * (t + 1), eos_id, config),) if done else ()
    return DecodeStep(step=t, prefixes=prefix, prefix_scores=score, topk_ids=top[0], topk_probs=top[1],
                      attention=attention, candidates=(Candidate(0, token, value, "finished" if done else "kept"),),
                      beams=beams[:0] if ended else beams, beam_scores=new_score[:0] if ended else new_score,
                      parents=torch.zeros(0 if ended else 1, dtype=torch.long), finished=finished, done=done,
                      sample=sample)


@torch.inference_mode()
def greedy_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(),
                 capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Pick the most probable next token at every step. src [S] or [1, S] (ids, EOS-terminated); ``head_mask``
    (batch 1) switches heads off."""
    yield from _one_path(model, src, config, capture, head_mask, None)


def _select(scores: torch.Tensor, eos_id: int, beam_size: int) -> list[Candidate]:
    """Look at the top 2 x beam continuations (so finished hypotheses do not starve the beam): an EOS among
    the first beam_size finishes a hypothesis, others fill the beam until it holds beam_size, the rest are pruned.
    scores [R, V] are cumulative log-probs of every continuation."""
    vocab = scores.size(1)
    top_scores, top_idx = scores.flatten().topk(min(2 * beam_size, scores.numel()))  # [2k]
    ranked = [(s, *divmod(idx, vocab)) for s, idx in zip(top_scores.tolist(), top_idx.tolist(), strict=True)]
    return candidates_of(ranked, eos_id, beam_size)


def candidates_of(ranked: Ranked, eos_id: int, beam_size: int) -> list[Candidate]:
    """The continuations (score, row, piece), best first, as Candidates with what becomes of each (``statuses``)."""
    return [Candidate(row, token, s, status)
            for (s, row, token), status in zip(ranked, statuses(ranked, eos_id, beam_size), strict=True)]


def statuses(ranked: Sequence[tuple[float, int, int]], eos_id: int, beam_size: int) -> list[str]:
    """What becomes of continuations (score, row, token), best first: an EOS among the first beam_size finishes a
    hypothesis, others are kept until the beam holds beam_size, the rest (and whatever the model or a forced piece
    rules out, at -inf) are pruned."""
    out, kept = [], 0
    for rank, (score, _, token) in enumerate(ranked):
        if score == float("-inf"):
            out.append("pruned")
        elif token == eos_id:
            out.append("finished" if rank < beam_size else "pruned")
        elif kept < beam_size:
            out.append("kept")
            kept += 1
        else:
            out.append("pruned")
    return out


def extend_beams(prefixes: torch.Tensor, kept: Sequence[Candidate]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The live hypotheses after a step: parents [R'] (rows of prefixes [R, t+1] they extend), beams [R', t+2] and
    their cumulative log-probs [R'], in the order of ``kept``."""
    device = prefixes.device
    parents = torch.tensor([c.row for c in kept], dtype=torch.long, device=device)  # [R']
    new_tokens = torch.tensor([[c.token] for c in kept], dtype=torch.long, device=device).view(-1, 1)  # [R', 1]
    beams = torch.cat([prefixes.index_select(0, parents), new_tokens], dim=1)  # [R', t+2]
    return parents, beams, torch.tensor([c.log_prob for c in kept], device=device)


def beams_of(written: list[list[int]], kept: Sequence[Candidate], length: int, device: torch.device
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``extend_beams`` from the live hypotheses' ids as lists (``written``, in the order of ``kept``, each
    ``length`` long): parents [R'], beams [R', length] and their cumulative log-probs [R'], each made at once from
    its list, without gathering the prefixes (three tensor calls fewer a step)."""
    parents = torch.tensor([c.row for c in kept], dtype=torch.long, device=device)  # [R']
    beams = torch.tensor(written, dtype=torch.long, device=device).view(len(kept), length)  # [R', length]
    return parents, beams, torch.tensor([c.log_prob for c in kept], device=device)


def _search_is_over(finished: Sequence[Hypothesis], best_live_log_prob: float, generated: int,
                    config: DecodeConfig) -> bool:
    """Whether the config's early_stopping rule (model.decoding.beam_stopping) ends the search after a step that left
    live
    beams of ``generated`` pieces, the best with ``best_live_log_prob``; ``finished`` best first."""
    length = best_possible_length(generated, config.max_len, config.length_penalty, config.early_stopping)
    best_live = best_live_log_prob / length_penalty(length, config.length_penalty, config.length_penalty_formula)
    return search_is_over([h.score for h in finished], best_live, config.beam_size, config.early_stopping)


@dataclass
class SearchStart:
    """What a beam search starts from: src [1, S] on the model's device, the decoder state after encoding it once
    (its one row copied ``rows`` times: ``Transformer.first_step_rows``), the encoder's part of every step's trace,
    one prefix [1, 1] (the start token) and its log-prob [1]."""

    src: torch.Tensor
    state: DecoderState
    encoder: AttentionTrace | None
    prefixes: torch.Tensor
    scores: torch.Tensor
    rows: int = 1


def start_search(model: Transformer, src: torch.Tensor, config: DecodeConfig, capture: Capture,
                 head_mask: HeadMask | None) -> SearchStart:
    """Encode the source once and set the search up (``SearchStart``)."""
    src = _prepare(model, src, config)
    state, encoder = start_sentence(model, src, capture, head_mask)
    rows = model.first_step_rows(config.beam_size)
    if rows > 1:  # the first step on copies of the one row (a beam's rows are alike until it has run)
        state = state.reorder(torch.zeros(rows, dtype=torch.long, device=src.device))
    prefixes = torch.tensor([[model.config.bos_id]], device=src.device)  # [R, 1]
    return SearchStart(src, state, encoder, prefixes, torch.zeros(1, device=src.device), rows)


def search_step(model: Transformer, start: SearchStart, state: DecoderState, prefixes: torch.Tensor, t: int,
                capture: Capture) -> StepOutput:
    """A beam search's step t on ``state``, feeding the newest piece of prefixes [R, t+1]. The first step runs on
    the start's copies of its one row (``SearchStart.rows``) and hands back that row: log-probs [1, V] and its
    attention."""
    if t > 0 or start.rows == 1:
        return model.step(state, prefixes[:, -1:], capture)
    out = model.step(state, prefixes[:, -1:].expand(start.rows, 1), capture)  # [rows, V]: the same row, copied
    return StepOutput(out.log_probs[:1], out.state, None if out.attention is None else out.attention.first_rows(1))


@torch.inference_mode()
def beam_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(beam_size=4),
               capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Beam search with GNMT length penalty; all beams of the sentence are one batch.

    Stops when no live beam is left, when max_len tokens were generated (live beams are then finished without EOS),
    or once beam_size hypotheses have finished as the config's early_stopping rule says (model.decoding.beam_stopping:
    at once, or when no live beam could still beat them). src [S] or [1, S].
    """
    start = start_search(model, src, config, capture, head_mask)
    state, encoder, prefixes, scores = start.state, start.encoder, start.prefixes, start.scores
    cfg = model.config
    paths: list[tuple[int, ...]] = [()]
    written = [[cfg.bos_id]]  # per row, prefixes' ids as a list: a row's beam is built from it, not gathered
    finished: list[Hypothesis] = []
    for t in range(config.max_len):
        out = search_step(model, start, state, prefixes, t, capture)
        forced = forced_piece(config, t, cfg.eos_id)
        banned = _banned(prefixes, config)
        excluded = ruled_out(cfg.bos_id, cfg.pad_id, cfg.eos_id, banned, prefixes.size(0))
        top = top_with_room(out.log_probs, config.top_k, 2 * config.beam_size, excluded)  # [R, m]
        topk_probs, topk_ids = top[0][:, :config.top_k].exp(), top[1][:, :config.top_k]  # [R, k]
        best = None if forced is not None else \
            best_selectable(top, excluded, min(2 * config.beam_size, out.log_probs.numel()), scores)
        if best is not None:
            candidates = candidates_of(best, cfg.eos_id, config.beam_size)
        else:
            selectable = selectable_log_probs(out.log_probs, cfg.bos_id, cfg.pad_id, forced, cfg.eos_id, banned)
            candidates = _select(scores[:, None] + selectable, cfg.eos_id, config.beam_size)  # selectable [R, V]
        last = t + 1 == config.max_len
        finished += [_finished((*written[c.row][1:], c.token), c.log_prob, (*paths[c.row], c.row),
                               cfg.eos_id, config)
                     for c in candidates if c.status == "finished" or (last and c.status == "kept")]
        finished.sort(key=lambda h: h.score, reverse=True)
        kept = [c for c in candidates if c.status == "kept"]
        rows = [c.row for c in kept]
        written = [[*written[c.row], c.token] for c in kept]
        parents, beams, beam_scores = beams_of(written, kept, t + 2, start.src.device)  # [R'], [R', t+2], [R']
        done = last or not kept or _search_is_over(finished, kept[0].log_prob, t + 1, config)
        yield DecodeStep(step=t, prefixes=prefixes, prefix_scores=scores, topk_ids=topk_ids, topk_probs=topk_probs,
                         attention=step_attention(encoder, out.attention), candidates=tuple(candidates), beams=beams,
                         beam_scores=beam_scores, parents=parents, finished=tuple(finished), done=done)
        if done:
            return
        if rows != list(range(start.rows if t == 0 else prefixes.size(0))):  # else every row stays where it is:
            state = out.state.reorder(parents)  # a quarter of the steps of a beam of 4, and a gather of its cache
        else:
            state = out.state
        paths = [paths[row] + (row,) for row in rows]
        prefixes, scores = beams, beam_scores


@torch.inference_mode()
def sample_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig, capture: Capture = Capture.WEIGHTS,
                 head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Draw the next piece at every step (config.sampling says how; model.decoding.sampling). src [S] or [1, S]. The
    cumulative log-prob of the output is the model's own (before the temperature), so a sample and a greedy output
    compare."""
    sampling = config.sampling
    if sampling is None:
        raise ValueError("sample_steps needs a DecodeConfig with sampling")
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(sampling.seed)

    def choose(log_probs: torch.Tensor) -> tuple[int, SampleChoice]:
        choice = draw(log_probs, sampling, generator, config.top_k)
        return choice.token, choice
    yield from _one_path(model, src, config, capture, head_mask, choose)


@torch.inference_mode()
def forced_steps(model: Transformer, src: torch.Tensor, tokens: Sequence[int], config: DecodeConfig = DecodeConfig(),
                 capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Teacher forcing (model.decoding.forcing): the steps of a decode that writes ``tokens`` (the output without the
    start token; EOS, if any, last), whatever the model prefers. src [S] or [1, S]. Each step is greedy's step with
    the given piece in place of greedy's choice, and says how that piece stood (``DecodeStep.forced``). The config's
    forced first piece (a multilingual model's language code) adds 0, as in decoding; its n-gram rule and its forced
    EOS do not apply (the text is given); max_len is the number of tokens."""
    cfg = model.config
    if not tokens or cfg.eos_id in tokens[:-1] or not all(0 <= t < cfg.vocab_size for t in tokens):
        raise ValueError(f"forced tokens must be 1 or more ids in [0, {cfg.vocab_size}), EOS only last")
    config = dataclasses.replace(config, max_len=len(tokens), no_repeat_ngram=0, forced_eos=False, sampling=None,
                                 beam_size=1, keep_words=False)
    src = _prepare(model, src, config)
    state, encoder = start_sentence(model, src, capture, head_mask)
    prefix = torch.tensor([[cfg.bos_id]], device=src.device)  # [1, 1]
    score = torch.zeros(1, device=src.device)
    for t, token in enumerate(tokens):
        out = model.step(state, prefix[:, -1:], capture)
        state = out.state
        topk_probs, topk_ids = top_next(out.log_probs, config.top_k)  # [1, k]
        selectable = selectable_log_probs(out.log_probs, cfg.bos_id, cfg.pad_id, forced_piece(config, t, cfg.eos_id),
                                          cfg.eos_id)[0]  # [V]
        step = path_step(t, prefix, score, (topk_ids, topk_probs), step_attention(encoder, out.attention), int(token),
                         score + selectable[token], cfg.eos_id, config)
        yield dataclasses.replace(step, forced=judge(selectable, int(token)))
        if step.done:
            return
        prefix, score = step.beams, step.beam_scores


def greedy_decode(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(),
                  capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> DecodeResult:
    return DecodeResult.from_steps(list(greedy_steps(model, src, config, capture, head_mask)), 1)


def beam_search(model: Transformer, src: torch.Tensor, config: DecodeConfig = DecodeConfig(beam_size=4),
                capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> DecodeResult:
    return DecodeResult.from_steps(list(beam_steps(model, src, config, capture, head_mask)), config.beam_size)


def decode_steps(model: Transformer, src: torch.Tensor, config: DecodeConfig,
                 capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Sampling when the config asks for it, else greedy for beam_size 1 and beam search otherwise."""
    if config.sampling is not None:
        return sample_steps(model, src, config, capture, head_mask)
    if config.beam_size == 1:
        return greedy_steps(model, src, config, capture, head_mask)
    return beam_steps(model, src, config, capture, head_mask)
