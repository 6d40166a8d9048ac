"""The model card as text: ``render_card`` writes the Markdown from a model's measured facts (``CardFacts``, which
training.card measures) and reads nothing else: no file, no model, no clock. The hand-written parts (intended use,
limitations) live here; every number comes from the facts.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from model.checkpoints.quality import WEAK_BLEU, WEAK_CHRF, is_weak, report_scores
from model.network.config import ModelConfig

from .card_sections import (
    diagnostics_section,
    everyday_section,
    held_out_section,
    length_penalty_section,
    names_numbers_section,
    new_sources_section,
    score_table,
    snapshots_section,
    study_section,
)
from .evaluate import LENGTH_LABELS
from .schedule import cooldown_words, training_segments

HOST = platform.machine()  # the CPUs' architecture the card names for training on "CPU"

STILL_FALLING = 0.02  # validation loss per epoch (nats): undertrained, continue the same recipe
SLOWLY_FALLING = 0.005  # per epoch: more epochs still pay, slowly (0.009/epoch gave en-de +1 test chrF in 8)


@dataclass(frozen=True)
class Example:
    """One test-split example: where it comes from, the English, the reference and the model's two translations."""

    source: str
    en: str
    de: str
    greedy: str
    beam: str


@dataclass(frozen=True)
class CardFacts:
    """Everything a model card says, measured (training.card.measure_card): the checkpoint, its logs and the files
    beside it, the corpus, the evaluation reports and what the model translated."""

    name: str  # the checkpoint folder's name
    config: ModelConfig
    meta: dict[str, Any]
    parameters: int
    corpus: str  # the corpus file's name (under data/)
    pairs: dict[str, int]  # "all", "train", "valid", "test"
    source_counts: list[tuple[str, int, int, int]]  # (source, train, valid, test) per source of the corpus
    epochs: list[dict[str, str]]  # epochs.csv's rows
    report: dict[str, Any]  # python -m training.evaluate --json
    extra: dict[str, Any] | None = None  # the same on a larger corpus's test split
    examples: list[Example] = field(default_factory=list)
    sweep: pd.DataFrame | None = None  # the length-penalty sweep beside the model
    everyday: dict[str, Any] | None = None  # training.evaluate.everyday_report
    names_numbers: dict[str, Any] | None = None  # training.evaluate.names_numbers_report
    names_heldout: dict[str, Any] | None = None  # the same on the held-out set
    study: pd.DataFrame | None = None  # training.study.summary of study.csv
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)  # snapshot directory -> its meta
    sacrebleu: str = ""  # sacrebleu's version
    machine: str = HOST  # the CPUs' architecture where a segment says "CPU"


def _weak_model(epochs: list[dict], last: int = 3) -> str:
    """The card's warning for a model that model.checkpoints.quality calls weak, with what its last epochs say more
    training
    would buy."""
    losses = [float(e["valid_loss"]) for e in epochs[-(last + 1):]]
    per_epoch = (losses[0] - losses[-1]) / (len(losses) - 1) if len(losses) > 1 else None
    if per_epoch is None:
        trend = "Its validation curve is not recorded, so whether more training would help is unknown."
    elif per_epoch >= STILL_FALLING:
        trend = (f"Its validation loss was still falling by {per_epoch:.3f} per epoch over its last {len(losses) - 1} "
                 f"epochs ({losses[0]:.3f} -> {losses[-1]:.3f}), so **it is undertrained**: continuing from this "
                 f"checkpoint (`python -m training.train --task en-de --out runs/en-de-next "
                 f"--init-from pretrained/en-de --epochs {int(epochs[-1]['epoch']) + 10}`) is expected to improve it.")
    elif per_epoch >= SLOWLY_FALLING:
        trend = (f"Its validation loss was still falling, slowly, by {per_epoch:.3f} per epoch over its last "
                 f"{len(losses) - 1} epochs ({losses[0]:.3f} -> {losses[-1]:.3f}): more epochs of this recipe buy a "
                 "little each; a larger model or more parallel text would buy more.")
    else:
        trend = (f"Its validation loss fell by only {per_epoch:.3f} per epoch over its last {len(losses) - 1} epochs "
                 f"({losses[0]:.3f} -> {losses[-1]:.3f}): more epochs of this recipe would gain little; a larger model "
                 "or more parallel text would be needed.")
    return (f"- **It does not translate reliably.** No decoding setting reaches test BLEU {WEAK_BLEU:g} and chrF "
            f"{WEAK_CHRF:g} together, and its fluent-looking German often follows "
            "the source only loosely, above all on long or unusual sentences (see the examples above). "
            f"{trend} The attention it shows is exactly the attention it used (for a model whose "
            "attention is known to be right, pick the reversal model), but do not present its translations as good "
            "ones.\n")


