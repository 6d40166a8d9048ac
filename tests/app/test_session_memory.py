"""A session keeps no translation of its own: once the shared store lets one go, it is freed, however many sessions
(open or closed within Streamlit's reconnect window) showed it; and a page whose translation went still works."""
from __future__ import annotations

import gc
import json
import weakref

import pytest
import streamlit

from app.serving.scheduler import store
from model.serving.inference import Translation

TEXT = "k e p t o n c e"


@pytest.fixture(autouse=True)
def empty_store():
    """Each test starts from an empty store (another test may have left its sentence there)."""
    store().clear()


def alive(text: str) -> list[Translation]:
    """The translations of ``text`` anything still holds."""
    gc.collect()
    return [o for o in gc.get_objects() if type(o) is Translation and o.source.text == text]


def test_the_translate_page_keeps_its_translation_only_through_the_store(app_test):
    at = app_test(text=TEXT)
    at.button(key="translate").click().run()
    assert not at.exception and at.get("plotly_chart") and len(alive(TEXT)) == 1
    store().clear()
    assert alive(TEXT) == []  # the explorer's fragment, the trace's download and the rest kept none
    at.segmented_control(key="head").set_value(1).run()  # the explorer after its translation went: no error
    assert not at.exception


def test_the_decoding_page_keeps_no_step_of_its_beam_search(app_test):
    at = app_test("app/views/decoding.py", text=TEXT, beam_size=3)
    assert not at.exception and at.selectbox(key="beam_node") is not None and len(alive(TEXT)) == 1
    steps = [weakref.ref(step) for step in alive(TEXT)[0].result.steps]
    store().clear()
    assert alive(TEXT) == [] and all(step() is None for step in steps)  # nor its steps, through a node list's labels
    at.button(key="next_step").click().run()  # decoded again: the page goes on at step 2
    assert not at.exception and at.slider(key="step").value == 2


def test_the_trace_download_keeps_no_translation_and_still_builds_without_it(app_test, monkeypatch):
    """Streamlit keeps a download's callable with its session until the file is asked for; the trace's is built from
    the store's translation, or decoded again when the store has let it go."""
    kept = []
    real = streamlit.download_button

    def recording(label, data=None, **kwargs):
        if kwargs.get("file_name") == "attention_trace.json":
            kept.append(data)
        return real(label, data, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", recording)
    at = app_test(text=TEXT)
    at.button(key="translate").click().run()
    assert not at.exception and kept and len(alive(TEXT)) == 1
    store().clear()
    assert alive(TEXT) == []
    trace = json.loads(kept[-1]())
    assert trace["source"]["text"] == TEXT
