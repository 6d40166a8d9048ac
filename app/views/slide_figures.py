"""The figure of each lecture slide: the concept pages' chart builders on the data they already compute
(explain/, model/), for the current sentence. ``MAKERS`` maps the names app.lecture.slides.SLIDES uses to makers.

A maker gets the Deck (model, sentence, a way to translate another text) and the slide's arguments and
returns the figure plus any facts its lines quote (the step it shows, the beam's output). It raises
SlideUnavailable when the model lacks what the slide needs (an uploaded checkpoint ships no training log).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts import positional as positional_charts
from app.charts.attention import (
    default_min_weight,
    head_view_figure,
    heatmap_figure,
    model_view_figure,
    strongest_heads,
)
from app.charts.axes import SLIDE_PX, plotly_text
from app.charts.decoding import TreeCandidate, beam_tree_figure, beam_tree_nodes, topk_figure
from app.charts.heads import checkpoints_figure, importance_figure
from app.charts.masks import mask_grid
from app.charts.mechanics import stage_bars
from app.charts.training import architecture_diagram, label_smoothing_bars, lr_schedule
from app.checks.escape import md
from app.explorer import attention_view, head_label, head_matrix, select_head
from app.lecture.slides import FAILURES, REORDER_HINT, Slide
from app.models.examples import languages
from app.models.registry import load_snapshot, snapshots_of
from app.models.training_log import cooldown_lines
from app.page import to_numpy
from explain.checkpoints import read_output
from explain.heads import head_importance
from explain.mechanics import attention_internals
from explain.model_training import smoothed_targets
from explain.positional import embedding_parts
from model.checkpoints.files import Checkpoint
from model.network.trace import KIND_LABELS
from model.network.transformer import shifted_right
from model.serving.inference import Translation
from training.schedule import training_segments

MAX_QUOTE = 140  # characters of a sentence quoted in a slide's lines
KIND_NAMES = {"enc_self": "encoder self", "dec_self": "decoder self", "cross": "cross"}


class SlideUnavailable(Exception):
    """This slide cannot be drawn for this model; the message says why, for the audience."""


@dataclass(frozen=True)
class Deck:
    """What every slide is drawn from: the model, its greedy translation of the current sentence, and
    ``translate(text, beam_size)`` for the sentences a slide adds (cached and slot-limited by the page)."""

    model_name: str
    ckpt: Checkpoint
    translation: Translation
    translate: Callable[[str, int], Translation]


Made = tuple[go.Figure, dict]  # the figure and the facts it adds


def facts(deck: Deck) -> dict:
    """The numbers and quotes every slide's lines may use."""
    cfg, t = deck.ckpt.config, deck.translation
    eps = float(deck.ckpt.meta.get("label_smoothing", 0.1))
    return dict(source=md(t.source.text, MAX_QUOTE), output=md(t.text, MAX_QUOTE) or "(nothing)",
                n_src=len(t.source.ids), n_out=len(t.target_ids), d_model=cfg.d_model, sqrt_d=math.sqrt(cfg.d_model),
                n_heads=cfg.n_heads, d_k=cfg.d_k, n_enc=cfg.n_encoder_layers, n_dec=cfg.n_decoder_layers,
                vocab=cfg.vocab_size, epsilon=eps, true_target=1 - eps + eps / cfg.vocab_size,
                start=t.target_input_pieces[0], reorder_hint=reorder_hint(deck.ckpt.meta))


def reorder_hint(meta: dict) -> str:
    """REORDER_HINT of the checkpoint's task (a model trained here) or language pair (any translation model)."""
    pair = languages(meta)
    key = meta.get("task") if meta.get("task") in REORDER_HINT else f"{pair[0]}-{pair[1]}" if pair else None
    return REORDER_HINT.get(key, "Look for the source pieces each output piece reads.")


def build(slide: Slide, deck: Deck) -> tuple[go.Figure, dict]:
    """The slide's figure and every fact its title, lines and notes may quote."""
    fig, extra = MAKERS[slide.figure](deck, **slide.args)
    return fig, {**facts(deck), **extra}


