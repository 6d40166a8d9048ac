"""Waiting in the real-browser tests for conditions, never for fixed times.

`rerun` waits for the script run an action triggered, read from the page's WebSocket (the page's rerun requests
and the server's script_finished messages); `charts_settled` for Plotly's charts to be drawn and stop changing;
`steady_box` for an element to stop moving; `hover_armed` for Plotly to hold a hovered point. Playwright is
imported where it is used, never at module level, so that the quick loop (`-m "not e2e"`) collects on a machine
without it. (A module of its own, not conftest.py: pytest imports conftest.py under a second name, and the pages'
trackers must be one registry.)
"""
from __future__ import annotations

import itertools
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
RERUN_TIMEOUT_MS = 60_000
WAIT_SLICE_MS = 500  # how long one wait for a frame may block before the condition is checked again
STEADY_FRAMES = 5  # animation frames in a row with nothing changed: Plotly and the layout are done


def expect(*args, **kwargs):
    """Playwright's `expect`, imported when first called (see the module's docstring)."""
    from playwright.sync_api import expect as playwright_expect
    return playwright_expect(*args, **kwargs)


def _playwright_error() -> type[Exception]:
    from playwright.sync_api import Error
    return Error


def _parsed(payload, message_class):
    """A binary WebSocket frame parsed as ``message_class`` (Streamlit's BackMsg or ForwardMsg), or None."""
    if isinstance(payload, str):
        return None
    message = message_class()
    try:
        message.ParseFromString(payload)
    except Exception:  # not that kind of message
        return None
    return message


def _rerun_request(payload) -> bool:
    """A frame the page sent: is it a BackMsg asking for a script run (a widget changed, a page opened)?"""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    message = _parsed(payload, BackMsg)
    return message is not None and message.WhichOneof("type") == "rerun_script"


def _finished_ok(payload) -> bool:
    """A frame the server sent: is it the end of a script (or fragment) run that was not cut short by a rerun?"""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    message = _parsed(payload, ForwardMsg)
    return message is not None and message.WhichOneof("type") == "script_finished" and message.script_finished in (
        ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)


class ScriptRuns:
    """What a page's WebSockets to the app carried: how many script runs it asked for, and how many of those
    requests a finished run had answered (the requests sent before the last successful script_finished)."""

    def __init__(self, page):
        self.page = page
        self.socket = None  # the newest: Streamlit opens a new one after a reconnect or a page load
        self.requested = 0
        self.answered = 0
        page.on("websocket", self._opened)

    def _opened(self, socket) -> None:
        self.socket = socket
        socket.on("framesent", self._sent)
        socket.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        if _rerun_request(payload):
            self.requested += 1

    def _received(self, payload) -> None:
        if _finished_ok(payload):
            self.answered = self.requested

    def wait_answered(self, since: int, timeout_ms: float) -> None:
        """Until a run was requested after ``since`` requests and a run finished after the last request."""
        error = _playwright_error()
        deadline = time.monotonic() + timeout_ms / 1000
        while not (self.requested > since and self.answered == self.requested):
            left_ms = (deadline - time.monotonic()) * 1000
            if left_ms <= 0:
                pytest.fail(f"no script run finished within {timeout_ms / 1000:.0f} s of the action "
                            f"(run requests: {self.requested - since} new, answered up to {self.answered})")
            if self.page.is_closed():
                pytest.fail("the page closed while waiting for a script run")
            socket = self.socket
            # Playwright delivers the frames (to _sent and _received) while it waits. In slices: after a page.goto
            # the socket of the page left behind may never report its close, and the new socket's frames do not end
            # a wait on the old one, so one wait to the deadline sat out the whole timeout (60 s a navigation).
            slice_ms = min(left_ms, WAIT_SLICE_MS)
            try:
                if socket is None or socket.is_closed():
                    self.page.wait_for_event("websocket", timeout=slice_ms)
                else:
                    socket.wait_for_event("framereceived", predicate=_finished_ok, timeout=slice_ms)
            except error:  # the socket closed (a reconnect follows) or the slice ran out: the loop decides
                continue


_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _track(page) -> None:
    _RUNS[page] = ScriptRuns(page)


class TrackedBrowser:
    """The Playwright browser, but every page it opens (directly or in a new context) is tracked by ScriptRuns
    from its first moment, before it opens its WebSocket."""

    def __init__(self, browser):
        self._browser = browser

    def new_page(self, **kwargs):
        page = self._browser.new_page(**kwargs)
        _track(page)
        return page

    def new_context(self, **kwargs):
        context = self._browser.new_context(**kwargs)
        context.on("page", _track)  # called before context.new_page() returns
        return context

    def __getattr__(self, name):
        return getattr(self._browser, name)


