"""Models and tokenizers: the shipped ones are loaded once per server process and shared read-only by every
session; a checkpoint a user uploads belongs to that user's session only."""
from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path

import streamlit as st

from model.checkpoint import (
    CONFIG,
    PICKLE_SUFFIXES,
    TOKENIZER,
    WEIGHTS,
    Checkpoint,
    CheckpointError,
    checkpoint_snapshots,
    load_checkpoint,
    peek_checkpoint,
)
from model.device import describe, resolve_device
from model.quality import is_weak, test_bleu

ROOT = Path(__file__).resolve().parent.parent
MODELS = {
    "en-de": ROOT / "pretrained" / "en-de",
    "reverse": ROOT / "pretrained" / "reverse",
}
MODEL_LABELS = {"en-de": "English → German (trained on Debian's translations)",
                "reverse": "Reverse letters (synthetic: the right attention is known)"}
UPLOAD_PREFIX = "upload:"
NOT_TRANSLATION = {"vit-digits", "swin-digits"}  # pretrained/ directories of the Vision page
log = logging.getLogger("attention_explorer")


@st.cache_data(ttl=10, show_spinner=False)  # the sidebar asks on every run (and once per option label)
def converted_models() -> dict[str, tuple[Path, dict]]:
    """Checkpoints a user put under pretrained/ (e.g. `python -m model convert-marian DIR --out pretrained/NAME`):
    directory name -> (path, meta), for every other directory holding a Transformer checkpoint (only config.json is
    read here)."""
    found = {}
    for path in sorted((ROOT / "pretrained").iterdir()):
        if path.is_dir() and path.name not in MODELS and path.name not in NOT_TRANSLATION:
            peeked = peek_checkpoint(path)
            if peeked is not None:
                found[path.name] = (path, peeked[1])
    return found


@st.cache_resource(show_spinner="Loading the model…")
def _load_shipped(name: str) -> Checkpoint:
    return load_checkpoint(MODELS[name] if name in MODELS else converted_models()[name][0], resolve_device("auto"))


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
    if converted is not None:  # languages from the checkpoint's meta (model.marian records them)
        meta = converted[1]
        languages = f"{meta['source_lang']} → {meta['target_lang']}: " if "target_lang" in meta else ""
        return f"{languages}{name} ({'converted' if 'converted_from' in meta else 'checkpoint in pretrained/'})"
    ckpt = st.session_state.get("uploads", {}).get(name)
    cfg = ckpt.config if ckpt else None
    return f"Uploaded checkpoint ({cfg.d_model}-wide, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers)" \
        if cfg else name


ARCHIVE_SUFFIXES = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz", ".7z", ".rar", ".zst"}


def _shown(name: str) -> str:
    """An uploaded file's name, as the user's browser sent it, for a message: one line, at most 60 characters."""
    name = " ".join(str(name).split())
    return name if len(name) <= 60 else name[:57] + "..."


def load_upload(files: list) -> str:
    """Validate uploaded checkpoint files (weights .safetensors, config .json, tokenizer .model) and keep the
    model in this session. Returns its name; raises CheckpointError with a message for the user.

    Nothing an upload holds is run or unpacked: archives and pickles (.bin, .pt, ...) are refused by name, and
    the three files go through load_checkpoint's checks (sizes, config limits, the safetensors header)."""
    by_suffix = {".safetensors": WEIGHTS, ".json": CONFIG, ".model": TOKENIZER}
    chosen: dict[str, bytes] = {}
    sources: dict[str, str] = {}
    for f in files:
        suffixes = [s.lower() for s in Path(f.name).suffixes]
        suffix = suffixes[-1] if suffixes else ""
        if ARCHIVE_SUFFIXES & set(suffixes):
            raise CheckpointError(f"{_shown(f.name)}: archives are not accepted; upload {WEIGHTS}, {CONFIG} and "
                                  f"{TOKENIZER} as three separate files")
        if suffix in PICKLE_SUFFIXES:
            raise CheckpointError(f"{_shown(f.name)}: refused, only safetensors weights are read ({suffix} files are "
                                  f"pickles, which can run code); upload {WEIGHTS}, {CONFIG} and {TOKENIZER}")
        target = by_suffix.get(suffix)
        if target is None:
            raise CheckpointError(f"{_shown(f.name)}: expected a .safetensors, a .json and a .model file")
        if target in chosen:
            raise CheckpointError(f"{_shown(sources[target])} and {_shown(f.name)}: two {suffix} files; upload one "
                                  "weights, one config and one tokenizer file")
        chosen[target], sources[target] = f.getvalue(), f.name
    missing = [name for name in (WEIGHTS, CONFIG, TOKENIZER) if name not in chosen]
    if missing:
        raise CheckpointError(f"missing {', '.join(missing)}: upload the weights, config and tokenizer together")
    digest = hashlib.sha256(b"".join(chosen[k] for k in sorted(chosen))).hexdigest()[:12]
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in chosen.items():
            (Path(tmp) / name).write_bytes(data)
        try:
            ckpt = load_checkpoint(tmp, resolve_device("auto"))
        except CheckpointError as exc:  # name the files as the user called them
            message = str(exc)
            for target, source in sources.items():
                if source != target:
                    message = message.replace(target, f"{target} (your {_shown(source)})", 1)
            raise CheckpointError(message) from None
    ckpt.path = None
    name = UPLOAD_PREFIX + digest
    st.session_state.setdefault("uploads", {})[name] = ckpt
    return name


def quality_note(ckpt: Checkpoint) -> str | None:
    """A one-line warning when the checkpoint's own test scores say its translations are poor, so nobody
    presents them as good ones; None when it scores well or ships no scores."""
    try:
        scores = test_bleu(ckpt.path)
    except ValueError:
        log.exception("unreadable test scores of %s", ckpt.path)
        return None
    if not is_weak(scores):
        return None
    listed = ", ".join(f"{k} {bleu:.1f}" for k, bleu in scores.items())
    return (f"This small model, trained for a few hours on a 2-core CPU, translates poorly (test BLEU: {listed}; "
            "see Model and training). Its German is often wrong, but every attention weight shown is exactly the "
            "one it used.")


def device_label() -> str:
    return describe(resolve_device("auto"))
