"""A converted Marian (opus-mt) checkpoint in a real browser: upload its five files together in the sidebar, translate,
and see a model of opus-mt's shape (6+6 layers, 16 heads; a tiny width keeps it fast) laid out without overflow:
every head reachable in the pickers, model-view titles that do not run into each other. Then the Masks page with
Marian's decoder start. Full-page screenshots stay behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.test_browser import (
    PLOT_AREA,
    assert_no_error,
    screenshot_on_failure,
    screenshot_whole_page,
    sentence_box,
    translate_text,
    wait_idle,
)
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
    page.locator(f"{SIDEBAR} [data-testid=stFileUploader] input[type=file]").set_input_files(
        [str(folder / name) for name in FILES])
    load = page.get_by_role("button", name="Load checkpoint")
    expect(load).to_be_enabled(timeout=WAIT_MS)
    page.wait_for_timeout(500)
    load.click()
    combobox = page.locator(f"{SIDEBAR} [data-testid=stSelectbox] input").first
    expect(combobox).to_have_value(re.compile(r"^Uploaded English → German"), timeout=WAIT_MS)
    wait_idle(page)


def set_max_output(page, pieces: int) -> None:
    """The Max output length slider, moved with its keyboard keys (Home = 1, then one step per arrow; a rerun in
    between may swallow a key, so it steps until the value is there)."""
    thumb = page.locator(".st-key-max_len input[type=range]")
    thumb.focus()
    thumb.press("Home")
    for _ in range(3 * pieces):
        if int(thumb.input_value()) >= pieces:
            break
        thumb.press("ArrowRight")
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)
    wait_idle(page)
    expect(thumb).to_have_value(str(pieces), timeout=WAIT_MS)


def overlapping(boxes: list[dict]) -> list[tuple[int, int]]:
    """Pairs of horizontally neighbouring boxes that overlap."""
    boxes = sorted(boxes, key=lambda b: b["x"])
    return [(i, i + 1) for i, (a, b) in enumerate(zip(boxes, boxes[1:], strict=False)) if a["x"] + a["width"] > b["x"]]


def test_upload_a_6x16_marian_checkpoint_and_every_head_fits(browser, streamlit_server, screenshot_dir, tmp_path):
    folder = marian_checkpoint(tmp_path / "opus-mt-en-de")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    with screenshot_on_failure(page, screenshot_dir / "marian_failure.png", streamlit_server):
        page.goto(streamlit_server.url, wait_until="domcontentloaded")
        sentence_box(page).wait_for(timeout=WAIT_MS)
        wait_idle(page)
        upload_marian(page, folder)
        assert page.get_by_role("button", name="Yesterday I bought a new car.").count() == 1  # English
        set_max_output(page, MAX_OUTPUT)  # a random model never ends: keep its output short, the test fast
        translate_text(page, SENTENCE)  # short: the test's tiny sentencepiece models cut text into letters
        page.get_by_text("Model view", exact=True).click()
        wait_idle(page)
        grid = page.locator("[data-testid=stPlotlyChart] .js-plotly-plot").filter(has_text="every layer (rows)")
        grid.wait_for(timeout=WAIT_MS)
        assert grid.locator(".nsewdrag").count() == 6 * 16

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

        page.locator("[data-testid=stSidebarNav] a", has_text="Masks").first.click()
        page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)
        wait_idle(page)
        page.get_by_text("never masked as padding").first.wait_for(timeout=WAIT_MS)
        assert_no_error(page, "Masks")
        screenshot_whole_page(page, screenshot_dir / "marian_masks.png")
