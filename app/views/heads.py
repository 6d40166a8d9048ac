"""Page: Heads and attribution — go beyond looking at the weights. Switch heads off and decode again (Michel et
al., 2019), attribute every output piece to the source through the layers three ways (attention rollout,
norm-based attention, gradient x input; plus rollout and flow through the encoder), compare the attention of two
sentences, and watch attention learn: the same sentence read by snapshots from earlier in the model's training.

Every number comes from explain/ (ablation, attribution, heads, checkpoints) on the current sentence;
this page only picks what to show and averages heads for display.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app.cancel import session_stop_signal
from app.charts import heads as charts
from app.charts.axes import plotly_text
from app.escape import md
from app.examples import compare_pair, examples_for
from app.page import keep_valid, plot, require_checkpoint, require_translation, sentence_caption, to_numpy
from app.resources import load_model, load_snapshot, snapshots_of
from app.translation import Request, current_request, heavy_slot, translate_request
from explain.ablation import ablate, changed_pieces, importance_over_sentences, map_difference
from explain.attribution import MAX_FLOW_PIECES, NORM_BASED, ROLLOUT, SALIENCY, attribute
from explain.checkpoints import incompatibility, read_output
from explain.heads import all_heads, head_importance, n_layers_of
from model.checkpoint import Checkpoint
from model.config import DecodeConfig
from model.inference import InputError, Translation, translate
from model.trace import KIND_LABELS, KINDS

log = logging.getLogger("attention_explorer")
SUM_AT_ONCE_PARAMETERS = 20_000_000  # larger models sum over the examples only when asked (8-22 s at 74M)
SECTIONS = ("Switch heads off", "Attribution", "Compare two sentences", "Watch attention learn")
KIND_SHORT = {"enc_self": "Encoder self", "dec_self": "Decoder self", "cross": "Cross"}
REVERSE_EXPECT = (
    "**What to expect on the reversal model.** The output is the input backwards, so output piece *t* must read "
    "source piece *S − 2 − t* (before </s>): its cross-attention should be the **anti-diagonal**, and the "
    "attributions below should find it. Switch off the cross-attention heads that carry it (the most important "
    "cross heads in the table, or all of them with the button) and the reversal breaks; switch off a head that "
    "does not matter and it stays intact.")
METHOD_TEXT = {
    ROLLOUT: "**Attention rollout** (Abnar & Zuidema, 2020). A token's own vector also goes around every attention "
             "layer through the residual connection, so each encoder layer counts as Â = ½ I + ½ A (A = the mean "
             "over heads, rows renormalised); multiplying them from layer 1 up, R = Â_L ⋯ Â_1, says how much each "
             "input token reaches each position of the encoder output. **Our rule for the decoder:** every decoder "
             "layer's cross-attention C_l (mean over heads) reads the *final* encoder output, whose positions R "
             "maps back to input tokens, so output piece t gets the mean over decoder layers of (C_l R)[t]. It "
             "leaves out what reaches t through the decoder's self-attention.",
    NORM_BASED: "**Norm-based attention** (Kobayashi et al., 2020). A head passes on α_ij · f(x_j), with "
                "f(x_j) = v_j Wᴼ_h the value vector through that head's slice of Wᴼ: a large weight on a short "
                "vector passes on little, a small weight on a long vector can pass on much. Here: ‖Σ_h α f_h(x_j)‖ "
                "of the cross-attention (all heads together), mean over decoder layers, as shares of each row. Its "
                "columns are encoder *output* positions, which the residual keeps close to their input token.",
    SALIENCY: "**Gradient × input** (Shrikumar et al., 2016). How much log P(output piece t) moves with each source "
              "vector x_j = E[x_j]·√d_model + PE_j (token and position, what the encoder reads): the gradient "
              "times the vector, summed over its dimensions. Signed (red pushes the piece up, blue down), from "
              "one backward pass through the model's own modules; the comparison uses its magnitude.",
}


# --- numbers, cached: each is explain/ on the current sentence, turned into numpy once ----------------------

@st.cache_data(show_spinner="Switching every head off in turn…", max_entries=64)
def sentence_importance(model_name: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]
                        ) -> dict[str, np.ndarray]:
    """explain.heads.head_importance of one sentence: per kind [L, H], nats."""
    model = load_model(model_name).model
    with heavy_slot():
        importance = head_importance(model, source_ids, output_ids, should_stop=session_stop_signal())
    return {kind: to_numpy(v) for kind, v in importance.items()}


@st.cache_data(show_spinner="Summing head importance over the example sentences (once per model)…")
def examples_importance(model_name: str) -> dict[str, np.ndarray] | None:
    """Head importance summed over the Translate page's examples for this model (greedy), or None without any."""
    ckpt = load_model(model_name)
    examples = examples_for(ckpt.meta)  # in the model's source language
    if examples is None:
        return None
    with heavy_slot():
        total = importance_over_sentences(ckpt.model, ckpt.tokenizer, list(examples.sentences), DecodeConfig(),
                                          should_stop=session_stop_signal())
    return {kind: to_numpy(v) for kind, v in total.items()}


