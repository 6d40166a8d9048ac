"""The attention explorer: pick a kind, layer and head of a finished translation and see its weights.

Reusable by any page (``attention_explorer(translation)``). It lives in a fragment (a weak one, which leaves the
translation to the shared store: app.serving.weak_fragment), so changing the kind, layer, head or view redraws
this panel only (and writes them into the URL). It shares the session keys "kind", "layer", "head" (-1 = mean over
heads) and "word_level" with the other pages, so a head picked here stays picked elsewhere. Keys h / H and l / L
step through the heads and layers. The weights drawn are the model's own (trace.weights(kind)); the only arithmetic
here is the optional mean over heads, a view choice.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app.browser import bind_keys
from app.charts.attention import (
    MIN_LINE_WEIGHT,
    MODEL_VIEW_MAX_CELLS,
    default_min_weight,
    head_stats_frame,
    head_view_figure,
    heatmap_figure,
    heatmap_height,
    model_view_figure,
    strongest_heads,
)
from app.charts.figure_size import figure_nbytes
from app.charts.style import plotly_config, presented
from app.downloads import figure_html, matrix_csv, matrix_json
from app.opening import open_focused, opened_line, unpin
from app.page import to_numpy
from app.presenter import is_on, presentable
from app.serving.sized_lru import shared
from app.serving.weak_fragment import weak_fragment
from app.state import PINNED, VIEWS, sync_url
from explain.heads import FocusedHead, merge_to_words, piece_head_statistics
from model.network.trace import KIND_LABELS, KINDS, Kind
from model.serving.inference import Translation
from model.tokenization.pieces import SPECIAL_PIECES, word_groups, word_labels

# The heatmaps every session shares (``shared_heatmap``): at most this many and this many bytes (app.charts.figure_size;
# a sentence's map holds ~0.2 MB, one of 1,024 pieces ~4.6 MB; st.cache_resource bounded them by count alone).
SHARED_FIGURES, SHARED_FIGURE_BYTES = 512, 64 * 2**20
# Short enough that the three fit side by side in the explorer's and the Heads page's controls at 1280 px (longer ones
# made the control scroll and read "r self"); each figure's title names the kind in full
# (model.network.trace.KIND_LABELS).
KIND_SHORT = {"enc_self": "Encoder self", "dec_self": "Decoder self", "cross": "Cross"}
KIND_HELP = {
    "enc_self": "Every source piece looks at every source piece (no mask). Rows sum to 1.",
    "dec_self": "Each decoder position looks at itself and earlier positions only: the grey cells are masked "
                "(weight exactly 0), so the model cannot peek at the answer. Rows sum to 1.",
    "cross": "Each decoder position looks at the source sentence while predicting its output piece. "
             "Rows sum to 1: this is the soft alignment between the two sentences.",
}
DECODER_QUERY_TITLE = "piece written (row t writes output piece t)"
DECODER_INPUT_TITLE = "decoder input (row t reads it, writes output piece t)"


@dataclass(frozen=True)
class AttentionView:
    """One kind of attention of a translation, ready to draw: weights [L, H, Q, K] (numpy) and labels."""

    weights: np.ndarray
    query_labels: list[str]
    key_labels: list[str]
    query_title: str
    key_title: str
    predicts: list[str] | None  # what each query row predicts (decoder rows, piece level)
    mask: np.ndarray | None  # [Q, K] bool, True = may attend (piece level)


def attention_view(translation: Translation, kind: Kind, word_level: bool = False,
                   rows_input: bool = False) -> AttentionView:
    """The weights and labels of one kind; word_level merges pieces with explain.heads.merge_to_words. A decoder
    row is named by the piece written at that step (what it produces), or with ``rows_input`` by the decoder
    input it reads (the written pieces shifted right by one, from the start piece)."""
    src = list(translation.source.pieces)
    dec_in, written = list(translation.target_input_pieces), list(translation.target_pieces)
    rows = dec_in if rows_input else written
    queries, keys = (src, src) if kind == "enc_self" else (rows, dec_in if kind == "dec_self" else src)
    q_title = "source piece (query)" if kind == "enc_self" else DECODER_INPUT_TITLE if rows_input \
        else DECODER_QUERY_TITLE
    k_title = "source piece (key)" if kind in ("enc_self", "cross") else "decoder input piece (key)"
    weights = translation.trace.weights(kind)[:, 0]  # [L, H, Q, K]
    mask = to_numpy(translation.trace.mask(kind)[0, 0])  # [Q, K]
    if not word_level:
        predicts = written if kind != "enc_self" and rows_input else None
        return AttentionView(weights=to_numpy(weights), query_labels=queries, key_labels=keys, query_title=q_title,
                             key_title=k_title, predicts=predicts, mask=mask)
    q_groups, k_groups = word_groups(queries), word_groups(keys)
    merged = merge_to_words(weights, q_groups, k_groups)  # [L, H, Qw, Kw]
    # a word may read a word where any of its pieces may read any of the other's (the causal mask, by words)
    word_mask = np.array([[bool(mask[np.ix_(qg, kg)].any()) for kg in k_groups] for qg in q_groups])
    return AttentionView(weights=to_numpy(merged), query_labels=word_labels(queries, q_groups),
                         key_labels=word_labels(keys, k_groups), query_title=q_title.replace("piece", "word"),
                         key_title=k_title.replace("piece", "word"), predicts=None,
                         mask=None if word_mask.all() else word_mask)


def select_head(per_head: np.ndarray, head: int) -> np.ndarray:
    """One head's slice of per-head values [H, ...], or their mean over heads for head == -1. The mean is a
    display choice the UI makes; the model never averages its heads."""
    return per_head.mean(axis=0) if head < 0 else per_head[head]


def head_matrix(view: AttentionView, layer: int, head: int) -> np.ndarray:
    """[Q, K] of one head, or the mean over heads for head == -1 (display only)."""
    return select_head(view.weights[layer], head)


def head_label(head: int) -> str:
    return "mean over heads" if head < 0 else f"head {head + 1}"


def clamp_state(key: str, low: int, high: int, default: int) -> None:
    """Keep an int session key inside [low, high] before its widget is drawn (models differ in size)."""
    value = st.session_state.get(key, default)
    if not isinstance(value, int) or not low <= value <= high:
        st.session_state[key] = min(max(int(value) if isinstance(value, int) else default, low), high)
    else:
        st.session_state[key] = value


def layer_head_ui(n_layers: int, n_heads: int, allow_mean: bool = True,
                  columns: tuple[DeltaGenerator, DeltaGenerator] | None = None) -> tuple[int, int]:
    """Layer and head pickers on the shared keys "layer" / "head" (0-based; head -1 = mean), side by side
    in ``columns`` (two containers) if given."""
    clamp_state("layer", 0, n_layers - 1, 0)
    clamp_state("head", -1 if allow_mean else 0, n_heads - 1, -1 if allow_mean else 0)
    c_layer, c_head = columns if columns is not None else (st.container(), st.container())
    layer = c_layer.segmented_control(
        "Layer", list(range(n_layers)), key="layer", persist_state="session", format_func=lambda l: f"{l + 1}",
        required=True, wrap=True,  # in a column the options would scroll sideways, hiding the last ones
        help="Layer 1 reads the embeddings; higher layers read the layer below.")
    heads = ([-1] if allow_mean else []) + list(range(n_heads))
    head = c_head.segmented_control(
        "Head", heads, key="head", persist_state="session", format_func=lambda h: "mean" if h < 0 else f"{h + 1}",
        required=True, wrap=True,  # 16 heads and the mean do not fit one row of a column
        help="Each head has its own query/key projections and attends on its own. 'mean' averages the heads' "
             "maps for display only; the model never does.")
    if layer is None or head is None:  # not reached: required, and clamp_state gave both a value
        return 0, heads[0]
    return int(layer), int(head)


def _cycle(key: str, options: list[int], delta: int) -> None:
    """Move the shared key to the next (delta 1) or previous (-1) option, wrapping around."""
    current = st.session_state.get(key)
    index = options.index(current) if current in options else 0
    st.session_state[key] = options[(index + delta) % len(options)]


STEP_KEYS = {"h": ("head", 1), "H": ("head", -1), "l": ("layer", 1), "L": ("layer", -1)}


def key_stepping_ui(key: str, n_layers: int, n_heads: int) -> None:
    """Keyboard stepping through heads and layers (STEP_KEYS): hidden buttons that the keys press."""
    options = {"head": [-1, *range(n_heads)], "layer": list(range(n_layers))}
    buttons = {name: f"{key}_{'next' if delta > 0 else 'prev'}_{target}" for name, (target, delta) in STEP_KEYS.items()}
    with st.container(key=f"{key}_keys"):
        for name, (target, delta) in STEP_KEYS.items():
            st.button(f"{'Next' if delta > 0 else 'Previous'} {target}", key=buttons[name], on_click=_cycle,
                      args=(target, options[target], delta))
    bind_keys(buttons, hide=(f"{key}_keys",))
    st.caption("Keys: **h** / **H** next / previous head (mean first), **l** / **L** next / previous layer.")


def attention_explorer(translation: Translation, key: str = "explorer", kinds: Sequence[Kind] = KINDS,
                       fit_px: int | None = None) -> None:
    """Draw the explorer panel for ``translation``; ``key`` prefixes its chart and local widget keys. It opens on
    the translation's most focused cross-attention head until the visitor picks one (app.opening). ``fit_px``: the
    height the heatmap may take to end on the screen (None: as tall as its rows ask), never below readable rows."""
    _panel(translation, key, tuple(kinds), fit_px)


@weak_fragment
def _panel(translation: Translation, key: str, kinds: tuple[Kind, ...], fit_px: int | None = None) -> None:
    opened = open_focused(translation) if "cross" in kinds else None
    if st.session_state.get("kind") not in kinds:
        st.session_state["kind"] = kinds[-1]
    else:
        st.session_state["kind"] = st.session_state["kind"]
    st.session_state["word_level"] = bool(st.session_state.get("word_level", False))
    st.session_state["rows_input"] = bool(st.session_state.get("rows_input", False))
    st.session_state.setdefault(f"{key}_view", VIEWS[0])
    # What the map needs above it, in one row: kind, layer and head (the rest of the controls sit below the map)
    c_kind, c_layer, c_head = st.columns([2.75, 1.3, 4], vertical_alignment="bottom", gap="xsmall")
    kind = c_kind.segmented_control("Attention", kinds, key="kind", persist_state="session",
                                    format_func=KIND_SHORT.__getitem__, selection_mode="single", required=True)
    if kind is None:  # not reached: required, and the session state holds one of ``kinds`` (set above)
        kind = kinds[-1]
    view_name = st.session_state[f"{key}_view"]
    word_level, rows_input = st.session_state["word_level"], st.session_state["rows_input"]
    view = attention_view(translation, kind, word_level, rows_input)
    n_layers, n_heads = view.weights.shape[:2]
    layer, head = layer_head_ui(n_layers, n_heads, columns=(c_layer, c_head))
    opened_ui(opened)
    title = f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_label(head)}"
    fmt = st.session_state.get("image_format", "png")
    if view_name == "Heatmap":
        matrix = head_matrix(view, layer, head)
        height = heatmap_height(len(view.query_labels), None if is_on() else fit_px, view.key_labels)
        fig = shared_heatmap(translation.uid, kind, word_level, layer, head, is_on(), rows_input, height, _view=view,
                             _title=title)
        st.plotly_chart(fig, key=f"{key}_heatmap", width="stretch", theme=None,
                        config=plotly_config(f"{kind}_L{layer + 1}", fmt))
    elif view_name == "Head view":
        matrix = head_matrix(view, layer, head)
        fig = _head_view(view, layer, head, title, key, fmt)
    else:
        matrix = head_matrix(view, layer, head)
        fig = model_view_figure(view.weights, view.query_labels, view.key_labels,
                                title=f"{KIND_LABELS[kind]}: every layer (rows) and head (columns)",
                                selected=(layer, head) if head >= 0 else None)
        chart_key = f"{key}_model_view"
        st.plotly_chart(presentable(fig), key=chart_key, width="stretch", theme=None,
                        on_select=partial(_open_head, chart_key, key),
                        selection_mode="points", config=plotly_config(f"{kind}_all_heads", fmt))
        pooled = max(view.weights.shape[-2:]) > MODEL_VIEW_MAX_CELLS
        st.caption("Click a small map to open that head as a heatmap. Query rows run top to bottom, keys left to "
                   "right, as in the heatmap." + (f" With more than {MODEL_VIEW_MAX_CELLS} pieces a small map shows "
                                                  "the largest weight of each block of pieces (a map is too small for "
                                                  "every cell); the heatmap shows every weight." if pooled else ""))
    view_ui(key, kind)
    key_stepping_ui(key, n_layers, n_heads)
    start = translation.target_input_pieces[0]  # <s>, or <pad> for Marian
    st.caption(KIND_HELP[kind] + f" Pieces starting with ▁ begin a word; {start} starts the decoder input, "
               "</s> ends a sentence.")
    _stats_table(translation, kind, key)
    name = f"{kind}_layer{layer + 1}_{'mean' if head < 0 else f'head{head + 1}'}{'_words' if word_level else ''}"
    about = {"model": st.session_state.get("model_name"), "source": translation.source.text,
             "translation": translation.text, "attention": kind, "layer": layer + 1,
             "head": "mean" if head < 0 else head + 1, "words": word_level}
    _downloads(matrix, view, fig, title, name, about, key)
    sync_url()


def opened_ui(opened: FocusedHead | None) -> None:
    """The line above the map: which head the explorer opened on and why, or (once the visitor chose one) that the
    choice stays, with the way back to the rule."""
    if opened is not None:
        st.caption(opened_line(opened))
        return
    if not st.session_state.get(PINNED):  # a page whose kinds leave out cross-attention: no rule to return to
        return
    c_note, c_back = st.columns([5, 2], vertical_alignment="center")
    c_note.caption("Your choice of kind, layer and head stays for every sentence.")
    c_back.button("Open the most focused head", key="open_focused", on_click=unpin, type="tertiary",
                  icon=":material/center_focus_strong:",
                  help="Each sentence opens on its own most focused cross-attention head again.")


def view_ui(key: str, kind: Kind) -> None:
    """The controls of how the map is drawn, under it: the view, word level and how decoder rows are named. A change
    reruns this panel (they are read from the session above)."""
    c_view, c_word, c_rows = st.columns([4, 1.4, 1.8], vertical_alignment="bottom")
    c_view.segmented_control(
        "View", VIEWS, key=f"{key}_view", persist_state="session", selection_mode="single", required=True,
        help="Heatmap: one head's matrix. Head view: lines from each query to the keys it attends to "
             "(opacity = weight). Model view: every layer and head at once; click one to open it.")
    c_word.toggle("Words", key="word_level", persist_state="session",
                  help="Merge sub-word pieces into words: a word's incoming attention is the sum over its pieces, "
                       "a word's row is the mean of its pieces' rows.")
    c_rows.toggle("Input rows", key="rows_input", persist_state="session", disabled=kind == "enc_self",
                  help="Decoder rows are named by the piece written at that step. On: by the decoder input the step "
                       "reads instead (the same rows, shifted by one: the start piece first).")


def _downloads(matrix: np.ndarray, view: AttentionView, fig: go.Figure, title: str, name: str, about: dict,
               key: str) -> None:
    """The view as files: its matrix as CSV or JSON, and its figure as a standalone HTML file (Plotly inside, so it
    needs no network; built only when clicked, as it is about 4.7 MB)."""
    c_csv, c_json, c_html = st.columns(3)
    c_csv.download_button("Download this matrix (CSV)", data=matrix_csv(matrix, view.query_labels, view.key_labels),
                          file_name=f"{name}.csv", mime="text/csv", key=f"{key}_csv", on_click="ignore",
                          help=f"{title}: rows = queries, columns = keys.")
    c_json.download_button("Matrix as JSON", data=matrix_json(matrix, view.query_labels, view.key_labels, about),
                           file_name=f"{name}.json", mime="application/json", key=f"{key}_json", on_click="ignore",
                           help=f"{title}: the weights [query][key] with the pieces, the sentence and the model.")
    c_html.download_button("Figure as HTML", data=lambda: figure_html(fig), file_name=f"{name}.html",
                           mime="text/html", key=f"{key}_html", on_click="ignore",
                           help="This figure as a standalone web page for a paper or a handout: hover and zoom "
                                "work, and it needs no network (Plotly's JavaScript, about 4.7 MB, is inside).")


@shared(SHARED_FIGURES, SHARED_FIGURE_BYTES, figure_nbytes)
def shared_heatmap(uid: int, kind: Kind, word_level: bool, layer: int, head: int, presenter: bool,
                   rows_input: bool = False, height: int | None = None, *, _view: AttentionView,
                   _title: str) -> go.Figure:
    """The explorer's heatmap of one translation (Translation.uid) and view, ``height`` px tall (None: as its rows
    ask), built once per server and shared by every session that shows it (a class on the lecturer's link):
    figures are never changed after they are built, and Streamlit only reads them."""
    fitted = height is not None and height < heatmap_height(len(_view.query_labels))
    fig = heatmap_figure(head_matrix(_view, layer, head), _view.query_labels, _view.key_labels, title=_title,
                         # a map fitted to the screen is shorter than its row title in one line
                         query_title=_view.query_title.replace(" (", "<br>(", 1) if fitted else _view.query_title,
                         key_title=_view.key_title, predicts=_view.predicts, mask=_view.mask, height=height)
    return presented(fig) if presenter else fig


def _head_view(view: AttentionView, layer: int, head: int, title: str, key: str, fmt: str) -> go.Figure:
    focus_key = f"{key}_focus"
    options = [""] + [f"q{i}" for i in range(len(view.query_labels))] + [f"k{j}" for j in range(len(view.key_labels))]
    if st.session_state.get(focus_key) not in options:
        st.session_state[focus_key] = ""

    def describe(option: str) -> str:
        if not option:
            return "all tokens"
        side, i = option[0], int(option[1:])
        return f"query {i}: {view.query_labels[i]}" if side == "q" else f"key {i}: {view.key_labels[i]}"

    c_focus, c_min = st.columns([3, 2])
    c_focus.selectbox("Highlight the lines of one token (or click a token in the chart)", options, key=focus_key,
                      format_func=describe)
    pieces = max(len(view.query_labels), len(view.key_labels))
    min_key = f"{key}_min_line_{'long' if default_min_weight(pieces) != MIN_LINE_WEIGHT else 'short'}"
    st.session_state.setdefault(min_key, default_min_weight(pieces))  # long inputs start higher: fewer lines
    min_weight = c_min.slider("Hide lines lighter than", 0.0, 0.5, step=0.01, key=min_key, format="%.2f",
                              help="Only weights at or above this are drawn. Raise it to see the strongest links of "
                                   "a long input (and to draw faster); the heatmap shows every weight.")
    focus_opt = st.session_state[focus_key]
    focus = None if not focus_opt else ("query" if focus_opt[0] == "q" else "key", int(focus_opt[1:]))
    heads = list(range(view.weights.shape[1])) if head < 0 else [head]
    weights = view.weights[layer][heads]  # [h, Q, K]
    shown = strongest_heads(weights) if head < 0 else None  # all eight at once are a tangle: the clearest two
    fig = head_view_figure(weights, heads, view.query_labels, view.key_labels, shown=shown,
                           title=title.replace("mean over heads", "the most focused heads" if shown else "all heads"),
                           focus=focus, min_weight=min_weight,
                           query_title=view.query_title.split(" (")[0], key_title=view.key_title.split(" (")[0])
    chart_key = f"{key}_head_view"
    st.plotly_chart(presentable(fig), key=chart_key, width="stretch", theme=None,
                    on_select=partial(_focus_token, chart_key, focus_key),
                    selection_mode="points", config=plotly_config("head_view", fmt))
    drawn, total = int((weights >= min_weight).sum()), int((weights > 0).sum())
    which = (f"{' and '.join(f'head {h + 1}' for h in shown)} (the most focused: largest top weight per query) "
             "drawn, the others a click away in the legend" if shown else "click a head in the legend to hide it")
    st.caption("Each line joins a query (left) to a key (right); its opacity is the weight, its colour the head "
               f"({which}). {drawn:,} of the {total:,} non-zero weights are at or "
               f"above {min_weight:.2f}" + (", drawn for the highlighted token only." if focus else " and drawn."))
    return fig


def point_customdata(point: dict) -> list | None:
    """A selected Plotly point's customdata as a list. The browser sends a numeric row (a typed array) as
    {"0": v0, "1": v1, ...}, so list() of it would give the keys, not the values."""
    data = point.get("customdata")
    if isinstance(data, dict):
        return [data[k] for k in sorted(data, key=int)]
    return None if data is None else list(data)


def _selected_customdata(chart_key: str) -> list | None:
    state = st.session_state.get(chart_key) or {}
    selection = state.get("selection") or {}
    for point in selection.get("points") or []:
        data = point_customdata(point)
        if data is not None:
            return data
    return None


def _focus_token(chart_key: str, focus_key: str) -> None:
    data = _selected_customdata(chart_key)
    if data and data[0] in ("query", "key"):
        st.session_state[focus_key] = f"{data[0][0]}{int(data[1])}"


def _open_head(chart_key: str, key: str) -> None:
    data = _selected_customdata(chart_key)
    if data and len(data) >= 2:
        st.session_state["layer"], st.session_state["head"] = int(data[0]), int(data[1])
        st.session_state[f"{key}_view"] = "Heatmap"


def _stats_table(translation: Translation, kind: Kind, key: str) -> None:
    """The head statistics table, computed and sent only while its expander is open (a lazy expander: opening it
    reruns this fragment). A closed one sent a data grid with every page view, whose 0.5 MB of front-end code the
    browser evaluated before it drew the first chart (benchmarks/first_visit.py)."""
    with st.expander("Head statistics: which heads are sharp, local, diagonal, or parked on </s>?", expanded=False,
                     key=f"{key}_stats_open", on_change="rerun") as box:
        if not box.open:
            return
        view = attention_view(translation, kind)
        stats = piece_head_statistics(translation.trace.weights(kind)[:, 0], view.key_labels)
        frame = head_stats_frame({name: to_numpy(value) for name, value in stats.items()})
        st.caption("One row per head of this attention kind (piece level). Entropy in nats: 0 = all weight on one "
                   "key. Mean distance: expected |query − key| position. Diagonality: weight on the "
                   "(proportional) diagonal. Click a column to sort; select a row to open that head.")
        table_key = f"{key}_stats"
        st.dataframe(frame, key=table_key, on_select=partial(_open_row, table_key, frame), hide_index=True,
                     selection_mode="single-row", width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.3f") for c in frame.columns[2:]})


def _open_row(table_key: str, frame: pd.DataFrame) -> None:
    state = st.session_state.get(table_key) or {}
    rows = (state.get("selection") or {}).get("rows") or []
    if rows:
        row = frame.iloc[rows[0]]
        st.session_state["layer"], st.session_state["head"] = int(row["layer"]) - 1, int(row["head"]) - 1


# --- small helpers the Translate and Decoding pages share --------------------------------------------

def pieces_html(pieces: Sequence[str], highlight: int | None = None) -> str:
    """Token pieces as boxed chips (HTML-escaped), special tokens in grey, ``highlight`` in red."""
    chips = []
    for i, piece in enumerate(pieces):
        special = piece in SPECIAL_PIECES.values()
        colour = "#d62728" if i == highlight else ("#888" if special else "#1f4e79")
        background = "#fde0dd" if i == highlight else ("#f2f2f2" if special else "#e8f1fa")
        chips.append(f"<span style='display:inline-block;margin:2px 3px;padding:1px 7px;border-radius:6px;"
                     f"border:1px solid {colour};color:{colour};background:{background};font-family:monospace;"
                     f"font-size:1.05rem'>{html.escape(piece)}</span>")
    return "<div style='line-height:2.0'>" + "".join(chips) + "</div>"
