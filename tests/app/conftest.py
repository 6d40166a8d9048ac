"""Shared AppTest fixtures for the app pages: start the app on any page, read its Plotly figures back as data."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from model.checkpoints.files import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "streamlit_app.py")


@pytest.fixture(scope="session")
def shipped():
    """Factory: shipped(name) -> model.checkpoints.files.Checkpoint of pretrained/<name> on the CPU, loaded once
    (independently of the app's cache), to compare what the app draws with a direct model call."""
    cache = {}

    def load(name: str = "reverse"):
        path = ROOT / "pretrained" / name
        if name not in cache:
            cache[name] = load_checkpoint(path, torch.device("cpu"))
        return cache[name]
    return load


@pytest.fixture
def app_test():
    """Factory: ``app_test(page=None, run=True, model_name="reverse", **state)`` -> AppTest.

    ``page`` is a page file such as "app/views/decoding.py" (None = the default page); extra keyword
    arguments are put into session_state before the first run. The tiny "reverse" model is the
    default because its behaviour is known exactly and it loads in a blink; pass model_name="en-de"
    for the translation model.
    """
    def make(page: str | None = None, run: bool = True, model_name: str | None = "reverse", **state) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        if model_name is not None:
            at.session_state["model_name"] = model_name
        for key, value in state.items():
            at.session_state[key] = value
        if page is not None:
            at.run()  # st.navigation registers the pages (one has a custom url_path) before a switch can find it
            at.switch_page(page)
        return at.run() if run else at
    return make


def decode_plotly(value):
    """Plotly JSON with numpy arrays ({"dtype", "bdata", "shape"}) turned back into numpy arrays."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            shape = value.get("shape")
            if shape:
                array = array.reshape([int(n) for n in str(shape).split(",")])
            return array
        return {k: decode_plotly(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_plotly(v) for v in value]
    return value


@pytest.fixture
def figures():
    """Callable: figures(at) -> {chart key suffix or index: figure dict} for every plotly chart on the page.

    Each figure dict has "data" (traces) and "layout", numpy arrays decoded. Keys are the chart's
    user key (the part after Streamlit's prefix) when it has one, else its position.
    """
    def read(at: AppTest) -> dict:
        result = {}
        for i, element in enumerate(at.get("plotly_chart")):
            spec = decode_plotly(json.loads(element.proto.spec))
            user_key = _user_key(element.proto.id) or str(i)
            result[user_key] = spec
        return result
    return read


def _user_key(element_id: str) -> str | None:
    """Streamlit element ids embed the user key as '...-<key>' after a '$$ID-<hash>-' prefix."""
    if "-" not in element_id:
        return None
    marker = "$$ID-"
    if element_id.startswith(marker):
        rest = element_id[len(marker):]
        return rest.split("-", 1)[1] if "-" in rest else None
    return None
