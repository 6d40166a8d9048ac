"""The model registry: the shipped and converted models under pretrained/ (loaded once per server process and shared
read-only by every session), their snapshots, labels and length penalties, and this session's uploads by name. A
checkpoint a user uploads belongs to that user's session only; its files are checked in app.models.uploads."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import streamlit as st

from app.models.examples import pair_label
from model.checkpoints.files import Checkpoint, checkpoint_snapshots, load_checkpoint, peek_checkpoint, read_config
from model.checkpoints.header import CheckpointError
from model.checkpoints.meta import decode_rules_of, length_penalty_of
from model.network.transformer import Transformer
from model.serving.compiled_step import describe as describe_step
from model.serving.compiled_step import prepare as prepare_compiled_step
from model.serving.device import describe, resolve_device
from model.serving.inference import decode_rules as model_decode_rules

ROOT = Path(__file__).resolve().parents[2]
PRETRAINED_ENV = "ATTENTION_EXPLORER_PRETRAINED"
# Where converted models are listed from and written to: pretrained/, or the folder the operator names in
# ATTENTION_EXPLORER_PRETRAINED (the browser tests' server reads its converted models from a temporary one)
PRETRAINED = Path(os.environ[PRETRAINED_ENV]) if os.environ.get(PRETRAINED_ENV) else ROOT / "pretrained"
MODELS = {
    "en-de": ROOT / "pretrained" / "en-de",
    "reverse": ROOT / "pretrained" / "reverse",
}
MODEL_LABELS = {"en-de": "English → German (trained on Debian's translations)",
                "reverse": "Reverse letters (synthetic: the right attention is known)"}
NOT_TRANSLATION = {"vit-digits", "swin-digits"}  # pretrained/ directories of the Vision page
log = logging.getLogger("attention_explorer")


@st.cache_data(ttl=10, show_spinner=False)  # the sidebar asks on every run (and once per option label)
def converted_models() -> dict[str, tuple[Path, dict]]:
    """Checkpoints a user put under pretrained/ (`python -m model convert DIR --out pretrained/NAME`, or the sidebar's
    converter, app.models.converter): directory name -> (path, meta), for every other directory holding a Transformer
    checkpoint (only config.json is read here); a hidden one is a conversion still being written."""
    found = {}
    for path in sorted(PRETRAINED.iterdir()) if PRETRAINED.is_dir() else ():  # an operator's folder may be absent
        if path.is_dir() and path.name not in MODELS and path.name not in NOT_TRANSLATION \
                and not path.name.startswith("."):
            peeked = peek_checkpoint(path)
            if peeked is not None:
                found[path.name] = (path, peeked[1])
    return found


# "off": every model decodes on the eager step (the tests' default: a first compile costs 30 s of CPU per server).
COMPILED_STEP_ENV = "ATTENTION_EXPLORER_COMPILED_STEP"


@st.cache_resource(show_spinner="Loading the model…")
def _load_shipped(name: str) -> Checkpoint:
    """A model under pretrained/, loaded once per server; its compiled decoding step starts building in the background
    at once (model.serving.compiled_step: visitors decode on the eager step until it is ready)."""
    ckpt = load_checkpoint(MODELS[name] if name in MODELS else converted_models()[name][0], resolve_device("auto"))
    if os.environ.get(COMPILED_STEP_ENV, "background") != "off":
        prepare_compiled_step(ckpt.model)
        _PREPARED[name] = ckpt.model
    return ckpt


_PREPARED: dict[str, Transformer] = {}  # the models whose compiled step was started, by name (held by the cache too)


def model_meta(name: str) -> dict:
    """A model's meta, for the decoding defaults it brings: a model under pretrained/ is read from its config.json
    alone (no weights), an upload from the session; {} when it cannot be read (the pages report that)."""
    try:
        if name in MODELS:
            return _shipped_meta(name)
        converted = converted_models()
        return converted[name][1] if name in converted else load_model(name).meta
    except (CheckpointError, OSError):
        return {}


@st.cache_data(ttl=10, show_spinner=False)  # asked on every run (each request says whether EOS is forced)
def _shipped_meta(name: str) -> dict:
    return read_config(MODELS[name])[1]


def default_length_penalty(name: str) -> float:
    """Beam search's α for a model: the one chosen on its validation split, else the paper's 0.6."""
    return length_penalty_of(model_meta(name))


def decode_rules(name: str, target_language: str | None) -> dict[str, Any]:
    """The decoding rules the model brings (model.serving.inference.decode_rules: forced EOS, the forced first piece, no
    repeated n-gram, the length-penalty formula), a multilingual model's forced first piece being the chosen target
    language's code. A model that cannot be loaded keeps its meta's rules: the pages report it."""
    try:
        ckpt = load_model(name)
    except (CheckpointError, OSError):
        return decode_rules_of(model_meta(name))
    return model_decode_rules(ckpt.tokenizer, ckpt.meta, target_language)


def load_model(name: str) -> Checkpoint:
    """The checkpoint called ``name``: a shipped or converted one under pretrained/ (cached, on CUDA if present, else
    the CPU, eval mode, never mutated) or one this session uploaded ("upload:<hash>")."""
    if name in MODELS or name in converted_models():
        return _load_shipped(name)
    uploads = st.session_state.get("uploads", {})
    if name in uploads:
        return uploads[name]
    raise CheckpointError(f"unknown model {name!r}")


@st.cache_data(ttl=10, show_spinner=False)
def snapshots_of(name: str) -> dict[str, tuple[Path, dict]]:
    """Earlier stages of a shipped or converted model's training shipped beside it (pretrained/NAME/snapshots/),
    snapshot name -> (path, meta), in training order; {} for other models."""
    path = MODELS.get(name) or converted_models().get(name, (None,))[0]
    return checkpoint_snapshots(path) if path is not None else {}


@st.cache_resource(show_spinner="Loading an earlier checkpoint…", max_entries=8)
def load_snapshot(name: str, snapshot: str) -> Checkpoint:
    """One snapshot of model ``name`` (cached like the shipped models: shared read-only by every session)."""
    return load_checkpoint(snapshots_of(name)[snapshot][0], resolve_device("auto"))


def model_label(name: str) -> str:
    if name in MODEL_LABELS:
        return MODEL_LABELS[name]
    converted = converted_models().get(name)
    if converted is not None:  # languages from the checkpoint's meta (model.huggingface.marian records them)
        meta = converted[1]
        pair = pair_label(meta)
        return f"{pair + ': ' if pair else ''}{name} " \
               f"({'converted' if 'converted_from' in meta else 'checkpoint in pretrained/'})"
    ckpt = st.session_state.get("uploads", {}).get(name)
    if ckpt is None:
        return name
    cfg, pair = ckpt.config, pair_label(ckpt.meta)
    return f"Uploaded{' ' + pair if pair else ''} ({cfg.d_model}-wide, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} " \
           f"layers, {cfg.n_heads} heads)"


def device_label() -> str:
    return describe(resolve_device("auto"))


def step_label(name: str) -> str | None:
    """Which decoding step a model under pretrained/ runs on now (model.serving.compiled_step); None for an upload, a
    model not loaded yet, or when the server builds no compiled step (ATTENTION_EXPLORER_COMPILED_STEP=off)."""
    model = _PREPARED.get(name)  # never loaded here: the sidebar of a page that uses no model loads none
    return None if model is None else describe_step(model)
