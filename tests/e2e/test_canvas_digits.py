"""The Vision page's drawing canvas in a real browser: 10 digits of each class drawn with mouse strokes (written by
the test: tests/digit_strokes.py, varied in size, place, width, slant and tremor), each read by the page's ViT; at
least 90% must be read right. The confusion matrix is printed (pytest -s) and kept in $E2E_SCREENSHOTS."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

from tests.digit_strokes import variant
from tests.e2e.test_browser import assert_no_error, wait_idle
from tests.e2e.waits import rerun

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
READ = re.compile(r"reads your drawing as (\d)")


def draw(page, box: dict, strokes: list[list[tuple[float, float]]]) -> None:
    """Mouse strokes on the canvas: press, move through the points, release."""
    for stroke in strokes:
        page.mouse.move(box["x"] + stroke[0][0], box["y"] + stroke[0][1])
        page.mouse.down()
        for x, y in stroke[1:]:
            page.mouse.move(box["x"] + x, box["y"] + y)
        page.mouse.up()


def reading(page, canvas) -> int:
    """The digit the page reads for the drawing the canvas sent last (waits until the page shows that drawing)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        sent = canvas.get_attribute("data-sent")
        shown = page.locator("[data-testid=digitRead]")
        if sent and shown.count() == 1 and shown.get_attribute("data-points") == sent:
            found = READ.search(shown.inner_text())
            assert found, shown.inner_text()
            return int(found.group(1))
        page.wait_for_timeout(100)
    pytest.fail("the page never showed a reading of the drawing the canvas sent")


def test_drawn_digits_are_read(streamlit_server, browser, screenshot_dir):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    with rerun(page, WAIT_MS):
        page.goto(f"{streamlit_server.url}/vision", wait_until="domcontentloaded")
    wait_idle(page)
    with rerun(page, WAIT_MS):
        page.locator("[data-testid=stButtonGroup] button", has_text=re.compile(r"^\W*Draw your own\s*$")).first.click()
    canvas = page.locator("canvas[data-ae-canvas]")
    canvas.wait_for(timeout=WAIT_MS)
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box and box["width"] > 200 and abs(box["width"] - box["height"]) < 2
    clear = page.locator("button[data-ae-clear]")
    confusion = np.zeros((10, 10), dtype=int)
    for digit in range(10):
        for index in range(10):
            if digit or index:
                clear.click()  # sent only if no drawing follows within 0.6 s: one reading per digit
            with rerun(page, WAIT_MS):
                draw(page, box, variant(digit, index, box["width"]))
            confusion[digit, reading(page, canvas)] += 1
    assert_no_error(page, "Vision page after 100 drawings")
    page.screenshot(path=str(screenshot_dir / "canvas_last_digit.png"))
    table = "\n".join(f"{d}: " + " ".join(f"{n:2d}" for n in confusion[d]) for d in range(10))
    report = f"read right: {np.trace(confusion)} of 100\nrows: drawn digit, columns: read as 0-9\n{table}"
    print(report)
    (screenshot_dir / "canvas_confusion.txt").write_text(report + "\n")
    assert np.trace(confusion) >= 90, report
    page.close()
