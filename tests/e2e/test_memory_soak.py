"""A server's memory stays bounded through a lecture: 50 distinct heavy requests (the Decoding page's priced hostile
link and long paragraphs on the Translate page, each different, so nothing is served from a cache), then idle, with
the server's resident memory sampled after each. What holds it: the model (en-de), the translations' LRU (at most
256 MB), the explorer's shared figures and glibc's arenas (limited in app/serving/memory.py). A real
`streamlit run` on 127.0.0.1, driven by Debian's Chromium; about 11 minutes on 2 cores. Not in the default run
(pyproject.toml's addopts): `pytest -m soak`. On 2026-11-28 it failed in CI's run: 594 MB after the first request,
1,890 MB after the 50th (about 26 MB a request), 1,880 MB idle."""
from __future__ import annotations

import random
import time
import urllib.parse

import pytest

from tests.e2e.conftest import run_server
from tests.e2e.test_lecture_hall import resident_mb
from tests.e2e.waits import rerun

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.soak]

REQUESTS = 50
LIMIT_MB = 1250  # the bound to reach; measured 2026-11-28: 1,113 MB peak in one run, 1,890 MB in CI's
IDLE_S = 10
WORDS = ("the students read every page of the long report before the lecture and asked many questions about "
         "attention").split()


def heavy_link(i: int, rng: random.Random) -> str:
    """The i-th request: every other one the Decoding page's hostile link (beam 8, 1,023 pieces), the others a
    paragraph of 150 words at beam 4; each distinct."""
    if i % 2 == 0:
        marks = list("!?.,;:")
        rng.shuffle(marks)
        return "/decoding?" + urllib.parse.urlencode({"beam": 8, "max_len": 1023, "text": "".join(marks) * 28 + str(i)})
    words = list(WORDS)
    rng.shuffle(words)
    return "/?" + urllib.parse.urlencode({"model": "en-de", "beam": 4, "text": " ".join(words * 8) + f" {i}."})


def test_memory_stays_under_its_limit_through_50_heavy_requests_and_idle(browser, tmp_path):
    rng = random.Random(0)
    with run_server("streamlit_app.py", tmp_path / "server.log") as server:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(300_000)
        samples = []
        for i in range(REQUESTS):
            with rerun(page, timeout_ms=300_000):  # until the page's run (the decode and its figures) finished
                page.goto(server.url + heavy_link(i, rng), wait_until="domcontentloaded")
            assert page.locator("[data-testid=stException]").count() == 0
            samples.append(resident_mb(server.pid))
        page.close()
        time.sleep(IDLE_S)
        idle = resident_mb(server.pid)
    print(f"resident MB after each request: {[round(mb) for mb in samples]}; idle {idle:.0f}")  # for docs/serving
    assert max(samples) <= LIMIT_MB and idle <= LIMIT_MB, f"resident MB per request {samples}, idle {idle}"