def _layer(deck: Deck, kind: str, layer: int) -> int:
    """A slide's layer, counted from the end when negative (-1 = the last layer of that kind)."""
    return layer % deck.translation.trace.n_layers[kind]


def architecture(deck: Deck) -> Made:
    return architecture_diagram(deck.ckpt.config.to_dict(), deck.translation.target_input_pieces[0]), {}


def embeddings(deck: Deck, parts: tuple[str, ...]) -> Made:
    source = deck.translation.source
    values = embedding_parts(deck.ckpt.model, list(source.ids))
    fig = positional_charts.embedding_parts({name: to_numpy(values[name]) for name in parts}, list(source.pieces))
    return fig, {}


def stages(deck: Deck, kind: str, layer: int, head: int) -> Made:
    t, layer = deck.translation, _layer(deck, kind, layer)
    decoder_input = shifted_right(t.target_ids, deck.ckpt.config.bos_id)
    it = attention_internals(deck.ckpt.model, list(t.source.ids), decoder_input, kind, layer)
    keys = list(t.target_input_pieces if kind == "dec_self" else t.source.pieces)
    queries = list(t.source.pieces if kind == "enc_self" else t.target_input_pieces)
    query = len(queries) // 2
    parts = [(f"scores {it.scores_label}", to_numpy(it.unmasked[head, query])),
             ("softmax = weights", to_numpy(it.weights[head, query]))]
    title = (f"{KIND_LABELS[kind]}, layer {layer + 1}, head {head + 1}: query {query} · "
             f"{plotly_text([queries[query]])[0]}")
    return stage_bars(parts, keys, to_numpy(it.mask[query]), title, masked_from=len(parts)), {}


def model_view(deck: Deck, kind: str) -> Made:
    view = attention_view(deck.translation, kind)
    return model_view_figure(view.weights, view.query_labels, view.key_labels,
                             title=f"{KIND_LABELS[kind]}: every layer (rows) and head (columns)"), {}


def head_view(deck: Deck, kind: str, layer: int) -> Made:
    view, layer = attention_view(deck.translation, kind), _layer(deck, kind, layer)
    heads = list(range(view.weights.shape[1]))
    shown = strongest_heads(view.weights[layer])
    fig = head_view_figure(view.weights[layer], heads, view.query_labels, view.key_labels, shown=shown,
                           title=f"{KIND_LABELS[kind]} · layer {layer + 1} · heads "
                                 f"{' and '.join(str(h + 1) for h in shown)}, the most focused",
                           min_weight=default_min_weight(max(len(view.query_labels), len(view.key_labels))),
                           query_title=view.query_title.split(" (")[0], key_title=view.key_title.split(" (")[0])
    return fig, {}


def mask(deck: Deck, kind: str) -> Made:
    t = deck.translation
    view = attention_view(t, kind)
    grid = to_numpy(t.trace.mask(kind)[0, 0])
    return mask_grid(grid, view.query_labels, view.key_labels, f"The mask of {KIND_LABELS[kind].lower()}",
                     "key", "query", columns=1), {}


def heatmap(deck: Deck, kind: str, layer: int, head: int) -> Made:
    view, layer = attention_view(deck.translation, kind), _layer(deck, kind, layer)
    return _heatmap(view, kind, layer, head), {}


def _heatmap(view, kind: str, layer: int, head: int) -> go.Figure:
    return heatmap_figure(head_matrix(view, layer, head), view.query_labels, view.key_labels,
                          title=f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_label(head)}",
                          query_title=view.query_title, key_title=view.key_title, predicts=view.predicts,
                          mask=view.mask, width_px=SLIDE_PX)


