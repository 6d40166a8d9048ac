"""The server under abuse: foreign origins, uploads without an XSRF token, model failures, and widgets changed
while a translation streams. Real `streamlit run` servers on 127.0.0.1 and Debian's Chromium.

The model failures (and a slow model, to fill every decoding slot) come from a second server started from a
small wrapper script (test code, written to tmp_path) that rigs `model.serving.inference` (and one function of the
Positional page) before it runs the unchanged app: the app has no test-only code paths.
"""
from __future__ import annotations

import base64
import os
import re
import socket
import tomllib
import urllib.error
import urllib.parse
import urllib.request

import pytest

from app.state import DEFAULTS
from tests.e2e.conftest import ROOT, run_server
from tests.e2e.test_browser import unfold
from tests.e2e.waits import IDLE, expect, rerun

DEFAULT_TEXT = DEFAULTS["text"]

pytestmark = pytest.mark.e2e

WAIT_MS = 30_000
PROGRESS = "[data-testid=stProgress]"
SHOWN = "[data-testid=stMarkdownContainer] div[style*='1.9rem'] .ae-text"  # the big translation line's text
FOREIGN_ORIGIN = "http://evil.example"
SECRET = "SECRET-DETAIL-5f3a"  # in the simulated failures' messages: must reach the log, never the page
PY_PATH = re.compile(r"[\w./\\-]+\.py\b")
TRANSLATION_FAILED = "Sorry, the translation failed (an internal error; the details are in the server log)."
# en-de sentences for the streaming test (output of 8-12 pieces: 3-4 s in slow motion)
S1 = "We went home because it was raining."
S2 = "When does the train to Berlin leave?"
S3 = "She would like to drink a cup of tea."


# --- configuration and transport ---------------------------------------------------------------------------

def test_config_keeps_cors_and_xsrf_on_and_hides_error_details():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server, client = config.get("server", {}), config.get("client", {})
    assert server.get("enableCORS", True) is True, "server.enableCORS must not be turned off"
    assert server.get("enableXsrfProtection", True) is True, "server.enableXsrfProtection must not be turned off"
    # "none": an uncaught exception shows a redacted message (False would mean "stacktrace" in Streamlit 1.67)
    assert client.get("showErrorDetails") == "none"
    assert client.get("showErrorLinks") is False
    # uploads are held in memory: the limit the docs state (Limits), enough for a checkpoint of the shipped size (15 MB)
    assert server.get("maxUploadSize") == 50 and "each at most 50 MB" in (ROOT / "docs" / "serving.md").read_text()


def websocket_upgrade(url: str, origin: str | None) -> tuple[int, str]:
    """A raw WebSocket upgrade request to /_stcore/stream on 127.0.0.1: (HTTP status, status line)."""
    parsed = urllib.parse.urlsplit(url)
    assert parsed.hostname == "127.0.0.1"
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET /_stcore/stream HTTP/1.1", f"Host: {parsed.netloc}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Protocol: streamlit"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection((parsed.hostname, parsed.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        response = b""
        while b"\r\n" not in response:
            chunk = sock.recv(4096)
            if not chunk:
                break
            response += chunk
    status_line = response.split(b"\r\n", 1)[0].decode(errors="replace")
    match = re.match(r"HTTP/1\.[01] (\d{3})", status_line)
    assert match, f"no HTTP status line in the answer: {response[:200]!r}"
    return int(match.group(1)), status_line


def test_websocket_from_a_foreign_origin_is_refused(streamlit_server):
    status, line = websocket_upgrade(streamlit_server.url, FOREIGN_ORIGIN)
    assert status == 403, f"a WebSocket from {FOREIGN_ORIGIN} was not refused: {line}"
    # the control: the app's own origin is let in, so the 403 above is the origin check and nothing else
    status, line = websocket_upgrade(streamlit_server.url, streamlit_server.url)
    assert status == 101, line
    assert "disallowed Origin" in streamlit_server.log_tail()


def test_an_upload_without_xsrf_token_is_refused(streamlit_server):
    """XSRF protection is on in the running server: a file upload without the token is a 403."""
    boundary = "----e2e"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"model.safetensors\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\nxx\r\n--{boundary}--\r\n").encode()
    request = urllib.request.Request(f"{streamlit_server.url}/_stcore/upload_file/some-session/some-file",
                                     data=body, method="PUT",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                              "Origin": FOREIGN_ORIGIN})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403
    assert "XSRF" in refused.value.read().decode(errors="replace")


