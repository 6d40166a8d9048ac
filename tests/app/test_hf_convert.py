"""The sidebar's converter (app.models.converter): a model of the server's Hugging Face cache, or a folder under a root
the operator allows, converted into pretrained/ with its stages shown, then selected and translating; one conversion at
a time server-wide; a refusal is one error line and leaves nothing behind; a visitor never names a path."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st_

from app.models import converter as hf_convert
from app.models import registry as resources
from app.models.converter import FOLDERS_ENV, ConversionBusy, conversion_slot, safe_name
from app.serving.scheduler import store
from tests.bart_helpers import bart_folder, cache_model

SOURCE, UNSUPPORTED = "someone/tiny-bart", "openai/gpt-tiny"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A Hugging Face cache with a tiny BART and a model of a type without a converter; pretrained/ in tmp_path."""
    cache = tmp_path / "hub"
    cache_model(cache, SOURCE, bart_folder(tmp_path / "bart"))
    cache_model(cache, UNSUPPORTED, bart_folder(tmp_path / "gpt", model_type="gpt2"))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv(FOLDERS_ENV, raising=False)
    (tmp_path / "pretrained").mkdir()
    monkeypatch.setattr(resources, "PRETRAINED", tmp_path / "pretrained")
    resources.converted_models.clear()
    yield cache
    resources.converted_models.clear()
    resources._load_shipped.clear()  # the converted model's name may be another test's next time
    store.clear()


def written(tmp_path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "pretrained").iterdir())  # hidden scratch folders included


def press_convert(at, label: str):
    at.selectbox(key="hf_source").set_value(label)
    return at.button(key="hf_convert").click().run()


def errors(at) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]  # the text without Markdown's escapes


def test_a_cached_model_is_converted_selected_and_translates(app_test, hub, tmp_path):
    at = app_test(hf_open=True)
    assert at.selectbox(key="hf_source").options == [SOURCE, UNSUPPORTED]  # convertible ones first
    assert any("into pretrained/tiny-bart" in c.value.replace("\\", "") for c in at.caption)
    assert any(FOLDERS_ENV in c.value.replace("\\", "") for c in at.caption)  # no folders offered, and how to
    at = press_convert(at, SOURCE)
    assert not at.exception and not at.error, errors(at)
    assert written(tmp_path) == ["tiny-bart"] and at.session_state["model_name"] == "tiny-bart"
    assert "tiny-bart" in at.selectbox(key="model_name").options[-1]
    assert any("Converted someone/tiny-bart into pretrained/tiny-bart" in s.value.replace("\\", "") for s in at.success)
    at.text_area(key="text").input("The house is small.")  # a model without languages brings no example
    at = at.button(key="translate").click().run()
    assert not at.exception and not at.error, errors(at)
    assert store().get(at.session_state["last_request"]).target_pieces


def test_converting_the_same_model_again_selects_the_one_there(app_test, hub, tmp_path):
    at = press_convert(app_test(hf_open=True), SOURCE)
    stamp = (tmp_path / "pretrained" / "tiny-bart" / "model.safetensors").stat().st_mtime_ns
    at.session_state["model_name"] = "reverse"
    at = press_convert(at.run(), SOURCE)
    assert not at.error and at.session_state["model_name"] == "tiny-bart"
    assert any(f"{SOURCE} is already in pretrained/tiny-bart" in s.value.replace("\\", "") for s in at.success)
    assert (tmp_path / "pretrained" / "tiny-bart" / "model.safetensors").stat().st_mtime_ns == stamp


def test_another_model_of_the_same_name_is_never_overwritten(app_test, hub, tmp_path):
    (tmp_path / "pretrained" / "tiny-bart").mkdir()
    (tmp_path / "pretrained" / "tiny-bart" / "notes.txt").write_text("mine")
    at = press_convert(app_test(hf_open=True), SOURCE)
    assert not at.exception and len(at.error) == 1
    assert "pretrained/tiny-bart already holds another model" in errors(at)[0]
    assert (tmp_path / "pretrained" / "tiny-bart" / "notes.txt").read_text() == "mine"


def test_an_unsupported_type_is_one_error_line_and_writes_nothing(app_test, hub, tmp_path):
    at = app_test(hf_open=True)
    at.selectbox(key="hf_source").set_value(UNSUPPORTED).run()
    assert any("gpt2, a type without a converter" in c.value.replace("\\", "") for c in at.caption)
    at = at.button(key="hf_convert").click().run()
    assert not at.exception and len(at.error) == 1
    assert "Cannot convert openai/gpt-tiny: config.json: model_type 'gpt2' cannot be converted" in errors(at)[0]
    assert written(tmp_path) == [] and at.session_state["model_name"] == "reverse"


