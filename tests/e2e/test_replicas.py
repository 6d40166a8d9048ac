"""Several app replicas behind nginx (deploy/replicas.sh): a browser's session sticks to one replica, and when
that replica dies mid-lecture the page reconnects through the proxy to another one and shows the same view
again (its link holds the sentence and settings). Real processes on 127.0.0.1: nginx from Debian, two
`streamlit run` replicas, Debian's Chromium."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.waits import IDLE

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
SHOWN = "[data-testid=stMarkdownContainer] div[style*='1.9rem']"  # the big translation line


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def established_ports() -> set[int]:
    """Local ports of established TCP connections (from /proc/net/tcp: no tool needed)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, _, state = line.split()[1:4]
        if state == "01":
            ports.add(int(local.split(":")[1], 16))
    return ports


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    if not shutil.which("nginx"):
        pytest.fail("nginx is missing: install it with `apt-get install nginx` (.ci/run does)")
    port, base = free_port(), 20000 + free_port() % 20000  # the replicas on base + 1 and base + 2
    log = (tmp_path_factory.mktemp("replicas") / "replicas.log").open("w+")
    process = subprocess.Popen(["bash", "deploy/replicas.sh", "2", str(port)], cwd=ROOT, stdout=log,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, "PYTHON": sys.executable, "REPLICA_BASE_PORT": str(base)})
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 120
    try:
        while True:
            log.seek(0)
            match = re.search(r"pids ([\d,]+),", log.read())
            try:
                if match and urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                log.seek(0)
                pytest.fail(f"the replicas did not come up:\n{log.read()}")
            time.sleep(0.5)
        yield url, [int(p) for p in match.group(1).split(",")], (base + 1, base + 2)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)


def test_a_session_survives_the_death_of_its_replica(browser, replicas):
    url, pids, ports = replicas
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(WAIT_MS)
    link = urllib.parse.urlencode({"model": "reverse", "text": "r e p l i c a"})
    page.goto(f"{url}/?{link}", wait_until="domcontentloaded")
    expect_text = "a c i l p e r"
    page.locator(SHOWN, has_text=expect_text).wait_for()
    serving = [i for i, port in enumerate(ports) if port in established_ports()]
    assert len(serving) == 1, f"the page's WebSocket should be on one replica, found {serving}"
    with page.expect_websocket():  # the page notices and opens a new connection (nginx sends it to the other)
        os.kill(pids[serving[0]], signal.SIGKILL)  # its replica crashes mid-lecture
    page.wait_for_selector("[data-testid=stApp][data-test-connection-state=CONNECTED]")
    page.locator(SHOWN, has_text=expect_text).wait_for()  # reconnected to the other replica: the same view again
    page.wait_for_selector(IDLE)
    assert page.locator("[data-testid=stException]").count() == 0
    other = 1 - serving[0]
    assert ports[other] in established_ports()
    page.close()
