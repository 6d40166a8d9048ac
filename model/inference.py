"""From text to a translation with everything the UI and the CLI show: pieces, steps, n-best, attention."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from .config import DecodeConfig
from .decoding import DecodeResult, DecodeStep, Hypothesis, decode_steps
from .tokenizer import Tokenizer, clean_text
from .trace import AttentionTrace
from .transformer import Transformer


class InputError(ValueError):
    """Text the model cannot translate (e.g. empty); the message is meant for the user."""


@dataclass(frozen=True)
class Source:
    """Encoder input prepared from user text. ids [S] end with EOS; ``dropped`` counts pieces cut to fit."""

    text: str
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    dropped: int


@dataclass(frozen=True)
class Translation:
    """A finished translation of one sentence.

    ``trace`` comes from one teacher-forced forward of the best output: decoder positions are
    labelled by their inputs ``target_input_pieces`` (BOS + output[:-1]) and predict ``target_pieces``.
    """

    source: Source
    result: DecodeResult
    target_ids: tuple[int, ...]
    target_pieces: tuple[str, ...]
    target_input_pieces: tuple[str, ...]
    text: str
    trace: AttentionTrace


def prepare_source(tokenizer: Tokenizer, text: str, max_len: int) -> Source:
    """Clean and encode user text; cut it to the model's maximum (max_len positions, EOS included)."""
    cleaned = clean_text(text)
    if not cleaned:
        raise InputError("Type a sentence to translate.")
    ids = tokenizer.encode(cleaned)
    if not ids:
        raise InputError("The text has no characters the tokenizer can read.")
    keep = max_len - 1
    dropped = max(0, len(ids) - keep)
    ids = ids[:keep] + [tokenizer.eos_id]
    return Source(cleaned, tuple(ids), tuple(tokenizer.pieces(ids)), dropped)


def stream(model: Transformer, source: Source, config: DecodeConfig, return_attention: bool = True
           ) -> Iterator[DecodeStep]:
    """The decode steps for a prepared source, capped so the output fits the model's positions."""
    max_len = min(config.max_len, model.config.max_len - 1)
    config = DecodeConfig(config.beam_size, max_len, config.length_penalty, config.top_k)
    device = next(model.parameters()).device
    return decode_steps(model, torch.tensor(source.ids, device=device), config, return_attention)


@torch.inference_mode()
def teacher_forced_trace(model: Transformer, source: Source, hypothesis: Hypothesis) -> AttentionTrace:
    """One teacher-forced forward of an output, capturing every attention map (batch of 1)."""
    device = next(model.parameters()).device
    src = torch.tensor([source.ids], device=device)  # [1, S]
    tgt_in = torch.tensor([(model.config.bos_id,) + hypothesis.tokens[:-1]], device=device)  # [1, T]
    _, trace = model(src, tgt_in, return_attention=True)
    return trace


def finish(model: Transformer, tokenizer: Tokenizer, source: Source, steps: list[DecodeStep],
           n_best: int) -> Translation:
    """Assemble the Translation once the last step is in."""
    result = DecodeResult(steps[-1].finished[:n_best], tuple(steps))
    best = result.best
    trace = teacher_forced_trace(model, source, best)
    inputs = (model.config.bos_id,) + best.tokens[:-1]
    return Translation(source, result, best.tokens, tuple(tokenizer.pieces(best.tokens)),
                       tuple(tokenizer.pieces(inputs)), tokenizer.decode(best.tokens), trace)


def translate(model: Transformer, tokenizer: Tokenizer, text: str, config: DecodeConfig = DecodeConfig()
              ) -> Translation:
    """Translate one sentence and capture all its attention."""
    source = prepare_source(tokenizer, text, model.config.max_len)
    steps = list(stream(model, source, config))
    return finish(model, tokenizer, source, steps, config.beam_size)
