"""Uploading your own checkpoint (sidebar): a good one becomes a model of this session, a bad one is refused
with a message that names the problem (AppTest cannot drive st.file_uploader, so load_upload is called as the
sidebar calls it)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import streamlit as st

from app.resources import MODELS, UPLOAD_PREFIX, load_model, load_upload
from model.checkpoint import CheckpointError


@dataclass
class Uploaded:
    """What st.file_uploader hands over: a name and the bytes."""
    name: str
    data: bytes

    def getvalue(self) -> bytes:
        return self.data


def files(folder: Path, **replace: bytes) -> list[Uploaded]:
    names = ("model.safetensors", "config.json", "tokenizer.model")
    return [Uploaded(n, replace.get(n.split(".")[0], (folder / n).read_bytes())) for n in names]


@pytest.fixture(autouse=True)
def fresh_session():
    st.session_state.pop("uploads", None)
    yield
    st.session_state.pop("uploads", None)


def test_a_good_upload_becomes_a_model_of_this_session():
    name = load_upload(files(MODELS["reverse"]))
    assert name.startswith(UPLOAD_PREFIX)
    ckpt = load_model(name)
    assert ckpt.config == load_model("reverse").config and ckpt.path is None


@pytest.mark.parametrize("broken, message", [
    ({"model": b"not a safetensors file"}, "model.safetensors"),
    ({"config": b"{not json"}, "config.json"),
    ({"tokenizer": b"\x00garbage"}, "tokenizer"),
])
def test_a_corrupt_file_is_refused_with_a_message_naming_it(broken, message):
    with pytest.raises(CheckpointError, match=message):
        load_upload(files(MODELS["reverse"], **broken))
    assert not st.session_state.get("uploads")


def test_a_mismatched_tokenizer_is_refused():
    mixed = files(MODELS["reverse"], tokenizer=(MODELS["en-de"] / "tokenizer.model").read_bytes())
    with pytest.raises(CheckpointError, match="vocab"):
        load_upload(mixed)


def test_missing_or_foreign_files_are_named():
    with pytest.raises(CheckpointError, match="missing config.json"):
        load_upload([f for f in files(MODELS["reverse"]) if f.name != "config.json"])
    with pytest.raises(CheckpointError, match="notes.txt"):
        load_upload(files(MODELS["reverse"]) + [Uploaded("notes.txt", b"hi")])


def test_an_upload_with_nonsense_training_facts_still_opens_every_model_page_section(app_test):
    """meta is free-form JSON: wrong types are dropped at load, so the Model page draws without them."""
    config = json.loads((MODELS["reverse"] / "config.json").read_text())
    config["meta"] = {"warmup": "abc", "steps": "many", "lr_factor": True, "label_smoothing": "a",
                      "epochs": 3, "continued_from": {"step": "x", "lr_factor": 0.5, "earlier": 7}}
    name = load_upload(files(MODELS["reverse"], config=json.dumps(config).encode()))
    ckpt = load_model(name)
    assert ckpt.meta == {"epochs": 3, "continued_from": {"lr_factor": 0.5}}
    at = app_test("app/views/training.py", model_name=name, uploads={name: ckpt})
    assert not at.exception
    assert any("Trained for" in c.value or "label smoothing" in c.value.lower() for c in at.markdown)