LIMITATIONS = """\
- **Long or unusual sentences, names and rare words often come out wrong.** It is small by design ({params}
  parameters, {layers} layers) and was trained briefly (see Training) on the training split above (130k pairs, 20k of
  them single words and two-word phrases); its output can also repeat itself or stop short. Names and numbers are
  copied piece by piece (digits are single pieces), and a long name or number can lose or gain a piece: the
  names-and-numbers section lists every miss.
- The corpus is dictionary entries (many infinitive phrases "to do sth." / "etw. tun"), game dialogue and help
  (Wesnoth, Freeciv, and in the larger corpora Widelands, Warzone 2100, FreedroidRPG, OpenTTD, Hedgewars and
  others), software interface text and help (LibreOffice, KDE, the Debian Administrator's Handbook): its register,
  not news or web text.
- Titles and speech in quotation marks (0.7% of the corpus, all dictionary entries) often come out garbled:
  the word right after the mark loses its word-start piece ("'A View" -> "▁'", "A", "▁View": "A" is read as the
  middle of a word).
- It translates English to German only, one sentence at a time; input beyond 255 pieces is cut.
- Attention maps show what the model attended to, not a faithful explanation of why it chose a token.
"""


def _processes(world: int | None) -> str:
    """How a segment's batches made a step: one process (also when unrecorded, as in checkpoints from before
    torchrun) or N under torchrun, whose optimizer step takes one batch from each."""
    if not world or world == 1:
        return ""
    return f" on each of {world} processes (torchrun; one optimizer step takes {world} batches)"


def recipe_lines(meta: dict) -> list[str]:
    """The training recipe; a run continued from earlier checkpoints names every part's settings."""
    def settings(m: dict) -> str:
        known = {"dropout": "dropout {}", "label_smoothing": "label smoothing {}", "corpus": "corpus `data/{}`"}
        return "; ".join([f"learning rate factor {m.get('lr_factor')} x d_model^-0.5 x min(step^-0.5, step x "
                          f"{m.get('warmup')}^-1.5)" + _cooldown_words(m),
                          f"batches of up to {m.get('max_tokens')} tokens per side"
                          + _processes(m.get("processes")),
                          f"bf16 autocast: {m.get('bf16')}",
                          *(text.format(m[key]) for key, text in known.items() if m.get(key) is not None),
                          *([_bpe_dropout_words(m)] if m.get("bpe_dropout") else []),
                          *([_align_words(m)] if m.get("align_copies") else []),
                          *([_sources_words(m["train_sources"])] if m.get("train_sources") else []),
                          *([_copy_words(m)] if m.get("copy_augment") is not None else []),
                          *([f"on {m['device']}"] if m.get("device") else [])])
    lines = [f"- Recipe: Adam (0.9, 0.98, 1e-9); label smoothing {meta.get('label_smoothing')}; sentences of "
             f"similar length batched together; residual, attention and embedding dropout."]
    segments = training_segments(meta)
    if len(segments) == 1:
        return [*lines, f"  - {settings(meta)}."]
    for i, seg in enumerate(segments):
        widened = seg.get("widened_ff")
        grown = f", FFN widened from {widened[0]} to {widened[1]} hidden units (training.grow)" if widened else ""
        restart = f" (continued from the checkpoint before, Adam restarted{grown})" if i else ""
        lines.append(f"  - steps {seg['first_step']}-{seg['last_step']} (epochs {seg['first_epoch']}-"
                     f"{seg['last_epoch']}){restart}: {settings(seg)}" + (";" if i < len(segments) - 1 else "."))
    return lines


def _cooldown_words(m: dict) -> str:
    """The cool-down of a segment (training.schedule.cooldown), else ""."""
    words = cooldown_words(m.get("cooldown"), m.get("last_epoch", m.get("epochs")))
    return f", {words}" if words else ""


def _sources_words(sources: list) -> str:
    """A stretch trained on some of the corpus's sources (training.train --train-sources)."""
    return f"training pairs from {', '.join(sources)} only (validation split whole)"