# --- model failures: a short message on the page, the traceback in the server log only ----------------------

WRAPPER = '''\
"""Test-only entry point: the unchanged app with a rigged model. Its decoding raises RuntimeError, except for
sentences containing "slowly", which decode normally but take STEP_S seconds per step; and one function the
Positional page draws outside any try raises too. The patches are applied once per server process."""
import os
import runpy
import sys
import time

ROOT = {root!r}
STEP_S = {step_s!r}
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if sys.path[0] != ROOT:
    sys.path.insert(0, ROOT)

import model.serving.inference
import model.network.positional

if not getattr(model.serving.inference, "_rigged_by_test", False):
    _real_stream = model.serving.inference.stream

    def _rigged_stream(model_, source, *args, **kwargs):
        if "slowly" not in source.text:
            raise RuntimeError("simulated model failure {secret}")
        for step in _real_stream(model_, source, *args, **kwargs):
            time.sleep(STEP_S)
            yield step

    def _broken(*args, **kwargs):
        raise RuntimeError("simulated model failure {secret}")

    model.serving.inference.stream = _rigged_stream  # the Translate page's streaming decode, and translate() inside
    # drawn by the Positional page outside any try: an uncaught exception
    model.network.positional.wavelengths = _broken
    model.serving.inference._rigged_by_test = True
runpy.run_path(os.path.join(ROOT, "streamlit_app.py"), run_name="__main__")
'''
SLOW_STEP_S = 1.0


@pytest.fixture(scope="module")
def rigged_server(tmp_path_factory):
    """The app started from a wrapper in tmp_path whose model fails (or is slow, see WRAPPER). The wrapper's
    folder links to the project's app/ so that the router's page paths (relative to the main script) resolve."""
    folder = tmp_path_factory.mktemp("rigged_app")
    (folder / "app").symlink_to(ROOT / "app", target_is_directory=True)
    script = folder / "rigged_app.py"
    script.write_text(WRAPPER.format(root=str(ROOT), secret=SECRET, step_s=SLOW_STEP_S))
    with run_server(script, folder / "server.log") as server:
        yield server


def page_text(page) -> str:
    return page.inner_text("body")


def assert_no_details_on_page(page, where: str) -> None:
    text = page_text(page)
    assert "Traceback" not in text, f"{where}: a traceback is on the page"
    assert SECRET not in text, f"{where}: the exception's message is on the page"
    assert not PY_PATH.search(text), f"{where}: a file path is on the page: {PY_PATH.search(text).group(0)!r}"
    assert str(ROOT) not in text, f"{where}: a server path is on the page"


def open_app(page, url: str) -> None:
    with rerun(page, WAIT_MS):
        page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid=stSidebarNav]", timeout=WAIT_MS)
    sentence_box(page).wait_for(timeout=WAIT_MS)


def wait_idle(page) -> None:
    """No script run going on (after an action, wait for its run with `rerun` instead: it may not have started)."""
    page.wait_for_selector(IDLE, timeout=WAIT_MS)


def sentence_box(page):
    return page.locator("[data-testid=stTextArea] textarea").first


def set_sentence(page, text: str) -> None:
    """Type ``text`` into the sentence box and wait for the script run that takes it."""
    box = sentence_box(page)
    box.fill(text)
    with rerun(page, WAIT_MS):
        box.press("Control+Enter")  # commit the text area's value (otherwise it is sent on blur)


def translate_button(page):
    return page.get_by_role("button", name=re.compile(r"^\W*Translate\s*$"))


