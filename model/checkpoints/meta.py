"""What a checkpoint's meta (the free-form part of its config.json) may say, and the decoding defaults read from it.

A checkpoint's meta is JSON its author wrote (an upload says whatever it likes), so only the entries below, of the
types below, are kept (clean_meta): training facts the app and the model card show, and the decoding defaults a
model brings along: beam search's α, whether the last piece at the length limit is forced to be EOS, which
piece, if any, is forced first, and when beam search stops.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model.network.config import MAX_NO_REPEAT_NGRAM, DecodeConfig, is_early_stopping

MAX_LENGTH_PENALTY = 2.0  # the app's slider range; a larger α in a checkpoint's meta is not trusted


def length_penalty_of(meta: dict[str, Any]) -> float:
    """Beam search's α for a model: the one chosen on its validation split (training.length_penalty) if its meta
    names a sane one, else the paper's 0.6."""
    alpha = meta.get("length_penalty")
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0.0 <= alpha <= MAX_LENGTH_PENALTY:
        return float(alpha)
    return DecodeConfig.length_penalty


def length_penalty_formula_of(meta: dict[str, Any]) -> str:
    """How beam search divides by the length for this model: "hf" (|Y|^α) for a converted model, as generate() does,
    else GNMT's "gnmt"."""
    return "hf" if meta.get("length_penalty_formula") == "hf" else "gnmt"


def forced_eos_of(meta: dict[str, Any]) -> bool:
    """Whether decoding this model ends a hypothesis that reaches the length limit with EOS, as Hugging Face's
    generate() does for a config that sets forced_eos_token_id (every Marian opus-mt model): recorded as
    meta["forced_eos"] by the converter; the paper's models (and ours) stop without EOS there."""
    return meta.get("forced_eos") is True


def no_repeat_ngram_of(meta: dict[str, Any]) -> int:
    """The n of generate()'s no_repeat_ngram_size the model's config sets (BART-large-CNN: 3), else 0 (off)."""
    value = meta.get("no_repeat_ngram")
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_NO_REPEAT_NGRAM else 0


def forced_bos_of(meta: dict[str, Any]) -> int | None:
    """The piece every output of this model starts with (generate()'s forced_bos_token_id: BART-large's <s>, an
    mBART-50 model's target language), recorded as meta["forced_bos"] by the converter; None for most models."""
    value = meta.get("forced_bos")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def early_stopping_of(meta: dict[str, Any]) -> bool | str:
    """When beam search stops for this model (model.decoding.beam_stopping): generate()'s early_stopping as a converted
    model's folder sets it (False, its default, when it names none), recorded as meta["early_stopping"] by the
    converter;
    True (stop once beam_size hypotheses finished) for this project's models and for models converted before the
    converter recorded it."""
    value = meta.get("early_stopping", True)
    return value if is_early_stopping(value) else True


def decode_rules_of(meta: dict[str, Any]) -> dict[str, Any]:
    """The decoding rules a model brings along, as DecodeConfig's keyword arguments: EOS forced at the length limit,
    the piece forced first, the n-gram never repeated, the length-penalty formula (its α is length_penalty_of's,
    a default the user may change) and beam search's stopping rule."""
    return {"forced_eos": forced_eos_of(meta), "forced_bos": forced_bos_of(meta),
            "no_repeat_ngram": no_repeat_ngram_of(meta), "length_penalty_formula": length_penalty_formula_of(meta),
            "early_stopping": early_stopping_of(meta)}


Number = (int, float)
# training.augment's settings, per stretch of training: copies per pair with a shared name or number, the share of
# names made up and of numbers turned into codes, whether He/She openings were turned into names and whether the
# copies were drawn anew each epoch
COPY_TYPES: dict[str, tuple[type, ...]] = {"copy_augment": (int,), "copy_made_up": Number, "copy_codes": Number,
                                           "copy_subjects": (bool,), "copy_fresh": (bool,)}