def _align_words(m: dict) -> str:
    """A stretch that supervised a head with the copies (training.train --align-copies)."""
    layer, head = m.get("align_head") or ("?", "?")
    return (f"guided alignment of copies: decoder layer {layer}'s cross-attention head {head} taught to look at the "
            f"source piece being copied (loss factor {m['align_copies']})")


def _bpe_dropout_words(m: dict) -> str:
    """A stretch trained on sampled pieces (training.train --bpe-dropout, --bpe-dropout-sides)."""
    side = " on the source side only" if m.get("bpe_dropout_sides") == "source" else ""
    return f"BPE-dropout {m['bpe_dropout']}{side} (each epoch's pieces sampled anew)"


def _copy_words(m: dict) -> str:
    """The copy augmentation of a segment (training.augment), e.g. "copy augmentation 4 (50% of the names made up)"."""
    if not m["copy_augment"]:
        return "no copy augmentation"
    shares = [f"{100 * m[key]:g}% of {what}" for key, what in (("copy_made_up", "the names made up"),
                                                               ("copy_codes", "the numbers turned into codes"))
              if m.get(key)]
    if m.get("copy_subjects"):
        shares.append("He/She openings turned into names")
    if m.get("copy_fresh"):
        shares.append("drawn anew each epoch")
    return f"copy augmentation {m['copy_augment']}" + (f" ({', '.join(shares)})" if shares else "")


def where_trained(meta: dict, machine: str = HOST) -> str:
    """Where the training ran, from the devices its segments record (older ones recorded none: shared CPUs of the
    ``machine`` architecture)."""
    devices = list(dict.fromkeys(seg["device"] for seg in training_segments(meta) if seg.get("device")))
    if not devices:
        return f"on shared 2-core {machine} CPUs (no GPU)"
    return "on " + " then on ".join(_device_words(d, machine) for d in devices)


def _device_words(device: str, machine: str) -> str:
    """"CPU" -> "shared 2-core CPUs"; "CUDA (NVIDIA H100 80GB HBM3)" -> "one NVIDIA H100 80GB HBM3 GPU"."""
    if device == "CPU":
        return f"shared 2-core {machine} CPUs"
    if device.startswith("CUDA (") and device.endswith(")"):
        return f"one {device[len('CUDA ('):-1]} GPU"
    return device


def validation_note(meta: dict, corpus: str, valid: int) -> list[str]:
    """Which valid split the per-epoch losses are on (``corpus``: the training corpus's file name, ``valid``: its
    valid split's pairs), and how they compare with the models before (measured on en-de.tsv.gz's valid split)."""
    if corpus == "en-de.tsv.gz":
        return [""]
    if meta.get("valid_corpus") == corpus:  # losses on the training corpus's own valid split
        return [f"- The corpus grew after the test split was fixed: `data/{corpus}` keeps every pair of "
                "`data/en-de.tsv.gz` in its split and adds sources. The validation losses below are on its own valid "
                f"split ({valid:,} pairs); the loss named above, of the shipped weights, is on `en-de.tsv.gz`'s valid "
                "split, as the models before were measured, and the test table is on its test split, so those "
                "compare.", ""]
    return [f"- The corpus grew after the test split was fixed: `data/{corpus}` keeps every pair of "
            "`data/en-de.tsv.gz` in its split and adds sources. The validation losses below are on `en-de.tsv.gz`'s "
            "valid split for every epoch (the epochs on the larger corpus rescored with `python -m training.study "
            f"--rescore`), the valid BLEU/chrF on the same {meta.get('valid_sentences', 400)} sentences, and the "
            "test table on its test split, so all compare with the models before.", ""]


def which_weights(meta: dict) -> str:
    averaged = meta.get("averaged")
    if not averaged:
        loss = f" ({meta['valid_loss']})" if "valid_loss" in meta else ""
        which = f"epoch {meta['epochs']}, " if "epochs" in meta else ""
        return f"this checkpoint is {which}the epoch with the lowest validation loss{loss}."
    def epochs(inputs: list) -> str:
        return ", ".join(map(str, sorted(a["epochs"] for a in inputs if a.get("epochs") is not None)))
    plain = [a for a in averaged if not a.get("averaged")]
    means = [f"of the model that was the mean of epochs {epochs(a['averaged'])}" for a in averaged
             if a.get("averaged")]
    parts = [f"of the weights after epoch{'s' * (len(plain) > 1)} {epochs(plain)}"] * bool(plain) + means
    facts = [f"validation loss {meta['valid_loss']}"] if "valid_loss" in meta else []
    facts += [f"{len(averaged)} inputs of equal weight"] * bool(means)
    said = f" ({', '.join(facts)})" if facts else ""
    return (f"this checkpoint is the mean {' and '.join(parts)}{said}: checkpoint averaging, as the paper did for "
            "its base models (section 6.1).")


