"""The exported lecture (python -m app.export lecture) in Chromium at a projector's 1280x720 with every network
request refused: opened from file:// (and once from a static web server), every slide of both sentences reached with
the keys a clicker sends, every figure drawn, hover values, the speaker notes and the sentence switch, no console
error, the layout rules of tests/e2e/test_text_layout.py (no text overlapping or cut, none under 18 px), and the
print to PDF: one 16:9 page per slide and sentence. Screenshots of a few slides stay behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import functools
import http.server
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.lecture.slides import SLIDES
from tests.e2e.test_text_layout import PRESENTER_MIN_PX, problems_of

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["My brother has bought a new house in the city.", "The children play in the garden."]
N = len(SLIDES)
VIEWPORT = {"width": 1280, "height": 720}
WAIT_MS = 60_000
SHOT_SLIDES = (1, 9, 11, 16)


@pytest.fixture(scope="module")
def lecture(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lecture") / "lecture.html"
    command = [sys.executable, "-m", "app.export", "lecture", "--out", str(out)]
    for text in SENTENCES:
        command += ["--text", text]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def offline_page(browser, allowed: str = "file://"):
    """A 1280x720 page that refuses every request not starting with ``allowed`` (recorded in page.refused) and
    records console errors and uncaught exceptions (page.errors)."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    page.refused, page.errors = [], []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            page.refused.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    page.on("console", lambda m: page.errors.append(m.text[:200]) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)[:200]))
    return page


def current(page) -> tuple[int, int]:
    """(sentence, slide) shown, 0-based."""
    found = page.evaluate("() => { const s = document.querySelector('section.slide.current');"
                          " return [+s.dataset.sentence, +s.dataset.slide]; }")
    return found[0], found[1]


def assert_slide_drawn(page, sentence: int, index: int) -> None:
    assert current(page) == (sentence, index)
    shown = page.locator("section.slide.current")
    assert re.match(rf"Slide {index + 1} / {N}\b", shown.locator(".counter").inner_text())
    shown.locator(".js-plotly-plot .nsewdrag, .js-plotly-plot .main-svg").first.wait_for(timeout=WAIT_MS)
    assert shown.locator(".js-plotly-plot").count() == 1, f"slide {index + 1}: no figure"


# The layout checks measure every figure of the page; the file holds all slides at once (the others hidden), so the
# other slides are taken out of the page while the shown one is measured, and put back unchanged.
PARK = """() => { window.__parked = Array.from(document.querySelectorAll('section.slide:not(.current)'), (s) => {
  const mark = document.createComment('parked'); s.replaceWith(mark); return [mark, s]; }); }"""
UNPARK = "() => { window.__parked.forEach(([mark, s]) => mark.replaceWith(s)); window.__parked = []; }"


def layout_problems(page, view: str) -> list[str]:
    """tests/e2e/test_text_layout.py's rules on the slide shown: no text overlapping, cut or under 18 px, no dropped
    piece label."""
    page.evaluate(PARK)
    try:
        return problems_of(page, view, PRESENTER_MIN_PX)
    finally:
        page.evaluate(UNPARK)


