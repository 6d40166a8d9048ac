"""The sidebar's converter: a Hugging Face model the server already has, turned into a model of the picker.

A lecture room shares one server, so a visitor never types a path: the models of Hugging Face's cache (HF_HUB_CACHE,
else HF_HOME/hub, else ~/.cache/huggingface/hub) and the folders holding a config.json directly under the roots the
operator names in ATTENTION_EXPLORER_HF_FOLDERS (paths joined by os.pathsep; unset, no folder is offered) are listed
by the server and picked from that list; a folder whose real path leaves its root (a symbolic link) is not listed.
Nothing is downloaded. A conversion (model.huggingface.convert) writes into pretrained/<safe name> under a hidden
temporary name and is renamed when complete, so the model list never shows half a model and a refused conversion leaves
nothing
behind. Converting a large model takes minutes and holds its weights in memory twice: one runs at a time,
server-wide.
"""
from __future__ import annotations

import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from app.checks.escape import md
from app.models import registry as resources
from app.models.registry import converted_models, log
from model.checkpoints.files import peek_checkpoint
from model.checkpoints.header import CheckpointError
from model.huggingface.convert import CONVERTERS, convert
from model.huggingface.folder import HF_CONFIG, STAGES, Progress, cached_models, hub_cache, model_type_of, source_name

FOLDERS_ENV = "ATTENTION_EXPLORER_HF_FOLDERS"
MAX_LISTED = 200  # folders listed per root
MAX_NAME = 64  # characters of a model's name under pretrained/
UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_LOCK = threading.Lock()  # one conversion at a time in this server process


class ConversionBusy(Exception):
    """Another visitor's conversion is running."""


@dataclass(frozen=True)
class Source:
    """A model a visitor may convert: what the list shows, the folder read, config.json's model_type."""

    label: str  # a model id ("facebook/bart-base") or "folder <root name>/<folder name>"
    folder: Path
    model_type: str | None

    @property
    def name(self) -> str:
        """The converted model's directory name under pretrained/."""
        return safe_name(self.label)

    @property
    def convertible(self) -> bool:
        return self.model_type in CONVERTERS


def safe_name(text: str) -> str:
    """A directory name for a model id or folder: its last part, every run of characters outside [A-Za-z0-9._-]
    one "-", no "..", no leading or trailing "." or "-", at most MAX_NAME characters, never empty."""
    name = UNSAFE.sub("-", text.rstrip("/").rsplit("/", 1)[-1])
    name = re.sub(r"\.{2,}", ".", name).strip(".-")[:MAX_NAME].strip(".-")
    return name or "model"


def folder_roots() -> list[Path]:
    """The roots the operator allows folders from (ATTENTION_EXPLORER_HF_FOLDERS), real paths; [] when unset."""
    return [Path(part).expanduser().resolve() for part in os.environ.get(FOLDERS_ENV, "").split(os.pathsep)
            if part.strip()]


def folder_sources(roots: list[Path]) -> list[Source]:
    """The folders holding a config.json directly under each root whose real path stays inside that root."""
    found = []
    for root in roots:
        try:
            children = sorted(root.iterdir())[:MAX_LISTED] if root.is_dir() else []
        except OSError:
            continue
        for child in children:
            real = child.resolve()
            if real.is_relative_to(root) and real != root and (real / HF_CONFIG).is_file():
                found.append(Source(label=f"folder {root.name}/{child.name}", folder=real,
                                    model_type=model_type_of(real)))
    return found


@st.cache_data(ttl=10, show_spinner=False)  # every visitor's sidebar asks on every run
def _listed(cache: str, roots: tuple[str, ...]) -> list[Source]:
    """The cache's models and the roots' folders; ``cache`` (hub_cache()) keys the cached answer to where it looked."""
    models = [Source(label=m.model_id, folder=m.folder, model_type=m.model_type) for m in cached_models()]
    return models + folder_sources([Path(root) for root in roots])


def sources() -> dict[str, Source]:
    """What a visitor may convert, by label: the cache's models, then the allowed folders; convertible ones first."""
    listed = _listed(str(hub_cache()), tuple(str(root) for root in folder_roots()))
    return {s.label: s for s in sorted(listed, key=lambda s: not s.convertible)}


@contextmanager
def conversion_slot() -> Iterator[None]:
    """Hold the server's one conversion slot; ConversionBusy at once when another conversion holds it."""
    if not _LOCK.acquire(blocking=False):
        raise ConversionBusy
    try:
        yield
    finally:
        _LOCK.release()


