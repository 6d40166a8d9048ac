"""The first minute in front of a room: the first page shows the default sentence translated, with its charts,
without a click, on a warm server within 3 s of the browser's work once the server answers (the measured breakdown
is below), its Translate button above the fold at 1280x720, and no request leaves the machine (no icon or font from
the internet; no console errors)."""
from __future__ import annotations

import os
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.state import DEFAULTS
from tests.e2e.waits import expect

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
SHOWN = "[data-testid=stMarkdownContainer] div[style*='1.9rem']"  # the big translation line
CHART = "[data-testid=stPlotlyChart] .js-plotly-plot .main-svg"
MEASURED_VISITS = 2  # the faster one counts: on 2 shared cores a visit may meet a burst of another job

# Where a warm visit's time goes (benchmarks/first_visit.py, medians of 6 visits in turn with a baseline page, one
# 2x2 st.plotly_chart served the same way; ms from opening the URL, Chromium 156 headless and software-rendered, on
# 2 cores at load 3.7-4.5 from other jobs, the training job paused):
#                               app   baseline
#   WebSocket's first message   709     758    Streamlit's front end started (index.html, its main bundle)
#   first chart's message      1154     861    the server's whole run is ~45 ms; the rest is the browser's main thread
#   Plotly's chunk loaded      1419    1033    4.7 MB from the cache, then evaluated (~0.6 s of the main thread)
#   first chart drawn          3112    2322    before it: 46 elements (117 JS chunks) vs none (63)
# So about 2.3 s of the 3.1 s is Streamlit's start and Plotly's bundle, which any page with a chart pays here, and
# about 0.8 s is our page's other elements, rendered first. Before the head statistics were sent only when opened
# (a data grid: 0.5 MB of front-end code in 20 chunks), the first chart was drawn at 3.3 s (4.0 s as timed below).
# The browser's main thread is busy nearly all the time, so its wall time follows the machine's load: at load 11-14
# (colleagues' test runs) the same visit took 3.7-7.5 s, while the renderer's CPU time from the server's first
# message to the chart drawn stayed at 2.1-2.6 s (the baseline's 1.2-1.8 s). The 3 s is asserted on that:
# the browser's work for our page once the server has answered, which on a core of its own is its wall time. The
# whole, from opening the URL, keeps a bound that holds on this shared machine and catches a page that waits for
# something (a decode, a lock): 3.3 s at load 4, 3.7-7.5 s per visit at load 11-14 (the faster of two counts).
# On a quiet machine (load 1.1-1.4), with the sidebar's upload and converter expanders lazy too (40 elements, 111
# chunks before the chart), the first chart was drawn 2367 ms after opening the URL (median of 7; baseline 1686).
OURS_CPU_BOUND_S = 3.0
TOTAL_BOUND_S = 6.0


@dataclass
class Visit:
    """One opening of the first page: ``total_s`` is the wall time from opening the URL to the translation and its
    first chart drawn, ``ours_cpu_s`` the browser renderer's CPU time from the WebSocket's first message (the server
    starts the script run) to the same."""

    total_s: float
    ours_cpu_s: float
    page: object
    errors: list[str]  # console errors
    foreign: list[str]  # requests to anything but the app's own host


def renderer_cpu_s() -> float:
    """CPU seconds (user + system) of the Chromium renderer processes started under this test process."""
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited meanwhile
                continue
            children.setdefault(int(fields[1]), []).append((int(entry.name), fields))
    ticks, todo = 0, [os.getpid()]
    while todo:
        for pid, fields in children.get(todo.pop(), []):
            todo.append(pid)
            try:
                if b"--type=renderer" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    ticks += int(fields[11]) + int(fields[12])
            except OSError:
                continue
    return ticks / os.sysconf("SC_CLK_TCK")


def open_first_page(context, url: str) -> Visit:
    """Open ``url`` in a new tab and wait for the translation and its first chart."""
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors, foreign, first_message = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    host = urllib.parse.urlsplit(url).netloc
    page.on("request", lambda r: foreign.append(r.url) if urllib.parse.urlsplit(r.url).netloc not in ("", host)
            and not r.url.startswith(("data:", "blob:")) else None)
    page.on("websocket", lambda ws: ws.on("framereceived",
                                          lambda _: first_message or first_message.append(renderer_cpu_s())))
    began = time.monotonic()
    page.goto(url, wait_until="domcontentloaded")
    page.locator(SHOWN).first.wait_for()
    page.locator(CHART).first.wait_for()
    return Visit(time.monotonic() - began, renderer_cpu_s() - first_message[0], page, errors, foreign)


def test_the_first_page_shows_the_default_translation_and_its_charts_without_a_click(browser, streamlit_server):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        warm = open_first_page(context, streamlit_server.url)  # warms the server and the browser's cache (Plotly's
        warm.page.close()                                         # 4.7 MB bundle); nothing is drawn without it
        assert not warm.foreign, f"requests left the machine: {warm.foreign}"
        visits = []
        for _ in range(MEASURED_VISITS):
            if visits:
                visits[-1].page.close()
            visits.append(open_first_page(context, streamlit_server.url))
        ours = min(v.ours_cpu_s for v in visits)
        total = min(v.total_s for v in visits)
        assert ours <= OURS_CPU_BOUND_S, f"{ours:.1f} CPU s in the browser from the server's first message to the chart"
        assert total <= TOTAL_BOUND_S, f"{total:.1f} s from opening the URL to the first heatmap"
        page, errors, foreign = visits[-1].page, visits[-1].errors, visits[-1].foreign
        # the text area's code is a chunk of its own and may arrive after the chart's: wait for its value
        expect(page.locator("[data-testid=stTextArea] textarea").first).to_have_value(DEFAULTS["text"], timeout=WAIT_MS)
        assert page.locator(SHOWN).first.inner_text().strip() == "Mein Bruder hat ein neues Haus in der Stadt gekauft."
        button = page.get_by_role("button", name="Translate").first.bounding_box()
        assert button["y"] + button["height"] <= 720, f"the Translate button is below the fold: {button}"
        page.wait_for_load_state("networkidle")  # whatever the page would still fetch has been asked for
        assert not foreign, f"requests left the machine: {foreign}"
        assert not errors, f"console errors: {errors}"
    finally:
        context.close()


# Counts, at every change of the page, the grey placeholder boxes (Streamlit's skeletons for element code still being
# fetched) that are visible while the translation is already drawn above them.
COUNT_SKELETONS_UNDER_CONTENT = """
window.__skeletonsUnderContent = 0;
new MutationObserver(() => {
  if (!document.querySelector("SHOWN")) return;
  for (const el of document.querySelectorAll('[data-testid=stSkeleton]'))
    if (getComputedStyle(el).visibility !== 'hidden') window.__skeletonsUnderContent++;
}).observe(document, {subtree: true, childList: true});
""".replace("SHOWN", SHOWN)  # SHOWN holds no double quote


def test_a_link_opened_without_a_cache_shows_no_placeholder_boxes_under_drawn_content(browser, streamlit_server):
    """A fresh browser (nothing cached) fetches each element's code while the page is drawn; before the fix the
    observer counted 45-165 visible grey boxes under the translation on this link."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})  # a new context: an empty cache
    context.add_init_script(COUNT_SKELETONS_UNDER_CONTENT)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{streamlit_server.url}/?layer=2&head=3")
        page.locator(SHOWN).first.wait_for()
        page.locator(CHART).first.wait_for()
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__skeletonsUnderContent") == 0
    finally:
        context.close()
