"""Every page on a converted model of each Hugging Face family, in a real browser: tiny random Marian (opus-mt), BART,
mBART-50, M2M100 (its slow tokenizer's files) and T5 v1.1 (spiece.model only) built with transformers' own classes
(tests.hf_folders), converted by `model.huggingface.convert` into one temporary pretrained folder that one server lists
(ATTENTION_EXPLORER_PRETRAINED). One page walks them all: a link opens the Translate page on the model, the sentence
and a short output (the app translates a linked view at once), then the sidebar's links open every other page. Each
page must draw its Plotly charts, show no Streamlit exception and leave nothing in the browser's console. A full-page
screenshot of each family's Translate page stays behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import re
import threading
import time
from urllib.parse import urlencode

import pytest

from tests.e2e.conftest import run_server
from tests.e2e.test_browser import PLOT_AREA, assert_no_error, screenshot_on_failure, screenshot_whole_page
from tests.e2e.waits import charts_settled, expect, rerun
from tests.hf_folders import FAMILIES, hf_folder

pytestmark = pytest.mark.e2e

WAIT_MS = 30_000
SENTENCE = "The house is small."
MAX_OUTPUT = 6  # a random model rarely ends: a short output keeps every page quick
NAMES = {"marian": "tiny-opus-mt-en-de", "bart": "tiny-bart", "mbart": "tiny-mbart-50", "m2m_100": "tiny-m2m100",
         "t5": "tiny-t5-spiece"}
# (sidebar link text, URL path) of every page a translation model serves, in navigation order
PAGES = [("Translate", ""), ("Decoding", "decoding"), ("Positional encoding", "positional"), ("Masks", "masks"),
         ("Mechanics of attention", "mechanics"), ("Heads and attribution", "heads"), ("Model and training", "model")]
RESOURCE_FAILED = "Failed to load resource"  # judged by the response instead (none fails here: nothing is fetched)


def convert_all(root) -> None:
    """Each family's Hugging Face folder written and converted into root/pretrained/<its name>."""
    from model.huggingface.convert import convert

    for family in FAMILIES:
        convert(hf_folder(family, root / "hf" / NAMES[family]), root / "pretrained" / NAMES[family])


@pytest.fixture(scope="module")
def converted_server(tmp_path_factory):
    """One `streamlit run` whose pretrained folder holds the converted models. The models are built while the server
    starts (both take seconds)."""
    from app.models.registry import PRETRAINED_ENV

    root = tmp_path_factory.mktemp("converted")
    failed: list[BaseException] = []
    builder = threading.Thread(target=lambda: _record(failed, convert_all, root))
    began = time.monotonic()
    builder.start()
    try:
        with run_server("streamlit_app.py", root / "server.log", env={PRETRAINED_ENV: str(root / "pretrained")}) \
                as server:
            builder.join()
            if failed:
                raise failed[0]
            print(f"{len(FAMILIES)} models built and converted, server started: {time.monotonic() - began:.1f} s")
            yield server
    finally:
        builder.join()


def _record(failed: list[BaseException], work, *args) -> None:
    try:
        work(*args)
    except BaseException as exc:  # re-raised in the test's thread
        failed.append(exc)


def watch_console(page, errors: list[str]) -> None:
    """Collect the page's console errors, uncaught exceptions and failed responses into ``errors``."""
    page.on("console", lambda message: errors.append(message.text[:200])
            if message.type == "error" and not message.text.startswith(RESOURCE_FAILED) else None)
    page.on("pageerror", lambda error: errors.append(str(error)[:200]))
    page.on("response", lambda response: errors.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)


def walk_every_page(page, url: str, family: str, name: str, errors: list[str], screenshot_dir) -> None:
    """Open the link to ``name``'s Translate page, then every other page by the sidebar's links; on each, charts drawn,
    no exception, nothing in the console."""
    with rerun(page):  # a link: the Translate page translates a linked view without a click
        page.goto(f"{url}/?{urlencode({'model': name, 'text': SENTENCE, 'max_len': MAX_OUTPUT})}",
                  wait_until="domcontentloaded")
    combobox = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox] input").first
    expect(combobox).to_have_value(re.compile(re.escape(name)), timeout=WAIT_MS)
    for number, (title, path) in enumerate(PAGES):
        if number:
            with rerun(page):
                page.locator("[data-testid=stSidebarNav] a", has_text=re.compile(re.escape(title))).first.click()
            page.wait_for_url(re.compile(rf"^{re.escape(url)}/{path}\?(.*&)?model={re.escape(name)}(&|$)"))
        where = f"{family}, {title}"
        page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)
        charts_settled(page)
        assert_no_error(page, where)
        assert not errors, f"{where}: the browser's console says:\n" + "\n".join(errors)
        if number == 0:
            screenshot_whole_page(page, screenshot_dir / f"converted_{family}_translate.png")


def test_every_page_of_every_converted_family(browser, converted_server, screenshot_dir):
    """One browser context (Plotly's bundle loaded once), a fresh tab per family, so that the console errors a tab
    collects are its family's alone."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    began = time.monotonic()
    try:
        for family, name in NAMES.items():
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            errors: list[str] = []
            watch_console(page, errors)
            with screenshot_on_failure(page, screenshot_dir / f"converted_{family}_failure.png", converted_server):
                walk_every_page(page, converted_server.url, family, name, errors, screenshot_dir)
    finally:
        context.close()
    print(f"{len(NAMES)} families x {len(PAGES)} pages in {time.monotonic() - began:.1f} s")
