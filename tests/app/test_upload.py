"""Uploading your own checkpoint (sidebar): a good one becomes a model of this session, a bad one is refused
with a message that names the problem (AppTest cannot drive st.file_uploader, so load_upload is called as the
sidebar calls it)."""
from __future__ import annotations

import io
import json
import pickle
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import streamlit as st

from app.models.registry import MODELS, load_model, model_label
from app.models.uploads import UPLOAD_FILES, UPLOAD_PREFIX, load_upload
from model.checkpoints.header import CheckpointError
from tests.marian_helpers import marian_checkpoint


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
    with pytest.raises(CheckpointError, match=r"missing config\.json"):
        load_upload([f for f in files(MODELS["reverse"]) if f.name != "config.json"])
    with pytest.raises(CheckpointError, match=r"notes\.txt"):
        load_upload([*files(MODELS["reverse"]), Uploaded("notes.txt", b"hi")])


def test_an_upload_with_nonsense_training_facts_still_opens_every_model_page_section(app_test):
    """meta is free-form JSON: wrong types are dropped at load, so the Model page draws without them."""
    config = json.loads((MODELS["reverse"] / "config.json").read_text())
    config["meta"] = {"warmup": "abc", "steps": "many", "lr_factor": True, "label_smoothing": "a",
                      "epochs": 3, "continued_from": {"step": "x", "lr_factor": 0.5, "earlier": 7}}
    name = load_upload(files(MODELS["reverse"], config=json.dumps(config).encode()))
    ckpt = load_model(name)
    assert ckpt.meta == {"epochs": 3, "continued_from": {"lr_factor": 0.5}}
    at = app_test("app/views/model_training.py", model_name=name, uploads={name: ckpt})
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
    refused_upload([*uploaded, Uploaded(name, pickle.dumps(Plant(marker), protocol=4))],
                   f"{name}: refused, only safetensors weights are read ({suffix} files are pickles, which can run "
                   f"code); upload {UPLOAD_FILES}")
    assert not marker.exists()


@pytest.mark.parametrize("name", ["checkpoint.zip", "checkpoint.tar", "checkpoint.tar.gz", "en-de.tgz",
                                  "model.safetensors.zip", "checkpoint.7z"])
def test_an_archive_is_refused_with_a_message_naming_it(name):
    archive = zipped(**{f.name: f.data for f in files(MODELS["reverse"])})
    refused_upload([Uploaded(name, archive)],
                   f"{name}: archives are not accepted; upload {UPLOAD_FILES} as separate files")


def test_a_header_claiming_gigabytes_is_refused_under_the_users_file_name():
    data = (MODELS["reverse"] / "model.safetensors").read_bytes()
    length = int.from_bytes(data[:8], "little")
    header, body = json.loads(data[8:8 + length]), data[8 + length:]
    entry = max((v for k, v in header.items() if k != "__metadata__"), key=lambda v: v["data_offsets"][1])
    entry["data_offsets"][1] = entry["data_offsets"][0] + 12 * 2**30
    raw = json.dumps(header).encode()
    hostile = len(raw).to_bytes(8, "little") + raw + body
    uploaded = [Uploaded("en-de.safetensors", hostile), *files(MODELS["reverse"])[1:]]
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
    uploaded = [*files(MODELS["reverse"]), Uploaded("other.json", b"{}")]
    refused_upload(uploaded, "config.json and other.json: two files for config.json; upload one of each")


def test_the_sidebar_says_why_and_keeps_the_shipped_model(app_test, monkeypatch, tmp_path):
    """The user's view: a pickle posing as the weights gives "Cannot use this checkpoint: ..." and the shipped
    model stays selected (st.file_uploader is replaced: AppTest cannot drive it)."""
    marker = tmp_path / "pwned"
    hostile = files(MODELS["reverse"], model=pickle.dumps(Plant(marker), protocol=4))
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: hostile)
    at = app_test("app/views/positional.py", upload_open=True)
    at.button(key="upload_load").click().run()
    assert not at.exception
    assert [re.sub(r"\\(.)", r"\1", e.value) for e in at.error] == [  # as the reader sees the escaped Markdown
        "Cannot use this checkpoint: model.safetensors is not a valid safetensors file: it is a Python pickle "
        "(PyTorch's .bin/.pt format), which can run code and is never loaded"]
    assert at.session_state["model_name"] == "reverse"
    assert "uploads" not in at.session_state or not at.session_state["uploads"]
    assert not marker.exists()


# ---------------------------------------------------------------- a converted Marian (opus-mt) checkpoint

MARIAN_NAMES = ("model.safetensors", "config.json", "source.spm", "target.spm", "vocab.json")


@pytest.fixture(scope="module")
def marian_folder(tmp_path_factory) -> Path:
    return marian_checkpoint(tmp_path_factory.mktemp("marian") / "opus-mt-en-de", n_heads=4, n_layers=2)


def marian_files(folder: Path, **replace: bytes) -> list[Uploaded]:
    return [Uploaded(n, replace.get(n, (folder / n).read_bytes())) for n in MARIAN_NAMES]


def test_the_upload_message_names_every_tokenizer_layout():
    assert UPLOAD_FILES == ("model.safetensors, config.json and the tokenizer (tokenizer.model, Marian's "
                            "source.spm, target.spm, vocab.json, or a converted Hugging Face model's tokenizer.json "
                            "or M2M100's sentencepiece.bpe.model, vocab.json, tokenizer_config.json)")


