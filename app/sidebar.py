"""The sidebar every page shares: which model, which device, how figures download, your own checkpoint."""
from __future__ import annotations

import streamlit as st

from app.browser import link_box
from app.presenter import apply_presenter
from app.resources import MODELS, converted_models, device_label, load_upload, log, model_label
from app.state import init_state, share_link
from model.checkpoint import CheckpointError


def _upload_ui() -> None:
    with st.expander("Use your own checkpoint"):
        st.caption("Upload the three files of a checkpoint made by `python -m training.train`: "
                   "model.safetensors, config.json and tokenizer.model, as separate files (not an archive). "
                   "Weights are read only as safetensors, never as a pickle (.bin, .pt), and checked against "
                   "the config before anything is built. It stays in your session only.")
        files = st.file_uploader("Checkpoint files", type=["safetensors", "json", "model"],
                                 accept_multiple_files=True, key="upload_files")
        if st.button("Load checkpoint", key="upload_load", disabled=not files):
            try:
                name = load_upload(files)
            except CheckpointError as exc:
                st.error(f"Cannot use this checkpoint: {exc}")
            except Exception:  # anything else is our bug: log it, keep the app alive
                log.exception("loading an uploaded checkpoint failed")
                st.error("Cannot use this checkpoint: it could not be read.")
            else:
                st.session_state["_pending_model"] = name  # the selectbox is already drawn in this run
                st.rerun()


def render_sidebar() -> None:
    init_state()
    options = list(MODELS) + list(converted_models()) + list(st.session_state.get("uploads", {}))
    if "_pending_model" in st.session_state:
        st.session_state["model_name"] = st.session_state.pop("_pending_model")
    if st.session_state["model_name"] not in options:
        st.session_state["model_name"] = "en-de"
    with st.sidebar:
        st.selectbox("Model", options, key="model_name", format_func=model_label,
                     help="The English→German model translates; the letter-reversal model has a known correct "
                          "attention pattern (each output letter must look at its mirror position). Models converted "
                          "into pretrained/ (python -m model convert-marian) are listed by their languages.")
        st.caption(f"Running on **{device_label()}**")
        st.radio("Figure download format", ["png", "svg"], key="image_format", horizontal=True,
                 help="What the camera icon in each chart's toolbar saves.")
        _upload_ui()
        st.toggle("Presenter mode", key="presenter",
                  help="For a projector: large text and figures that fit a 1280×720 screen, high-contrast colours, "
                       "this sidebar folded away (open it again with the arrow at the top left).")
        st.caption("Link to this view (page, sentence, settings, head):")
        link_box(share_link())
    apply_presenter()
