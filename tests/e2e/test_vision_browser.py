"""The Vision page in a real browser: pick a digit, see the attention overlays follow it, click a patch, switch to
Swin and open the shifted-window mask. Leaves full-page screenshots behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import contextlib
import re

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.e2e.test_browser import CHART, WAIT_MS, assert_no_error, screenshot_whole_page, wait_idle
from tests.e2e.waits import charts_settled, hover_armed, rerun, steady_box

pytestmark = pytest.mark.e2e

MAX_SHOT_HEIGHT = 9_000  # the Vision page is longer than the others
# Plotly keeps a figure's data on its div; numpy arrays arrive as {dtype, bdata, shape} (base64). Both functions
# take a title prefix: CHART_Z returns the "attention" trace's z as a string, CHART_VALUES each trace's z values.
FLOATS = """(z) => z.bdata ? Array.from(new Float32Array(Uint8Array.from(atob(z.bdata), c => c.charCodeAt(0)).buffer))
                           : z.flat()"""
FIND = """(prefix) => Array.from(document.querySelectorAll('.js-plotly-plot')).find(
    p => p.layout && p.layout.title && (p.layout.title.text || '').startsWith(prefix))"""
CHART_Z = f"""(prefix) => {{
    const plot = ({FIND})(prefix);
    const trace = plot && plot.data.find(t => t.name === 'attention');
    return trace ? JSON.stringify(({FLOATS})(trace.z)) : null;
}}"""
CHART_VALUES = f"""(prefix) => ({FIND})(prefix).data.map(t => ({FLOATS})(t.z))"""
INK = f"""(prefix) => ({FLOATS})(({FIND})(prefix).data.find(t => t.name === 'ink').z)"""


def titles(page) -> list[str]:
    return [t.text_content() or "" for t in page.locator(f"{CHART} .gtitle").all()]


def overlay(page, prefix: str):
    return page.locator(CHART).filter(has=page.locator(".gtitle", has_text=re.compile("^" + re.escape(prefix)))).first


def click_cell(page, chart, row: int, col: int, cells: int) -> None:
    """Click the centre of grid cell (row, col) of an image chart with ``cells`` cells per side, and wait for the
    script run the click asks for."""
    area = chart.locator(".nsewdrag").first
    for attempt in range(3):  # a rerun's redraw can replace the drag layer mid-scroll ("not attached to the DOM")
        try:
            area.scroll_into_view_if_needed(timeout=WAIT_MS / 3)
            break
        except PlaywrightError:
            if attempt == 2:
                raise
            charts_settled(page)
    box = steady_box(area)
    x, y = hover_armed(page, chart, box["x"] + (col + 0.5) * box["width"] / cells,
                       box["y"] + (row + 0.5) * box["height"] / cells)
    with rerun(page):
        page.mouse.click(x, y)


def test_pick_a_digit_see_the_overlays_click_a_patch_and_open_the_swin_mask(browser, streamlit_server, screenshot_dir):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    try:
        with rerun(page):
            page.goto(f"{streamlit_server.url}/vision", wait_until="domcontentloaded")
        overlay(page, "What [CLS] attends to ·").locator(".nsewdrag").wait_for(timeout=WAIT_MS)
        assert_no_error(page, "Vision page")
        first = page.evaluate(CHART_Z, "What [CLS] attends to ·")
        assert first, f"no [CLS] overlay among {titles(page)}"
        assert page.evaluate(CHART_Z, "Attention rollout")

        thumb = page.locator("[data-testid=stSlider] input[type=range]").first
        for _ in range(40):  # a rerun can redraw the slider between key presses and drop the focus: press until 5,
            wait_idle(page)  # each press once the run the last one started is drawn (a loaded CI machine lost 20)
            value = thumb.evaluate("e => e.value")
            if value == "5":
                break
            thumb.focus()  # a press that lands late, after the next one, overshoots: then the thumb goes back
            thumb.press("ArrowRight" if int(value) < 5 else "ArrowLeft")
            try:  # the key moved the thumb (or was lost: then the next turn presses again)
                page.wait_for_function("(v) => document.querySelector('[data-testid=stSlider] input[type=range]')"
                                       ".value !== v", arg=value, timeout=2_000)
            except Exception:
                continue
        page.wait_for_function("() => document.querySelector('[data-testid=stSlider] input[type=range]')"
                               ".value === '5'", timeout=WAIT_MS)
        wait_idle(page)
        page.wait_for_function(f"() => ({CHART_Z})('What [CLS] attends to ·') !== {first!r}", timeout=WAIT_MS)
        assert_no_error(page, "Vision page")

        click_cell(page, overlay(page, "What [CLS] attends to ·"), 1, 2, 4)  # patch 7 (row 2, column 3)
        page.wait_for_function("() => Array.from(document.querySelectorAll('.gtitle'))"
                               ".some(t => t.textContent.startsWith('What patch 7 attends to ·'))", timeout=WAIT_MS)
        screenshot_whole_page(page, screenshot_dir / "vision_vit.png", MAX_SHOT_HEIGHT)

        with rerun(page):
            page.locator("[data-testid=stButtonGroup] button", has_text=re.compile(r"^\W*Swin\s*$")).first.click()
        overlay(page, "Windows on the 8x8 grid").locator(".nsewdrag").first.wait_for(timeout=WAIT_MS)
        page.get_by_text("The shifted-window mask", exact=False).first.click()
        mask = overlay(page, "Shifted-window mask")
        mask.locator(".nsewdrag").first.wait_for(state="visible", timeout=WAIT_MS)
        assert mask.locator(".nsewdrag").count() == 4, "one mask matrix per window"
        blocked = [sum(v == 0 for v in z) for z in page.evaluate(CHART_VALUES, "Shifted-window mask")]
        assert blocked[0] == 0 and blocked[-1] > blocked[1] > 0, f"blocked pairs per window: {blocked}"
        assert_no_error(page, "Vision page")
        screenshot_whole_page(page, screenshot_dir / "vision_swin.png", MAX_SHOT_HEIGHT)

        with rerun(page):
            page.locator("[data-testid=stButtonGroup] button",
                         has_text=re.compile(r"^\W*Draw your own\s*$")).first.click()
        assert page.get_by_text("Nothing is drawn", exact=False).count() == 1  # an empty canvas is not a digit
        page.locator("canvas").first.wait_for(timeout=WAIT_MS)  # drawing on it: tests/e2e/test_canvas_digits.py
        assert_no_error(page, "Vision page")
    except Exception:
        with contextlib.suppress(Exception):  # never hide the original failure
            screenshot_whole_page(page, screenshot_dir / "vision_failure.png", MAX_SHOT_HEIGHT)
        print(f"screenshot of the failure: {screenshot_dir / 'vision_failure.png'}")
        print(f"server log:\n{streamlit_server.log_tail()}")
        raise
    finally:
        page.close()
    for shot in ("vision_vit.png", "vision_swin.png"):
        assert (screenshot_dir / shot).stat().st_size > 20_000