def test_a_broken_model_names_its_file_not_the_servers_paths(app_test, hub, tmp_path):
    snapshot = next((hub / "models--someone--tiny-bart" / "snapshots").iterdir())
    (snapshot / "tokenizer.json").unlink()
    at = press_convert(app_test(hf_open=True), SOURCE)
    assert not at.exception and errors(at) == [f"Cannot convert {SOURCE}: tokenizer.json is missing in {SOURCE}"]
    assert written(tmp_path) == []
    (snapshot / "tokenizer.json").write_bytes((tmp_path / "bart" / "tokenizer.json").read_bytes())
    (snapshot / "model.safetensors").write_bytes(b"\x00" * 64)  # corrupt weights
    at = press_convert(at, SOURCE)
    assert len(at.error) == 1 and "model.safetensors is not a valid safetensors file" in errors(at)[0]
    assert written(tmp_path) == [] and str(tmp_path) not in errors(at)[0]


def test_a_second_conversion_waits_for_none_and_says_why(app_test, hub, tmp_path):
    with conversion_slot():  # another visitor's conversion
        at = press_convert(app_test(hf_open=True), SOURCE)
    assert not at.exception and not at.error
    assert any("A conversion is running" in w.value for w in at.warning)
    assert written(tmp_path) == []


def test_the_slot_is_held_by_one_conversion_and_freed_by_a_failed_one():
    with conversion_slot(), pytest.raises(ConversionBusy), conversion_slot():
        pass
    with pytest.raises(RuntimeError), conversion_slot():
        raise RuntimeError("a conversion that failed")
    with conversion_slot():  # free again
        pass


def test_folders_are_offered_only_under_the_operators_roots(app_test, hub, tmp_path, monkeypatch):
    root = tmp_path / "models"
    bart_folder(root / "local-bart")
    (root / "no-config").mkdir()
    outside = bart_folder(tmp_path / "outside")
    (root / "escape").symlink_to(outside)  # a link out of the root: not offered
    monkeypatch.setenv(FOLDERS_ENV, str(root))
    at = app_test(hf_open=True)
    folders = [o for o in at.selectbox(key="hf_source").options if o.startswith("folder ")]
    assert folders == ["folder models/local-bart"]
    at = press_convert(at, "folder models/local-bart")
    assert not at.error and written(tmp_path) == ["local-bart"] and at.session_state["model_name"] == "local-bart"


def test_no_cached_model_says_so(app_test, hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    at = app_test(hf_open=True)
    assert not at.exception and any("No model found" in i.value for i in at.info)
    assert "hf_source" not in [s.key for s in at.selectbox]


@given(st_.text(max_size=200))
def test_a_safe_name_is_one_plain_directory_name(text):
    name = safe_name(text)
    assert re.fullmatch(r"[A-Za-z0-9._-]+", name) and ".." not in name and len(name) <= hf_convert.MAX_NAME
    assert not name.startswith(".") and name not in (".", "..")


def test_a_model_id_names_its_directory_by_its_last_part():
    assert safe_name("Helsinki-NLP/opus-mt-en-de") == "opus-mt-en-de"
    assert safe_name("folder models/../x y") == "x-y" and safe_name("../..") == "model"
    assert json.dumps(safe_name("a/b<script>")) == '"b-script"'


def test_an_operators_pretrained_folder_that_is_not_there_lists_no_converted_model(hub, tmp_path, monkeypatch):
    """ATTENTION_EXPLORER_PRETRAINED may name a folder that does not exist (yet): no converted model, no error."""
    monkeypatch.setattr(resources, "PRETRAINED", tmp_path / "absent")
    resources.converted_models.clear()
    assert resources.converted_models() == {}


def test_a_closed_converter_scans_no_cache_until_opened(app_test, hub, monkeypatch):
    """The sidebar expander is lazy: a first visit neither scans the caches nor sends the picker (it cost every
    visit before the first chart); opening it shows the models."""
    scans = []
    real = hf_convert.sources
    monkeypatch.setattr(hf_convert, "sources", lambda: scans.append(1) or real())
    at = app_test()
    assert not at.exception and not scans and "hf_source" not in [s.key for s in at.selectbox]
    at.session_state["hf_open"] = True
    at = at.run()
    assert scans and at.selectbox(key="hf_source").options == [SOURCE, UNSUPPORTED]