def render_card(facts: CardFacts) -> str:
    """The model card of ``facts``, as Markdown."""
    cfg, meta, report, epochs = facts.config, facts.meta, facts.report, facts.epochs
    hours = meta.get("train_seconds", 0) / 3600
    lines = [
        f"# Model card: {facts.name}",
        "",
        "An English→German encoder-decoder Transformer (Vaswani et al., 2017, post-norm), trained by this "
        "project's own pipeline (`python -m training.train --task en-de`) for Attention Explorer.",
        "",
        "## Architecture",
        f"- d_model {cfg.d_model}, {cfg.n_heads} heads (d_k = d_v = {cfg.d_k}), {cfg.n_encoder_layers} encoder + "
        f"{cfg.n_decoder_layers} decoder layers, d_ff {cfg.d_ff}, dropout {cfg.dropout}, sinusoidal positions "
        f"(max {cfg.max_len}), one {cfg.vocab_size}-piece joint sentencepiece BPE vocabulary whose embedding matrix "
        f"is shared by encoder input, decoder input and output layer (x sqrt(d_model) in the embeddings).",
        f"- {facts.parameters:,} parameters; weights shipped as float16 safetensors, loaded as float32.",
        "",
        "## Training",
        f"- Data: `data/{facts.corpus}`, {facts.pairs['all']:,} pairs (train {facts.pairs['train']:,}, "
        f"valid {facts.pairs['valid']:,}, test {facts.pairs['test']:,}); sources and "
        "licences in `ATTRIBUTION.md` beside this card. The test split was never used for training, early stopping "
        "or tuning; " + which_weights(meta),
        *recipe_lines(meta),
        f"- {meta.get('epochs')} epochs, {meta.get('steps')} steps, {hours:.1f} h of training "
        f"{where_trained(meta, facts.machine)}. Curves: `log.csv` (every step) and `epochs.csv` (per epoch).",
        *validation_note(meta, facts.corpus, facts.pairs["valid"]),
        f"| epoch | step | valid loss | valid BLEU ({meta.get('valid_sentences', 400)} sentences, greedy) | "
        "valid chrF |",
        "|---|---|---|---|---|",
        *[f"| {e['epoch']} | {e['step']} | {e['valid_loss']} | {e['valid_bleu']} | {e['valid_chrf']} |"
          for e in epochs],
        "",
        f"## Test scores (sacrebleu {facts.sacrebleu}, {report.get('split', 'test')} split, "
        f"{report['greedy']['overall']['n']} pairs)",
        *score_table(report),
        "",
        *length_penalty_section(report, facts.sweep),
        *(["By the length of the English sentence:", "",
            *score_table(report, "per_length", LENGTH_LABELS)] if "per_length" in report.get("greedy", {}) else []),
        *new_sources_section(report, facts.extra),
        "",
        *everyday_section(facts.everyday),
        *names_numbers_section(facts.names_numbers),
        *held_out_section(facts.names_heldout),
        "Per-source counts of the corpus:",
        "",
        "| source | train | valid | test |",
        "|---|---|---|---|",
        *[f"| {s} | {train} | {valid} | {test} |" for s, train, valid, test in facts.source_counts],
        "",
        f"## {len(facts.examples)} test-split examples (not seen in training)",
        "| source | English | reference | greedy | beam 4 |",
        "|---|---|---|---|---|",
        *[f"| {e.source} | {e.en} | {e.de} | {e.greedy} | {e.beam} |" for e in facts.examples],
        "",
        *diagnostics_section(report),
        *study_section(facts.study),
        *snapshots_section(facts.snapshots),
        "## Known limitations",
        (_weak_model(epochs) if is_weak(report_scores(report)) else "")
        + LIMITATIONS.format(params=f"{facts.parameters / 1e6:.1f}M",
                             layers=f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers}"),
    ]
    return "\n".join(lines) + "\n"