def test_the_exported_lecture_works_offline_from_file_and_prints_a_page_per_slide(browser, lecture, screenshot_dir):
    page = offline_page(browser)
    try:
        page.goto(lecture.as_uri())
        page.wait_for_function("document.body.dataset.drawn === 'all'", timeout=WAIT_MS)
        assert page.locator(".js-plotly-plot").count() == N * len(SENTENCES), "every figure drawn"
        problems = []
        for index in range(N):  # sentence 1, forwards with → and PageDown as a clicker sends them
            if index:
                page.keyboard.press("ArrowRight" if index % 2 else "PageDown")
            assert_slide_drawn(page, 0, index)
            problems += layout_problems(page, f"file sentence 1 slide {index + 1}")
            if index + 1 in SHOT_SLIDES:
                page.screenshot(path=str(screenshot_dir / f"lecture_file_slide_{index + 1}.png"))
        page.keyboard.press("ArrowRight")  # past the last slide: it stays
        assert current(page) == (0, N - 1)
        page.keyboard.press("s")  # the other sentence, same slide
        assert current(page) == (1, N - 1)
        for index in reversed(range(N)):  # sentence 2, backwards with ← and PageUp
            if index < N - 1:
                page.keyboard.press("ArrowLeft" if index % 2 else "PageUp")
            assert_slide_drawn(page, 1, index)
            problems += layout_problems(page, f"file sentence 2 slide {index + 1}")
        assert not problems, "\n".join(problems)

        page.locator(".sentence-button", has_text="1").click()  # the visible sentence switch
        assert current(page) == (0, 0)
        heatmap = next(i for i, s in enumerate(SLIDES) if s.figure == "heatmap" and s.args["kind"] == "cross")
        for _ in range(heatmap):
            page.keyboard.press("ArrowRight")
        box = page.locator("section.slide.current .nsewdrag").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.3)
        hover = page.locator("section.slide.current .hoverlayer .hovertext").first
        hover.wait_for(timeout=WAIT_MS)
        assert re.search(r"\d\.\d", hover.text_content()), "the hover shows the weight"

        notes = page.locator("section.slide.current .notes")
        assert not notes.is_visible()
        page.keyboard.press("n")
        assert notes.is_visible() and "Queries come from the decoder" in notes.inner_text()
        page.screenshot(path=str(screenshot_dir / "lecture_file_notes.png"))
        page.keyboard.press("n")
        assert not notes.is_visible()

        pdf = page.pdf(prefer_css_page_size=True, print_background=True)
        assert not page.errors, "errors in the browser console:\n" + "\n".join(page.errors)
        assert not page.refused, f"the file asked the network for {page.refused}"
    finally:
        page.close()
    pages = re.findall(rb"/Type\s*/Page(?!s)", pdf)
    assert len(pages) == N * len(SENTENCES)
    boxes = {tuple(round(float(v)) for v in m) for m in re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)", pdf)}
    assert boxes == {(960, 540)}, "16:9 pages of 1280x720 CSS px (960x540 pt)"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no request lines in the test's output
        pass


def test_the_exported_lecture_works_from_a_static_web_server(browser, lecture):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler,
                                                                                 directory=str(lecture.parent)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    page = offline_page(browser, allowed=base)
    try:
        page.goto(base + lecture.name + "#sentence=2&slide=5")
        page.wait_for_function("document.body.dataset.drawn === 'all'", timeout=WAIT_MS)
        assert_slide_drawn(page, 1, 4)  # the address says where to start
        page.keyboard.press("PageDown")
        assert_slide_drawn(page, 1, 5)
        assert not page.errors and not page.refused
    finally:
        page.close()
        server.shutdown()
        server.server_close()


def test_the_lecture_pages_button_downloads_the_same_file(browser, streamlit_server, tmp_path):
    """Built on the server's own thread when clicked (Streamlit's deferred download), for the sentence on screen."""
    from tests.e2e.test_lecture_browser import open_page, wait_for_slide

    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    try:
        open_page(page, f"{streamlit_server.url}/lecture?slide=3")
        wait_for_slide(page, 3)
        with page.expect_download(timeout=180_000) as download:
            page.get_by_role("button", name=re.compile("Download the lecture")).click()
        saved = tmp_path / "lecture.html"
        download.value.save_as(saved)
    finally:
        page.close()
    text = saved.read_text(encoding="utf-8")
    assert download.value.suggested_filename == "lecture.html"
    assert text.count("<section class='slide'") == N and text.count("class='figure-data'") == N
    assert SENTENCES[0] in text  # the app's default sentence, the one on screen
    assert "Error executing deferred callable" not in streamlit_server.log_tail(400)
