"""One entry point for converting a Hugging Face encoder-decoder folder: config.json's model_type picks the converter.

    python -m model convert HF_DIR --out pretrained/NAME

Each family's converter maps its weights onto this project's Transformer and records what differs as named
ModelConfig options and meta (model.huggingface.marian for Marian opus-mt, model.huggingface.bart for BART, mBART,
M2M100 and NLLB, model.huggingface.t5 for T5 and Flan-T5). A folder of a type without a converter is refused with one
line naming the types that have one,
before anything is written.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from model.checkpoints.header import CheckpointError
from model.huggingface.bart import convert_bart
from model.huggingface.folder import (
    HF_CONFIG,
    Conversion,
    Progress,
    check_folder_files,
    hub_cache,
    read_json,
    resolve_folder,
)
from model.huggingface.marian import convert_marian
from model.huggingface.t5 import convert_t5

CONVERTERS: dict[str, Callable[..., Conversion]] = {  # each (folder, out, progress=None)
    "marian": convert_marian, "bart": convert_bart, "mbart": convert_bart, "m2m_100": convert_bart, "t5": convert_t5}


def model_type(folder: Path) -> str:
    """config.json's model_type, checked to name a family with a converter."""
    if not folder.is_dir():
        raise CheckpointError(f"Hugging Face folder not found: {folder} (nor a model of that name in Hugging Face's "
                              f"cache, {hub_cache()})")
    found = read_json(folder / HF_CONFIG).get("model_type")
    supported = ", ".join(sorted(CONVERTERS))
    if found is None:
        raise CheckpointError(f"{HF_CONFIG} names no model_type; supported: {supported}")
    if found not in CONVERTERS:
        raise CheckpointError(f"{HF_CONFIG}: model_type {str(found)[:40]!r} cannot be converted; "
                              f"supported: {supported}")
    return found


def convert(folder: str | Path, out: str | Path, progress: Progress | None = None) -> Conversion:
    """Convert the folder with its family's converter (refused with a one-line CheckpointError otherwise), telling
    ``progress`` (when given) each of model.huggingface.folder.STAGES as it starts."""
    folder = resolve_folder(folder)
    if folder.is_dir():
        check_folder_files(folder)  # before config.json is read for its model_type
    return CONVERTERS[model_type(folder)](folder, out, progress=progress)