@st.cache_resource(show_spinner="Decoding again with the heads switched off…", max_entries=32)
def cached_ablation(request: Request, heads: tuple[tuple[str, int, int], ...]):
    """explain.ablation.ablate of the request's translation (frozen, shared read-only by every session)."""
    ckpt = load_model(request.model_name)
    original = translate_request(request)
    with heavy_slot():
        return ablate(ckpt.model, ckpt.tokenizer, original, heads, request.decode_config,
                      should_stop=session_stop_signal())


@st.cache_data(show_spinner="Attributing every output piece three ways…", max_entries=64)
def attribution_arrays(model_name: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> dict:
    """explain.attribution.attribute as numpy: maps per method [T, S], rollout [S, S], norms per kind, agreement."""
    with heavy_slot():
        result = attribute(load_model(model_name).model, source_ids, output_ids, should_stop=session_stop_signal())
    norms = result.norms
    return {
        "maps": {name: to_numpy(m) for name, m in result.maps.items()},
        "rollout": to_numpy(result.source_rollout),
        "flow": None if result.source_flow is None else to_numpy(result.source_flow),
        "weights": {k: to_numpy(v) for k, v in norms.weights.items()},  # [L, H, Q, K]
        "per_head": {k: to_numpy(v) for k, v in norms.per_head.items()},  # [L, H, Q, K]
        "heads": {k: to_numpy(v) for k, v in norms.heads.items()},  # [L, Q, K]
        "value_norms": {k: to_numpy(v) for k, v in norms.value_norms.items()},  # [L, H, K]
        "top": to_numpy(result.agreement.top), "all_agree": to_numpy(result.agreement.all_agree),
        "pairwise": to_numpy(result.agreement.pairwise), "methods": list(result.agreement.methods),
    }


# --- shared pickers and labels ---------------------------------------------------------------------------

def axis_pieces(translation: Translation, kind: str) -> tuple[list[str], list[str], str, str]:
    """Query and key pieces of one kind with their axis titles (decoder rows are labelled by their input)."""
    src, dec_in = list(translation.source.pieces), list(translation.target_input_pieces)
    if kind == "enc_self":
        return src, src, "source piece (query)", "source piece (key)"
    if kind == "dec_self":
        return dec_in, dec_in, "decoder input (query)", "decoder input (key)"
    return dec_in, src, "decoder input (query)", "source piece (key)"


def map_picker(prefix: str, layers: dict[str, int], n_heads: int, head_label: str = "mean",
               default_kind: str = "cross") -> tuple[str, int, int]:
    """Kind, layer and head (-1 = ``head_label``: the mean or all heads) on keys ``prefix``_kind/_layer/_head."""
    c_kind, c_layer, c_head = st.columns([2.2, 1, 2.4])
    keep_valid(f"{prefix}_kind", list(KINDS))
    st.session_state.setdefault(f"{prefix}_kind", default_kind)
    kind = c_kind.segmented_control("Attention", list(KINDS), key=f"{prefix}_kind", format_func=KIND_SHORT.get,
                                    required=True, persist_state="session")
    keep_valid(f"{prefix}_layer", list(range(layers[kind])))
    st.session_state.setdefault(f"{prefix}_layer", layers[kind] - 1)
    layer = c_layer.selectbox("Layer", list(range(layers[kind])), key=f"{prefix}_layer",
                              format_func=lambda i: f"layer {i + 1}", persist_state="session")
    options = [-1, *range(n_heads)]
    keep_valid(f"{prefix}_head", options)
    st.session_state.setdefault(f"{prefix}_head", -1)
    head = c_head.segmented_control("Head", options, key=f"{prefix}_head", required=True,
                                    format_func=lambda h: head_label if h < 0 else str(h + 1), persist_state="session",
                                    wrap=True)  # 16 heads do not fit one row
    return kind, int(layer), int(head)


def one_head(per_head: np.ndarray, head: int) -> np.ndarray:
    """[H, ...] -> one head, or the mean over heads for head -1 (a display choice; the model keeps every head)."""
    return per_head.mean(axis=0) if head < 0 else per_head[head]


def head_name(head: int, mean: str = "mean over heads") -> str:
    return mean if head < 0 else f"head {head + 1}"


# --- 1. switching heads off (Michel et al., 2019) ---------------------------------------------------------

def checklist_key(kind: str, layer: int) -> str:
    return f"heads_off_{kind}_{layer}"


def forget_missing_heads(layers: dict[str, int], n_heads: int) -> None:
    """Drop remembered heads this model does not have (fewer heads after a model switch); before the checklist
    is drawn."""
    for kind in KINDS:
        for layer in range(layers[kind]):
            key = checklist_key(kind, layer)
            if key in st.session_state:
                kept = sorted(h for h in (st.session_state[key] or []) if isinstance(h, int) and 0 <= h < n_heads)
                st.session_state[key] = kept


def heads_off(layers: dict[str, int], n_heads: int) -> list[tuple[str, int, int]]:
    """The heads ticked in the checklist, in kind, layer, head order."""
    return [(kind, layer, h) for kind in KINDS for layer in range(layers[kind])
            for h in sorted(st.session_state.get(checklist_key(kind, layer)) or []) if 0 <= h < n_heads]


def set_heads_off(heads, layers: dict[str, int]) -> None:
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


def importance_frame(heads, importance: dict[str, np.ndarray], summed: dict[str, np.ndarray] | None,
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


def checklist_ui(layers: dict[str, int], n_heads: int, importance: dict[str, np.ndarray]) -> list:
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
    where_most = max(moved, key=moved.get)
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
    on, off_map = one_head(maps[0], head), one_head(maps[1], head)
    panels = [("every head on", on, False, 1.0), ("heads off", off_map, False, 1.0),
              ("heads off − on", off_map - on, True, None)]
    plot(charts.panels_figure(panels, queries, keys, row_title=q_title, col_title=k_title,
                              title=f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head)}: with every head, "
                                    "with the heads off, and the difference"), "heads_maps")


