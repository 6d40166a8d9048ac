"""Which head the attention explorer opens on: the first view shows attention at work, not a mean over heads.

The rule, the same on the Translate and Decoding pages: until the visitor chooses, every translation shown opens on
its own most focused cross-attention head (explain.heads.most_focused_head), a new sentence on its own. Choosing
pins the view: picking a kind, layer or head in any way (the pickers, the keys h / l, a click on the model view or
the statistics table, the Heads page's map) or opening a link that names one. A pinned view stays for every later
sentence until "Open the most focused head" unpins it. A link names the kind, layer and head only once they are
pinned (app.state), so a link without them opens the sender's sentence on the same, most focused, head.

A choice is seen as a difference: the view the app opened is remembered, and a run that finds the session's
kind, layer or head changed since then pins it, whichever widget, key or click changed it. The Heads page, which
opens its head on the Translate page (possibly before that page ever opened one), pins it itself.
"""
from __future__ import annotations

import streamlit as st

from app.state import OPENED, PINNED
from explain.heads import FocusedHead, most_focused_head
from model.network.trace import Kind
from model.serving.inference import Translation

OPENED_KIND: Kind = "cross"  # the soft alignment between the two sentences: what attention does, seen at once


def _view() -> tuple[str, int, int]:
    state = st.session_state
    return str(state.get("kind")), int(state.get("layer", 0)), int(state.get("head", -1))


def focused_head(translation: Translation) -> FocusedHead:
    """The most focused cross-attention head of ``translation`` (rows: the pieces written), kept per translation."""
    kept = st.session_state.get("_focused_head")
    if isinstance(kept, tuple) and kept[0] == translation.uid:
        return kept[1]
    head = most_focused_head(translation.trace.weights(OPENED_KIND)[:, 0], translation.target_pieces,
                             translation.source.pieces)
    st.session_state["_focused_head"] = (translation.uid, head)
    return head


def open_focused(translation: Translation) -> FocusedHead | None:
    """Before the kind, layer and head pickers are drawn: pin the view if the visitor changed it since the app last
    opened it; if it is not pinned, open ``translation``'s most focused cross-attention head and return it."""
    state = st.session_state
    opened = state.get(OPENED)
    if opened is not None and _view() != tuple(opened):
        state[PINNED] = True
    if state.get(PINNED):
        state[OPENED] = None
        return None
    head = focused_head(translation)
    state["kind"], state["layer"], state["head"] = OPENED_KIND, head.layer, head.head
    state[OPENED] = _view()
    return head


def unpin() -> None:
    """Back to the rule: the next run opens the translation's most focused head (a button's callback)."""
    st.session_state[PINNED] = False
    st.session_state[OPENED] = None


def opened_line(head: FocusedHead) -> str:
    """One line saying which head the explorer opened on, and why."""
    return (f"Opened on cross-attention, layer {head.layer + 1}, head {head.head + 1}: the most "
            f"focused head for this sentence (each output piece puts on average {head.focus:.0%} of its weight on "
            "one source piece).")
