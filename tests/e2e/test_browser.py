"""A person's path through the app in a real browser: translate, read a heatmap tooltip, open every page.

AppTest cannot see what the browser draws (Plotly's JavaScript, hover labels, page layout); this test
does, and leaves full-page screenshots behind ($E2E_SCREENSHOTS) so a person can look at them.
"""
from __future__ import annotations

import contextlib
import re

import pytest

from tests.e2e.waits import IDLE, charts_settled, expect, hover_armed, rerun, steady_box

pytestmark = pytest.mark.e2e

WAIT_MS = 30_000
SENTENCE = "h e l l o"  # the "reverse" model's input: space-separated letters
REVERSED = "o l l e h"
CHART = "[data-testid=stPlotlyChart] .js-plotly-plot"
PLOT_AREA = f"{CHART} .nsewdrag"
# (sidebar link text, URL path of the page) in navigation order; the link text is matched as a prefix.
PAGES = [("Translate", ""), ("Decoding", "decoding"), ("Positional encoding", "positional"), ("Masks", "masks"),
         ("Mechanics of attention", "mechanics"), ("Model and training", "model")]
MIN_SCREENSHOT_BYTES = 20_000
MAX_SHOT_HEIGHT = 8_000


def wait_idle(page) -> None:
    page.wait_for_selector(IDLE, timeout=WAIT_MS)


def assert_no_error(page, name: str) -> None:
    assert page.locator("[data-testid=stException]").count() == 0, f"{name}: Streamlit shows an exception"
    assert "Traceback" not in page.inner_text("body"), f"{name}: a traceback is on the page"


def choose_reverse_model(page) -> None:
    combobox = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox] input").first
    combobox.click()
    with rerun(page):
        page.get_by_role("option", name=re.compile("reverse", re.I)).first.click()
    expect(combobox).to_have_value(re.compile("reverse", re.I), timeout=WAIT_MS)


def screenshot_whole_page(page, path, max_height: int = MAX_SHOT_HEIGHT) -> None:
    """Streamlit scrolls inside its main container, so full_page alone captures only the viewport: grow the
    viewport to the content's height (at most max_height) for the shot, then restore it."""
    size = page.viewport_size
    height = page.evaluate("""() => Math.max(document.body.scrollHeight, ...Array.from(
        document.querySelectorAll('[data-testid=stMain], [data-testid=stAppViewContainer], [data-testid=stApp]'),
        el => el.scrollHeight))""")
    page.set_viewport_size({"width": size["width"], "height": min(max(height, size["height"]), max_height)})
    charts_settled(page)  # Plotly redraws charts on resize
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def sentence_box(page):
    return page.locator("[data-testid=stTextArea] textarea, [data-testid=stTextInput] input").first


def unfold(page, key: str) -> None:
    """Open what the Translate page keeps folded under the sentence, so that its first view fits one screen: the
    decoding settings ("decode_settings", a fold that stays open: beam, length, slow motion, sampling) or the example
    sentences ("examples_open", a popover that closes on a click elsewhere)."""
    fold = page.locator(f".st-key-{key} details")
    if fold.count():
        if fold.first.get_attribute("open") is None:
            page.locator(f".st-key-{key} summary").first.click()
        opened = page.locator(f".st-key-{key} details[open]").first
        expect(opened).to_be_visible()
        steady_box(opened)  # the fold grows open in an animation: a click on its content before it ends can miss
    else:
        page.locator(f".st-key-{key} [data-testid=stPopoverButton]").first.click()
        expect(page.locator("[data-testid=stPopoverBody]").first).to_be_visible()


def hover_first_source_column(page) -> str:
    """Hover the top-left cell of the heatmap (first decoder row, first source piece) and return the tooltip."""
    area = page.locator(PLOT_AREA).first
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 50, f"heatmap plot area too small: {box}"
    for dx, dy in ((6, 6), (10, 10), (14, 8)):  # a couple of nearby points: the first move may only arm hover
        page.mouse.move(box["x"] + dx, box["y"] + dy)
        tooltip = page.locator(".hoverlayer .hovertext")
        try:
            tooltip.first.wait_for(state="attached", timeout=3_000)
        except Exception:  # try the next point
            continue
        text = tooltip.first.text_content() or ""
        if text.strip():
            return text
    raise AssertionError("hovering the heatmap showed no tooltip")