@st.fragment
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


# --- 2. attribution through the layers --------------------------------------------------------------------

@st.fragment
def attribution_section(translation: Translation, request: Request) -> None:
    model = load_model(request.model_name).model
    layers, n_heads = n_layers_of(model), model.config.n_heads
    source, output = tuple(translation.source.ids), tuple(translation.target_ids)
    try:
        data = attribution_arrays(request.model_name, source, output)
    except Exception:
        log.exception("attribution failed")
        st.error("The model could not attribute this sentence.")
        return
    src, out = list(translation.source.pieces), list(translation.target_pieces)
    st.markdown("Attention weights say where a head looked, not what reached the output. Three ways to follow "
                "an output piece back to the source, each with its own assumption: where they agree, trust them "
                "more (Jain & Wallace, 2019, showed that attention alone is not an explanation).")
    if request.model_name == "reverse":
        st.caption("On the reversal model the right answer is known: output piece t comes from source piece "
                   "S − 2 − t, the anti-diagonal.")
    st.markdown("##### 1 · Three attributions of each output piece")
    for name in (ROLLOUT, NORM_BASED, SALIENCY):
        st.markdown(METHOD_TEXT[name])
    keep_valid("heads_target", list(range(len(out))))
    target = st.selectbox("Output piece", list(range(len(out))), key="heads_target",
                          format_func=lambda t: f"{t} · {out[t]}", persist_state="session")
    maps = data["maps"]
    panels = [(name, maps[name], name == SALIENCY, None) for name in (ROLLOUT, NORM_BASED, SALIENCY)]
    plot(charts.panels_figure(panels, out, src, row_title="output piece", col_title="source piece",
                              highlight_row=target,
                              title="Attention rollout ∘ cross-attention · norm-based cross-attention · "
                                    "gradient × input"), "heads_attr_maps")
    magnitude = {name: np.abs(maps[name][target]) for name in maps}
    shares = {name: m / m.sum() if m.sum() > 0 else m for name, m in magnitude.items()}  # display: one scale
    plot(charts.share_bars(shares, src, title=f"Output piece {target} · {out[target]}: share of each source piece",
                           value_name="share of the row"), "heads_attr_bars")
    methods, top = data["methods"], data["top"]
    picks = ", ".join(f"{m}: **{src[int(top[i, target])]}**" for i, m in enumerate(methods))
    agree = bool(data["all_agree"][target])
    st.markdown(f"Top source piece for *{out[target]}* — {picks}: "
                + ("**all three agree.**" if agree else "**they disagree.**"))
    pairwise = data["pairwise"]
    st.caption(f"Over the whole sentence all three pick the same top source piece for "
               f"{int(data['all_agree'].sum())} of {len(out)} output pieces; pairwise: "
               + ", ".join(f"{methods[i]} – {methods[j]} {pairwise[i, j]:.0%}"
                           for i in range(len(methods)) for j in range(i + 1, len(methods))) + ".")

    encoder_section(data, src)

    st.markdown("##### 3 · Raw weights or weighted vectors (Kobayashi et al., 2020)")
    st.markdown("The same attention call twice: the weights α the softmax gave, and ‖α f(x_j)‖, the length of what "
                "each key actually passes on. They differ where the vectors differ in length: a large weight on a "
                "short vector (often </s> or punctuation) passes on little.")
    kind, layer, head = map_picker("heads_norm", layers, n_heads, head_label="all heads")
    queries, keys, q_title, k_title = axis_pieces(translation, kind)
    raw = one_head(data["weights"][kind][layer], head)
    norm = data["heads"][kind][layer] if head < 0 else data["per_head"][kind][layer, head]
    value_norms = one_head(data["value_norms"][kind][layer], head)
    formula = "‖Σ_h α f_h(x_j)‖" if head < 0 else "‖α f(x_j)‖"
    panels = [("weight α" + (" (mean)" if head < 0 else ""), raw, False, 1.0), (formula, norm, False, None)]
    plot(charts.panels_figure(panels, queries, keys, row_title=q_title, col_title=k_title,
                              title=f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head, 'all heads')}: "
                                    "raw weights and norm-based"), "heads_norm_maps")
    c_bars, c_note = st.columns([3, 2])
    with c_bars:
        plot(charts.norm_bars(value_norms, keys, key_title=k_title.split(" (")[0],
                              title="‖f(x_j)‖ of each key" + (" (mean over heads)" if head < 0 else "")),
             "heads_norm_bars")
    c_note.caption("‖f(x_j)‖ is the length of the vector that key j hands on when it is attended to (its value "
                   "through Wᴼ). Where it is short, a large weight passes on little and the norm-based map fades.")


