"""What a decode will cost, known before it starts, and the settings that fit a budget.

One server serves a whole room, and every number a visitor can send (text length, beam size, length limit)
multiplies what a decode holds: each step keeps the attention rows behind it, every layer and head, so the
memory grows with beam x layers x heads x (length² / 2 + length x source). A decode that never emits EOS runs
to its length limit. ``plan_decode`` prices a request from the model's shape before any work is done and
reduces what is over the budget (the length limit first, then the beam, then the source), saying what it
reduced and why; the CLI, the Python API (``model.serving.inference.translate``) and the app all go through it.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from model.decoding.constrained_beam import MAX_BANKS
from model.network.config import DecodeConfig, ModelConfig
from model.network.positional import MAX_POSITIONS

FLOAT_BYTES = 4  # attention is kept in float32
# Time model of one decode on one CPU thread (benchmarks/decode.py measures the real thing): a fixed cost per
# step (Python and dispatch, which dominates a small model) plus the matrix work at a rate this CPU sustains.
STEP_OVERHEAD_S = 0.004
FLOPS_PER_S = 4e9
JSON_BYTES_PER_WEIGHT = 10  # "0.123456, " in the --json file
JSON_BYTES_PER_TOP_K = 60  # {"id": 123, "piece": "▁Haus", "prob": 0.123456}


def output_bound(source_len: int) -> int:
    """The longest output worth decoding for a source of ``source_len`` positions: 2 x source + 10 (a
    translation is rarely twice as long as its source; fairseq and Marian bound the length the same way). Past
    it, a decode that has not ended is looping, and every further step costs more than the one before. Never past
    the position table (MAX_POSITIONS - 1 outputs after the start token)."""
    return min(2 * source_len + 10, MAX_POSITIONS - 1)


@dataclass(frozen=True)
class Budget:
    """What one request may cost: the attention it keeps in memory, the estimated compute on one CPU thread, and
    the size of the JSON it writes. The defaults keep a 2-core server with two decodes at once under 1 GB for them."""

    max_bytes: int = 192 * 2**20
    max_seconds: float = 30.0
    max_json_bytes: int = 64 * 2**20

    def __post_init__(self) -> None:
        if not (self.max_bytes > 0 and self.max_json_bytes > 0 and math.isfinite(self.max_seconds)
                and self.max_seconds > 0):
            raise ValueError(f"a budget must be positive and finite, got {self}")


DEFAULT_BUDGET = Budget()  # what the CLI, the API and the app hold every request to


@dataclass(frozen=True)
class DecodeCost:
    """The estimate for one decode: attention held in memory (bytes), compute (seconds on one CPU thread) and the
    size of its --json export (bytes). Upper bounds for a decode that runs to its length limit."""

    bytes: int
    seconds: float
    json_bytes: int

    def over(self, budget: Budget) -> list[str]:
        """Which parts of the budget this cost exceeds, in words."""
        parts = []
        if self.bytes > budget.max_bytes:
            parts.append(f"about {self.bytes / 2**20:,.0f} MB of attention (limit {budget.max_bytes / 2**20:,.0f} MB)")
        if self.seconds > budget.max_seconds:
            parts.append(f"about {self.seconds:,.0f} s of compute (limit {budget.max_seconds:,.0f} s)")
        return parts


def decode_cost(model: ModelConfig, source_len: int, decode: DecodeConfig) -> DecodeCost:
    """Price a decode of ``source_len`` source positions (EOS included) that runs for decode.max_len steps.

    Memory: the encoder's maps once (Le x H x S², weights and scores); per step t and row, every decoder
    layer's self-attention row (H x (t + 1)) and cross-attention row (H x S), weights and scores; the stacked
    trace of the best output (Ld x H x (T² + T x S)), and per step the prefixes and top-k lists.
    """
    S, T, R = source_len, decode.max_len, decode.beam_size  # the paper's axis names
    if decode.keep_words:
        R *= MAX_BANKS  # keeping names and numbers: a beam per bank (model.decoding.constrained_beam)
    H, Le, Ld, d = model.n_heads, model.n_encoder_layers, model.n_decoder_layers, model.d_model
    rows_seen = R * T * (T + 1) // 2  # sum over steps of R x (t + 1) self-attention keys
    floats = 2 * Le * H * S * S + 2 * Ld * H * (rows_seen + R * T * S) + 2 * Ld * H * (T * T + T * S)
    # int64 prefixes and beams (~2 x rows_seen), top-k ids (int64) and probabilities, per-step scores and parents
    held = FLOAT_BYTES * floats + 2 * 8 * (rows_seen + R * T) + 12 * R * T * decode.top_k + 32 * R * T + 4096
    per_token = 2 * (Ld * (6 * d * d + 2 * d * model.d_ff) + d * model.vocab_size)  # FLOPs per decoded row
    encoder = 2 * S * Le * (4 * d * d + 2 * d * model.d_ff) + 4 * Le * S * S * d
    attention = 4 * Ld * d * (rows_seen + R * T * S)
    seconds = T * STEP_OVERHEAD_S + (encoder + R * T * per_token + attention) / FLOPS_PER_S
    weights = Le * H * S * S + Ld * H * (T * T + T * S)
    json_bytes = (JSON_BYTES_PER_WEIGHT * weights + JSON_BYTES_PER_TOP_K * R * T * decode.top_k
                  + 16 * rows_seen + 200 * R * T + 40 * (S + T) + 4096)  # steps, n-best, pieces, the header
    return DecodeCost(bytes=held, seconds=seconds, json_bytes=json_bytes)


class BudgetError(ValueError):
    """A request that no reduction brings within the budget; the message is meant for the user."""


@dataclass(frozen=True)
class Plan:
    """The settings a request runs with: ``decode`` (maybe reduced), the source positions it may read
    (``source_len``), its cost, and ``notes`` saying what was reduced and why (empty when nothing was).
    ``bound_note`` says that the length limit was cut to ``output_bound``: worth saying only to a decode that
    reached that limit (``notes_for``), since any other ended before it."""

    decode: DecodeConfig
    source_len: int
    cost: DecodeCost
    notes: tuple[str, ...] = ()
    bound_note: str | None = None

    def after(self, earlier: list[str]) -> Plan:
        """This plan with the notes of the reductions made before it first."""
        return dataclasses.replace(self, notes=tuple(earlier) + self.notes)

    def notes_for(self, steps: int) -> tuple[str, ...]:
        """The notes a decode of ``steps`` steps should show."""
        if self.bound_note is not None and steps >= self.decode.max_len:  # the bound was reached
            return (self.bound_note, *self.notes)
        return self.notes


def _fits(model: ModelConfig, source_len: int, decode: DecodeConfig, budget: Budget) -> bool:
    return not decode_cost(model, source_len, decode).over(budget)


def _longest_fitting(model: ModelConfig, source_len: int, decode: DecodeConfig, budget: Budget, low: int) -> int:
    """The largest max_len in [low, decode.max_len] that fits (cost grows with it), or low - 1 if none does."""
    lo, hi = low - 1, decode.max_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _fits(model, source_len, dataclasses.replace(decode, max_len=mid), budget):
            lo = mid
        else:
            hi = mid - 1
    return lo


def plan_decode(model: ModelConfig, source_len: int, decode: DecodeConfig, budget: Budget = DEFAULT_BUDGET) -> Plan:
    """Fit a request into ``budget`` before any work starts. In order, each only if still needed:
    1. the length limit is cut to ``output_bound(source_len)``, where an unended decode is a loop anyway;
    2. the length limit is cut further, down to source + 10 positions;
    3. the beam is narrowed, down to greedy;
    4. the source is cut to what fits a greedy decode.
    The notes name each reduction, with the cost that caused it."""
    notes: list[str] = []
    bound, bound_note = output_bound(source_len), None
    if decode.max_len > bound:
        bound_note = (f"Length limit {decode.max_len} → {bound} output pieces (2 × the {source_len} source positions "
                      "+ 10): a translation that has not ended by then is repeating itself.")
        decode = dataclasses.replace(decode, max_len=bound)
    cost = decode_cost(model, source_len, decode)
    if cost.over(budget):
        why = " and ".join(cost.over(budget))
        floor = min(decode.max_len, source_len + 10)
        length = _longest_fitting(model, source_len, decode, budget, floor)
        if length >= floor:
            notes.append(f"Length limit {decode.max_len} → {length}: the request would need {why}.")
            decode = dataclasses.replace(decode, max_len=length)
        else:
            beam = decode.beam_size
            narrowed = dataclasses.replace(decode, max_len=floor)
            while narrowed.beam_size > 1 and not _fits(model, source_len, narrowed, budget):
                narrowed = with_beam(narrowed, narrowed.beam_size - 1)
            if _fits(model, source_len, narrowed, budget):
                dropped = " (greedy keeps no names and numbers)" if decode.keep_words > narrowed.keep_words else ""
                notes.append(f"Beam {beam} → {narrowed.beam_size} and length limit {decode.max_len} → {floor}: the "
                             f"request would need {why}.{dropped}")
                decode = narrowed
            else:
                cut = _longest_source(model, decode, budget)
                if cut < 2:
                    raise BudgetError(f"This model is too large for the server's budget ({why}).")
                notes.append(f"Source {source_len} → {cut} positions, greedy: the text is too long for one request "
                             f"({why}). Split it into sentences.")
                greedy = dataclasses.replace(with_beam(decode, 1), max_len=min(decode.max_len, output_bound(cut)))
                return plan_decode(model, cut, greedy, budget).after(notes)
    return Plan(decode, source_len, decode_cost(model, source_len, decode), tuple(notes), bound_note)


def with_beam(decode: DecodeConfig, beam: int) -> DecodeConfig:
    """The config with another beam; greedy keeps no names and numbers (model.decoding.constrained_beam needs a
    beam)."""
    return dataclasses.replace(decode, beam_size=beam, keep_words=decode.keep_words and beam > 1)


def _longest_source(model: ModelConfig, decode: DecodeConfig, budget: Budget) -> int:
    """The most source positions a greedy decode of at most source + 10 pieces can read within the budget."""
    lo, hi = 1, MAX_POSITIONS
    while lo < hi:
        mid = (lo + hi + 1) // 2
        greedy = dataclasses.replace(with_beam(decode, 1), max_len=min(decode.max_len, mid + 10))
        if _fits(model, mid, greedy, budget):
            lo = mid
        else:
            hi = mid - 1
    return lo


# Gradient passes run batched (explain.integrated_gradients: 16 interpolation points per pass), far faster per FLOP than
# a decode's one-row steps: integrated gradients of the default sentence on pretrained/en-de, 32 steps (about 21 GFLOP
# by gradient_cost's count), took 0.56 s on one thread of the 2-core server, about 4e10 FLOP/s; halved for a shared box.
BATCHED_FLOPS_PER_S = 2e10
BATCH_OVERHEAD_S = 0.03  # per batch of interpolation points: Python, dispatch and autograd's bookkeeping


def gradient_cost(model: ModelConfig, source_len: int, prefix_len: int, passes: int, batch_rows: int) -> DecodeCost:
    """Price ``passes`` forward + backward passes of one decoding step (source_len source positions, prefix_len decoder
    positions), run batch_rows at a time: what integrated gradients (one pass per step) or gradient x input (one pass)
    cost. A backward costs about twice its forward. Memory: the activations a batch keeps for its backward pass (per
    layer the sub-layers' inputs and outputs, the feed-forward's inner width and the attention maps), float32."""
    S, T, H, d, ff = source_len, prefix_len, model.n_heads, model.d_model, model.d_ff
    Le, Ld = model.n_encoder_layers, model.n_decoder_layers
    encoder = 2 * S * Le * (4 * d * d + 2 * d * ff) + 4 * Le * S * S * d
    decoder = 2 * T * Ld * (6 * d * d + 2 * d * ff) + 4 * S * Ld * d * d + 4 * Ld * T * (T + S) * d
    forward = encoder + decoder + 2 * d * model.vocab_size  # the output layer of the last position only
    batches = math.ceil(passes / batch_rows)
    seconds = passes * 3 * forward / BATCHED_FLOPS_PER_S + batches * BATCH_OVERHEAD_S
    kept = Le * (S * (10 * d + 2 * ff) + 3 * H * S * S) + Ld * (T * (14 * d + 2 * ff) + 2 * S * d
                                                                + 3 * H * (T * T + T * S)) + model.vocab_size
    return DecodeCost(bytes=FLOAT_BYTES * min(passes, batch_rows) * kept + 4096, seconds=seconds, json_bytes=0)


@dataclass(frozen=True)
class GradientPlan:
    """The settings a gradient request runs with: ``steps`` passes (maybe fewer than asked), ``batch_rows`` at a time,
    its cost, and notes saying what was reduced and why."""

    steps: int
    batch_rows: int
    cost: DecodeCost
    notes: tuple[str, ...] = ()


def plan_gradients(model: ModelConfig, source_len: int, prefix_len: int, steps: int, batch_rows: int = 16,
                   budget: Budget = DEFAULT_BUDGET) -> GradientPlan:
    """Fit ``steps`` gradient passes at one step into ``budget`` before any work: fewer rows per batch while the
    activations are over its memory, then fewer steps while the time is over. BudgetError when one pass of one row
    does not fit."""
    notes = []
    rows = max(1, min(batch_rows, steps))
    while rows > 1 and gradient_cost(model, source_len, prefix_len, steps, rows).bytes > budget.max_bytes:
        rows //= 2
    asked = steps
    while steps > 1 and gradient_cost(model, source_len, prefix_len, steps, rows).over(budget):
        steps = max(1, steps * 3 // 4)
    cost = gradient_cost(model, source_len, prefix_len, steps, rows)
    if cost.over(budget):
        raise BudgetError(f"This step is too large to attribute within the server's budget "
                          f"({' and '.join(cost.over(budget))}).")
    if steps < asked:
        notes.append(f"Steps {asked} → {steps}: {asked} forward and backward passes would need about "
                     f"{gradient_cost(model, source_len, prefix_len, asked, rows).seconds:,.0f} s of compute (limit "
                     f"{budget.max_seconds:,.0f} s).")
    return GradientPlan(steps=steps, batch_rows=rows, cost=cost, notes=tuple(notes))


def head_map_cost(model: ModelConfig, sentences: Sequence[tuple[int, int]]) -> DecodeCost:
    """Price the map of all heads (explain.head_map) over example sentences of (source positions, length limit) each:
    a greedy decode of each (decode_cost, one after another, so the largest one's memory) and one teacher-forced
    forward keeping every internal. Memory: what the map keeps of every sentence (per layer the weights and every
    head's queries and keys, float32) and the largest sentence's forward internals (about 4 times that) or decode."""
    H, Le, Ld, d, ff = model.n_heads, model.n_encoder_layers, model.n_decoder_layers, model.d_model, model.d_ff
    seconds, kept, largest = 0.0, 0, 0
    for S, T in sentences:
        decode = decode_cost(model, S, DecodeConfig(max_len=T))
        per_sentence = Le * (H * S * S + 2 * S * d) + Ld * (H * (T * T + T * S) + 3 * T * d + S * d)
        forward = (2 * S * Le * (4 * d * d + 2 * d * ff) + 4 * Le * S * S * d + 2 * T * Ld * (6 * d * d + 2 * d * ff)
                   + 4 * S * Ld * d * d + 4 * Ld * T * (T + S) * d + 2 * T * d * model.vocab_size)
        seconds += decode.seconds + forward / FLOPS_PER_S + STEP_OVERHEAD_S
        kept += FLOAT_BYTES * per_sentence
        largest = max(largest, decode.bytes, 4 * FLOAT_BYTES * per_sentence)
    return DecodeCost(bytes=kept + largest + 4096, seconds=seconds, json_bytes=0)


@dataclass(frozen=True)
class HeadMapPlan:
    """How many of the example sentences (the first ``sentences``) the map reads, its cost, and a note when fewer
    than offered fit the budget."""

    sentences: int
    cost: DecodeCost
    notes: tuple[str, ...] = ()


def plan_head_map(model: ModelConfig, sentences: Sequence[tuple[int, int]],
                  budget: Budget = DEFAULT_BUDGET) -> HeadMapPlan:
    """Fit the head map into ``budget`` before any work: the last example sentences are left out while the cost is
    over it. BudgetError when not even the first one fits (or there is none)."""
    count = len(sentences)
    while count > 0 and head_map_cost(model, sentences[:count]).over(budget):
        count -= 1
    if count == 0:
        why = " and ".join(head_map_cost(model, sentences[:1]).over(budget)) if sentences else "no sentence"
        raise BudgetError(f"The map of all heads does not fit the server's budget ({why}).")
    notes = () if count == len(sentences) else (
        f"Example sentences {len(sentences)} → {count}: all of them would need "
        f"{' and '.join(head_map_cost(model, sentences).over(budget))}.",)
    return HeadMapPlan(sentences=count, cost=head_map_cost(model, sentences[:count]), notes=notes)
