"""The sidebar every page shares: which model, which device, how figures download, your own checkpoint, a Hugging
Face model converted (app.models.converter)."""
from __future__ import annotations

import streamlit as st

from app.browser import link_box, one_entry_per_view
from app.checks.escape import md
from app.models.converter import convert_ui
from app.models.examples import first_sentence, is_example, leading_token, with_token
from app.models.registry import MODELS, converted_models, device_label, load_model, log, model_label, step_label
from app.models.uploads import load_upload
from app.presenter import apply_presenter
from app.state import DEFAULTS, init_state, link_notice, share_link
from model.checkpoints.header import CheckpointError


def _upload_ui() -> None:
    """Lazy, like every sidebar expander: the uploader's front-end code is sent only once the expander is opened, not
    with every first visit before the first chart (benchmarks/first_visit.py)."""
    with st.expander("Use your own checkpoint", key="upload_open", on_change="rerun") as box:
        if not box.open:
            return
        st.caption("Upload every file of a checkpoint directory together, as separate files (not an archive): "
                   "model.safetensors, config.json and its tokenizer, tokenizer.model (`python -m training.train`) "
                   "or source.spm, target.spm and vocab.json (`python -m model convert-marian`). Weights are read "
                   "only as safetensors, never as a pickle (.bin, .pt), and checked against the config before "
                   f"anything is built. It stays in your session only. At most {st.get_option('server.maxUploadSize')} "
                   "MB per file: a "
                   "converted opus-mt model (200-300 MB) goes under pretrained/ on the server instead, where it "
                   "appears in the model list.")
        files = st.file_uploader("Checkpoint files", type=["safetensors", "json", "model", "spm"],
                                 accept_multiple_files=True, key="upload_files")
        if st.button("Load checkpoint", key="upload_load", disabled=not files):
            try:
                name = load_upload(files)
            except CheckpointError as exc:
                st.error(f"Cannot use this checkpoint: {md(exc)}")  # it names the uploaded files: escaped
            except Exception:  # anything else is our bug: log it, keep the app alive
                log.exception("loading an uploaded checkpoint failed")
                st.error("Cannot use this checkpoint: it could not be read.")
            else:
                st.session_state["_pending_model"] = name  # the selectbox is already drawn in this run
                st.rerun()


def _follow_language() -> None:
    """On a change of model: a stock sentence in the box (the default or an example) becomes one the new model reads
    (app.models.examples.first_sentence), so an English sentence is not fed to a French model; a typed one stays. A
    target-language token (">>fra<<") stays only if the new model has it. Beam search's α becomes the one chosen
    for the new model on its validation split (Checkpoint.length_penalty)."""
    text = st.session_state.get("text", "")
    bare = with_token(text, None)  # without a multilingual model's target-language token
    try:
        ckpt = load_model(st.session_state["model_name"])
    except Exception:  # the page says that the model cannot be loaded
        log.exception("reading model %r for its example sentence failed", st.session_state.get("model_name"))
        return
    st.session_state["length_penalty"] = ckpt.length_penalty
    token = leading_token(text, ckpt.tokenizer.language_tokens)  # kept only if the new model knows it
    if bare == DEFAULTS["text"] or is_example(bare):
        st.session_state["text"] = with_token(first_sentence(ckpt.meta, DEFAULTS["text"]), token)
    elif bare != text and token is None:
        st.session_state["text"] = bare


def render_sidebar() -> None:
    init_state()
    options = list(MODELS) + list(converted_models()) + list(st.session_state.get("uploads", {}))
    if "_pending_model" in st.session_state:  # a checkpoint just uploaded: chosen, and its language followed
        st.session_state["model_name"] = st.session_state.pop("_pending_model")
        _follow_language()
    if st.session_state["model_name"] not in options:
        st.session_state["model_name"] = "en-de"
    with st.sidebar:
        st.selectbox("Model", options, key="model_name", format_func=model_label, on_change=_follow_language,
                     help="Translation models are listed by their languages (as their checkpoints record them); the "
                          "letter-reversal model has a known correct attention pattern (each output letter must look "
                          "at its mirror position). Models converted into pretrained/ (python -m model "
                          "convert, or *Open a Hugging Face model* below) appear here too.")
        step = step_label(st.session_state["model_name"])
        st.caption(f"Running on **{device_label()}**" + (f" · {step}" if step else ""),
                   help=None if step is None else "A server compiles each model's decoding step in the background "
                   "(once per machine: a later start loads it from disk) and switches to it once it decodes exactly "
                   "as the eager step: the same numbers, faster.")
        st.radio("Figure download format", ["png", "svg"], key="image_format", horizontal=True,
                 help="What the camera icon in each chart's toolbar saves.")
        _upload_ui()
        convert_ui()
        st.toggle("Presenter mode", key="presenter",
                  help="For a projector: large text and figures that fit a 1280×720 screen, high-contrast colours, "
                       "this sidebar folded away (open it again with the arrow at the top left).")
        st.caption("Link to this view (page, sentence, settings, head):")
        link_box(share_link())
    apply_presenter()
    one_entry_per_view()  # Back returns to the previous slide or page in one step (app.state.follow_history)
    link_notice()
