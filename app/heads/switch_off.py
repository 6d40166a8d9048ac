"""Heads page, section 1: switch heads off (Michel et al., 2019). Head importance on this sentence (and summed over
the examples), a checklist of heads, and the sentence decoded again without them."""
from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app.charts import heads as charts
from app.checks.escape import md
from app.explorer import KIND_SHORT, select_head
from app.heads.pickers import axis_pieces, head_name, map_picker
from app.models.examples import examples_for
from app.models.registry import load_model
from app.page import plot, to_numpy
from app.serving.cancel import session_stop_signal
from app.serving.scheduler import Request, heavy_slot, translate_request
from app.serving.weak_fragment import weak_fragment
from explain.ablation import Ablation, ablate, changed_pieces, importance_over_sentences
from explain.heads import all_heads, head_importance, n_layers_of
from model.network.config import DecodeConfig
from model.network.trace import KIND_LABELS, KINDS, Head, PerKind
from model.serving.inference import Translation

log = logging.getLogger("attention_explorer")
SUM_AT_ONCE_PARAMETERS = 20_000_000  # larger models sum over the examples only when asked (8-22 s at 74M)


# --- numbers, cached: each is explain/ on the current sentence, turned into numpy once ----------------------

@st.cache_data(show_spinner="Switching every head off in turn…", max_entries=64)
def sentence_importance(model_name: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]
                        ) -> PerKind[np.ndarray]:
    """explain.heads.head_importance of one sentence: per kind [L, H], nats."""
    model = load_model(model_name).model
    with heavy_slot():
        importance = head_importance(model, source_ids, output_ids, should_stop=session_stop_signal())
    return importance.map(to_numpy)


@st.cache_data(show_spinner="Summing head importance over the example sentences (once per model)…")
def examples_importance(model_name: str) -> PerKind[np.ndarray] | None:
    """Head importance summed over the Translate page's examples for this model (greedy), or None without any."""
    ckpt = load_model(model_name)
    examples = examples_for(ckpt.meta)  # in the model's source language
    if examples is None:
        return None
    with heavy_slot():
        total = importance_over_sentences(ckpt.model, ckpt.tokenizer, list(examples.sentences), DecodeConfig(),
                                          should_stop=session_stop_signal())
    return total.map(to_numpy)


@st.cache_resource(show_spinner="Decoding again with the heads switched off…", max_entries=32)
def cached_ablation(request: Request, heads: tuple[tuple[str, int, int], ...]) -> Ablation:
    """explain.ablation.ablate of the request's translation (frozen, shared read-only by every session)."""
    ckpt = load_model(request.model_name)
    original = translate_request(request)
    with heavy_slot():
        return ablate(ckpt.model, ckpt.tokenizer, original, heads, request.decode_config,
                      should_stop=session_stop_signal())


# --- 1. switching heads off (Michel et al., 2019) ---------------------------------------------------------

def checklist_key(kind: str, layer: int) -> str:
    return f"heads_off_{kind}_{layer}"


def forget_missing_heads(layers: PerKind[int], n_heads: int) -> None:
    """Drop remembered heads this model does not have (fewer heads after a model switch); before the checklist
    is drawn."""
    for kind in KINDS:
        for layer in range(layers[kind]):
            key = checklist_key(kind, layer)
            if key in st.session_state:
                kept = sorted(h for h in (st.session_state[key] or []) if isinstance(h, int) and 0 <= h < n_heads)
                st.session_state[key] = kept


def heads_off(layers: PerKind[int], n_heads: int) -> list[tuple[str, int, int]]:
    """The heads ticked in the checklist, in kind, layer, head order."""
    return [(kind, layer, h) for kind in KINDS for layer in range(layers[kind])
            for h in sorted(st.session_state.get(checklist_key(kind, layer)) or []) if 0 <= h < n_heads]


def set_heads_off(heads: Iterable[Head], layers: PerKind[int]) -> None:
    """Replace the checklist with ``heads`` (a widget callback: runs before the checklist is drawn)."""
    for kind in KINDS:
        for layer in range(layers[kind]):
            st.session_state[checklist_key(kind, layer)] = sorted(h for k, l, h in heads if (k, l) == (kind, layer))


def toggle_head(head: tuple[str, int, int]) -> None:
    kind, layer, h = head
    key = checklist_key(kind, layer)
    st.session_state[key] = sorted(set(st.session_state.get(key) or []) ^ {h})


def _table_click(table_key: str, heads: list[tuple[str, int, int]]) -> None:
    """A selected row of the importance table switches its head off (or back on)."""
    rows = ((st.session_state.get(table_key) or {}).get("selection") or {}).get("rows") or []
    if rows:
        toggle_head(heads[rows[0]])