def encoder_section(data: dict, src: list[str]) -> None:
    """Rollout and attention flow of the encoder side by side (both Abnar & Zuidema, 2020)."""
    st.markdown("##### 2 · Rollout and flow through the encoder (Abnar & Zuidema, 2020)")
    st.markdown("Both read each encoder layer as Â = ½ I + ½ A (the residual carries a token past attention). "
                "**Rollout** multiplies them, R = Â_L ⋯ Â_1: every path from input token *j* to position *i* "
                "counts with the product of its weights. **Flow** reads the same Â as pipe capacities and asks how "
                "much can reach position *i* from token *j* at most (a maximum-flow problem per cell), rows then "
                "scaled to sum to 1. Flow spreads credit more evenly and ties more; where both put a token first, "
                "the answer does not hang on how paths are combined.")
    panels = [("rollout", data["rollout"], False, None)]
    if data["flow"] is not None:
        panels.append(("flow", data["flow"], False, None))
    plot(charts.panels_figure(panels, src, src, row_title="encoder output position", col_title="input token",
                              title="Encoder attention rollout R = Â_L ⋯ Â_1" +
                                    (" · attention flow" if data["flow"] is not None else "")), "heads_rollout")
    if data["flow"] is None:
        st.caption(f"Attention flow solves one maximum-flow problem per cell (S² of them); it is shown for inputs "
                   f"of up to {MAX_FLOW_PIECES} pieces, this one has {len(src)}.")
    else:
        same = int((data["rollout"].argmax(-1) == data["flow"].argmax(-1)).sum())
        st.caption(f"Row *i*: how much of each input token reaches encoder output position *i*; rows sum to 1. "
                   f"Rollout and flow put the same input token first for {same} of {len(src)} positions. "
                   "The cross-attention reads these positions.")


