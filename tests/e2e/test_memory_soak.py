"""A server's memory stays bounded through a lecture: 50 distinct heavy requests (the Decoding page's priced hostile
link and long paragraphs on the Translate page, each different, so nothing is served from a cache), then idle, with
the server's resident memory sampled after each. What holds it (docs/serving.md, Memory): the process and the model
(en-de, ~490 MB), the translations' LRU (at most 256 MB), the explorer's shared heatmaps (at most 64 MB), one heavy
decode beyond them (at most 192 MB of attention) and glibc's arenas (app/serving/memory.py); sessions, closed ones
included, keep no translation of their own (app/serving/weak_fragment.py). A real `streamlit run` on 127.0.0.1,
driven by Debian's Chromium; about 3 minutes on 2 cores here, 11 in CI. Not in the default run (pyproject.toml's
addopts): `pytest -m soak`. On 2026-11-28, before the sessions let go of their translations, it failed in CI's run
(1,890 MB after the 50th request, 1,880 MB idle); after, it passed at 847 and 871 MB peak, 817 and 837 MB idle
(benchmarks/results/2026-11-28-memory-soak.md)."""
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
LIMIT_MB = 1250  # ~1,000 MB of bounded holders (docs/serving.md) and room for a page being drawn; 871 MB measured
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
    # as a real server runs: its compiled decoding step built in the background (+150-250 MB; the tests' default
    # leaves it off, tests/conftest.py), here while the requests come in
    with run_server("streamlit_app.py", tmp_path / "server.log",
                    env={"ATTENTION_EXPLORER_COMPILED_STEP": "background"}) as server:
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
