"""Uploading your own checkpoint (sidebar): a good one becomes a model of this session, a bad one is refused
with a message that names the problem (AppTest cannot drive st.file_uploader, so load_upload is called as the
sidebar calls it)."""
from __future__ import annotations

import io
import json
import pickle
import zipfile
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


# ---------------------------------------------------------------- hostile uploads ("Reliability under abuse")

class Plant:
    """Unpickling this calls open(marker, "w"), creating the marker file: what a malicious pickle does."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def zipped(**members: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def refused_upload(uploaded: list[Uploaded], message: str) -> None:
    """load_upload raises exactly ``message``, nothing joins the session, and the shipped model still serves."""
    with pytest.raises(CheckpointError) as info:
        load_upload(uploaded)
    assert str(info.value) == message
    assert not st.session_state.get("uploads")
    assert load_model("reverse").config.vocab_size == 30


def test_a_pickle_uploaded_as_the_weights_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Plant(marker), protocol=4)
    assert payload[:2] == b"\x80\x04"
    refused_upload(files(MODELS["reverse"], model=payload),
                   "model.safetensors is not a valid safetensors file: it is a Python pickle (PyTorch's .bin/.pt "
                   "format), which can run code and is never loaded")
    assert not marker.exists()


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "weights.PTH", "last.ckpt"])
def test_pickled_weights_are_refused_by_name_and_never_run(tmp_path, name):
    marker = tmp_path / "pwned"
    suffix = Path(name).suffix.lower()
    uploaded = [f for f in files(MODELS["reverse"]) if f.name != "model.safetensors"]
    refused_upload(uploaded + [Uploaded(name, pickle.dumps(Plant(marker), protocol=4))],
                   f"{name}: refused, only safetensors weights are read ({suffix} files are pickles, which can run "
                   "code); upload model.safetensors, config.json and tokenizer.model")
    assert not marker.exists()


@pytest.mark.parametrize("name", ["checkpoint.zip", "checkpoint.tar", "checkpoint.tar.gz", "en-de.tgz",
                                  "model.safetensors.zip", "checkpoint.7z"])
def test_an_archive_is_refused_with_a_message_naming_it(name):
    archive = zipped(**{f.name: f.data for f in files(MODELS["reverse"])})
    refused_upload([Uploaded(name, archive)],
                   f"{name}: archives are not accepted; upload model.safetensors, config.json and tokenizer.model as "
                   "three separate files")


def test_a_header_claiming_gigabytes_is_refused_under_the_users_file_name():
    data = (MODELS["reverse"] / "model.safetensors").read_bytes()
    length = int.from_bytes(data[:8], "little")
    header, body = json.loads(data[8:8 + length]), data[8 + length:]
    entry = max((v for k, v in header.items() if k != "__metadata__"), key=lambda v: v["data_offsets"][1])
    entry["data_offsets"][1] = entry["data_offsets"][0] + 12 * 2**30
    raw = json.dumps(header).encode()
    hostile = len(raw).to_bytes(8, "little") + raw + body
    uploaded = [Uploaded("en-de.safetensors", hostile)] + files(MODELS["reverse"])[1:]
    refused_upload(uploaded, "model.safetensors (your en-de.safetensors): header claims 12 GB of tensor data but the "
                             "file has only 920 kB after its header (truncated or corrupt)")


@pytest.mark.parametrize("change, reason", [
    ({"max_len": 10**9}, "ModelConfig.max_len is 1000000000, more than the limit of 4096"),
    ({"n_encoder_layers": 10**6}, "ModelConfig.n_encoder_layers is 1000000, more than the limit of 48"),
    ({"d_model": True}, "ModelConfig.d_model must be a positive integer, got True"),
    ({"n_heads": 3}, "d_model (64) must be divisible by n_heads (3)"),
])
def test_an_absurd_or_inconsistent_config_is_refused(change, reason):
    config = json.loads((MODELS["reverse"] / "config.json").read_text())
    config["model"].update(change)
    refused_upload(files(MODELS["reverse"], config=json.dumps(config).encode()), f"config.json: {reason}")


def test_two_files_of_one_kind_are_refused():
    uploaded = files(MODELS["reverse"]) + [Uploaded("other.json", b"{}")]
    refused_upload(uploaded, "config.json and other.json: two .json files; upload one weights, one config and one "
                             "tokenizer file")


def test_the_sidebar_says_why_and_keeps_the_shipped_model(app_test, monkeypatch, tmp_path):
    """The user's view: a pickle posing as the weights gives "Cannot use this checkpoint: ..." and the shipped
    model stays selected (st.file_uploader is replaced: AppTest cannot drive it)."""
    marker = tmp_path / "pwned"
    hostile = files(MODELS["reverse"], model=pickle.dumps(Plant(marker), protocol=4))
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: hostile)
    at = app_test("app/views/positional.py")
    at.button(key="upload_load").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Cannot use this checkpoint: model.safetensors is not a valid safetensors file: it is a Python pickle "
        "(PyTorch's .bin/.pt format), which can run code and is never loaded"]
    assert at.session_state["model_name"] == "reverse"
    assert "uploads" not in at.session_state or not at.session_state["uploads"]
    assert not marker.exists()