def test_a_model_failure_shows_a_short_message_and_logs_the_traceback(browser, rigged_server, screenshot_dir):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(WAIT_MS)
    try:
        open_app(page, rigged_server.url)
        set_sentence(page, "The house is small.")
        with rerun(page, WAIT_MS):
            translate_button(page).click()
        page.get_by_text(TRANSLATION_FAILED).wait_for(timeout=WAIT_MS)
        assert page.locator("[data-testid=stException]").count() == 0  # caught by the page: a short message
        assert page.locator("[data-testid=stAlertContentError]").count() >= 1 or \
            page.locator("[data-testid=stAlert]").count() >= 1
        assert_no_details_on_page(page, "Translate")
        log = rigged_server.log_path.read_text(errors="replace")
        assert "translating Request(" in log and ") failed" in log  # the page's own log.exception line
        assert "Traceback" in log and "RuntimeError" in log and SECRET in log
        page.screenshot(path=str(screenshot_dir / "server_model_error.png"), full_page=True)
    except Exception:
        page.screenshot(path=str(screenshot_dir / "failure_model_error.png"), full_page=True)
        print(f"server log:\n{rigged_server.log_tail()}")
        raise
    finally:
        page.close()


def test_an_uncaught_exception_is_redacted_in_the_browser(browser, rigged_server, screenshot_dir):
    """client.showErrorDetails = "none" in effect: Streamlit's own exception box shows no message, type,
    traceback or path; the server log has them."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(WAIT_MS)
    try:
        with rerun(page, WAIT_MS):
            page.goto(f"{rigged_server.url}/positional", wait_until="domcontentloaded")
        page.wait_for_selector("[data-testid=stSidebarNav]", timeout=WAIT_MS)
        exception = page.locator("[data-testid=stException]")
        exception.first.wait_for(timeout=WAIT_MS)  # the failure did happen, and Streamlit shows it ...
        shown = exception.first.inner_text()
        assert "RuntimeError" not in shown and "simulated" not in shown  # ... without type or message
        assert_no_details_on_page(page, "Positional encoding")
        log = rigged_server.log_path.read_text(errors="replace")
        assert "Traceback" in log and SECRET in log and "wavelengths" in log
        exception.first.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot_dir / "server_uncaught_exception.png"), full_page=True)
    except Exception:
        page.screenshot(path=str(screenshot_dir / "failure_uncaught.png"), full_page=True)
        print(f"server log:\n{rigged_server.log_tail()}")
        raise
    finally:
        page.close()


# --- a widget changed while a translation streams ------------------------------------------------------------

@pytest.fixture(scope="module")
def en_de():
    """Translate with the shipped en-de model directly (not through the app), to know what the page must show."""
    import torch

    from model.checkpoints.files import load_checkpoint
    from model.network.config import DecodeConfig
    from model.serving.inference import translate

    torch.set_num_threads(1)
    ckpt = load_checkpoint(ROOT / "pretrained" / "en-de", torch.device("cpu"))

    def run(text: str, beam_size: int) -> str:
        # the page's defaults: max_len 60 and the α chosen for this model on validation
        config = DecodeConfig(beam_size=beam_size, max_len=60, length_penalty=ckpt.length_penalty)
        return translate(ckpt.model, ckpt.tokenizer, text, config).text
    return run


def shown_translation(page) -> str:
    return page.locator(SHOWN).first.inner_text().strip()


def start_translation_and_wait_for_progress(page) -> None:
    translate_button(page).click()
    page.wait_for_selector(PROGRESS, state="visible", timeout=WAIT_MS)
    page.get_by_text(re.compile(r"Step \d+ \(at most")).first.wait_for(timeout=WAIT_MS)


def assert_consistent(page, where: str) -> None:
    assert page.locator("[data-testid=stException]").count() == 0, f"{where}: Streamlit shows an exception"
    assert "Traceback" not in page_text(page), f"{where}: a traceback is on the page"
    assert page.locator(PROGRESS).count() == 0, f"{where}: a progress bar was left behind"
    assert "Decoding…" not in page_text(page), f"{where}: a half-decoded output was left behind"


def test_changing_a_widget_while_a_translation_streams_leaves_a_consistent_page(browser, streamlit_server,
                                                                                en_de, screenshot_dir):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    try:
        open_app(page, streamlit_server.url)  # en-de is the default model
        unfold(page, "decode_settings")
        with rerun(page, WAIT_MS):
            page.get_by_text("Slow motion", exact=True).click()  # 0.3 s per step: time to act mid-decode
        set_sentence(page, S1)

        # 1. the beam slider moves while S1 streams (beam 1): that run stops, nothing half-done stays
        start_translation_and_wait_for_progress(page)
        beam = page.get_by_role("slider", name=re.compile(r"^Beam size")).first  # an input type=range
        with rerun(page, WAIT_MS):  # ... and afterwards, until the runs the slider asked for are over
            beam.focus()
            beam.press("ArrowRight")
            expect(beam).to_have_value("2", timeout=WAIT_MS)
            page.wait_for_function("() => new URL(location.href).searchParams.get('beam') === '2'",
                                   timeout=WAIT_MS)  # the app has the value: it wrote it into the address
        assert_consistent(page, "beam changed mid-decode")
        # nothing of S1 finished: the page still shows the default sentence's translation (drawn at once on the first
        # view) as the last result, and says that the settings changed
        assert shown_translation(page) == en_de(DEFAULT_TEXT, 1), "a translation is shown although none finished"
        assert "Settings changed — press Translate" in page_text(page)

        # pressing Translate again decodes with the current settings (beam 2)
        with rerun(page, WAIT_MS):
            translate_button(page).click()
        page.wait_for_selector(SHOWN, timeout=WAIT_MS)
        assert_consistent(page, "after Translate")
        assert shown_translation(page) == en_de(S1, 2)
        assert "Beam search (beam 2" in page_text(page)
        assert "Settings changed" not in page_text(page)

        # 2. the sentence changes while S2 streams: the page keeps the last finished result (S1) and says so
        set_sentence(page, S2)
        start_translation_and_wait_for_progress(page)
        set_sentence(page, S3)
        assert_consistent(page, "sentence changed mid-decode")
        assert sentence_box(page).input_value() == S3
        text = page_text(page)
        assert "Settings changed — press Translate" in text
        assert f"Showing the last result (“{S1}”, beam 2" in text
        assert shown_translation(page) == en_de(S1, 2)

        with rerun(page, WAIT_MS):
            translate_button(page).click()
        page.wait_for_function("() => !document.body.innerText.includes('Settings changed')", timeout=WAIT_MS)
        assert_consistent(page, "after Translate")
        assert shown_translation(page) == en_de(S3, 2)
        page.screenshot(path=str(screenshot_dir / "server_after_mid_stream_changes.png"), full_page=True)
    except Exception:
        page.screenshot(path=str(screenshot_dir / "failure_mid_stream.png"), full_page=True)
        print(f"server log:\n{streamlit_server.log_tail()}")
        raise
    finally:
        page.close()


# --- the decoding slots: a third translation waits, and says so ---------------------------------------------

def test_a_translation_waits_for_a_free_model_slot_and_says_so(browser, rigged_server, screenshot_dir):
    """Two sessions decode slowly (the rigged model's "slowly" sentences) and hold both slots; a third session's
    Translate shows the waiting state, then decodes once a slot is free."""
    pages = [browser.new_page(viewport={"width": 1400, "height": 900}) for _ in range(3)]
    try:
        for page in pages:
            page.set_default_timeout(WAIT_MS)
            open_app(page, rigged_server.url)
        for page, text in zip(pages, ("We walk slowly.", "They drive slowly.", "She reads slowly."), strict=True):
            set_sentence(page, text)
        for page in pages[:2]:
            start_translation_and_wait_for_progress(page)
        translate_button(pages[2]).click()
        waiting = pages[2].get_by_text(re.compile(r"Waiting for a free model slot \(2 translations running\)…"))
        waiting.first.wait_for(timeout=WAIT_MS)
        pages[2].screenshot(path=str(screenshot_dir / "server_waiting_for_a_slot.png"), full_page=True)
        pages[2].wait_for_selector(SHOWN, timeout=3 * WAIT_MS)  # a slot came free: it decoded
        wait_idle(pages[2])
        assert_consistent(pages[2], "after waiting for a slot")
        assert "Waiting for a free model slot" not in page_text(pages[2])
        for page in pages[:2]:
            page.wait_for_selector(SHOWN, timeout=3 * WAIT_MS)
            assert_consistent(page, "a slot holder")
    except Exception:
        for i, page in enumerate(pages):
            page.screenshot(path=str(screenshot_dir / f"failure_slots_{i}.png"), full_page=True)
        print(f"server log:\n{rigged_server.log_tail()}")
        raise
    finally:
        for page in pages:
            page.close()
