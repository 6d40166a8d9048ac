"""Honest output (AppTest): the Translate page and the lecture say when the model is unsure of its translation; the
page's JSON download is the CLI's --json, field for field (one writer, model.serving.serialize)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.downloads import checkpoint_name, trace_json
from app.models.registry import load_model
from app.serving.scheduler import store

ROOT = Path(__file__).resolve().parents[2]
UNSURE = "Attention is all you need."  # "Attentatine ist dir alle nötigen.": the first sentence a class types
SURE = "My brother has bought a new house in the city."


def _unsure_warnings(at) -> list[str]:
    return [w.value for w in at.warning if "unsure of this translation" in w.value]


def _badges(at) -> list[str]:
    """The word of doubt that ends the translation's line (its tooltip holds the warning's sentence)."""
    return [m.value for m in at.markdown if "class='ae-doubt'" in m.value]


def test_translate_page_says_when_the_model_is_unsure(app_test):
    at = app_test(model_name="en-de")
    assert not at.exception
    assert not _unsure_warnings(at) and not _badges(at), "the default sentence is translated right: no doubt"
    at.text_area(key="text").input(UNSURE)
    at.button(key="translate").click().run()
    assert not at.exception
    notes = _unsure_warnings(at)
    assert len(notes) == 1 and "\n" not in notes[0] and "guess" in notes[0]
    badges = _badges(at)
    assert len(badges) == 1 and "Attentatine" in badges[0] and "unsure: a guess" in badges[0]
    assert "title='The model is unsure of this translation" in badges[0] and "&#x27;ine&#x27;" in badges[0]


def test_lecture_caption_says_when_the_model_is_unsure(app_test):
    at = app_test("app/views/lecture.py", model_name="en-de", text=UNSURE)
    assert not at.exception
    caption = [c.value for c in at.caption if c.value.startswith("Current sentence:")]
    assert len(caption) == 1 and "unsure of this translation" in caption[0]
    at = app_test("app/views/lecture.py", model_name="en-de", text=SURE)
    caption = [c.value for c in at.caption if c.value.startswith("Current sentence:")]
    assert len(caption) == 1 and "unsure" not in caption[0]


def documented_keys() -> tuple[set[str], set[str]]:
    """The top-level and the ``decode`` keys of the JSON schema the docs state (docs/cli.md, "JSON output")."""
    text = (ROOT / "docs" / "cli.md").read_text()
    block = text.split("## JSON output", 1)[1].split("```", 2)[1]
    top = set(re.findall(r'^\s{2}"(\w+)":', block, flags=re.M))
    decode = block.split('"decode":', 1)[1].split('"steps":', 1)[0]
    return top, set(re.findall(r'"(\w+)":', decode)) - {"temperature", "top_p", "seed"}  # those are sampling's


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys and types, lists by their first item (empty lists as [])."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def close(a: Any, b: Any, tol: float = 1e-4) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= tol
    return a == b


def test_the_pages_trace_download_is_the_clis_json(app_test, tmp_path):
    """The page's download, for the translation on screen, equals what `python -m model translate ... --json`
    writes for the same sentence and settings: same fields (those the docs state among them), same values."""
    at = app_test(model_name="en-de", text=SURE, max_len=64)
    assert not at.exception
    translation = store().get(at.session_state["last_request"])
    assert translation is not None
    ckpt = load_model("en-de")
    app = json.loads(trace_json(translation, ckpt.tokenizer, checkpoint_name("en-de", ckpt.path)))
    out = tmp_path / "cli.json"
    proc = subprocess.run([sys.executable, "-m", "model", "translate", SURE, "--checkpoint", "pretrained/en-de",
                           "--max-len", "64", "--json", str(out)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(out.read_text())
    assert shape(app) == shape(cli)
    assert close(app, cli), "the app's trace differs from the CLI's for the same sentence and settings"
    assert app["decode"]["checkpoint"] == "pretrained/en-de" and app["decode"]["device"] == "cpu"
    top, decode = documented_keys()
    assert top == set(app), "top-level fields differ from the schema in docs/cli.md"
    assert decode == set(app["decode"]), f"decode fields differ from the docs: {decode ^ set(app['decode'])}"


@pytest.mark.parametrize("path, name, expected", [
    (ROOT / "pretrained" / "en-de", "en-de", "pretrained/en-de"),
    (Path("/somewhere/else/model"), "upload:mine", "upload:mine"),
    (None, "en-de", "en-de"),
])
def test_the_trace_names_its_checkpoint_without_the_servers_paths(path, name, expected):
    assert checkpoint_name(name, path) == expected