# --- 3. two sentences side by side ------------------------------------------------------------------------

@st.fragment
def compare_section(request: Request) -> None:
    model = load_model(request.model_name).model
    layers, n_heads = n_layers_of(model), model.config.n_heads
    first, second = compare_pair(load_model(request.model_name).meta, request.text)  # one word apart
    if st.session_state.get("heads_cmp_model") != request.model_name:  # new model: its own default pair
        st.session_state["heads_cmp_model"] = request.model_name
        st.session_state["heads_cmp_a"], st.session_state["heads_cmp_b"] = first, second
    st.markdown("The same head on two sentences, translated with the current settings. Where the two have the "
                "same number of pieces, the maps line up cell by cell and their difference shows what the one "
                "changed word did to the attention (in a Winograd-style pair such as *weak* / *narrow*, the one word "
                "changes what *it* refers to).")
    c_a, c_b = st.columns(2)
    text_a = c_a.text_input("First sentence", key="heads_cmp_a", persist_state="session")
    text_b = c_b.text_input("Second sentence", key="heads_cmp_b", persist_state="session")
    try:
        a = translate_request(dataclasses.replace(request, text=text_a))
        b = translate_request(dataclasses.replace(request, text=text_b))
    except InputError as exc:
        st.info(str(exc))
        return
    except Exception:
        log.exception("translating the comparison sentences failed")
        st.error("The model could not translate these sentences.")
        return
    kind, layer, head = map_picker("heads_cmp", layers, n_heads, default_kind="enc_self")
    where = f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head)}"
    figures = []
    for name, translation in (("first", a), ("second", b)):
        queries, keys, q_title, k_title = axis_pieces(translation, kind)
        weights = one_head(to_numpy(translation.trace.weights(kind)[layer, 0]), head)
        figures.append(charts.matrix_figure(weights, queries, keys, value_name="weight", row_title=q_title,
                                            col_title=k_title, zmax=1.0, columns=2,
                                            title=f"{name.capitalize()}: {plotly_text([translation.text])[0]}"
                                                  f"<br><sup>{where}</sup>"))
    c1, c2 = st.columns(2)
    with c1:
        plot(figures[0], "heads_cmp_first")
    with c2:
        plot(figures[1], "heads_cmp_second")
    difference = map_difference(b.trace.weights(kind), a.trace.weights(kind))  # [L, 1, H, Q, K] or None
    if difference is None:
        shape_a, shape_b = tuple(a.trace.weights(kind).shape[-2:]), tuple(b.trace.weights(kind).shape[-2:])
        st.info(f"These maps do not line up ({shape_a[0]}×{shape_a[1]} vs {shape_b[0]}×{shape_b[1]} pieces), so "
                "there is no cell-by-cell difference. Sentences with the same number of source pieces (and, for "
                "the decoder's maps, of output pieces) give one.", icon=":material/compare_arrows:")
        return
    queries, keys, q_title, k_title = axis_pieces(a, kind)
    labels = [f"{p} / {q}" if p != q else p for p, q in zip(queries, axis_pieces(b, kind)[0], strict=True)]
    key_labels = [f"{p} / {q}" if p != q else p for p, q in zip(keys, axis_pieces(b, kind)[1], strict=True)]
    c_diff, c_note = st.columns([3, 2])
    with c_diff:
        plot(charts.matrix_figure(one_head(to_numpy(difference[layer, 0]), head), labels, key_labels,
                                  title=f"Second − first<br><sup>{where}</sup>", value_name="difference",
                                  row_title=q_title, col_title=k_title, signed=True), "heads_cmp_diff")
    c_note.caption("Red: the second sentence puts more weight there, blue: less. Labels read first / second "
                   "where the pieces differ. Every row of both maps sums to 1, so every row of the difference "
                   "sums to 0: weight one cell gains, others lose.")


# --- 4. the same sentence through earlier checkpoints ----------------------------------------------------

SNAPSHOT, CURRENT = "snapshot:", "current"


