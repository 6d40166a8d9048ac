"""The Heads page's shared pickers and labels: which attention map (kind, layer, head) a section shows and how its
axes are named."""
from __future__ import annotations

import streamlit as st

from app.explorer import KIND_SHORT
from app.page import keep_valid
from model.network.trace import KINDS, Kind, PerKind
from model.serving.inference import Translation


def axis_pieces(translation: Translation, kind: str) -> tuple[list[str], list[str], str, str]:
    """Query and key pieces of one kind with their axis titles: decoder rows are named by the piece written at that
    step, or by the decoder input they read where the explorer's "Input rows" is on (session key "rows_input")."""
    src, dec_in = list(translation.source.pieces), list(translation.target_input_pieces)
    if kind == "enc_self":
        return src, src, "source piece (query)", "source piece (key)"
    as_input = bool(st.session_state.get("rows_input"))
    rows = dec_in if as_input else list(translation.target_pieces)
    row_title = "decoder input (query)" if as_input else "piece written (query)"
    return rows, dec_in if kind == "dec_self" else src, row_title, \
        "decoder input (key)" if kind == "dec_self" else "source piece (key)"


def map_picker(prefix: str, layers: PerKind[int], n_heads: int, head_label: str = "mean",
               default_kind: Kind = "cross") -> tuple[Kind, int, int]:
    """Kind, layer and head (-1 = ``head_label``: the mean or all heads) on keys ``prefix``_kind/_layer/_head."""
    c_kind, c_layer, c_head = st.columns([2.2, 1, 2.4])
    keep_valid(f"{prefix}_kind", list(KINDS))
    st.session_state.setdefault(f"{prefix}_kind", default_kind)
    kind = c_kind.segmented_control("Attention", list(KINDS), key=f"{prefix}_kind", format_func=KIND_SHORT.__getitem__,
                                    required=True, persist_state="session")
    if kind is None:  # not reached: required, and the session state holds a kind (set above)
        kind = default_kind
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
    if head is None:  # not reached either: the session state holds -1 at first
        head = -1
    return kind, int(layer), int(head)


def head_name(head: int, mean: str = "mean over heads") -> str:
    return mean if head < 0 else f"head {head + 1}"