def test_translate_then_visit_every_page(browser, streamlit_server, screenshot_dir):
    streamlit_url = streamlit_server.url
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(WAIT_MS)
    shots = []
    try:
        with rerun(page):
            page.goto(streamlit_url, wait_until="domcontentloaded")
        page.wait_for_selector("[data-testid=stSidebarNav]", timeout=WAIT_MS)
        sentence_box(page).wait_for(timeout=WAIT_MS)
        choose_reverse_model(page)

        box = sentence_box(page)
        box.fill(SENTENCE)
        with rerun(page):
            box.press("Control+Enter")  # commit the text area's value (otherwise it is sent on blur)
        with rerun(page):
            page.get_by_role("button", name=re.compile(r"^\W*Translate\s*$")).click()
        page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)
        page.get_by_text(REVERSED, exact=True).first.wait_for(timeout=WAIT_MS)

        tooltip = hover_first_source_column(page)
        key = re.search(r"key:\s*(\S+)", tooltip)
        weight = re.search(r"weight:\s*(\d+\.\d+)", tooltip)
        assert key, f"tooltip names no key piece: {tooltip!r}"
        assert key.group(1).lstrip("▁") in SENTENCE.split(), f"tooltip key is not a sentence piece: {tooltip!r}"
        assert weight and 0.0 <= float(weight.group(1)) <= 1.0, f"tooltip has no weight in [0, 1]: {tooltip!r}"
        assert_no_error(page, "Translate")
        shots.append(screenshot_dir / "01_translate.png")
        screenshot_whole_page(page, shots[-1])

        for number, (link_text, path) in enumerate(PAGES, start=1):
            # the icon's ligature text precedes the title, so match the title anywhere in the link
            nav = page.locator("[data-testid=stSidebarNav] a", has_text=re.compile(re.escape(link_text)))
            with rerun(page):
                nav.first.click()
            page.wait_for_url(re.compile(rf"^{re.escape(streamlit_url)}/{re.escape(path)}(\?.*)?$"), timeout=WAIT_MS)
            page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)
            wait_idle(page)
            assert_no_error(page, link_text)
            shots.append(screenshot_dir / f"{number + 1:02d}_{path or 'translate'}.png")
            screenshot_whole_page(page, shots[-1])
    except Exception:
        with contextlib.suppress(Exception):  # what the browser showed; never hide the original failure
            screenshot_whole_page(page, screenshot_dir / "failure.png")
        print(f"screenshot of the failure: {screenshot_dir / 'failure.png'}")
        print(f"server log:\n{streamlit_server.log_tail()}")
        raise
    finally:
        page.close()

    for shot in shots:
        assert shot.exists() and shot.stat().st_size > MIN_SCREENSHOT_BYTES, f"screenshot missing or blank: {shot}"
    assert len(shots) == len(PAGES) + 1


def translate_reverse(page, url: str) -> None:
    with rerun(page):
        page.goto(url, wait_until="domcontentloaded")
    sentence_box(page).wait_for(timeout=WAIT_MS)
    choose_reverse_model(page)
    translate_text(page, SENTENCE)


def translate_text(page, text: str) -> None:
    """Type ``text`` into the sentence box, press Translate and wait for the first chart."""
    box = sentence_box(page)
    box.fill(text)
    with rerun(page):
        box.press("Control+Enter")
    with rerun(page):
        page.get_by_role("button", name=re.compile(r"^\W*Translate\s*$")).click()
    page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)


@contextlib.contextmanager
def screenshot_on_failure(page, path, server):
    """Run a browser test's steps; on a failure keep a screenshot at ``path`` and print the server's log tail,
    then re-raise. The page is closed either way."""
    try:
        yield
    except Exception:
        with contextlib.suppress(Exception):  # never hide the original failure
            screenshot_whole_page(page, path)
        print(f"screenshot of the failure: {path}")
        print(f"server log:\n{server.log_tail()}")
        raise
    finally:
        page.close()


def chart_titles(page) -> list[str]:
    return [t.text_content() or "" for t in page.locator(f"{CHART} .gtitle").all()]


def test_clicking_a_model_view_map_or_a_statistics_row_opens_that_head(browser, streamlit_server, screenshot_dir):
    """The two ways to jump to a head that only a browser can exercise (Plotly and data-grid selections)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    try:
        translate_reverse(page, streamlit_server.url)
        with rerun(page):
            page.get_by_text("Model view", exact=True).click()
        grid = page.locator(CHART).filter(has_text="every layer (rows) and head (columns)")
        grid.wait_for(timeout=WAIT_MS)
        cells = grid.locator(".nsewdrag")
        assert cells.count() == 8, "the reverse model has 2 layers x 4 heads"
        cell = cells.nth(1 * 4 + 2)  # layer 2, head 3
        cell.scroll_into_view_if_needed()
        box = steady_box(cell)
        x, y = hover_armed(page, grid, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        with rerun(page):
            page.mouse.click(x, y)
        page.wait_for_function("() => document.querySelector('.gtitle') && "
                               "document.querySelector('.gtitle').textContent.includes('layer 2 · head 3')",
                               timeout=WAIT_MS)
        assert any(t.endswith("layer 2 · head 3") for t in chart_titles(page)), chart_titles(page)

        page.get_by_text("Head statistics", exact=False).first.click()
        table = page.locator("[data-testid=stDataFrame]").first
        table.wait_for(timeout=WAIT_MS)
        # whole on the screen, its fifth row too (below the map, the table can stand half under the window's edge)
        table.evaluate("(el) => el.scrollIntoView({block: 'center'})")
        opened = ("() => Array.from(document.querySelectorAll('.gtitle'))"
                  ".some(t => t.textContent.endsWith('layer 2 · head 1'))")
        row_height = 35  # Streamlit's data grid: a header row, then rows of 35 px; the first column selects
        for _ in range(3):  # the grid may still be laying out right after the expander opens: retry the click
            box = steady_box(table)
            page.mouse.click(box["x"] + 15, box["y"] + row_height * (1 + 4) + row_height / 2)  # row 5: layer 2, head 1
            try:
                page.wait_for_function(opened, timeout=5_000)
                break
            except Exception:  # the click landed before the grid was ready
                continue
        page.wait_for_function(opened, timeout=WAIT_MS)
        wait_idle(page)
        assert_no_error(page, "Translate")
    except Exception:
        screenshot_whole_page(page, screenshot_dir / "failure_select.png")
        print(f"screenshot of the failure: {screenshot_dir / 'failure_select.png'}")
        raise
    finally:
        page.close()