def comparison_checkpoint(model_name: str, key: str) -> Checkpoint:
    """The checkpoint behind a comparison key: a snapshot of the model, the model itself or this session's upload."""
    if key.startswith(SNAPSHOT):
        return load_snapshot(model_name, key.removeprefix(SNAPSHOT))
    return load_model(model_name if key == CURRENT else key)


def checkpoint_name(meta: dict, fallback: str) -> str:
    """A short name for a checkpoint in titles and legends: its epoch when it says so."""
    return f"epoch {meta['epochs']}" if isinstance(meta.get("epochs"), int) else fallback


@st.cache_data(show_spinner="Reading the sentence with another checkpoint…", max_entries=64)
def reading_arrays(model_name: str, key: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> dict:
    """explain.checkpoints.read_output of one checkpoint as numpy: maps and spread per kind, log P of the output."""
    reading = read_output(comparison_checkpoint(model_name, key).model, source_ids, output_ids)
    return {"maps": {k: to_numpy(v) for k, v in reading.maps.items()},  # [L, H, Q, K]
            "spread": {k: to_numpy(v) for k, v in reading.spread.items()},  # [L, H]
            "log_prob": reading.log_prob}


@st.cache_data(show_spinner="Translating with another checkpoint…", max_entries=64)
def own_translation(model_name: str, key: str, text: str) -> str:
    """What the checkpoint itself makes of the sentence (greedy)."""
    ckpt = comparison_checkpoint(model_name, key)
    return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig()).text


def comparison_candidates(model_name: str, ckpt: Checkpoint) -> tuple[dict[str, tuple[str, dict]], list[str]]:
    """key -> (label, meta) of the checkpoints that line up with this model (its snapshots in training order,
    then this session's compatible uploads), and a note for each upload that does not."""
    found = {SNAPSHOT + name: (meta.get("snapshot") or name, meta) for name, (_, meta) in
             snapshots_of(model_name).items()}
    refused = []
    for key, other in st.session_state.get("uploads", {}).items():
        if key == model_name:
            continue
        reason = incompatibility(ckpt, other)
        if reason is None:
            found[key] = ("Uploaded checkpoint", other.meta)
        else:
            refused.append(f"The uploaded checkpoint {key.removeprefix('upload:')} cannot be compared: {reason}.")
    return found, refused


@st.fragment
def checkpoints_section(translation: Translation, request: Request) -> None:
    ckpt = load_model(request.model_name)
    layers, n_heads = n_layers_of(ckpt.model), ckpt.config.n_heads
    st.markdown("The same sentence read by this model at earlier stages of its training. Every checkpoint reads the "
                "**same source and the same output** (this model's translation, teacher-forced), so the maps line up "
                "cell by cell; what changes is only what the weights had learned. Early on the cross-attention is "
                "flat, spread over the whole source; as the model learns to translate it turns into an alignment.")
    candidates, refused = comparison_candidates(request.model_name, ckpt)
    for note in refused:
        st.caption(note)
    if not candidates:
        st.info("This model ships no earlier snapshots of its training. Upload a checkpoint with the same "
                "tokenizer and shape in the sidebar (an earlier epoch of your own run, for example) to compare it "
                "here.", icon=":material/history:")
        return
    if "heads_ckpts" in st.session_state:  # forget what this model does not have (after a model switch)
        st.session_state["heads_ckpts"] = [k for k in st.session_state["heads_ckpts"] if k in candidates]
    st.session_state.setdefault("heads_ckpts", list(candidates))
    chosen = st.multiselect("Earlier checkpoints", list(candidates), key="heads_ckpts",
                            format_func=lambda key: checkpoint_name(candidates[key][1], candidates[key][0]),
                            persist_state="session")
    if not chosen:
        st.info("Pick at least one checkpoint to set beside this model.")
        return
    kind, layer, head = map_picker("heads_ckpt", layers, n_heads)
    source, output = tuple(translation.source.ids), tuple(translation.target_ids)
    keys = [*chosen, CURRENT]
    metas = {**{key: candidates[key][1] for key in chosen}, CURRENT: ckpt.meta}
    names = {key: checkpoint_name(candidates[key][1], candidates[key][0]) for key in chosen}
    epoch = checkpoint_name(ckpt.meta, "")
    names[CURRENT] = f"this model ({epoch})" if epoch else "this model"
    try:
        readings = {key: reading_arrays(request.model_name, key, source, output) for key in keys}
        translations = {key: own_translation(request.model_name, key, translation.source.text) for key in chosen}
    except Exception:
        log.exception("reading the sentence with another checkpoint failed")
        st.error("Another checkpoint could not read this sentence.")
        return
    translations[CURRENT] = translation.text
    queries, key_pieces, q_title, k_title = axis_pieces(translation, kind)
    where = f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head)}"
    maps = [(names[key], one_head(readings[key]["maps"][kind][layer], head)) for key in keys]
    plot(charts.checkpoints_figure(maps, queries, key_pieces, title=f"The same map as training goes on<br><sup>"
                                   f"{where}</sup>", row_title=q_title, col_title=k_title), "heads_ckpt_maps")
    checkpoint_table(keys, names, metas, readings, translations, kind, layer, head)
    learning_curves(keys, names, metas, readings, kind, len(queries), len(key_pieces))


