"""Heads page, section 3: the same head on two sentences side by side, and their difference where the maps line
up."""
from __future__ import annotations

import dataclasses
import logging

import streamlit as st

from app.charts import heads as charts
from app.charts.axes import clipped, plotly_text
from app.explorer import select_head
from app.heads.pickers import axis_pieces, head_name, map_picker
from app.models.examples import compare_pair
from app.models.registry import load_model
from app.page import plot, to_numpy
from app.serving.scheduler import Request, translate_request
from explain.ablation import map_difference
from explain.heads import n_layers_of
from model.network.trace import KIND_LABELS
from model.serving.inference import InputError

log = logging.getLogger("attention_explorer")


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
        weights = select_head(to_numpy(translation.trace.weights(kind)[layer, 0]), head)
        figures.append(charts.matrix_figure(weights, queries, keys, value_name="weight", row_title=q_title,
                                            col_title=k_title, zmax=1.0, columns=2,
                                            title=f"{name.capitalize()}: "  # the whole sentence is in its box
                                                  f"{plotly_text([clipped(translation.text, 30)])[0]}"
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
        plot(charts.matrix_figure(select_head(to_numpy(difference[layer, 0]), head), labels, key_labels,
                                  title=f"Second − first<br><sup>{where}</sup>", value_name="difference",
                                  row_title=q_title, col_title=k_title, signed=True, columns=2), "heads_cmp_diff")
    c_note.caption("Red: the second sentence puts more weight there, blue: less. Labels read first / second "
                   "where the pieces differ. Every row of both maps sums to 1, so every row of the difference "
                   "sums to 0: weight one cell gains, others lose.")
