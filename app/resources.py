"""Models and tokenizers: the shipped ones are loaded once per server process and shared read-only by every
session; a checkpoint a user uploads belongs to that user's session only."""
from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path

import streamlit as st

from app.examples import language_name, languages, pair_label
from model.checkpoint import (
    CONFIG,
    PICKLE_SUFFIXES,
    TOKENIZER,
    WEIGHTS,
    Checkpoint,
    CheckpointError,
    checkpoint_snapshots,
    length_penalty_of,
    load_checkpoint,
    peek_checkpoint,
    read_config,
    tokenizer_files,
)
from model.config import DecodeConfig
from model.device import describe, resolve_device
from model.quality import is_weak, shipped_scores
from model.tokenizer import MARIAN_FILES

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


def default_length_penalty(name: str) -> float:
    """Beam search's α for a model: the one chosen on its validation split, else the paper's 0.6 (also when the model
    cannot be read; the pages report that). A model under pretrained/ is read from its config.json alone (no
    weights), an upload from the session."""
    try:
        if name in MODELS:
            return length_penalty_of(read_config(MODELS[name])[1])
        converted = converted_models()
        return length_penalty_of(converted[name][1]) if name in converted else load_model(name).length_penalty
    except (CheckpointError, OSError):
        return DecodeConfig.length_penalty


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
        pair = pair_label(meta)
        return f"{pair + ': ' if pair else ''}{name} " \
               f"({'converted' if 'converted_from' in meta else 'checkpoint in pretrained/'})"
    ckpt = st.session_state.get("uploads", {}).get(name)
    if ckpt is None:
        return name
    cfg, pair = ckpt.config, pair_label(ckpt.meta)
    return f"Uploaded{' ' + pair if pair else ''} ({cfg.d_model}-wide, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} " \
           f"layers, {cfg.n_heads} heads)"


ARCHIVE_SUFFIXES = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz", ".7z", ".rar", ".zst"}
# What a checkpoint is uploaded as, for messages: the weights, the config and one of the two tokenizer layouts.
UPLOAD_FILES = f"{WEIGHTS}, {CONFIG} and the tokenizer ({TOKENIZER}, or Marian's {', '.join(MARIAN_FILES)})"
BY_SUFFIX = {".safetensors": WEIGHTS, ".json": CONFIG, ".model": TOKENIZER}  # a browser may rename a file "x (1).json"


def _shown(name: str) -> str:
    """An uploaded file's name, as the user's browser sent it, for a message: one line, at most 60 characters."""
    name = " ".join(str(name).split())
    return name if len(name) <= 60 else name[:57] + "..."


def _upload_target(name: str) -> str:
    """The checkpoint file an uploaded file is: Marian's tokenizer files by their exact names (two .spm files differ
    only by name), the others by suffix. Archives, pickles and anything else are refused by name, never opened."""
    suffixes = [s.lower() for s in Path(name).suffixes]
    suffix = suffixes[-1] if suffixes else ""
    if ARCHIVE_SUFFIXES & set(suffixes):
        raise CheckpointError(f"{_shown(name)}: archives are not accepted; upload {UPLOAD_FILES} as separate files")
    if suffix in PICKLE_SUFFIXES:
        raise CheckpointError(f"{_shown(name)}: refused, only safetensors weights are read ({suffix} files are "
                              f"pickles, which can run code); upload {UPLOAD_FILES}")
    if Path(name).name.lower() in MARIAN_FILES:
        return Path(name).name.lower()
    if suffix == ".spm":
        raise CheckpointError(f"{_shown(name)}: a Marian tokenizer file must keep its name, {MARIAN_FILES[0]} or "
                              f"{MARIAN_FILES[1]} (which side it is)")
    if suffix not in BY_SUFFIX:
        raise CheckpointError(f"{_shown(name)}: not a checkpoint file; upload {UPLOAD_FILES}")
    return BY_SUFFIX[suffix]


def _chosen_files(files: list) -> tuple[dict[str, bytes], dict[str, str]]:
    """Checkpoint file name -> bytes, and -> the name the user's file had; one file of each kind."""
    chosen: dict[str, bytes] = {}
    sources: dict[str, str] = {}
    for f in files:
        target = _upload_target(f.name)
        if target in chosen:
            raise CheckpointError(f"{_shown(sources[target])} and {_shown(f.name)}: two files for {target}; "
                                  "upload one of each")
        chosen[target], sources[target] = f.getvalue(), f.name
    return chosen, sources


def _check_complete(chosen: dict[str, bytes], folder: Path) -> None:
    """Every file the uploaded config's tokenizer needs is there, and nothing else (the config, written to
    ``folder``, is read and checked first)."""
    if CONFIG not in chosen:
        raise CheckpointError(f"missing {CONFIG}: upload {UPLOAD_FILES} together")
    config, _ = read_config(folder)
    needed = (WEIGHTS, CONFIG, *tokenizer_files(config))
    kind = f"Marian's {', '.join(MARIAN_FILES)}" if config.tokenizer == "marian" else TOKENIZER
    missing = [name for name in needed if name not in chosen]
    if missing:
        raise CheckpointError(f"missing {', '.join(missing)}: upload {WEIGHTS}, {CONFIG} and the tokenizer "
                              f"together (this config's tokenizer is {kind})")
    extra = sorted(set(chosen) - set(needed))
    if extra:
        raise CheckpointError(f"{', '.join(extra)}: not part of this checkpoint (its config's tokenizer is {kind})")


def load_upload(files: list) -> str:
    """Validate uploaded checkpoint files and keep the model in this session. Returns its name; raises
    CheckpointError with a message for the user.

    A checkpoint is its weights (.safetensors), its config (.json) and the tokenizer its config names: this
    project's tokenizer.model, or a converted Marian model's source.spm, target.spm and vocab.json. Nothing an
    upload holds is run or unpacked: archives and pickles (.bin, .pt, ...) are refused by name, and the files go
    through load_checkpoint's checks (sizes, config limits, tokenizer ids, the safetensors header)."""
    chosen, sources = _chosen_files(files)
    digest = hashlib.sha256(b"".join(chosen[k] for k in sorted(chosen))).hexdigest()[:12]
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in chosen.items():
            (Path(tmp) / name).write_bytes(data)
        try:
            _check_complete(chosen, Path(tmp))
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
        scores = shipped_scores(ckpt.path)
    except ValueError:
        log.exception("unreadable test scores of %s", ckpt.path)
        return None
    if not is_weak(scores):
        return None
    listed = ", ".join(f"{k} BLEU {v['bleu']:.1f} / chrF {v['chrf']:.1f}" for k, v in scores.items())
    pair = languages(ckpt.meta)
    output = f"Its {language_name(pair[1])}" if pair else "Its output"
    return (f"This small model, trained for a few hours on a 2-core CPU, translates poorly (test {listed}; "
            f"see Model and training). {output} is often wrong, but every attention weight shown is exactly the "
            "one it used.")


def device_label() -> str:
    return describe(resolve_device("auto"))
