"""Heads page, section 5: the map of all heads (explain.head_map) over the model's example sentences, each head named by
what it measurably does, one click from the explorer; and one head's queries and keys in one plane. Priced before it
runs (model.serving.budget.plan_head_map), computed once per model and settings for every session, stopped when its
session leaves."""
from __future__ import annotations

import dataclasses
import html
import logging

import numpy as np
import streamlit as st

from app.charts.head_map import head_map_figure, query_key_figure
from app.charts.style import plotly_config
from app.checks.escape import md
from app.explorer import KIND_SHORT, point_customdata
from app.models.examples import examples_for
from app.models.registry import load_model
from app.page import TRANSLATE_PAGE, plot, show_failure
from app.presenter import presentable
from app.serving.cancel import session_stop_signal
from app.serving.scheduler import Request, heavy_slot, planned_request, translate_request
from app.state import PINNED
from explain.head_map import APPLIES, BEHAVIOURS, HeadMap, build_head_map, query_key_plane
from model.network.trace import KIND_LABELS
from model.serving.budget import BudgetError, HeadMapPlan, plan_head_map
from model.serving.inference import InputError

log = logging.getLogger("attention_explorer")
AT_ONCE_S = 5.0  # estimated seconds under which the map is drawn without a click
MEASURE_NOTES = {
    "previous piece": "weight on the piece before the query", "next piece": "weight on the piece after the query",
    "itself": "weight on the query's own position", "</s>": "weight on the special pieces (</s>, the start piece)",
    "punctuation": "weight on punctuation", "aligned": "weight on the proportional diagonal ± 1 source piece",
    "broad": "entropy of the row / ln(keys it can see): 1 = uniform"}


def base_request(request: Request) -> Request:
    """The settings every example is decoded with: the current ones, greedy, without a sentence of its own."""
    return dataclasses.replace(request, text="", beam_size=1, sampling=None, keep_words=False)


def example_texts(request: Request) -> tuple[tuple[str, ...], bool]:
    """The model's example sentences (app.models.examples), or the current sentence alone where its language has
    none; and whether they are the examples."""
    examples = examples_for(load_model(request.model_name).meta)
    return (examples.sentences, True) if examples is not None else ((request.text,), False)


def price(base: Request, texts: tuple[str, ...]) -> tuple[HeadMapPlan, tuple[str, ...]]:
    """What mapping the heads over ``texts`` will cost, and the texts it will read (those the model can read and the
    budget holds), before any work."""
    readable, lengths = [], []
    for text in texts:
        try:
            _, _, decode = planned_request(dataclasses.replace(base, text=text))
        except InputError:
            continue
        readable.append(text)
        lengths.append((decode.source_len, decode.decode.max_len))
    plan = plan_head_map(load_model(base.model_name).config, lengths)
    return plan, tuple(readable[:plan.sentences])


@st.cache_resource(show_spinner="Mapping every head over the example sentences (once per model)…", max_entries=8)
def model_head_map(base: Request, texts: tuple[str, ...]) -> HeadMap:
    """explain.head_map.build_head_map over ``texts`` decoded with ``base``'s settings (the shared translation cache),
    in one of the server's heavy slots; shared read-only by every session."""
    translations = [translate_request(dataclasses.replace(base, text=text)) for text in texts]
    model = load_model(base.model_name).model
    with heavy_slot():
        return build_head_map(model, [(t.source.ids, t.target_ids, t.source.pieces, t.target_input_pieces)
                                      for t in translations], should_stop=session_stop_signal())


def head_title(kind: str, layer: int, head: int) -> str:
    return f"{KIND_SHORT[kind]} · layer {layer + 1} · head {head + 1}"


def hover_of(hmap: HeadMap, i: int) -> str:
    """A head's hover: its place, its name with the measure behind it, every measure that applies to its kind."""
    kind, layer, head = hmap.heads[i]
    lines = [f"<b>{head_title(kind, layer, head)}</b>",
             f"<b>{html.escape(hmap.names[i])}</b>: {hmap.scores[i]:.2f} ({MEASURE_NOTES[hmap.names[i]]})"]
    lines += [f"{html.escape(name)} {hmap.measures[name][i]:.2f}" for name in BEHAVIOURS
              if kind in APPLIES[name] and name != hmap.names[i]]
    return "<br>".join(lines)


def _pick(chart_key: str) -> None:
    """A click on the map selects that head."""
    state = st.session_state.get(chart_key) or {}
    for point in (state.get("selection") or {}).get("points") or []:
        data = point_customdata(point)
        if data:
            st.session_state["head_map_pick"] = int(data[0])
            return


def _open(hmap: HeadMap, index: int) -> None:
    kind, layer, head = hmap.heads[index]
    st.session_state.update({"kind": kind, "layer": layer, "head": head, "translate_view": "Heatmap",
                             PINNED: True})  # the visitor's choice: no sentence reopens on another head


