"""A lecturer's flow in a real browser at 1280x720, presenter mode: the browser's Back and Forward move through the
slides and the pages, presenter mode (sidebar folded) survives every navigation, a click leaves no focus frame, the
sentence box and the prepared sentences' keys change the sentence, and a reload mid-decode keeps the sentence."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlparse

import pytest

from tests.e2e.test_browser import assert_no_error, unfold, wait_idle
from tests.e2e.waits import expect, rerun

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 720}
COUNTER = re.compile(r"Slide (\d+) / \d+")


def wait_for_slide(page, number: int) -> None:
    page.wait_for_function("(n) => /Slide (\\d+) \\//.exec(document.body.innerText)?.[1] === String(n)", arg=number,
                           timeout=WAIT_MS)
    wait_idle(page)


def param(page, name: str) -> str | None:
    values = parse_qs(urlparse(page.url).query).get(name)
    return values[0] if values else None


def sidebar_folded(page) -> bool:
    return page.evaluate("() => { const bar = document.querySelector('[data-testid=stSidebar]');"
                         " return !bar || bar.getBoundingClientRect().right <= 1; }")


def expect_folded(page) -> None:
    page.wait_for_function("() => { const bar = document.querySelector('[data-testid=stSidebar]');"
                           " return !bar || bar.getBoundingClientRect().right <= 1; }", timeout=WAIT_MS)


def caption(page) -> str:
    return page.locator("[data-testid=stCaptionContainer]", has_text="Current sentence:").first.inner_text()


def test_back_and_forward_move_through_slides_and_pages_in_presenter_mode(streamlit_server, browser):
    page = browser.new_page(viewport=VIEWPORT)
    with rerun(page, WAIT_MS):
        page.goto(f"{streamlit_server.url}/lecture?model=reverse&text=a+b+c&presenter=1",
                  wait_until="domcontentloaded")
    wait_for_slide(page, 1)
    expect_folded(page)
    for number in (2, 3):
        with rerun(page, WAIT_MS):
            page.keyboard.press("ArrowRight")
        wait_for_slide(page, number)
        assert param(page, "slide") == str(number)
    # a click on a button leaves no focus frame in presenter mode
    with rerun(page, WAIT_MS):
        page.locator(".st-key-lecture_next button").click()
    wait_for_slide(page, 4)
    frame = page.evaluate("() => { const s = getComputedStyle(document.activeElement);"
                          " return [s.outlineStyle, s.outlineWidth, s.boxShadow]; }")
    assert frame[0] == "none" or frame[1] == "0px", f"focus outline after a click: {frame}"
    assert frame[2] == "none", f"focus shadow after a click: {frame}"
    page.go_back()
    wait_for_slide(page, 3)
    page.go_back()
    wait_for_slide(page, 2)
    assert param(page, "slide") == "2"
    page.go_forward()
    wait_for_slide(page, 3)
    # another page through the page menu (the lecturer opens the folded sidebar for it)
    page.locator("[data-testid=stExpandSidebarButton]").click()
    page.wait_for_function("() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().right"
                           " > 100", timeout=WAIT_MS)
    with rerun(page, WAIT_MS):
        page.locator("[data-testid=stSidebarNav] a", has_text="Masks").click()
    page.wait_for_url(re.compile(r"/masks"), timeout=WAIT_MS)
    wait_idle(page)
    expect_folded(page)  # presenter mode stays presenter mode: folded again on the new page
    assert param(page, "presenter") == "1" and param(page, "text") == "a b c"
    page.go_back()
    wait_for_slide(page, 3)
    expect_folded(page)
    assert param(page, "presenter") == "1"
    assert_no_error(page, "lecture after Back")
    page.close()


def test_the_sentence_box_and_the_prepared_sentence_keys(streamlit_server, browser):
    page = browser.new_page(viewport=VIEWPORT)
    prepared = quote("h e l l o\nw o r l d\nt h r e e")
    with rerun(page, WAIT_MS):
        page.goto(f"{streamlit_server.url}/lecture?model=reverse&text=a+b&presenter=1&slide=2&prepared={prepared}",
                  wait_until="domcontentloaded")
    wait_for_slide(page, 2)
    # presenter mode folds the lecturer's notes, keys and sentences away from the hall: open the fold to read them
    page.locator(".st-key-lecturer_tools summary").first.click()
    expect(page.locator(".st-key-lecturer_tools details[open]").first).to_be_visible(timeout=WAIT_MS)
    assert "S** next prepared sentence" not in page.inner_text("body")  # Markdown rendered, not shown raw
    assert "S next prepared sentence, 1–5 that one" in page.inner_text("body")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # keys go to the page
    with rerun(page, WAIT_MS):
        page.keyboard.press("s")
    expect(page.locator("[data-testid=stCaptionContainer]", has_text="h e l l o").first).to_be_visible(
        timeout=WAIT_MS)
    wait_idle(page)
    with rerun(page, WAIT_MS):
        page.keyboard.press("3")
    expect(page.locator("[data-testid=stCaptionContainer]", has_text="t h r e e").first).to_be_visible(
        timeout=WAIT_MS)
    wait_idle(page)
    assert param(page, "text") == "t h r e e" and param(page, "slide") == "2"
    box = page.locator(".st-key-lecture_text input")
    box.fill("x y z")
    with rerun(page, WAIT_MS):
        box.press("Enter")
    expect(page.locator("[data-testid=stCaptionContainer]", has_text="z y x").first).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    assert param(page, "text") == "x y z" and COUNTER.search(page.inner_text("body")).group(1) == "2"
    assert_no_error(page, "lecture sentence box")
    page.close()


def test_a_reload_mid_decode_brings_the_sentence_back(streamlit_server, browser):
    page = browser.new_page(viewport=VIEWPORT)
    with rerun(page, WAIT_MS):
        page.goto(f"{streamlit_server.url}/?model=reverse", wait_until="domcontentloaded")
    wait_idle(page)
    # 60 pieces (the reverse model reads 63): a slow-motion decode of about 18 s
    sentence = " ".join("abcdefghij"[(3 * i) % 10] for i in range(60))
    box = page.locator(".st-key-text textarea")
    box.fill(sentence)
    unfold(page, "decode_settings")
    page.locator(".st-key-slow_motion label").click()
    expect(page.locator(".st-key-slow_motion input")).to_be_checked(timeout=WAIT_MS)  # on before Translate is pressed
    wait_idle(page)
    page.locator(".st-key-translate button").click()
    page.wait_for_function("(t) => new URLSearchParams(location.search).get('text') === t", arg=sentence,
                           timeout=WAIT_MS)
    # The link has the sentence; reloading now (mid-decode where the machine allows: about 18 s of slow motion)
    # must bring it back. (A guard that the run was still going failed twice in CI's shared run, never alone.)
    with rerun(page, WAIT_MS):
        page.reload(wait_until="domcontentloaded")
    wait_idle(page)
    expect(page.locator(".st-key-text textarea")).to_have_value(sentence, timeout=WAIT_MS)
    assert_no_error(page, "reload mid-decode")
    page.close()
