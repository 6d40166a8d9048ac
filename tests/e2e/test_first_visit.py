"""The first minute in front of a room: the first page shows the default sentence translated, with its charts,
without a click, its Translate button above the fold at 1280x720, and no request leaves the machine (no icon or font
from the internet; no console errors). How long it takes is measured against a baseline page within the same run
(the house's rule for speed: a ratio, never a wall-clock bound that the machine's other jobs decide)."""
from __future__ import annotations

import os
import re
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.state import DEFAULTS
from tests.e2e.conftest import ROOT, run_server
from tests.e2e.waits import charts_settled, expect

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
SHOWN = "[data-testid=stMarkdownContainer] div[style*='1.9rem'] .ae-text"  # the big translation line's text
CHART = "[data-testid=stPlotlyChart] .js-plotly-plot .main-svg"
BASELINE_PAGE = ROOT / "benchmarks" / "one_chart_page.py"  # one 2x2 st.plotly_chart, nothing else
MEASURED_VISITS = 3  # per page, in turn; the fastest of each counts: on 2 shared cores a visit may meet a burst

# Where a warm visit's time goes (benchmarks/first_visit.py, medians of 6 visits in turn with the baseline page, ms
# from opening the URL, Chromium 156 headless and software-rendered, on 2 cores at load 3.7-4.5):
#                               app   baseline
#   WebSocket's first message   709     758    Streamlit's front end started (index.html, its main bundle)
#   first chart's message      1154     861    the server's whole run is ~45 ms; the rest is the browser's main thread
#   Plotly's chunk loaded      1419    1033    4.7 MB from the cache, then evaluated (~0.6 s of the main thread)
#   first chart drawn          3112    2322    before it: 46 elements (117 JS chunks) vs none (63)
# So most of a first visit is Streamlit's start and Plotly's bundle, which any page with a chart pays, and the rest is
# our page's other elements, rendered first. The browser's main thread is busy nearly all the time, so both its wall
# time and its CPU time follow the machine's load: an absolute 3 s bound on the renderer's CPU time held at load 4
# (2.1-2.6 s) and failed once in CI at 3.15 s. So the page is measured against the baseline, visit for visit, in one
# run: the renderer's CPU time from the server's first message to the chart drawn (our page's work once the server
# has answered), and the wall time from opening the URL (which also catches a page that waits for something: a
# decode, a lock). The bounds leave a third over the highest ratio measured in 6 runs at load 4-5.5 (the fastest of
# 3 visits each): a page that renders half as much again before its first chart fails. The 3 s on a quiet
# machine is benchmarks/first_visit.py's to report.
CPU_RATIO_BOUND = 3.0    # measured 1.67-2.26 (app 1.94-2.25 CPU s, baseline 0.88-1.25)
TOTAL_RATIO_BOUND = 2.2  # measured 1.42-1.69 (app 2.73-3.40 s, baseline 1.82-2.39)


@dataclass
class Visit:
    """One opening of a page: ``total_s`` is the wall time from opening the URL to its first chart drawn (and the
    translation, on the app), ``cpu_s`` the browser renderer's CPU time from the WebSocket's first message (the
    server starts the script run) to the same."""

    total_s: float
    cpu_s: float
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


def open_page(context, url: str, shown: str | None = SHOWN) -> Visit:
    """Open ``url`` in a new tab and wait for ``shown`` (the translation; None on the baseline) and the first chart."""
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
    if shown:
        page.locator(shown).first.wait_for()
    page.locator(CHART).first.wait_for()
    return Visit(time.monotonic() - began, renderer_cpu_s() - first_message[0], page, errors, foreign)


@pytest.fixture(scope="module")
def baseline_server(tmp_path_factory):
    with run_server(BASELINE_PAGE, tmp_path_factory.mktemp("baseline") / "server.log") as server:
        yield server


