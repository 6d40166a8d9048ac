"""The Heads and attribution page in a real browser, on the reversal model: translate, switch a head off from the
importance table and from the checklist and see both translations side by side, read a difference map's tooltip,
open the attribution, the comparison of two sentences and the shipped snapshots (watch attention learn).
Full-page screenshots stay behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import re

import pytest

from app.explorer import KIND_SHORT
from tests.e2e.test_browser import (
    assert_no_error,
    screenshot_on_failure,
    screenshot_whole_page,
    translate_reverse,
    wait_idle,
)
from tests.e2e.waits import expect, rerun

pytestmark = pytest.mark.e2e

WAIT_MS = 30_000
SENTENCE, REVERSED = "h e l l o", "o l l e h"
CHART = "[data-testid=stPlotlyChart] .js-plotly-plot"


def chart(page, key: str):
    """The Plotly chart drawn with ``key`` (Streamlit gives a keyed element the CSS class st-key-<key>)."""
    return page.locator(f".st-key-{key} .js-plotly-plot").first


def section(page, name: str):
    """A button of the page's section switch."""
    return page.locator(".st-key-heads_section button", has_text=name).first


def hover_text(page, key: str) -> str:
    """Hover the middle of a chart's last plot area (its last panel) and return the tooltip's text."""
    area = page.locator(f".st-key-{key} .nsewdrag").last
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 50, f"{key}: plot area too small: {box}"
    for dx, dy in ((0.5, 0.5), (0.45, 0.55), (0.55, 0.45)):
        page.mouse.move(box["x"] + box["width"] * dx, box["y"] + box["height"] * dy)
        tooltip = page.locator(".hoverlayer .hovertext")
        try:
            tooltip.first.wait_for(state="attached", timeout=3_000)
        except Exception:  # the first move may only arm the hover
            continue
        text = tooltip.first.text_content() or ""
        if text.strip():
            return text
    raise AssertionError(f"hovering {key} showed no tooltip")


def test_switch_a_head_off_then_compare_two_sentences(browser, streamlit_server, screenshot_dir):
    url = streamlit_server.url
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(WAIT_MS)
    with screenshot_on_failure(page, screenshot_dir / "heads_failure.png", streamlit_server):
        translate_reverse(page, url)
        page.get_by_text(REVERSED, exact=True).first.wait_for(timeout=WAIT_MS)
        wait_idle(page)

        page.locator("[data-testid=stSidebarNav] a", has_text="Heads and attribution").first.click()
        page.wait_for_url(re.compile(rf"^{re.escape(url)}/heads(\?.*)?$"), timeout=WAIT_MS)
        chart(page, "heads_importance").wait_for(timeout=WAIT_MS)
        wait_idle(page)
        expect(page.get_by_text("anti-diagonal").first).to_be_visible()

        # a row of the importance table (sorted: the most important head first) switches that head off
        table = page.locator(".st-key-heads_importance_table [data-testid=stDataFrameResizable]").first
        table.scroll_into_view_if_needed()
        box = table.bounding_box()
        page.mouse.click(box["x"] + 15, box["y"] + 35 + 17)  # the first data row's selection checkbox
        kinds = "|".join(re.escape(label) for label in KIND_SHORT.values())
        expect(page.get_by_text(re.compile(rf"^1 head off: ({kinds}) L\d H\d$")).first
               ).to_be_visible(timeout=WAIT_MS)
        page.get_by_text("With the heads off").first.wait_for(timeout=WAIT_MS)
        wait_idle(page)
        page.locator(".st-key-heads_none button").first.click()
        page.get_by_text("Tick one or more heads").first.wait_for(timeout=WAIT_MS)
        wait_idle(page)

        # cross-attention, layer 1, head 2 off: the page decodes again and shows both translations
        page.locator(".st-key-heads_off_cross_0 button", has_text=re.compile(r"^\s*2\s*$")).first.click()
        page.get_by_text("With the heads off").first.wait_for(timeout=WAIT_MS)
        chart(page, "heads_maps").wait_for(timeout=WAIT_MS)
        wait_idle(page)
        expect(page.get_by_text("Every head on").first).to_be_visible()
        expect(page.get_by_text("… with these heads off").first).to_be_visible()
        tooltip = hover_text(page, "heads_maps")  # the difference panel
        key = re.search(r"source piece \(key\):\s*(\S+)", tooltip)
        assert key and key.group(1).lstrip("▁") in [*SENTENCE.split(), "</s>"], f"tooltip: {tooltip!r}"
        assert re.search(r"heads off − on:\s*[-−]?\d+\.\d+", tooltip), f"tooltip has no value: {tooltip!r}"
        assert_no_error(page, "Heads: switch off")
        screenshot_whole_page(page, screenshot_dir / "heads_1_switch_off.png")

        with rerun(page):
            section(page, "Attribution").click()
        chart(page, "heads_attr_maps").wait_for(timeout=WAIT_MS)
        assert_no_error(page, "Heads: attribution")
        screenshot_whole_page(page, screenshot_dir / "heads_2_attribution.png")

        with rerun(page):
            section(page, "Compare two sentences").click()
        chart(page, "heads_cmp_diff").wait_for(timeout=WAIT_MS)
        expect(page.locator(".st-key-heads_cmp_diff .gtitle").first).to_contain_text("Second − first")
        assert_no_error(page, "Heads: compare")
        screenshot_whole_page(page, screenshot_dir / "heads_3_compare.png")

        # watch attention learn: the shipped snapshots and the model, one panel each, the same cross-attention map
        section(page, "Watch attention learn").click()
        chart(page, "heads_ckpt_maps").wait_for(timeout=WAIT_MS)
        chart(page, "heads_ckpt_spread").wait_for(timeout=WAIT_MS)
        wait_idle(page)
        # a panel name wider than its panel is broken before its remark: "this model" / "(epoch 19)", two lines
        titles = [" ".join(t.locator("tspan.line").all_text_contents()) or t.text_content()
                  for t in page.locator(".st-key-heads_ckpt_maps .infolayer .annotation-text").all()]
        assert titles[-1] == "this model (epoch 19)" and len(titles) >= 3, titles
        assert all(re.fullmatch(r"epoch \d+", t) for t in titles[:-1]), titles
        expect(page.locator(".st-key-heads_ckpt_maps .gtitle").first).to_contain_text(
            "The same map as training goes on")
        expect(page.locator("[data-testid=stDataFrame]").last).to_be_visible()  # one row per checkpoint
        assert_no_error(page, "Heads: watch attention learn")
        screenshot_whole_page(page, screenshot_dir / "heads_4_learn.png")
