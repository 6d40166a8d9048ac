"""A converted Marian (opus-mt) checkpoint in a real browser: upload its five files together in the sidebar, translate,
and see a model of opus-mt's shape (6+6 layers, 16 heads; a tiny width keeps it fast) laid out without overflow:
every head reachable in the pickers, model-view titles that do not run into each other. Then the Masks page with
Marian's decoder start. Full-page screenshots stay behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import itertools
import re

import pytest

from tests.e2e.test_browser import (
    PLOT_AREA,
    assert_no_error,
    screenshot_on_failure,
    screenshot_whole_page,
    sentence_box,
    translate_text,
    unfold,
)
from tests.e2e.waits import expect, rerun
from tests.marian_helpers import marian_checkpoint

pytestmark = pytest.mark.e2e

WAIT_MS = 30_000
FILES = ("model.safetensors", "config.json", "source.spm", "target.spm", "vocab.json")
SIDEBAR = "[data-testid=stSidebar]"
MAX_OUTPUT = 8
SENTENCE = "The house is small."


def upload_marian(page, folder) -> None:
    """Open the sidebar's upload expander, hand the browser the checkpoint's files, press Load checkpoint."""
    page.locator(SIDEBAR).get_by_text("Use your own checkpoint").click()
    with rerun(page):  # the uploaded files reach the script
        page.locator(f"{SIDEBAR} [data-testid=stFileUploader] input[type=file]").set_input_files(
            [str(folder / name) for name in FILES])
    load = page.get_by_role("button", name="Load checkpoint")
    expect(load).to_be_enabled(timeout=WAIT_MS)
    with rerun(page):
        load.click()
    combobox = page.locator(f"{SIDEBAR} [data-testid=stSelectbox] input").first
    expect(combobox).to_have_value(re.compile(r"^Uploaded English → German"), timeout=WAIT_MS)


def set_max_output(page, pieces: int) -> None:
    """The Max output length slider, moved with its keyboard keys (Home = 1, then one step per arrow; a rerun in
    between may swallow a key, so it steps, back too, until the value is there), then the run that takes the value:
    the app writes it into the address."""
    unfold(page, "decode_settings")
    thumb = page.locator(".st-key-max_len input[type=range]")
    with rerun(page):  # ... and afterwards, until the runs the slider asked for are over
        thumb.focus()
        thumb.press("Home")
        expect(thumb).to_have_value("1", timeout=WAIT_MS)
        for _ in range(3 * pieces):
            value = int(thumb.input_value())
            if value == pieces:
                break
            thumb.press("ArrowRight" if value < pieces else "ArrowLeft")  # a swallowed key landing late overshoots
            try:  # the key moved the thumb; if a rerun swallowed it, the next turn presses again
                page.wait_for_function("([el, value]) => Number(el.value) !== value",
                                       arg=[thumb.element_handle(), value], timeout=2_000)
            except Exception:
                continue
        expect(thumb).to_have_value(str(pieces), timeout=WAIT_MS)
        page.wait_for_function("(n) => new URL(location.href).searchParams.get('max_len') === String(n)", arg=pieces,
                               timeout=WAIT_MS)  # the app has the value: it wrote it into the address


def overlapping(boxes: list[dict]) -> list[tuple[int, int]]:
    """Pairs of horizontally neighbouring boxes that overlap."""
    boxes = sorted(boxes, key=lambda b: b["x"])
    return [(i, i + 1) for i, (a, b) in enumerate(itertools.pairwise(boxes)) if a["x"] + a["width"] > b["x"]]


def test_upload_a_6x16_marian_checkpoint_and_every_head_fits(browser, streamlit_server, screenshot_dir, tmp_path):
    folder = marian_checkpoint(tmp_path / "opus-mt-en-de")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    with screenshot_on_failure(page, screenshot_dir / "marian_failure.png", streamlit_server):
        with rerun(page):
            page.goto(streamlit_server.url, wait_until="domcontentloaded")
        sentence_box(page).wait_for(timeout=WAIT_MS)
        upload_marian(page, folder)
        unfold(page, "examples_open")
        assert page.get_by_role("button", name="Yesterday I bought a new car.").count() == 1  # English
        set_max_output(page, MAX_OUTPUT)  # a random model never ends: keep its output short, the test fast
        translate_text(page, SENTENCE)  # short: the test's tiny sentencepiece models cut text into letters
        with rerun(page):
            page.get_by_text("Model view", exact=True).click()
        grid = page.locator("[data-testid=stPlotlyChart] .js-plotly-plot").filter(has_text="every layer (rows)")
        grid.wait_for(timeout=WAIT_MS)
        expect(grid.locator(".nsewdrag")).to_have_count(6 * 16, timeout=WAIT_MS)  # every small map drawn

        main = page.locator("[data-testid=stMainBlockContainer]").bounding_box()
        heads = page.locator(".st-key-head button", has_text=re.compile(r"^\s*(mean|\d+)\s*$"))  # not the help icon
        assert heads.count() == 17  # mean and 16 heads
        for i in range(heads.count()):  # all on screen: none scrolled out of its column
            box = heads.nth(i).bounding_box()
            assert box and box["x"] + box["width"] <= main["x"] + main["width"], f"head button {i} overflows: {box}"
        titles = [grid.locator(".annotation-text", has_text=re.compile(rf"^H{h}$")).first for h in range(1, 17)]
        boxes = [t.bounding_box() for t in titles]
        assert all(boxes) and not overlapping(boxes), f"model-view titles overlap: {overlapping(boxes)}"
        assert_no_error(page, "Translate, model view")
        screenshot_whole_page(page, screenshot_dir / "marian_translate.png")

        with rerun(page):
            page.locator("[data-testid=stSidebarNav] a", has_text="Masks").first.click()
        page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)
        page.get_by_text("never masked as padding").first.wait_for(timeout=WAIT_MS)
        assert_no_error(page, "Masks")
        screenshot_whole_page(page, screenshot_dir / "marian_masks.png")