def test_the_first_page_shows_the_default_translation_and_its_charts_without_a_click(browser, streamlit_server,
                                                                                     baseline_server):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        for url, shown in ((streamlit_server.url, SHOWN), (baseline_server.url, None)):
            warm = open_page(context, url, shown)  # warms the server and the browser's cache (Plotly's 4.7 MB
            warm.page.close()                        # bundle); nothing is drawn without it
            assert not warm.foreign, f"requests left the machine: {warm.foreign}"
        visits: dict[str, list[Visit]] = {"app": [], "baseline": []}
        for _ in range(MEASURED_VISITS):
            for name, url, shown in (("baseline", baseline_server.url, None), ("app", streamlit_server.url, SHOWN)):
                visits[name].append(open_page(context, url, shown))
                if name == "baseline" or len(visits["app"]) < MEASURED_VISITS:  # one tab at a time; the app's
                    visits[name][-1].page.close()                              # last stays open to be checked
        cpu = {name: min(v.cpu_s for v in runs) for name, runs in visits.items()}
        total = {name: min(v.total_s for v in runs) for name, runs in visits.items()}
        measured = (f"renderer CPU s after the server's first message {cpu['app']:.2f} vs {cpu['baseline']:.2f} on the "
                    f"one-chart page; s from opening the URL {total['app']:.2f} vs {total['baseline']:.2f}")
        assert cpu["app"] <= CPU_RATIO_BOUND * cpu["baseline"], measured
        assert total["app"] <= TOTAL_RATIO_BOUND * total["baseline"], measured
        page, errors, foreign = visits["app"][-1].page, visits["app"][-1].errors, visits["app"][-1].foreign
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


# Runs in the page: where the first view's parts stand, and whether anything had to scroll to show them.
FIRST_VIEW = """() => {
  const box = (el) => { if (!el) return null; const b = el.getBoundingClientRect();
                        return {top: b.top, bottom: b.bottom, left: b.left, right: b.right}; };
  const main = document.querySelector('[data-testid=stMain]');
  return {
    shown: box(document.querySelector("SHOWN")),
    figure: box(document.querySelector('.st-key-translate_heatmap .js-plotly-plot')),
    title: (document.querySelector('.st-key-translate_heatmap .gtitle') || {}).textContent || '',
    opened: Array.from(document.querySelectorAll('[data-testid=stCaptionContainer]'))
      .map((c) => [c.textContent, box(c.querySelector('p') || c)]).find(([text]) => text.startsWith('Opened on'))
      || null,
    sidebar: box(document.querySelector('[data-testid=stSidebar]')),
    documentScrolls: document.scrollingElement.scrollHeight > window.innerHeight,
    mainScrollTop: main.scrollTop,
    height: window.innerHeight,
  };
}""".replace("SHOWN", SHOWN)


@pytest.mark.parametrize("text", [None, "Attention is all you need."], ids=["default", "doubted"])
def test_the_translation_and_its_whole_map_fit_a_1280x720_screen(browser, streamlit_server, screenshot_dir, text):
    """The first view shows attention at work: the default sentence's translation and its whole first map, opened on
    the most focused cross-attention head (the line above the map says which), on a projector's 1280x720 with the
    sidebar open as it opens by default, without scrolling. Also for the first sentence a class types, whose
    translation the model doubts: the word of doubt stands beside it and does not push the map off the screen
    (a warning box there did, by 122 px)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        query = "" if text is None else "/?text=" + urllib.parse.quote(text)
        page.goto(streamlit_server.url + query, wait_until="domcontentloaded")
        page.locator(SHOWN).first.wait_for()
        page.locator(".st-key-translate_heatmap .main-svg").first.wait_for()
        charts_settled(page)
        page.screenshot(path=str(screenshot_dir / "first_view_1280x720.png"))  # the viewport: what the room sees
        view = page.evaluate(FIRST_VIEW)
        badge = page.locator(".ae-doubt")
        if text is None:
            assert badge.count() == 0, "the default sentence is translated right: no doubt"
        else:
            expect(badge.first).to_be_visible()
            box = badge.first.bounding_box()
            assert box and box["y"] + box["height"] <= view["figure"]["top"], f"the doubt is not above the map: {box}"
        assert view["sidebar"]["right"] > 200, f"the sidebar is not open: {view['sidebar']}"
        assert not view["documentScrolls"] and view["mainScrollTop"] == 0
        assert view["shown"]["top"] >= 0 and view["shown"]["bottom"] <= view["height"], view["shown"]
        figure = view["figure"]
        assert figure["top"] >= 0 and figure["bottom"] <= view["height"], f"the map runs past the screen: {figure}"
        assert view["opened"], "no line says which head the view opened on"
        line, where = view["opened"]
        head = re.search(r"layer (\d+), head (\d+)", line)
        assert head and view["title"].endswith(f"layer {head[1]} · head {head[2]}"), (line, view["title"])
        assert where["bottom"] <= figure["top"], "the line is not above the map"
    finally:
        context.close()