@contextmanager
def rerun(page, timeout_ms: float = RERUN_TIMEOUT_MS) -> Iterator[None]:
    """Around an action that makes the app run its script (a click, a committed text, a key bound to a button,
    opening a URL): afterwards, wait until the server has finished a run requested after everything the page sent,
    and the page shows it (not running). Fails if the action asked for no run."""
    runs = _RUNS.get(page)
    if runs is None:
        raise RuntimeError("rerun() needs a page opened through the `browser` fixture")
    since = runs.requested
    yield
    runs.wait_answered(since, timeout_ms)
    page.wait_for_selector(IDLE, timeout=timeout_ms)


_STEADY = """([arg, key, frames]) => {
    const value = JSON.stringify((PROBE)(arg));
    const memo = (window.__aeSteady ||= new Map());
    const last = memo.get(key);
    if (value === undefined || value === 'null' || !last || last.value !== value) {
        memo.set(key, {value, count: 1});
        return false;
    }
    return ++last.count >= frames;
}"""
_steady_calls = itertools.count()


def _steady(page, probe: str, arg=None, timeout_ms: float = RERUN_TIMEOUT_MS) -> None:
    """Wait until the JavaScript function ``probe`` returns the same non-null value (for ``arg``) in STEADY_FRAMES
    animation frames in a row."""
    key = f"steady-{next(_steady_calls)}"
    page.wait_for_function(_STEADY.replace("PROBE", probe), arg=[arg, key, STEADY_FRAMES], polling="raf",
                           timeout=timeout_ms)
    page.evaluate("(key) => window.__aeSteady.delete(key)", key)


# Every Plotly chart on the page drawn (Plotly keeps its layout on the div) and its size as drawn.
_CHARTS = """() => {
    const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
    if (plots.some(p => !p._fullLayout || (p._promises && p._promises.length))) return null;
    return plots.map(p => {
        const box = p.getBoundingClientRect(), svg = p.querySelector('.main-svg');
        return [box.x, box.y, box.width, box.height, p._fullLayout.width, p._fullLayout.height,
                svg && svg.getAttribute('width'), svg && svg.getAttribute('height')];
    });
}"""


def charts_settled(page, timeout_ms: float = RERUN_TIMEOUT_MS) -> None:
    """Wait until every Plotly chart is drawn and none changed its place or size for STEADY_FRAMES frames (after a
    resize, a newly shown chart, an expander opened)."""
    _steady(page, _CHARTS, timeout_ms=timeout_ms)


def steady_box(locator, timeout_ms: float = RERUN_TIMEOUT_MS) -> dict:
    """The element's bounding box once it stopped moving (scrolled into view, laid out) for STEADY_FRAMES frames."""
    locator.wait_for(timeout=timeout_ms)
    handle = locator.element_handle(timeout=timeout_ms)
    _steady(locator.page, """(el) => { const b = el.getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; }""",
            handle, timeout_ms)
    return locator.bounding_box()


def hover_armed(page, chart, x: float, y: float, timeout_ms: float = RERUN_TIMEOUT_MS,
                trace: str | None = None) -> tuple[float, float]:
    """Move the mouse to (x, y) over a Plotly ``chart`` (a locator of its .js-plotly-plot) until Plotly holds a
    hovered point (of the trace named ``trace``, when given: a neighbouring trace's point is not the one meant):
    Plotly's click selects the point it hovers, so a click before that is lost. The first move may only arm the
    hover, so each try nudges the mouse by a pixel. Returns where the mouse is."""
    handle = chart.element_handle(timeout=timeout_ms)
    error = _playwright_error()
    deadline = time.monotonic() + timeout_ms / 1000
    nudge = 0
    while True:
        page.mouse.move(x + nudge, y)
        try:
            page.wait_for_function("([gd, name]) => Array.isArray(gd._hoverdata) && gd._hoverdata.length > 0"
                                   " && (name === null || gd._hoverdata.every((p) => p.data && p.data.name === name))",
                                   arg=[handle, trace], polling="raf",
                                   timeout=max(1, min(1_000, (deadline - time.monotonic()) * 1000)))
            return x + nudge, y
        except error:
            if time.monotonic() > deadline:
                raise
            nudge = (nudge + 1) % 3