def head_map_section(request: Request) -> None:
    base = base_request(request)
    texts, are_examples = example_texts(request)
    try:
        plan, readable = price(base, texts)
    except BudgetError as exc:
        st.warning(str(exc))
        return
    which = (f"the model's {len(readable)} example sentences" if are_examples else
             "the current sentence (there are no example sentences in this model's language)")
    st.markdown(f"Every head of every kind, placed by how alike their attention is over {which}: heads close together "
                "attend in the same way. Each is named by what it measurably does; hover a head for its measures, "
                "click it (or pick it below) to see its queries and keys or to open it in the explorer.")
    note = f" {' '.join(md(n) for n in plan.notes)}" if plan.notes else ""
    st.caption(f"Cost before it runs: {len(readable)} sentences, each decoded greedily and read once more keeping "
               f"every query and key: estimated {plan.cost.seconds:.1f} s of compute on this server, once per model "
               f"for everyone.{note}")
    marker = (base, readable)
    if plan.cost.seconds > AT_ONCE_S and st.session_state.get("head_map_asked") != marker:
        if not st.button(f"Map the heads (about {plan.cost.seconds:.0f} s)", key="head_map_run",
                         icon=":material/scatter_plot:"):
            return
        st.session_state["head_map_asked"] = marker
    try:
        hmap = model_head_map(base, readable)
    except InputError as exc:
        st.info(str(exc))
        return
    except Exception as exc:  # Cancelled passes (a BaseException); a full server and failures become a message
        show_failure(exc, "mapping the heads", "The heads could not be mapped (an internal error; the details are in "
                                               "the server log).")
        return
    map_ui(hmap, load_model(request.model_name).config.positional_layout == "relative")


def map_ui(hmap: HeadMap, relative: bool = False) -> None:
    """The map, the head picker, the way to the explorer and the chosen head's queries and keys (``relative``: the
    model adds a relative position bias to its self-attention scores, as T5 does)."""
    n = len(hmap.heads)
    if st.session_state.get("head_map_pick") not in range(n):
        st.session_state["head_map_pick"] = int(np.argmax(hmap.scores))
    chosen = int(st.session_state["head_map_pick"])
    sentences = len(hmap.readings)
    fig = head_map_figure(hmap.coords, [h[0] for h in hmap.heads], [h[1] for h in hmap.heads],
                          [hover_of(hmap, i) for i in range(n)], selected=chosen,
                          title=f"All {n} heads, placed by how alike they attend<br><sup>classical MDS of the "
                                f"Jensen-Shannon distance over {sentences} sentence{'s' * (sentences > 1)} · the "
                                f"plane keeps {hmap.explained:.0%} of its spread · darker = higher layer</sup>")
    st.plotly_chart(presentable(fig), key="head_map", width="stretch", theme=None, on_select=lambda: _pick("head_map"),
                    selection_mode="points", config=plotly_config("head_map", st.session_state["image_format"]))
    counts = {name: hmap.names.count(name) for name in BEHAVIOURS if name in hmap.names}
    st.caption("Distance of two heads: each row of attention gathered by where its keys stand (a special piece, "
               "punctuation, or a content piece at an offset of −3 or less, −2, −1, 0, +1, +2, +3 or more from the "
               "query, or, for cross-attention, from the proportional diagonal), averaged over the head's rows; the "
               "Jensen-Shannon divergence of two heads' profiles (0 = the same, at most ln 2 nats), averaged over the "
               "sentences. Name: the largest of a head's measures, each the share of its weight (broad: the rows' "
               "entropy over ln of the keys they see). Here: "
               + ", ".join(f"{count} {name}" for name, count in counts.items()) + ".")
    c_pick, c_open = st.columns([3, 1], vertical_alignment="bottom")
    index = c_pick.selectbox("Head", list(range(n)), key="head_map_pick",
                             format_func=lambda i: f"{head_title(*hmap.heads[i])}: {hmap.names[i]} "
                                                   f"({hmap.scores[i]:.2f})")
    if c_open.button("Open in the explorer", key="head_map_open", icon=":material/open_in_new:", width="stretch"):
        _open(hmap, index)
        st.switch_page(TRANSLATE_PAGE)
    query_key_ui(hmap, index, relative)


def query_key_ui(hmap: HeadMap, index: int, relative: bool = False) -> None:
    """The chosen head's queries and keys of every example sentence in one plane."""
    kind, layer, head = hmap.heads[index]
    queries, keys, q_hover, k_hover = [], [], [], []
    for s, r in enumerate(hmap.readings, start=1):
        q, k = r.queries[kind][layer, head], r.keys[kind][layer, head]  # [Q, d_k], [K, d_k]
        weights = r.weights[kind][layer, head]  # [Q, K]
        q_pieces, k_pieces = r.query_pieces(kind), r.key_pieces(kind)
        queries.append(q)
        keys.append(k)
        for i, piece in enumerate(q_pieces):
            top = int(weights[i].argmax())
            q_hover.append(f"query <b>{html.escape(piece)}</b> (sentence {s}, position {i})<br>weights most: "
                           f"{html.escape(k_pieces[top])} ({weights[i, top]:.2f})")
        k_hover += [f"key <b>{html.escape(piece)}</b> (sentence {s}, position {j})" for j, piece in enumerate(k_pieces)]
    plane = query_key_plane(np.concatenate(queries), np.concatenate(keys))
    where = f"{KIND_LABELS[kind].lower()} · layer {layer + 1} · head {head + 1}"
    plot(query_key_figure(plane.queries, plane.keys, q_hover, k_hover,
                          title=f"Queries and keys of one head<br><sup>{where} · {len(hmap.readings)} "
                                f"sentence{'s' * (len(hmap.readings) > 1)} · the plane keeps {plane.explained:.0%} of "
                                "their variance</sup>",
                          axis_titles=("principal axis 1", "principal axis 2")), "head_map_qk")
    st.caption("Queries (blue circles) and keys (orange triangles) of this head over the sentences, on their two "
               "principal axes (PCA). Before projecting, the keys are moved so that their mean is the queries' mean "
               "and both are scaled to the same mean length; neither changes any weight (a shift adds the same number "
               "to every score of a row, which the softmax ignores; q·s and k/s keep every q·k). So a query lies near "
               "the keys it scores high; hover a query for the key it weighted most."
               + (" This model also adds a relative position bias to its self-attention scores (T5), which the plane "
                  "does not show." if relative and kind != "cross" else ""))
