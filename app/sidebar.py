"""The sidebar every page shares: which model, which device, how figures download."""
from __future__ import annotations

import streamlit as st

from app.resources import MODEL_LABELS, MODELS, device_label
from app.state import init_state


def render_sidebar() -> None:
    init_state()
    with st.sidebar:
        st.selectbox("Model", list(MODELS), key="model_name", format_func=lambda n: MODEL_LABELS[n],
                     help="The English→German model translates; the letter-reversal model has a known correct "
                          "attention pattern (each output letter must look at its mirror position).")
        st.caption(f"Running on **{device_label()}**")
        st.radio("Figure download format", ["png", "svg"], key="image_format", horizontal=True,
                 help="What the camera icon in each chart's toolbar saves.")