TRANSLATION_CHARS = 70  # an early checkpoint repeats a piece until the length limit: keep the table readable


def checkpoint_table(keys, names, metas, readings, translations, kind: str, layer: int, head: int) -> None:
    """One row per checkpoint: how far it had trained, how likely it finds this model's output, how flat the chosen
    map is and its own translation; then what each snapshot is."""
    def shortened(text: str) -> str:
        return text if len(text) <= TRANSLATION_CHARS else text[:TRANSLATION_CHARS - 1] + "…"

    rows = [{"checkpoint": names[key], "training steps": metas[key].get("steps"),
             "validation loss": metas[key].get("valid_loss"),
             "log P(this output)": round(readings[key]["log_prob"], 2),
             "row entropy (nats)": round(float(one_head(readings[key]["spread"][kind][layer], head)), 3),
             "its own translation (greedy)": shortened(translations[key])}
            for key in keys]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    described: dict[str, list[str]] = {}
    for key in keys:
        if metas[key].get("snapshot"):
            described.setdefault(metas[key]["snapshot"], []).append(names[key])
    st.caption("log P(this output): how likely the checkpoint finds this model's translation, teacher-forced "
               "(closer to 0 = more likely). Row entropy: the mean entropy of the map's rows above, in nats; lower "
               "is more focused. " + " ".join(f"*{', '.join(group)}*: {text.rstrip('.')}." for text, group in
                                             described.items()))


def learning_curves(keys, names, metas, readings, kind: str, n_queries: int, n_keys: int) -> None:
    """Row entropy of every layer of one kind over training steps (checkpoints that record their steps)."""
    timed = [key for key in keys if isinstance(metas[key].get("steps"), int)]
    if len(timed) < 2:
        return
    spread = np.stack([readings[key]["spread"][kind].mean(axis=-1) for key in timed])  # [C, L]
    uniform = float(np.log(np.arange(1, n_queries + 1)).mean()) if kind == "dec_self" else float(np.log(n_keys))
    plot(charts.spread_figure([metas[key]["steps"] for key in timed], [names[key] for key in timed], spread,
                              uniform, kind_label=KIND_LABELS[kind],
                              title=f"How focused {KIND_LABELS[kind].lower()} becomes (mean over heads)"),
         "heads_ckpt_spread")


def render() -> None:
    st.title("Heads and attribution")
    st.markdown("Looking at attention is the first step. Here you change the model and follow its numbers: switch "
                "heads off and see what the translation loses, trace each output piece back to the source through "
                "the layers, put two sentences side by side, and watch the attention form as the model trained.")
    ckpt = require_checkpoint()
    if ckpt is None:
        return
    translation = require_translation()
    if translation is None:
        return
    sentence_caption(translation)
    request = current_request()
    if request.model_name == "reverse":
        st.info(REVERSE_EXPECT, icon=":material/swap_horiz:")
    keep_valid("heads_section", list(SECTIONS))
    st.session_state.setdefault("heads_section", SECTIONS[0])
    section = st.segmented_control("Section", SECTIONS, key="heads_section", required=True,
                                   persist_state="session", label_visibility="collapsed")
    if section == SECTIONS[0]:
        ablation_section(translation, request)
    elif section == SECTIONS[1]:
        attribution_section(translation, request)
    elif section == SECTIONS[2]:
        compare_section(request)
    else:
        checkpoints_section(translation, request)


render()
