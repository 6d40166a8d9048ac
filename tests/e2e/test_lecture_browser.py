"""Lecture mode in a real browser at a projector's 1280x720: the guided tour walked with the keys a clicker sends,
a copied link opened in a fresh browser, presenter mode's font sizes, and a 300-piece input drawn in every view.
Screenshots of three presenter-mode slides stay behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import contextlib
import re

import pytest

from app.lecture.slides import SLIDES
from tests.e2e.test_browser import assert_no_error, sentence_box, wait_idle
from tests.e2e.waits import charts_settled, expect, rerun

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000  # the en-de slides (head importance, beam search) take a few seconds on a busy CPU
VIEWPORT = {"width": 1280, "height": 720}
N = len(SLIDES)
COUNTER = re.compile(r"Slide (\d+) / (\d+)")
SHOT_SLIDES = (4, 9, 11)  # Q/K/V stages, cross-attention heatmap, beam tree
LONG_INPUT = " ".join("abcdefghijklmnopqrstuvwxyz"[(7 * i) % 26] for i in range(300))  # 300 letters: 300 pieces


def chart(page, key: str):
    return page.locator(f".st-key-{key} .js-plotly-plot").first


def open_page(page, url: str) -> None:
    with rerun(page, WAIT_MS):
        page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid=stSidebarNav]", state="attached", timeout=WAIT_MS)  # hidden if folded


def slide_number(page) -> tuple[int, int]:
    text = page.locator("[data-testid=stMarkdownContainer]", has_text=COUNTER).first.inner_text()
    found = COUNTER.search(text)
    return int(found.group(1)), int(found.group(2))


def wait_for_slide(page, number: int) -> None:
    """The slide shown is ``number`` and its run is over (call it after the run that turns the slide, see `turn`)."""
    page.wait_for_function("(n) => /Slide (\\d+) \\//.exec(document.body.innerText)?.[1] === String(n)", arg=number,
                           timeout=WAIT_MS)
    wait_idle(page)
    chart(page, "lecture_figure").locator(".main-svg").first.wait_for(timeout=WAIT_MS)


def turn(page, key: str, number: int) -> None:
    """Press ``key`` (bound to a slide button) and wait for slide ``number`` to be drawn."""
    with rerun(page, WAIT_MS):
        page.keyboard.press(key)
    wait_for_slide(page, number)


def slide_in_url(page) -> int:
    found = re.search(r"[?&]slide=(\d+)", page.url)
    return int(found.group(1)) if found else 1


def tick_font_sizes(page) -> list[float]:
    return page.evaluate("() => Array.from(document.querySelectorAll('.xtick text'), "
                         "t => parseFloat(getComputedStyle(t).fontSize))")


def fail_with_context(page, server, screenshot_dir, name: str) -> None:
    with contextlib.suppress(Exception):  # never hide the original failure
        page.screenshot(path=str(screenshot_dir / f"failure_{name}.png"), full_page=True)
    print(f"screenshot of the failure: {screenshot_dir / f'failure_{name}.png'}")
    print(f"server log:\n{server.log_tail()}")


def test_walk_the_whole_tour_with_the_clicker_keys(browser, streamlit_server, screenshot_dir):
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    try:
        open_page(page, f"{streamlit_server.url}/lecture")
        wait_for_slide(page, 1)
        assert slide_number(page) == (1, N) and slide_in_url(page) == 1
        for number in range(2, N + 1):
            turn(page, "ArrowRight", number)
            assert slide_number(page) == (number, N)
            page.wait_for_function("(n) => new URL(location.href).searchParams.get('slide') === String(n)",
                                   arg=number, timeout=WAIT_MS)
            assert slide_in_url(page) == number
            assert_no_error(page, f"slide {number}")
            assert page.locator("[data-testid=stAlert]").filter(has_text="could not be drawn").count() == 0
        # past the end: the key's button is disabled on the last slide, so the key asks for no run and it stays
        expect(page.locator(".st-key-lecture_next button")).to_be_disabled()
        page.keyboard.press("ArrowRight")
        wait_idle(page)
        assert slide_number(page) == (N, N)
        turn(page, "PageUp", N - 1)  # a clicker's "back"
        turn(page, "ArrowLeft", N - 2)
        assert slide_in_url(page) == N - 2
    except Exception:
        fail_with_context(page, streamlit_server, screenshot_dir, "tour")
        raise
    finally:
        page.close()


def test_a_copied_link_restores_the_view_in_a_fresh_browser(browser, streamlit_server, screenshot_dir):
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    fresh = browser.new_context(viewport=VIEWPORT)
    try:
        open_page(page, f"{streamlit_server.url}/?kind=enc_self")  # the default en-de sentence, decoded at once
        heatmap = chart(page, "translate_heatmap")
        heatmap.locator(".gtitle").wait_for(timeout=WAIT_MS)
        # the text area's code may arrive after the chart's (a chunk of its own): wait until it shows the sentence
        page.wait_for_function("() => document.querySelector('[data-testid=stTextArea] textarea')?.value.length > 0",
                               timeout=WAIT_MS)
        sentence = sentence_box(page).input_value()
        page.mouse.click(VIEWPORT["width"] - 40, VIEWPORT["height"] - 40)  # focus the page, not a text field
        with rerun(page, WAIT_MS):
            page.keyboard.press("l")  # next layer: 2
        for _ in range(3):  # next head: mean -> 1 -> 2 -> 3
            with rerun(page, WAIT_MS):
                page.keyboard.press("h")
        title = "Encoder self-attention · layer 2 · head 3"
        page.wait_for_function("(t) => document.querySelector('.st-key-translate_heatmap .gtitle')?.textContent === t",
                               arg=title, timeout=WAIT_MS)
        page.wait_for_function("() => new URL(location.href).searchParams.get('head') === '3'", timeout=WAIT_MS)
        page.locator("[data-ae-copy]").click()
        # the box shows the page's address (refreshed twice a second, and on Copy)
        page.wait_for_function("() => document.querySelector('input[data-ae-link]').value === location.href",
                               timeout=WAIT_MS)
        link = page.locator("input[data-ae-link]").input_value()
        assert link.startswith(streamlit_server.url) and "kind=enc_self" in link and "layer=2" in link, link

        other = fresh.new_page()  # no cookies, no session: only the link
        other.set_default_timeout(WAIT_MS)
        open_page(other, link)
        restored = chart(other, "translate_heatmap").locator(".gtitle")
        restored.wait_for(timeout=WAIT_MS)
        assert restored.text_content() == title
        expect(sentence_box(other)).to_have_value(sentence, timeout=WAIT_MS)  # its code may come after the chart's
        assert "kind=enc_self" in other.url and "layer=2" in other.url and "head=3" in other.url
        assert_no_error(other, "restored link")
    except Exception:
        fail_with_context(page, streamlit_server, screenshot_dir, "link")
        raise
    finally:
        page.close()
        fresh.close()


def test_presenter_mode_fonts_sidebar_and_slides(browser, streamlit_server, screenshot_dir):
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    try:
        open_page(page, f"{streamlit_server.url}/?kind=cross")
        chart(page, "translate_heatmap").locator("g.xtick text").first.wait_for(timeout=WAIT_MS)
        assert min(tick_font_sizes(page)) < 16  # the normal look
        with rerun(page, WAIT_MS):
            page.locator("[data-testid=stSidebar]").get_by_text("Presenter mode", exact=True).click()
        page.wait_for_function("() => document.querySelector('[data-testid=stSidebar]')"
                               ".getBoundingClientRect().right <= 0", timeout=WAIT_MS)  # folded away
        page.wait_for_function("() => Array.from(document.querySelectorAll('.xtick text')).every("
                               "t => parseFloat(getComputedStyle(t).fontSize) >= 16)", timeout=WAIT_MS)
        sizes = tick_font_sizes(page)
        assert sizes and min(sizes) >= 16, sizes
        assert "presenter=1" in page.url

        for number in SHOT_SLIDES:  # the link carries presenter mode to the lecture
            open_page(page, f"{streamlit_server.url}/lecture?slide={number}&presenter=1")
            wait_for_slide(page, number)
            charts_settled(page)  # Plotly's layout done before the picture
            box = chart(page, "lecture_figure").bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], box  # fully visible
            assert min(tick_font_sizes(page) or [16]) >= 16
            page.wait_for_function("() => document.querySelector('[data-testid=stSidebar]')"
                                   ".getBoundingClientRect().right <= 0", timeout=WAIT_MS)
            shot = screenshot_dir / f"lecture_presenter_slide_{number:02d}.png"
            page.screenshot(path=str(shot))  # the viewport only: what the hall sees without scrolling
            assert shot.stat().st_size > 20_000
            assert_no_error(page, f"presenter slide {number}")
    except Exception:
        fail_with_context(page, streamlit_server, screenshot_dir, "presenter")
        raise
    finally:
        page.close()


def test_a_300_piece_input_draws_in_every_view(browser, streamlit_server, screenshot_dir):
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS * 2)
    try:
        open_page(page, f"{streamlit_server.url}/?model=reverse&max_len=320&text=a&kind=enc_self")  # 301 x 301 maps
        box = sentence_box(page)
        box.fill(LONG_INPUT)
        with rerun(page, WAIT_MS * 2):
            box.press("Control+Enter")
        page.get_by_role("button", name=re.compile(r"^\W*Translate\s*$")).click()
        page.wait_for_function("() => /needs 3\\d\\d positions/.test(document.body.innerText)", timeout=WAIT_MS * 4)
        for view, key in (("Heatmap", "translate_heatmap"), ("Head view", "translate_head_view"),
                          ("Model view", "translate_model_view")):
            if view != "Heatmap":  # the link opened the heatmap (the default view): pressing it asks for no run
                with rerun(page, WAIT_MS * 2):
                    page.locator(".st-key-translate_view button", has_text=view).first.click()
            chart(page, key).locator(".main-svg").first.wait_for(timeout=WAIT_MS * 2)
            assert_no_error(page, f"300 pieces, {view}")
        page.locator("[data-testid=stSidebarNav] a", has_text="Decoding").first.click()
        page.wait_for_url(re.compile(r".*/decoding(\?.*)?$"), timeout=WAIT_MS)
        wait_idle(page)
        for key in ("decoding_topk", "decoding_dec_self", "decoding_cross"):
            chart(page, key).locator(".main-svg").first.wait_for(timeout=WAIT_MS * 2)
        page.keyboard.press("ArrowRight")  # the next step, by key
        page.wait_for_function("() => new URL(location.href).searchParams.get('step') === '2'", timeout=WAIT_MS)
        wait_idle(page)
        assert_no_error(page, "300 pieces, Decoding")
        page.screenshot(path=str(screenshot_dir / "long_input_decoding.png"))
    except Exception:
        fail_with_context(page, streamlit_server, screenshot_dir, "long")
        raise
    finally:
        page.close()


def test_keys_turn_the_slides_right_after_presenter_mode_is_switched_on(browser, streamlit_server):
    """The switch keeps the focus after a click, inside a sidebar that presenter mode folds away: → must still turn
    the slide at once, with no click on the page first."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    try:
        open_page(page, f"{streamlit_server.url}/lecture?model=reverse")
        wait_for_slide(page, 1)
        with rerun(page, WAIT_MS):
            page.locator("[data-testid=stSidebar]").get_by_text("Presenter mode", exact=True).click()
        assert page.evaluate("() => document.activeElement.type") == "checkbox"  # the focus stayed on the switch
        turn(page, "ArrowRight", 2)
        turn(page, "PageDown", 3)
        assert "presenter=1" in page.url and slide_in_url(page) == 3
    finally:
        page.close()