def test_a_converted_marian_checkpoint_uploads_as_its_files_and_is_labelled_by_its_languages(marian_folder):
    name = load_upload(marian_files(marian_folder))
    ckpt = load_model(name)
    assert ckpt.config.tokenizer == "marian" and ckpt.config.bos_id == ckpt.config.pad_id
    assert ckpt.meta["source_lang"] == "en" and ckpt.path is None
    assert model_label(name) == "Uploaded English → German (32-wide, 2+2 layers, 4 heads)"
    assert load_upload(list(reversed(marian_files(marian_folder)))) == name  # the order of the files does not matter


@pytest.mark.parametrize("drop, message", [
    ("vocab.json", "missing vocab.json: upload model.safetensors, config.json and the tokenizer together (this "
                   "config's tokenizer is Marian's source.spm, target.spm, vocab.json)"),
    ("target.spm", "missing target.spm: upload model.safetensors, config.json and the tokenizer together (this "
                   "config's tokenizer is Marian's source.spm, target.spm, vocab.json)"),
    ("config.json", f"missing config.json: upload {UPLOAD_FILES} together"),
])
def test_a_marian_upload_missing_a_file_names_it(marian_folder, drop, message):
    refused_upload([f for f in marian_files(marian_folder) if f.name != drop], message)


def test_files_of_the_other_tokenizer_layout_are_named(marian_folder):
    refused_upload([*marian_files(marian_folder), Uploaded("tokenizer.model", b"x")],
                   "tokenizer.model: not part of this checkpoint (its config's tokenizer is Marian's source.spm, "
                   "target.spm, vocab.json)")
    refused_upload([*files(MODELS["reverse"]), Uploaded("source.spm", b"x")],
                   "source.spm: not part of this checkpoint (its config's tokenizer is tokenizer.model)")


def test_a_renamed_marian_tokenizer_file_is_refused_by_name(marian_folder):
    renamed = [Uploaded("source (1).spm" if f.name == "source.spm" else f.name, f.data)
               for f in marian_files(marian_folder)]
    refused_upload(renamed, "source (1).spm: a Marian tokenizer file must keep its name, source.spm or target.spm "
                            "(which side it is)")


def test_a_hugging_face_folders_config_says_to_convert_it_first(marian_folder):
    hf = json.dumps({"model_type": "marian", "architectures": ["MarianMTModel"], "d_model": 512}).encode()
    refused_upload(marian_files(marian_folder, **{"config.json": hf}),
                   "config.json is a Hugging Face config (model_type 'marian'), not this project's checkpoint; "
                   "convert a Marian (opus-mt) folder first: python -m model convert-marian FOLDER --out "
                   "pretrained/NAME")


@pytest.mark.parametrize("name, data, message", [
    ("vocab.json", b"{not json", "vocab.json is not valid JSON (JSONDecodeError)"),
    ("vocab.json", json.dumps({"</s>": 0, "<unk>": 1}).encode(), "vocab.json has no <pad>"),
    ("source.spm", b"\x00garbage", "source.spm: not a valid sentencepiece model"),
    ("target.spm", pickle.dumps(Plant(Path("/nonexistent/pwned")), protocol=4),
     "target.spm: not a valid sentencepiece model"),
])
def test_a_broken_or_hostile_marian_tokenizer_file_is_refused_naming_it(marian_folder, name, data, message):
    with pytest.raises(CheckpointError) as info:
        load_upload(marian_files(marian_folder, **{name: data}))
    assert str(info.value).startswith(message)
    assert not st.session_state.get("uploads")


def test_a_vocabulary_that_contradicts_the_config_is_refused(marian_folder):
    vocab = json.loads((marian_folder / "vocab.json").read_text())
    pad = vocab.pop("<pad>")
    vocab = {"<pad>": 2, **{k: (v + 1 if v >= 2 else v) for k, v in vocab.items()}}
    assert sorted(vocab.values()) == list(range(pad + 1))
    with pytest.raises(CheckpointError, match=f"vocab.json does not match config.json: <pad> is 2, config.json says "
                                              f"pad_id {pad}"):
        load_upload(marian_files(marian_folder, **{"vocab.json": json.dumps(vocab).encode()}))


def test_the_sidebar_loads_a_marian_upload_and_selects_it(app_test, monkeypatch, marian_folder):
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: marian_files(marian_folder))
    at = app_test("app/views/positional.py", upload_open=True)
    at.button(key="upload_load").click().run()
    assert not at.exception and not at.error
    assert at.session_state["model_name"].startswith(UPLOAD_PREFIX)
    assert any("d_{model}/2" in latex.value for latex in at.latex)  # the page draws the uploaded Marian model


def test_an_uploaded_file_name_is_shown_as_text_not_markdown(app_test, monkeypatch):
    """A file name is whatever the visitor's browser sent: as Markdown it could be a link inside the app."""
    hostile = [*files(MODELS["reverse"]), Uploaded("[Log in again](http://127.0.0.1:9/x).json", b"{}")]
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: hostile)
    at = app_test("app/views/positional.py", upload_open=True)
    at.button(key="upload_load").click().run()
    assert not at.exception and len(at.error) == 1
    assert r"\[Log in again\]\(http" in at.error[0].value


def test_an_uploaded_checkpoint_of_another_language_replaces_the_stock_sentence(app_test, monkeypatch):
    """The English default fed to an uploaded letter-reversal model would be one <unk> after another: the box
    takes the new model's own example instead (a sentence the user typed stays)."""
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: files(MODELS["reverse"]))
    at = app_test("app/views/positional.py", model_name="en-de", upload_open=True)
    assert at.session_state["text"] == "My brother has bought a new house in the city."
    at.button(key="upload_load").click().run()
    assert not at.exception and at.session_state["model_name"].startswith(UPLOAD_PREFIX)
    assert at.session_state["text"] == "h e l l o w o r l d"  # the reversal model's first example