def importance_frame(heads: Sequence[Head], importance: PerKind[np.ndarray], summed: PerKind[np.ndarray] | None,
                     off: list, n_examples: int) -> pd.DataFrame:
    """One row per head of ``heads`` in that order (a row click maps back by position, whatever the user's sort)."""
    frame = pd.DataFrame({
        "attention": [KIND_SHORT[k] for k, _, _ in heads],
        "layer": [l + 1 for _, l, _ in heads],
        "head": [h + 1 for _, _, h in heads],
        "drop, this sentence (nats)": [float(importance[k][l, h]) for k, l, h in heads],
    })
    if summed is not None:
        frame[f"drop, summed over {n_examples} examples (nats)"] = [float(summed[k][l, h]) for k, l, h in heads]
    frame["off"] = ["✕" if head in off else "" for head in heads]
    return frame


def checklist_ui(layers: PerKind[int], n_heads: int, importance: PerKind[np.ndarray]) -> list:
    """The head checklist: one row of head toggles per kind and layer, plus shortcuts."""
    heads = all_heads(layers, n_heads)
    ranked = sorted(heads, key=lambda h: -float(importance[h[0]][h[1], h[2]]))
    cross = [h for h in heads if h[0] == "cross"]
    b1, b2, b3 = st.columns(3)
    b1.button("Switch every cross-attention head off", key="heads_all_cross", on_click=set_heads_off,
              args=(cross, layers), width="stretch")
    b2.button("Switch the 3 most important heads off", key="heads_top3", on_click=set_heads_off,
              args=(ranked[:3], layers), width="stretch")
    b3.button("Switch every head back on", key="heads_none", on_click=set_heads_off, args=([], layers),
              width="stretch")
    for kind in KINDS:
        cols = st.columns(layers[kind])
        for layer, col in enumerate(cols):
            col.pills(f"{KIND_SHORT[kind]} · layer {layer + 1}", list(range(n_heads)), selection_mode="multi",
                      key=checklist_key(kind, layer), format_func=lambda h: str(h + 1), persist_state="session",
                      wrap=True)  # in a column the pills would scroll sideways: 6 layers x 8 heads hid heads 5-8
    return heads_off(layers, n_heads)


def comparison_ui(translation: Translation, request: Request, off: list, n_heads: int) -> None:
    """The original translation beside the one decoded with ``off`` switched off, and what changed."""
    try:
        result = cached_ablation(request, tuple(off))
    except Exception:
        log.exception("ablation failed")
        st.error("The model could not decode the sentence with these heads switched off.")
        return
    change = result.log_prob_change
    st.markdown(f"**{len(off)} head{'s' if len(off) != 1 else ''} off:** "
                + ", ".join(f"{KIND_SHORT[k]} L{l + 1} H{h + 1}" for k, l, h in off))
    m1, m2, m3 = st.columns(3)
    m1.metric("log P(original translation), every head on", f"{result.log_prob:.3f}",
              help="Teacher forcing: the log-probability the model gives its own translation, summed over pieces.")
    m2.metric("… with these heads off", f"{result.ablated_log_prob:.3f}", delta=f"{change:+.3f} nats")
    m3.metric("Probability of the original translation", f"× {math.exp(change):.3g}",
              help="exp(change): how many times more (> 1) or less (< 1) likely the original output became.")
    before, after = changed_pieces(translation.target_pieces, result.ablated.target_pieces)
    c_on, c_off = st.columns(2)
    c_on.markdown(f"**Every head on** · {md(translation.text)}" + charts.chips_html(translation.target_pieces, before),
                  unsafe_allow_html=True)
    c_off.markdown(f"**With the heads off** · {md(result.ablated.text) or '(empty output)'}"
                   + charts.chips_html(result.ablated.target_pieces, after), unsafe_allow_html=True)
    if not any(before) and not any(after):
        st.caption("The translation did not change: the remaining heads make up for the ones switched off.")
    else:
        st.caption(f"Red pieces are not shared by the two translations ({sum(after)} of "
                   f"{len(after)} pieces of the new one). The sentence was decoded again with the same settings.")
    pieces = to_numpy(result.piece_log_probs)
    plot(charts.piece_log_prob_figure(pieces[0], pieces[1], translation.target_pieces,
                                      title="Which pieces of the original translation lost probability"),
         "heads_piece_log_probs")
    st.markdown("**How the attention moved.** Both maps are of the *original* output under teacher forcing, so "
                "they line up cell by cell. A switched-off head still computes its weights (only its output is "
                "dropped), so its own layer does not change: look at the layers above it, and at the cross-attention "
                "when an encoder head is off.")
    moved = {(kind, layer): float(v) for kind, per_layer in result.largest_change().items()
             for layer, v in enumerate(to_numpy(per_layer))}
    where_most = max(moved, key=moved.__getitem__)
    if moved[where_most] == 0.0:
        st.info("No attention map changed: every head switched off sits in the last layer of its stack, and under "
                "teacher forcing nothing after it is an attention map. What changed is the output above.",
                icon=":material/info:")
    else:
        st.caption(f"The largest change of any weight: {KIND_SHORT[where_most[0]]} layer {where_most[1] + 1} "
                   f"({moved[where_most]:.3f}). Per layer: "
                   + ", ".join(f"{KIND_SHORT[k]} L{l + 1} {v:.3f}" for (k, l), v in moved.items()) + ".")
    layers = n_layers_of(load_model(request.model_name).model)
    kind, layer, head = map_picker("heads_diff", layers, n_heads)
    maps = to_numpy(result.maps[kind][layer])  # [2, H, Q, K]
    queries, keys, q_title, k_title = axis_pieces(translation, kind)
    on, off_map = select_head(maps[0], head), select_head(maps[1], head)
    panels = [("every head on", on, False, 1.0), ("heads off", off_map, False, 1.0),
              ("heads off − on", off_map - on, True, None)]
    plot(charts.panels_figure(panels, queries, keys, row_title=q_title, col_title=k_title,
                              title=f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head)}: with every head, "
                                    "with the heads off, and the difference"), "heads_maps")


