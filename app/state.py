"""Session-state keys, their defaults (set once per session), and the URL query parameters that mirror them."""
from __future__ import annotations

import streamlit as st

DEFAULTS = {
    "model_name": "en-de",
    "text": "The old man who lives next door gave me the book yesterday.",
    "beam_size": 1,
    "max_len": 60,
    "length_penalty": 0.6,
    "kind": "cross",
    "layer": 0,
    "head": -1,  # -1 = mean over heads (a view choice; the model keeps every head)
    "word_level": False,
    "image_format": "png",
}
URL_KEYS = ("model_name", "text")  # shareable: a lecturer can send a link to a sentence


def init_state() -> None:
    """Called at the top of every run, before any widget. Sets missing keys to their defaults (on the first
    run, from the URL if present) and re-assigns the others: Streamlit deletes a widget's state when a page
    without that widget runs, and re-assigning makes the value outlive the page switch."""
    first = not st.session_state.get("_initialised")
    params = st.query_params
    for key, value in DEFAULTS.items():
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
        else:
            st.session_state[key] = params[key] if first and key in URL_KEYS and key in params else value
    st.session_state["_initialised"] = True


def sync_url() -> None:
    """Write the shareable keys back to the URL."""
    for key in URL_KEYS:
        value = st.session_state.get(key)
        if value and st.query_params.get(key) != value:
            st.query_params[key] = value