def existing(source: Source) -> bool:
    """Whether pretrained/<name> already holds this model (converted from the same model id or folder name): the
    conversion is then not run again. A directory holding anything else there is refused, never overwritten."""
    target = resources.PRETRAINED / source.name
    if not target.exists():
        return False
    peeked = peek_checkpoint(target)
    if peeked is not None and peeked[1].get("converted_from") == source_name(source.folder):
        return True
    raise CheckpointError(f"pretrained/{source.name} already holds another model; the server's operator can rename "
                          "or remove it")


def convert_source(source: Source, progress: Progress | None = None) -> bool:
    """Convert ``source`` into pretrained/<name> (one conversion at a time, ConversionBusy otherwise), telling
    ``progress`` each stage; False when it was already there. CheckpointError names what is wrong, with the
    server's paths replaced by the source's label and the model's name."""
    if existing(source):
        return False
    with conversion_slot():
        if existing(source):  # converted by another visitor while this one waited to press the button
            return False
        scratch = resources.PRETRAINED / f".converting-{source.name}-{uuid.uuid4().hex[:8]}"
        try:
            convert(source.folder, scratch, progress=progress)
            scratch.rename(resources.PRETRAINED / source.name)
        except CheckpointError as exc:
            message = str(exc).replace(str(scratch), f"pretrained/{source.name}")
            raise CheckpointError(message.replace(str(source.folder), source.label)) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    converted_models.clear()  # every visitor's model list shows it now
    return True


def _describe(source: Source) -> str:
    """The caption under the picker: the whole id (the box cuts a long one), its type and where it goes."""
    kind = md(source.model_type or "no model_type")
    if not source.convertible:
        return f"**{md(source.label)}**: {kind}, a type without a converter."
    return f"**{md(source.label)}**: {kind}, into pretrained/{md(source.name)}."


def _convert_with_progress(source: Source) -> tuple[str, str]:
    """Convert inside a status box whose bar names each stage: ("success", what was done), or the alert kind and the
    one line to show once the box is gone."""
    slot = st.empty()
    with slot.status(f"Converting {md(source.label, 80)}", expanded=True) as status:
        bar = st.progress(0.0, text=f"1/{len(STAGES)}: {STAGES[0]}")

        def progress(stage: str) -> None:
            done = STAGES.index(stage)
            bar.progress(done / len(STAGES), text=f"{done + 1}/{len(STAGES)}: {stage}")
        try:
            fresh = convert_source(source, progress)
        except ConversionBusy:
            failure = ("warning", "A conversion is running (one at a time on this server): try again in a moment.")
        except CheckpointError as exc:
            failure = ("error", f"Cannot convert {md(source.label, 80)}: {md(exc, 400)}")
        except Exception:  # anything else is our bug: log it, keep the app alive
            log.exception("converting %s failed", source.folder)
            failure = ("error", f"Cannot convert {md(source.label, 80)}: it could not be read (the server's log says "
                                "why).")
        else:
            status.update(label="Converted", state="complete")
            done = f"Converted {source.label} into" if fresh else f"{source.label} is already in"
            return "success", f"{done} pretrained/{source.name}: selected above."
    slot.empty()
    return failure


def convert_ui() -> None:
    """The sidebar's expander: pick a cached model or an allowed folder, press Convert, watch the stages. Lazy: the
    caches are scanned only while it is open."""
    with st.expander("Open a Hugging Face model", key="hf_open", on_change="rerun") as box:
        if not box.open:
            return
        if "_hf_done" in st.session_state:
            st.success(md(st.session_state.pop("_hf_done")))
        found = sources()
        roots = folder_roots()
        st.caption(f"Models in this server's Hugging Face cache{' and folders' if roots else ''} ("
                   f"{', '.join(sorted(CONVERTERS))}), converted into pretrained/ and added to the Model list. Nothing "
                   "is downloaded.")
        if not roots:
            st.caption(f"No folders offered: the operator lists their roots in the environment variable "
                       f"`{FOLDERS_ENV}` (joined by `{os.pathsep}`).")  # code: set in one piece, not broken mid-name
        if not found:
            st.info("No model found in Hugging Face's cache on this server.")
            return
        key = st.selectbox("Model to convert", list(found), key="hf_source")
        st.caption(_describe(found[key]))
        if st.button("Convert", key="hf_convert"):
            kind, line = _convert_with_progress(found[key])
            if kind == "success":  # selected after a rerun: the picker is already drawn in this run
                st.session_state["_hf_done"] = line
                st.session_state["_pending_model"] = found[key].name
                st.rerun()
            (st.warning if kind == "warning" else st.error)(line)
