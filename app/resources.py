"""Models and tokenizers, loaded once per server process and shared read-only by every session."""
from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st
import torch

from model.checkpoint import Checkpoint, CheckpointError, load_checkpoint
from model.device import describe, resolve_device

ROOT = Path(__file__).resolve().parent.parent
MODELS = {
    "en-de": ROOT / "pretrained" / "en-de",
    "reverse": ROOT / "pretrained" / "reverse",
}
MODEL_LABELS = {"en-de": "English → German (trained on Debian's translations)",
                "reverse": "Reverse letters (synthetic: the right attention is known)"}
log = logging.getLogger("attention_explorer")


@st.cache_resource(show_spinner="Loading the model…")
def load_model(name: str) -> Checkpoint:
    """The shipped checkpoint ``name`` on CUDA if present, else the CPU, in eval mode. Never mutated."""
    if name not in MODELS:
        raise CheckpointError(f"unknown model {name!r}")
    torch.set_grad_enabled(False)
    return load_checkpoint(MODELS[name], resolve_device("auto"))


def device_label() -> str:
    return describe(resolve_device("auto"))