# Training facts the app and the model card read from meta, with the types they need. A checkpoint's
# meta is free-form JSON (an uploaded one says whatever its author wrote), so anything else is dropped.
META_TYPES: dict[str, tuple[type, ...]] = {
    "task": (str,), "steps": (int,), "epochs": (int,), "train_seconds": Number, "warmup": (int,),
    "lr_factor": Number, "max_tokens": (int,), "label_smoothing": Number, "bf16": (bool,), "dropout": Number,
    "corpus": (str,),  # the corpus file a model (or one stretch of its training) was trained on
    "processes": (int,),  # torchrun processes whose batches made one optimizer step (absent: one)
    "valid_loss": Number, "valid_bleu": Number, "averaged": (list,), "continued_from": (dict,),
    "source_lang": (str,), "target_lang": (str,), "converted_from": (str,),  # a converted model
    # (model.huggingface.marian)
    "length_penalty": Number,  # beam search's α, chosen on the validation split (training.length_penalty)
    "snapshot": (str,),  # one line on what an earlier stage of a model's training is (see checkpoint_snapshots)
    "forced_eos": (bool,),  # EOS forced at the length limit (forced_eos_of)
    "forced_bos": (int,),  # the piece forced first (forced_bos_of)
    "no_repeat_ngram": (int,),  # n-grams never repeated (no_repeat_ngram_of)
    "length_penalty_formula": (str,),  # "hf" for a converted model (length_penalty_formula_of)
    "early_stopping": (bool, str),  # beam search's stopping rule: true, false or "never" (early_stopping_of)
    "family": (str,),  # the Hugging Face model_type a converted model came from ("marian", "bart", "mbart")
    "device": (str,),  # where training ran: "CPU", "CUDA (NVIDIA H100 80GB HBM3)" (model.device.describe)
    "valid_sentences": (int,),  # how many validation sentences each epoch's BLEU/chrF in epochs.csv is on
    "valid_corpus": (str,),  # the corpus whose valid split epochs.csv's losses are on (absent: the training corpus)
    "cooldown": (list,),  # [first, last] epoch of the rate's fall to 0 (training.schedule.cooldown)
    "train_sources": (list,),  # the corpus sources a stretch trained on, when not all (training.train --train-sources)
    "bpe_dropout": Number,  # a stretch's share of skipped merges, when its pieces were sampled (--bpe-dropout)
    "bpe_dropout_sides": (str,),  # "source" when only the source's pieces were sampled (absent: both sides)
    "align_copies": Number,  # the loss factor of guided alignment of copies, when a stretch used it (--align-copies)
    "align_head": (list,),  # [layer, head] (from 1) of the cross-attention head it supervised
    **COPY_TYPES,
}
MAX_META_TEXT = 100  # characters of a text entry (shown as a label): longer or multi-line ones are dropped
CONTINUED_TYPES = {"step": (int,), "epoch": (int,), "lr_factor": Number, "warmup": (int,), "max_tokens": (int,),
                   "bf16": (bool,), "label_smoothing": Number, "dropout": Number, "corpus": (str,), "processes": (int,),
                   "earlier": (dict,), "device": (str,), **COPY_TYPES, "cooldown": (list,), "train_sources": (list,),
                   "bpe_dropout": Number, "bpe_dropout_sides": (str,), "align_copies": Number, "align_head": (list,),
                   # the run after this link read another tokenizer (training.vocab_transfer)
                   "vocabulary_after": (str,),
                   # the run after this link widened the FFNs, [old d_ff, new d_ff] (training.grow)
                   "feed_forward_after": (list,)}


def _typed(values: dict, types: dict[str, tuple[type, ...]]) -> dict:
    """The entries whose type is the expected one (bool is not a number here; text is short and printable)."""
    return {k: v for k, v in values.items() if k in types and isinstance(v, types[k])
            and not (isinstance(v, bool) and bool not in types[k])
            and not (isinstance(v, str) and (len(v) > MAX_META_TEXT or not v.isprintable()))
            and SHAPE_CHECKS.get(k, lambda _: True)(v)}


def _widths(value: list) -> bool:
    """Whether a feed_forward_after entry is what training.grow writes: two widths, the second the larger."""
    return (len(value) == 2 and all(isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in value)
            and value[0] < value[1])


def _source_names(value: list) -> bool:
    """Whether a train_sources entry is what training.train writes: a few short printable names."""
    return 0 < len(value) <= 40 and all(isinstance(name, str) and 0 < len(name) <= 40 and name.isprintable()
                                        for name in value)


# entries whose type alone does not say they are what the card reads
SHAPE_CHECKS: dict[str, Callable[[Any], bool]] = {"feed_forward_after": _widths, "train_sources": _source_names}


def clean_meta(meta: Any) -> dict[str, Any]:
    """meta restricted to META_TYPES; each continued_from link of the chain to CONTINUED_TYPES."""
    meta = _typed(meta, META_TYPES) if isinstance(meta, dict) else {}
    link, parent = meta.get("continued_from"), meta
    while link is not None:
        parent["continued_from" if parent is meta else "earlier"] = link = _typed(link, CONTINUED_TYPES)
        parent, link = link, link.get("earlier")
    return meta
