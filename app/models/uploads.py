"""A checkpoint a user uploads: which file is which, what is refused by name, and the checks it passes before it
joins that user's session (app.models.registry.load_model then serves it under its "upload:<hash>" name)."""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import streamlit as st

from model.checkpoints.files import (
    CONFIG,
    PICKLE_SUFFIXES,
    TOKENIZER,
    WEIGHTS,
    load_checkpoint,
    read_config,
    tokenizer_files,
)
from model.checkpoints.header import CheckpointError
from model.serving.device import resolve_device
from model.tokenization.huggingface import HF_TOKENIZER_FILE
from model.tokenization.m2m100 import M2M100_FILES
from model.tokenization.marian import MARIAN_FILES

UPLOAD_PREFIX = "upload:"
ARCHIVE_SUFFIXES = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz", ".7z", ".rar", ".zst"}
# What a checkpoint is uploaded as, for messages: the weights, the config and one of the two tokenizer layouts.
UPLOAD_FILES = (f"{WEIGHTS}, {CONFIG} and the tokenizer ({TOKENIZER}, Marian's {', '.join(MARIAN_FILES)}, or a "
                f"converted Hugging Face model's {HF_TOKENIZER_FILE} or M2M100's {', '.join(M2M100_FILES)})")
# tokenizer files told from the config by name, not by suffix
EXACT_NAMES = tuple(dict.fromkeys((*MARIAN_FILES, HF_TOKENIZER_FILE, *M2M100_FILES)))
BY_SUFFIX = {".safetensors": WEIGHTS, ".json": CONFIG, ".model": TOKENIZER}  # a browser may rename a file "x (1).json"


def _shown(name: str) -> str:
    """An uploaded file's name, as the user's browser sent it, for a message: one line, at most 60 characters."""
    name = " ".join(str(name).split())
    return name if len(name) <= 60 else name[:57] + "..."


def _upload_target(name: str) -> str:
    """The checkpoint file an uploaded file is: Marian's tokenizer files and tokenizer.json by their exact names (two
    .spm files differ only by name; two .json files too), the others by suffix. Archives, pickles and anything else
    are refused by name, never opened."""
    suffixes = [s.lower() for s in Path(name).suffixes]
    suffix = suffixes[-1] if suffixes else ""
    if ARCHIVE_SUFFIXES & set(suffixes):
        raise CheckpointError(f"{_shown(name)}: archives are not accepted; upload {UPLOAD_FILES} as separate files")
    if suffix in PICKLE_SUFFIXES:
        raise CheckpointError(f"{_shown(name)}: refused, only safetensors weights are read ({suffix} files are "
                              f"pickles, which can run code); upload {UPLOAD_FILES}")
    if Path(name).name.lower() in EXACT_NAMES:
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
    kind = {"marian": f"Marian's {', '.join(MARIAN_FILES)}", "hf": HF_TOKENIZER_FILE,
            "m2m100": f"M2M100's {', '.join(M2M100_FILES)}"}.get(config.tokenizer, TOKENIZER)
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
