"""A server a lecture hall shares: the link that once took it past 16 GB is priced and bounded, its work stops
when the visitor leaves, and nothing a link carries is rendered as Markdown. A real `streamlit run` on 127.0.0.1,
driven by Debian's Chromium; CPU time and memory are read from the server's /proc entry."""
from __future__ import annotations

import os
import time
import urllib.parse
from pathlib import Path

import pytest

from tests.e2e.conftest import run_server

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
HOSTILE = "/decoding?" + urllib.parse.urlencode({"beam": 8, "max_len": 1023, "text": "!?.,;:" * 28})
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_share(pid: int, window_s: float = 1.0) -> float:
    """The share of one core the process used over the next ``window_s`` seconds (time is what is measured)."""
    start, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(window_s)
    return (cpu_seconds(pid) - start) / (time.monotonic() - t0)


def peak_resident_mb(pid: int, window_s: float) -> float:
    """The most memory the process held, sampled every 50 ms over the next ``window_s`` seconds."""
    peak, end = resident_mb(pid), time.monotonic() + window_s
    while time.monotonic() < end:
        time.sleep(0.05)
        peak = max(peak, resident_mb(pid))
    return peak


@pytest.fixture(scope="module")
def hall_server(tmp_path_factory):
    with run_server("streamlit_app.py", tmp_path_factory.mktemp("hall") / "server.log") as server:
        yield server


def test_an_abandoned_hostile_link_stops_and_the_server_idles_within_5_s(browser, hall_server):
    pid = hall_server.pid
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(hall_server.url + HOSTILE, wait_until="domcontentloaded")
    deadline = time.monotonic() + WAIT_MS / 1000
    while cpu_share(pid, 0.5) < 0.5:  # wait until the decode is under way
        assert time.monotonic() < deadline, "the hostile link never started any work"
    peak = peak_resident_mb(pid, 2.0)  # while it decodes
    context.close()  # the visitor closes the tab mid-decode
    left = time.monotonic()
    while cpu_share(pid) > 0.1:
        assert time.monotonic() - left < 5 + 1, "the server still works 5 s after the last visitor left"
    assert peak < 1500, f"the server held {peak:.0f} MB for one hostile link"
    assert "Traceback" not in hall_server.log_tail(200)


def test_a_link_made_of_markdown_shows_as_text_not_as_a_link(browser, hall_server):
    name = "[Session expired - log in again](http://127.0.0.1:9/x)"
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(hall_server.url + "/?" + urllib.parse.urlencode({name: "1", "model": "reverse", "text": "a b"}),
              wait_until="domcontentloaded")
    notice = page.locator("[data-testid=stMarkdownContainer]", has_text="Ignored in this link")
    notice.first.wait_for(timeout=WAIT_MS)
    assert page.locator("a[href^='http://127.0.0.1:9']").count() == 0
    assert "[Session expired" in notice.first.inner_text()
    # a toast would be gone within 6 s; the notice stays until dismissed. Time is what is checked here: the wait
    # for the notice to go must run out (6 s), and it fails the moment the notice goes.
    from playwright.sync_api import TimeoutError as StillThere
    with pytest.raises(StillThere):
        notice.first.wait_for(state="hidden", timeout=6_000)
    assert notice.first.is_visible()
    page.get_by_role("button", name="Dismiss").click()
    notice.first.wait_for(state="detached", timeout=WAIT_MS)
    page.close()


ROOM = ("Can you help me, please?", "The shop closes at six o'clock.", "I would like a glass of water.",
        "We are going to the cinema tonight.", "How much does this coat cost?")
SHOWN = "[data-testid=stMarkdownContainer] div[style*='1.9rem'] .ae-text"  # the big translation line's text


def alone(text: str) -> str:
    """What the app's default settings give for ``text`` decoded alone, in this process."""
    from app.models.registry import decode_rules, default_length_penalty
    from app.serving.scheduler import Request
    from model.checkpoints.files import load_checkpoint
    from model.serving.inference import translate
    ckpt = load_checkpoint("pretrained/en-de")
    request = Request(model_name="en-de", text=text, length_penalty=default_length_penalty("en-de"),
                      **decode_rules("en-de", None))
    return translate(ckpt.model, ckpt.tokenizer, text, request.decode_config).text


def test_a_room_opening_different_links_at_once_gets_each_its_own_translation(browser, hall_server):
    """Five visitors open five sentences' links at once: the server decodes them together (model.serving.batch_queue
    batches what arrives while a decode runs; that it batches is asserted in tests/model/test_batch_queue.py and
    tests/app/test_decode_slots.py, where no timing decides it; a run here logged a batch of 1, then one of 4). Here, in
    the real server, each page must show the translation its own sentence gets alone: a batch that mixed up rows,
    padding or steps would show another's."""
    contexts = [browser.new_context(viewport={"width": 1280, "height": 720}) for _ in ROOM]
    try:
        pages = [context.new_page() for context in contexts]
        for page, text in zip(pages, ROOM, strict=True):
            page.goto(f"{hall_server.url}/?{urllib.parse.urlencode({'text': text})}", wait_until="commit")
        for page, text in zip(pages, ROOM, strict=True):
            shown = page.locator(SHOWN).first
            shown.wait_for(timeout=WAIT_MS)
            assert shown.inner_text().strip() == alone(text), text
    finally:
        for context in contexts:
            context.close()
    assert "Traceback" not in hall_server.log_tail(200)


# Long enough that a decode outlasts the clicks on the other pages, so that requests meet at the slots.
LONG_ROOM = ("My brother lives in a small town near Hamburg and works as a teacher at the school in the centre.",
             "She has been learning German for two years because she wants to study in Berlin next autumn.",
             "We visited our grandparents last weekend and they showed us the old photos of the village.",
             "The doctor said that I should rest for a few days and drink a lot of water and tea.",
             "Our train was late again this morning, so we missed the first part of the lecture on history.")


def test_a_room_pressing_translate_at_once_each_watches_its_own_decode(browser, hall_server):
    """Five visitors type five sentences and press Translate together: the Translate page streams each decode, two
    side by side on the two slots and the rest as one batch behind them (model.serving.batch_queue; a run here logged
    batches of 1, 1 and 3), and every page ends with the translation its own sentence gets alone, whichever way the
    timing formed the batches."""
    from tests.e2e.waits import expect, rerun
    contexts = [browser.new_context(viewport={"width": 1280, "height": 720}) for _ in LONG_ROOM]
    try:
        pages = [context.new_page() for context in contexts]
        for page, text in zip(pages, LONG_ROOM, strict=True):
            page.set_default_timeout(WAIT_MS)
            page.goto(hall_server.url, wait_until="domcontentloaded")
            box = page.locator("[data-testid=stTextArea] textarea").first
            box.fill(text)
            with rerun(page, WAIT_MS):
                box.press("Control+Enter")  # the text area's value reaches the server (otherwise on blur)
        buttons = [page.get_by_role("button", name="Translate").first for page in pages]
        for button in buttons:
            button.wait_for()
        for button in buttons:  # as close together as the pages allow: no wait for actionability in between
            button.dispatch_event("click")
        for page, text in zip(pages, LONG_ROOM, strict=True):
            expect(page.locator(SHOWN).first).to_have_text(alone(text), timeout=WAIT_MS)
    finally:
        for context in contexts:
            context.close()
    assert "Traceback" not in hall_server.log_tail(200)
