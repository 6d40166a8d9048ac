"""Hugging Face's cache as the app's converter reads it (model.huggingface.folder.cached_models: ids, snapshots,
model_types,
nothing downloaded) and the stages a conversion reports as it runs (model.huggingface.folder.STAGES)."""
from __future__ import annotations

import json

import pytest

from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.huggingface.convert import convert
from model.huggingface.folder import STAGES, cached_models, hub_cache, hub_id, source_name
from tests.bart_helpers import bart_folder, cache_model


@pytest.fixture
def cache(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    cache_model(hub, "someone/tiny-bart", bart_folder(tmp_path / "bart"))
    gpt = tmp_path / "gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    cache_model(hub, "openai/gpt-tiny", gpt)
    (hub / "datasets--someone--corpus" / "snapshots" / "1").mkdir(parents=True)  # not a model
    (hub / "models--someone--half-downloaded" / "snapshots" / "1").mkdir(parents=True)  # no config.json yet
    return hub


def test_the_cache_is_found_where_hugging_faces_libraries_put_it(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert hub_cache() == tmp_path / "elsewhere"


def test_cached_models_are_listed_by_id_with_their_type(cache):
    listed = {m.model_id: m for m in cached_models()}
    assert {k: m.model_type for k, m in listed.items()} == {"openai/gpt-tiny": "gpt2", "someone/tiny-bart": "bart"}
    snapshot = listed["someone/tiny-bart"].folder
    assert snapshot == cache / "models--someone--tiny-bart" / "snapshots" / "0123abcd"
    assert hub_id(snapshot) == source_name(snapshot) == "someone/tiny-bart"
    assert hub_id(cache) is None and source_name(cache) == "hub"


def test_no_cache_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "absent"))
    assert cached_models() == []


def test_refs_main_cannot_lead_out_of_the_snapshots(cache, tmp_path):
    """refs/main naming '..' or a path: only a lone snapshot is read, else the model is not listed."""
    repo = cache / "models--someone--tiny-bart"
    (repo / "refs" / "main").write_text("../../..")
    assert next(m for m in cached_models() if m.model_id == "someone/tiny-bart").folder.parent == repo / "snapshots"
    (repo / "snapshots" / "other").mkdir()
    assert "someone/tiny-bart" not in {m.model_id for m in cached_models()}


def test_a_conversion_reports_every_stage_in_order(cache, tmp_path):
    seen = []
    conversion = convert("someone/tiny-bart", tmp_path / "out", progress=seen.append)
    assert seen == list(STAGES)
    assert load_checkpoint(conversion.path).meta["converted_from"] == "someone/tiny-bart"


def test_a_refused_conversion_stops_at_the_stage_that_failed(cache, tmp_path):
    snapshot = cache / "models--someone--tiny-bart" / "snapshots" / "0123abcd"
    (snapshot / "model.safetensors").write_bytes(b"not safetensors")
    seen = []
    with pytest.raises(CheckpointError, match="is not a valid safetensors file"):
        convert(snapshot, tmp_path / "out", progress=seen.append)
    assert seen == list(STAGES[:3]) and not (tmp_path / "out").exists()