def topk(deck: Deck) -> Made:
    steps = deck.translation.result.steps
    top = [float(to_numpy(s.topk_probs[0])[0]) for s in steps]
    t = int(np.argmin(top))  # greedy takes the top piece: the least sure step has the smallest top probability
    step, tokenizer = steps[t], deck.ckpt.tokenizer
    ids = step.topk_ids[0].tolist()
    chosen = deck.translation.result.best.tokens[t]
    fig = topk_figure(tokenizer.pieces(ids), to_numpy(step.topk_probs[0]), [i == chosen for i in ids],
                      title=f"Top {len(ids)} next pieces at step {t + 1}")
    return fig, {"step": t + 1, "n_steps": len(steps)}


def beam_tree(deck: Deck, beam: int) -> Made:
    translation, tokenizer = deck.translate(deck.translation.source.text, beam), deck.ckpt.tokenizer
    tree = [[TreeCandidate(row=c.row, token=c.token, piece=tokenizer.id_to_piece(c.token), log_prob=c.log_prob,
                           status=c.status) for c in s.candidates] for s in translation.result.steps]
    nodes = beam_tree_nodes(tree, [(h.tokens, h.path) for h in translation.result.hypotheses])
    fig = beam_tree_figure(nodes, title=f"Beam search tree (beam {beam}): every candidate considered",
                           width_px=SLIDE_PX)
    fig.update_traces(mode="markers", selector=dict(name="dropped later"))  # a slide names the paths only
    return fig, {"beam": beam, "beam_output": md(translation.text, MAX_QUOTE) or "(nothing)"}


def importance(deck: Deck) -> Made:
    t = deck.translation
    values = {kind: to_numpy(v) for kind, v in
              head_importance(deck.ckpt.model, list(t.source.ids), list(t.target_ids)).items()}
    ranked = sorted(((float(v[layer, head]), kind, layer, head) for kind, v in values.items()
                     for layer in range(v.shape[0]) for head in range(v.shape[1])), reverse=True)
    top = ", ".join(f"{KIND_NAMES[kind]} layer {layer + 1} head {head + 1} ({drop:.2f} nats)"
                    for drop, kind, layer, head in ranked[:3])
    fig = importance_figure(values, {kind: name.capitalize() for kind, name in KIND_NAMES.items()},
                            title="How much log P(this output) drops without each head (nats)")
    return fig, {"top_heads": top}