@weak_fragment
def ablation_section(translation: Translation, request: Request) -> None:
    model = load_model(request.model_name).model
    layers, n_heads = n_layers_of(model), model.config.n_heads
    st.markdown("Michel et al. (2019, *Are Sixteen Heads Really Better than One?*) switched heads off at test time "
                "and found that most can go with little loss, a few cannot. Here a head is switched off by zeroing "
                "its output before W<sup>O</sup>; no weight changes. A head's **importance** is how much the "
                "log-probability of the model's own translation drops (in nats) when only that head is off.",
                unsafe_allow_html=True)
    source, output = tuple(translation.source.ids), tuple(translation.target_ids)
    importance = sentence_importance(request.model_name, source, output)
    ckpt = load_model(request.model_name)
    examples = examples_for(ckpt.meta)
    n_examples = len(examples.sentences) if examples else 0
    summed = None
    if examples is not None:
        large = ckpt.config.estimated_parameters() > SUM_AT_ONCE_PARAMETERS
        wanted = st.toggle(f"Also sum the importance over the {n_examples} example sentences", value=not large,
                           key=f"heads_sum_examples_{request.model_name}",
                           help="Computed once per model and kept for every session: about a second for the "
                                "shipped models, 10-20 s for a model of opus-mt's size.")
        summed = examples_importance(request.model_name) if wanted else None
    st.markdown("##### Which heads matter?")
    forget_missing_heads(layers, n_heads)
    off = heads_off(layers, n_heads)
    plot(charts.importance_figure(importance, KIND_SHORT, off=off,
                                  title="Head importance for this sentence<br><sup>drop of log P(own translation) "
                                        "with only that head off; ✕ = switched off below</sup>"),
         "heads_importance")
    if summed is not None:
        with st.expander(f"Importance summed over the Translate page's {n_examples} example sentences"):
            plot(charts.importance_figure(summed, KIND_SHORT, off=off,
                                          title=f"Head importance summed over {n_examples} example sentences"),
                 "heads_importance_examples")
    heads = sorted(all_heads(layers, n_heads), key=lambda h: -float(importance[h[0]][h[1], h[2]]))  # most first
    frame = importance_frame(heads, importance, summed, off, n_examples)
    table_key = "heads_importance_table"
    st.caption("Click a column to sort; select a row to switch that head off (select it again to switch it back on).")
    st.dataframe(frame, key=table_key, on_select=partial(_table_click, table_key, heads), hide_index=True,
                 selection_mode="single-row", width="stretch", height=280,
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in frame.columns
                                if c.startswith("drop")})
    st.markdown("##### Switch heads off")
    off = checklist_ui(layers, n_heads, importance)
    if not off:
        st.info("Tick one or more heads above (or select rows of the table) to decode the sentence again without "
                "them.", icon=":material/toggle_off:")
        return
    comparison_ui(translation, request, off, n_heads)
