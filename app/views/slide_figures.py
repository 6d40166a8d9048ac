"""The figure of each lecture slide: the concept pages' chart builders on the data they already compute
(explain/, model/), for the current sentence. ``MAKERS`` maps the names app.lecture.slides.SLIDES uses to makers.

A maker gets the Deck (model, sentence, a way to translate another text) and the slide's arguments and
returns the figure plus any facts its lines quote (the step it shows, the beam's output). It raises
SlideUnavailable when the model lacks what the slide needs (an uploaded checkpoint ships no training log).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
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
from app.charts.axes import (
    COLORBAR_PX,
    GLYPH_EM,
    SLIDE_PX,
    TICK_SIZE,
    mark_pieces,
    piece_ticks,
    plotly_text,
    token_axes,
)
from app.charts.contrastive import attention_beside_attribution
from app.charts.decoding import TreeCandidate, beam_tree_figure, beam_tree_nodes, topk_figure
from app.charts.heads import checkpoints_figure, importance_figure
from app.charts.masks import mask_grid
from app.charts.one_query import needed_height, one_query_figure, rows_that_fit
from app.charts.style import HEAD_VIEW_FRAME_PX, PRESENTER_TICK_FONT
from app.charts.training import architecture_diagram, label_smoothing_bars, schedule_beside_run
from app.checks.escape import md
from app.explorer import AttentionView, attention_view, head_label, head_matrix, select_head
from app.lecture.measures import MIN_WINDOW, dropped_words, least_sure_step, restarts_line, window_of, words_of
from app.lecture.slides import FAILURES, Slide, reorder_hint
from app.models.registry import load_snapshot, snapshots_of
from app.models.training_log import cooldown_lines
from app.page import to_numpy
from app.views.contrastive import attribute
from explain.checkpoints import read_output
from explain.heads import head_importance
from explain.integrated_gradients import DEFAULT_STEPS
from explain.mechanics import attention_internals
from explain.model_training import smoothed_targets
from explain.positional import embedding_parts
from model.checkpoints.files import Checkpoint
from model.network.trace import KIND_LABELS, Kind
from model.network.transformer import shifted_right
from model.serving.budget import BudgetError, plan_gradients
from model.serving.inference import Translation
from model.tokenization.pieces import word_groups, word_labels
from training.schedule import noam_lr, training_segments

MAX_QUOTE = 140  # characters of a sentence quoted in a slide's lines
SLIDE_HEIGHT = 520  # px: a slide's figure on a 1280x720 screen, when the browser has not said its size
TOY_VOCAB = 10  # label smoothing's bars: a vocabulary small enough that the ε/V bars stay visible
TITLE_PX = 130  # a slide figure's title (two lines), key axis title and margins: what its rows cannot use
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
    width_px: float = SLIDE_PX  # the slide's figure column, as the browser reports it (app.views.lecture)
    height_px: int = SLIDE_HEIGHT  # the slide's free height under its title row
    presenter: bool = False  # projector-size text: 18-px labels, 24-px rows
    # the first row of a long map's window, which the lecturer moves with ↓ / ↑ (app.views.lecture); None: no window,
    # every row, the figure as tall as they need (the lecture file, app.views.lecture_file, has no keys to move one)
    window: int | None = 0

    @property
    def font(self) -> int:
        """The tick labels' size in this mode (app.charts.style.presented sets the presenter's)."""
        return PRESENTER_TICK_FONT if self.presenter else TICK_SIZE


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
    fig.update_layout(height=min(fig.layout.height, deck.height_px))
    # a row per piece, under the panels' titles and over the dimension axis: a window where they do not all fit
    return windowed(fig, len(source.pieces), int((deck.height_px - EMBEDDING_FRAME_PX) // (deck.font + 6)), deck)


EMBEDDING_FRAME_PX = 170  # the embedding panels' titles (two lines), the window's line and the dimension axis


def stages(deck: Deck, kind: str, layer: int, head: int) -> Made:
    """One query of one head, with its real q, each key's k, q·k, ÷√d_k, the softmax and the winning key."""
    t, layer = deck.translation, _layer(deck, kind, layer)
    decoder_input = shifted_right(t.target_ids, deck.ckpt.config.bos_id)
    it = attention_internals(deck.ckpt.model, list(t.source.ids), decoder_input, kind, layer)
    keys = list(t.target_input_pieces if kind == "dec_self" else t.source.pieces)
    queries = list(t.source.pieces if kind == "enc_self" else t.target_pieces)
    starts = [i for i, p in enumerate(queries) if p.startswith("▁") and len(p) > 2] or list(range(len(queries)))
    query = min(starts, key=lambda i: abs(i - len(queries) // 2))  # a whole word near the middle of the sentence
    weights = to_numpy(it.weights[head, query])
    scaled = to_numpy(it.unmasked[head, query])
    # every key in a row of its own, named: all of them where they fit, else a window the lecturer moves (↓ / ↑)
    row_px = deck.font + 6
    first, end = window_of(len(keys), rows_that_fit(deck.height_px, row_px), deck.window)
    where = "" if end - first == len(keys) else f" · keys {first + 1}–{end} of {len(keys)}"
    title = (f"One query against every key<br><sup>{KIND_LABELS[kind].lower()} · layer {layer + 1} · head "
             f"{head + 1} · query {plotly_text([queries[query]])[0]} (position {query}){where}</sup>")
    fig = one_query_figure(to_numpy(it.q[head, query]), to_numpy(it.k[head]), to_numpy(it.qk[head, query]), scaled,
                           weights, to_numpy(it.mask[query]), keys, queries[query], title=title, d_k=it.d_k,
                           height=max(deck.height_px, needed_height(end - first, row_px)), shown=range(first, end))
    winner = int(weights.argmax())
    window = {"window": f"The figure shows keys {first + 1}–{end} of {len(keys)}: **↓** / **↑** move the window "
                        "over the sentence.", "window_start": first, "window_keys": True} if where else {}
    return fig, {"query": md(queries[query], 40), "winner": md(keys[winner], 40),
                 "winner_weight": float(weights[winner]), **window}


def model_view(deck: Deck, kind: Kind) -> Made:
    view = attention_view(deck.translation, kind)
    return model_view_figure(view.weights, view.query_labels, view.key_labels,
                             title=f"{KIND_LABELS[kind]}: every layer (rows) and head (columns)"), {}


def _row_room(queries: list[str], keys: list[str], deck: Deck, frame: float = TITLE_PX) -> int:
    """How many of a map's query rows fit the slide at this mode's text size, every piece named without
    shrinking: rows of text stacked in the free height (less the key pieces turned below the map), keys side by
    side (turned as far as needed) in the width left by the colour bar and the row labels; 0 where the keys do
    not fit side by side."""
    font, row_px = deck.font, deck.font + 6
    room = deck.width_px - COLORBAR_PX - GLYPH_EM * font * max(map(len, queries), default=1)
    angle, size = piece_ticks(keys, room, font)
    below = (font + 8 if angle == 0 else GLYPH_EM * font * max(map(len, keys), default=1) * (1 if angle == -90
                                                                                          else 0.72))
    return int((deck.height_px - frame - below) // row_px) if size == font else 0


def _rows_fit(queries: list[str], keys: list[str], deck: Deck, frame: float = TITLE_PX) -> bool:
    """Whether every query row and key column of a map fits the slide (_row_room)."""
    return len(queries) <= _row_room(queries, keys, deck, frame)


def windowed(fig: go.Figure, n: int, room: int, deck: Deck) -> tuple[go.Figure, dict]:
    """``fig`` (a map of ``n`` rows on its y axes, first row on top) showing the window of rows the lecturer moved
    to when not all ``room`` fit, its subtitle saying which; the facts "window" (a line for the slide, "" when
    every row shows), "window_start" and "window_keys" (whether ↓ / ↑ move it)."""
    first, end = window_of(n, room, deck.window)
    if end - first == n:
        return fig, {"window": "", "window_start": 0, "window_keys": False}
    fig.update_yaxes(range=[end - 0.5, first - 0.5], autorange=False)
    for name in [k for k in fig.layout.to_plotly_json() if k.startswith("yaxis")]:
        if fig.layout[name].showticklabels is not False:
            mark_pieces(fig, name, end - first)
    where = f"rows {first + 1}–{end} of {n}"
    title = fig.layout.title.text or ""
    if not title:  # a figure without a title of its own (subplot titles under it): the line alone, room made
        fig.update_layout(title_text=f"<sup>{where}</sup>", margin_t=(fig.layout.margin.t or 50) + 20)
    else:
        fig.update_layout(title_text=title.replace("</sup>", f" · {where}</sup>") if "</sup>" in title
                          else f"{title}<br><sup>{where}</sup>")
    return fig, {"window": f"The map shows {where}: **↓** / **↑** move the window over the sentence.",
                 "window_start": first, "window_keys": True}


def fitting_view(deck: Deck, translation: Translation, kind: Kind) -> AttentionView:
    """The pieces of ``kind`` where every one of them fits the slide, else its words (pieces merged into words, as
    the explorer's Words toggle does): a slide names every row and column it draws."""
    view = attention_view(translation, kind)
    return view if _rows_fit(view.query_labels, view.key_labels, deck) else attention_view(translation, kind, True)


def _in_words(view: AttentionView) -> str:
    return " · words (pieces merged)" if "word" in view.query_title + view.key_title else ""


def head_view(deck: Deck, kind: Kind, layer: int) -> Made:
    view, layer = attention_view(deck.translation, kind), _layer(deck, kind, layer)
    rows = max(len(view.query_labels), len(view.key_labels))
    if rows * (deck.font + 10) + HEAD_VIEW_FRAME_PX > deck.height_px:  # a column of pieces, 16 px (presenter 21)
        view = attention_view(deck.translation, kind, True)
    heads = list(range(view.weights.shape[1]))
    shown = strongest_heads(view.weights[layer])
    fig = head_view_figure(view.weights[layer], heads, view.query_labels, view.key_labels, shown=shown,
                           title=f"{KIND_LABELS[kind]}<br><sup>layer {layer + 1} · heads "
                                 f"{' and '.join(str(h + 1) for h in shown)}, the most focused{_in_words(view)}"
                                 "</sup>",  # one line would run past the figure at the presenter's 26 px
                           min_weight=default_min_weight(max(len(view.query_labels), len(view.key_labels))),
                           query_title=view.query_title.split(" (")[0], key_title=view.key_title.split(" (")[0])
    return fig.update_layout(height=deck.height_px), {}


def mask(deck: Deck, kind: Kind) -> Made:
    t = deck.translation
    view = fitting_view(deck, t, kind)
    grid = view.mask if view.mask is not None else np.ones((len(view.query_labels), len(view.key_labels)), bool)
    fig = mask_grid(grid, view.query_labels, view.key_labels,
                    f"The mask of {KIND_LABELS[kind].lower()}{_in_words(view)}", "key", "query", columns=1)
    token_axes(fig, view.key_labels, view.query_labels, "key", "query", x_px=deck.width_px,
               y_px=deck.height_px - TITLE_PX)
    return fig.update_layout(height=deck.height_px), {}


def heatmap(deck: Deck, kind: Kind, layer: int, head: int) -> Made:
    view, layer = fitting_view(deck, deck.translation, kind), _layer(deck, kind, layer)
    return windowed(_heatmap(view, kind, layer, head, deck), len(view.query_labels),
                    _row_room(view.query_labels, view.key_labels, deck), deck)


def _heatmap(view: AttentionView, kind: Kind, layer: int, head: int, deck: Deck,
             marked: Sequence[int] = ()) -> go.Figure:
    """A slide's attention map; the key columns in ``marked`` are named in red with a ✗ (source words dropped)."""
    keys = [f"✗ {k}" if j in marked else k for j, k in enumerate(view.key_labels)]
    fig = heatmap_figure(head_matrix(view, layer, head), view.query_labels, keys,
                         title=f"{KIND_LABELS[kind]}<br><sup>layer {layer + 1} · {head_label(head)}"
                               f"{_in_words(view)}</sup>",
                         # the row title in two lines: in one it ran past a short map into the subtitle
                         query_title=view.query_title.replace(" (", "<br>(", 1), key_title=view.key_title,
                         predicts=view.predicts, mask=view.mask,
                         width_px=deck.width_px * PRESENTER_TICK_FONT / deck.font, height=deck.height_px)
    if marked:
        fig.update_xaxes(ticktext=[f"<span style='color:#d62728'>{t}</span>" if j in marked else t
                                   for j, t in enumerate(fig.layout.xaxis.ticktext)], selector=dict(side="bottom"))
    return fig


def topk(deck: Deck) -> Made:
    steps = deck.translation.result.steps
    t = least_sure_step(deck.translation)  # greedy takes the top piece: the least sure step's is the least probable
    step, tokenizer = steps[t], deck.ckpt.tokenizer
    ids = step.topk_ids[0].tolist()
    chosen = deck.translation.result.best.tokens[t]
    fig = topk_figure(tokenizer.pieces(ids), to_numpy(step.topk_probs[0]), [i == chosen for i in ids],
                      title=f"Top {len(ids)} next pieces at step {t + 1}")
    return fig, {"step": t + 1, "n_steps": len(steps)}


CONTRAST_FRAME_PX = 60  # what the lower panel's axis title and the margins add to the width the pieces need


def contrastive(deck: Deck) -> Made:
    """The contrastive question on the current sentence: at the least sure step, why the chosen piece and not the
    runner-up, as integrated gradients over the source (app.views.contrastive.attribute, priced by
    plan_gradients like the Decoding page's) beneath that step's cross-attention row (last layer, mean over heads).
    Pieces become words (attributions and attention summed over a word's pieces) where the pieces do not fit."""
    t, tokenizer = deck.translation, deck.ckpt.tokenizer
    index = least_sure_step(t)
    step = t.result.steps[index]
    chosen = t.result.best.tokens[index]
    ids, probs = step.topk_ids[0].tolist(), to_numpy(step.topk_probs[0])
    others = [(i, float(p)) for i, p in zip(ids, probs, strict=True) if i != chosen]
    if not others:
        raise SlideUnavailable("This step's top pieces hold no other piece to compare the chosen one with.")
    runner, runner_p = others[0]
    source, prefix = tuple(t.source.ids), tuple(step.prefixes[0].tolist())
    try:
        plan = plan_gradients(deck.ckpt.config, len(source), len(prefix), DEFAULT_STEPS)
    except BudgetError as exc:
        raise SlideUnavailable(str(exc)) from exc
    result = attribute(deck.ckpt.model, source, prefix, chosen, runner, plan)
    layer, cross = t.trace.n_layers["cross"] - 1, step.cross
    assert cross is not None  # the app decodes with attention (Capture.WEIGHTS)
    attention = select_head(to_numpy(cross[layer, 0]), -1)  # [S]: this step's row, mean over heads
    pieces, attributed = list(t.source.pieces), np.asarray(result.ig_source, dtype=np.float64)
    room = deck.width_px - CONTRAST_FRAME_PX - GLYPH_EM * deck.font * len("attribution")
    angle, size = piece_ticks(pieces, room, deck.font)
    in_words = size < deck.font
    if in_words:  # a word's attribution and the attention it receives: the sums over its pieces
        groups = word_groups(pieces)
        attention = np.array([attention[g].sum() for g in groups])
        attributed = np.array([attributed[g].sum() for g in groups])
        pieces = word_labels(pieces, groups)
        angle, size = piece_ticks(pieces, room, deck.font)
    name, other = tokenizer.id_to_piece(chosen), tokenizer.id_to_piece(runner)
    quoted = plotly_text([name, other])
    fig = attention_beside_attribution(
        pieces, attention, attributed, tick_angle=angle, tick_size=size, height=deck.height_px,
        title=f"Why “{quoted[0]}” and not “{quoted[1]}”?<br><sup>step {index + 1} · attention: last layer, mean "
              f"over heads{' · words' if in_words else ''}</sup>")
    top_attention, top_push = int(np.argmax(attention)), int(np.argmax(attributed))
    return fig, {"step": index + 1, "chosen": md(name, 40), "runner_up": md(other, 40),
                 "p_chosen": runner_p * math.exp(result.value),  # log p(chosen) - log p(runner-up) = f
                 "p_runner_up": runner_p, "most_attended": md(pieces[top_attention], 40),
                 "most_pushing": md(pieces[top_push], 40), "ig_steps": result.steps, "ig_total": result.total,
                 "ig_delta": result.value - result.baseline_value, "ig_gap": result.gap,
                 "ig_baseline": md(result.baseline)}


def beam_tree(deck: Deck, beam: int) -> Made:
    translation, tokenizer = deck.translate(deck.translation.source.text, beam), deck.ckpt.tokenizer
    tree = [[TreeCandidate(row=c.row, token=c.token, piece=tokenizer.id_to_piece(c.token), log_prob=c.log_prob,
                           status=c.status) for c in s.candidates] for s in translation.result.steps]
    nodes = beam_tree_nodes(tree, [(h.tokens, h.path) for h in translation.result.hypotheses])
    fig = beam_tree_figure(nodes, title=f"Beam search tree (beam {beam}): every candidate considered",
                           width_px=deck.width_px * TICK_SIZE / deck.font, height=deck.height_px)
    # a slide names the best path only, along the top; the other pieces are in their hovers
    fig.update_traces(mode="markers", selector=lambda t: t.name in ("dropped later", "other n-best",
                                                                     "finished (&lt;/s&gt;)"))
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
    d_model, last = deck.ckpt.config.d_model, int(log["step"].max())
    steps = np.unique(np.linspace(1, last, 600).astype(int))
    formula = np.array([noam_lr(int(step), d_model, warmup) for step in steps])
    fig = schedule_beside_run((f"the paper's formula: d_model = {d_model}, warm-up {warmup:,}", steps, formula),
                              ("this model's real run", light["step"].to_numpy(), light["lr"].to_numpy()), warmup,
                              "Learning rate: warm-up, then 1/√step")
    return fig.update_layout(height=deck.height_px), {
        "warmup": warmup, "restarts": restarts_line(deck.ckpt.meta),
        "cooldowns": " ".join(cooldown_lines(training_segments(deck.ckpt.meta)))}


def label_smoothing(deck: Deck) -> Made:
    eps = float(deck.ckpt.meta.get("label_smoothing", 0.1))
    small_v, true = TOY_VOCAB, 3
    dist = to_numpy(smoothed_targets([true], small_v, eps)[0])
    labels = [f"piece {i}" + (" (true)" if i == true else "") for i in range(small_v)]
    fig = label_smoothing_bars(dist, labels, eps)
    fig.update_layout(title_text=f"A toy vocabulary of {small_v} pieces, ε = {eps:g}<br><sup>this model: "
                                 f"{deck.ckpt.config.vocab_size:,} pieces, true piece's target "
                                 f"{1 - eps + eps / deck.ckpt.config.vocab_size:.4f}</sup>", margin_t=90)
    return fig.update_layout(height=deck.height_px), {"toy_vocab": small_v}


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
    rows, cols = list(t.target_pieces), list(t.source.pieces)
    panel_px = deck.width_px / len(maps)
    unit = "piece"
    if not _rows_fit(rows, cols, Deck(**{**deck.__dict__, "width_px": panel_px + COLORBAR_PX})):
        (rows, cols, maps), unit = words_of(rows, cols, maps), "word"
    # its builder lays out 14-px text, which presenter mode enlarges: the width it has at that size
    fig = checkpoints_figure(maps, rows, cols, row_title=f"{unit} written", col_title=f"source {unit}",
                             width_px=deck.width_px * TICK_SIZE / deck.font,
                             title="Last layer's cross-attention in training<br><sup>mean over heads</sup>",
                             wrap=False)  # one row of maps on a slide, a window over them where they do not fit
    fig.update_layout(height=deck.height_px)
    fig, window = _panels_windowed(fig, maps[-1][1], rows, cols, deck)
    epochs = [str(meta.get("epochs", "?")) for _, meta in snapshots.values()]
    earlier = "epoch " + epochs[0] if len(epochs) == 1 else "epochs " + ", ".join(epochs[:-1]) + " and " + epochs[-1]
    return fig, {"first": maps[0][0], "earlier": earlier, "final": f"epoch {final}" if final else "its last epoch",
                 **window}


SUBPLOT_TITLES_PX = 60  # a strip of maps' panel titles, two lines ("epoch 43 (this model)") at the most


def _panels_windowed(fig: go.Figure, final: np.ndarray, rows: list[str], cols: list[str], deck: Deck
                     ) -> tuple[go.Figure, dict]:
    """A strip of maps (app.charts.heads.checkpoints_figure) with a window where its pieces do not fit the slide:
    the rows the lecturer moved to (windowed), and the source columns those rows of ``final`` [rows, cols] (the
    finished model's map) weigh most, as many side by side as a panel holds, every one named."""
    panels = sum(1 for name in fig.layout.to_plotly_json() if name.startswith("xaxis"))
    label_px = GLYPH_EM * deck.font * max(map(len, rows), default=1)
    panel_px = (deck.width_px - COLORBAR_PX - label_px) * (1 - 0.03 * (panels - 1)) / max(panels, 1)
    n_cols = max(MIN_WINDOW, min(len(cols), int(panel_px // (deck.font + 4))))  # one line of text each, turned
    below = GLYPH_EM * deck.font * max(map(len, cols), default=1)
    room = int((deck.height_px - TITLE_PX - SUBPLOT_TITLES_PX - below) // (deck.font + 6))
    fig, facts = windowed(fig, len(rows), room, deck)
    if n_cols < len(cols):
        first, end = window_of(len(rows), room, deck.window)
        mass = np.convolve(np.asarray(final)[first:end].sum(axis=0), np.ones(n_cols), mode="valid")  # [windows]
        c = int(mass.argmax())
        angle, size = piece_ticks(cols[c:c + n_cols], panel_px, deck.font)
        fig.update_xaxes(range=[c - 0.5, c + n_cols - 0.5], autorange=False, tickangle=angle, tickfont_size=size)
        for name in [k for k in fig.layout.to_plotly_json() if k.startswith("xaxis")]:
            mark_pieces(fig, name, n_cols)
        where = f"source {c + 1}–{c + n_cols} of {len(cols)}"
        fig.update_layout(title_text=fig.layout.title.text.replace("</sup>", f" · {where}</sup>"))
        facts = {**facts, "window": f"{facts['window']} Columns: {where}, those these rows read most.".strip()}
    return fig, facts


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
    view = attention_view(translation, "cross", word_level=True)
    layer = translation.trace.n_layers["cross"] - 1
    dropped = dropped_words(head_matrix(view, layer, -1), view.key_labels)
    fig = _heatmap(view, "cross", layer, -1, deck, marked=dropped)
    fig.update_layout(title_text=fig.layout.title.text.replace("</sup>", " · ✗ red: dropped source words</sup>"))
    names = ", ".join(md(view.key_labels[j], 40) for j in dropped) or "none"
    return fig, {"limitation": card_limitation(deck), "fail_source": md(text, MAX_QUOTE),
                 "fail_output": md(translation.text, MAX_QUOTE) or "(nothing)",
                 "fail_reference": md(reference, MAX_QUOTE), "dropped": names}


MAKERS: dict[str, Callable[..., Made]] = {
    "architecture": architecture, "embeddings": embeddings, "stages": stages, "model_view": model_view,
    "head_view": head_view, "mask": mask, "heatmap": heatmap, "topk": topk, "beam_tree": beam_tree,
    "importance": importance, "contrastive": contrastive, "lr": lr, "label_smoothing": label_smoothing,
    "learning": learning,
    "failure": failure,
}