def lr(deck: Deck) -> Made:
    path = deck.ckpt.path / "log.csv" if deck.ckpt.path else None
    try:
        log = pd.read_csv(path) if path is not None else None
    except (OSError, ValueError):
        log = None
    if log is None or not {"step", "lr"} <= set(log.columns) or not len(log):
        raise SlideUnavailable("This checkpoint ships no training log (log.csv), so its schedule cannot be drawn.")
    light = log.iloc[::max(1, len(log) // 800)]
    warmup = int(deck.ckpt.meta.get("warmup", 4000))
    fig = lr_schedule([(f"used in training: warm-up {warmup} steps", light["step"].to_numpy(), light["lr"].to_numpy())],
                      None, "This model's learning rate, step by step")
    return fig, {"warmup": warmup, "restarts": restarts_line(deck.ckpt.meta),
                 "cooldowns": " ".join(cooldown_lines(training_segments(deck.ckpt.meta)))}


MAX_NAMED_RESTARTS = 4  # restarts named with their steps on the schedule slide's line (220 characters)


def restarts_line(meta: dict) -> str:
    """A line on the jumps in a continued run's curve (training.schedule.training_segments), else ""."""
    segments = training_segments(meta)
    if len(segments) < 2:
        return ""
    factors = [f"×{s['lr_factor'] or 1.0:g}" for s in segments]
    if len(segments) > MAX_NAMED_RESTARTS + 1:  # every step named would not fit a slide's line: the factors in order
        return (f"The jumps are where training was resumed, {len(segments) - 1} times, Adam restarted each time, at "
                f"these factors on the same formula: {' → '.join(factors)}, the last from step "
                f"{segments[-2]['last_step'] or 0:,}.")
    parts = [f"{factor} to step {s['last_step'] or 0:,}" for factor, s in zip(factors, segments[:-1], strict=False)]
    return ("The jumps are where training was resumed, Adam restarted each time, at these factors on the same "
            f"formula: {', '.join(parts)}, then {factors[-1]}.")


def label_smoothing(deck: Deck) -> Made:
    eps = float(deck.ckpt.meta.get("label_smoothing", 0.1))
    small_v, true = 10, 3
    dist = to_numpy(smoothed_targets([true], small_v, eps)[0])
    labels = [f"piece {i}" + (" (true)" if i == true else "") for i in range(small_v)]
    return label_smoothing_bars(dist, labels, eps), {}


def learning(deck: Deck) -> Made:
    """The last layer's cross-attention (mean over heads) of this sentence in each shipped snapshot of earlier
    training and in the model, all reading the model's own output (explain.checkpoints)."""
    snapshots = snapshots_of(deck.model_name)
    if not snapshots:
        raise SlideUnavailable("This model ships no snapshots of its earlier training, so there is nothing to set "
                               "beside it (the Heads page can compare an uploaded earlier checkpoint).")
    t = deck.translation
    maps = []
    for name, (_, meta) in snapshots.items():
        reading = read_output(load_snapshot(deck.model_name, name).model, list(t.source.ids), list(t.target_ids))
        maps.append((f"epoch {meta.get('epochs', '?')}", select_head(to_numpy(reading.maps["cross"][-1]), -1)))
    final = deck.ckpt.meta.get("epochs")
    maps.append((f"epoch {final} (this model)" if final else "this model",
                 select_head(to_numpy(t.trace.weights("cross")[-1, 0]), -1)))
    fig = checkpoints_figure(maps, list(t.target_input_pieces), list(t.source.pieces), row_title="decoder input",
                             col_title="source piece", width_px=SLIDE_PX,
                             title="Last layer's cross-attention in training<br><sup>mean over heads</sup>")
    epochs = [str(meta.get("epochs", "?")) for _, meta in snapshots.values()]
    earlier = "epoch " + epochs[0] if len(epochs) == 1 else "epochs " + ", ".join(epochs[:-1]) + " and " + epochs[-1]
    return fig, {"first": maps[0][0], "earlier": earlier, "final": f"epoch {final}" if final else "its last epoch"}


def card_limitation(deck: Deck) -> str:
    """The first sentence of the first known limitation in the model card, as plain Markdown."""
    card = deck.ckpt.path / "MODEL_CARD.md" if deck.ckpt.path else None
    text = card.read_text(encoding="utf-8") if card is not None and card.is_file() else ""
    section = re.search(r"^##\s+(?:Known\s+)?limitations\s*$(.*?)(?=^##\s|\Z)", text, re.I | re.M | re.S)
    bullet = re.search(r"^-\s+(.+?)(?=^\S|^\s*-\s|\Z)", section.group(1), re.M | re.S) if section else None
    if bullet is None:
        return "Every model has limits; this one's card does not list them."
    return re.split(r"(?<=[a-z)]\.)\s+(?=[A-Z])", " ".join(bullet.group(1).replace("**", "").split()))[0]


def failure(deck: Deck) -> Made:
    if deck.model_name not in FAILURES:
        raise SlideUnavailable("No known failing example is recorded for this model.")
    text, reference = FAILURES[deck.model_name]
    translation = deck.translate(text, 1)
    view = attention_view(translation, "cross")
    fig = _heatmap(view, "cross", translation.trace.n_layers["cross"] - 1, -1)
    return fig, {"limitation": card_limitation(deck), "fail_source": md(text, MAX_QUOTE),
                 "fail_output": md(translation.text, MAX_QUOTE) or "(nothing)",
                 "fail_reference": md(reference, MAX_QUOTE)}


MAKERS: dict[str, Callable[..., Made]] = {
    "architecture": architecture, "embeddings": embeddings, "stages": stages, "model_view": model_view,
    "head_view": head_view, "mask": mask, "heatmap": heatmap, "topk": topk, "beam_tree": beam_tree,
    "importance": importance, "lr": lr, "label_smoothing": label_smoothing, "learning": learning,
    "failure": failure,
}
