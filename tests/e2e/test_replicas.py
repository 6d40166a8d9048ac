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
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.waits import IDLE

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
SHOWN = "[data-testid=stMarkdownContainer] div[style*='1.9rem'] .ae-text"  # the big translation line's text


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


@dataclass(frozen=True)
class Replicas:
    """deploy/replicas.sh running: the script's process, nginx's URL and pid, each replica's pid and port."""

    script: subprocess.Popen
    url: str
    nginx: int
    pids: list[int]
    ports: tuple[int, ...]
    log: Path


def start_replicas(folder: Path, count: int = 2) -> Replicas:
    """deploy/replicas.sh with ``count`` replicas on free ports, once nginx answers (its log in ``folder``); the
    script leads a process group of its own, so a test can find whatever it left behind."""
    if not shutil.which("nginx"):
        pytest.fail("nginx is missing: install it with `apt-get install nginx` (.ci/run does)")
    port, base = free_port(), 20000 + free_port() % 20000  # the replicas on base + 1, base + 2, ...
    path = folder / "replicas.log"
    process = subprocess.Popen(["bash", "deploy/replicas.sh", str(count), str(port)], cwd=ROOT,
                               stdout=path.open("w"), stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, "PYTHON": sys.executable, "REPLICA_BASE_PORT": str(base)})
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 120
    while True:
        match = re.search(r"pids ([\d,]+),.*\(nginx pid (\d+)\)", path.read_text())
        try:
            if match and urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"the replicas did not come up:\n{path.read_text()}")
        time.sleep(0.5)
    return Replicas(script=process, url=url, nginx=int(match.group(2)),
                    pids=[int(p) for p in match.group(1).split(",")],
                    ports=tuple(base + i for i in range(1, count + 1)), log=path)


def group_members(group: int) -> list[int]:
    """Every live process of a process group (from /proc: no tool needed); zombies count as gone."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(stat.parent.name))
    return members


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    running = start_replicas(tmp_path_factory.mktemp("replicas"))
    try:
        yield running.url, running.pids, running.ports
    finally:
        os.killpg(running.script.pid, signal.SIGTERM)
        running.script.wait(30)


STOPPED_WITHIN_S = 10


@pytest.mark.parametrize("how", ["TERM", "INT", "HUP", "nginx exits"])
def test_the_script_stops_every_replica_and_nginx(tmp_path, how):
    """A signal to the script alone (not its process group), or nginx ending by itself: within 10 s every port is
    closed and every process the script started is gone, the script included."""
    running = start_replicas(tmp_path)
    ports = (int(urllib.parse.urlparse(running.url).port or 0), *running.ports)
    try:
        assert all(listening(port) for port in ports)
        if how == "nginx exits":
            os.kill(running.nginx, signal.SIGTERM)
        else:
            running.script.send_signal(getattr(signal, f"SIG{how}"))
        deadline = time.monotonic() + STOPPED_WITHIN_S
        while (group_members(running.script.pid) or running.script.poll() is None) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = group_members(running.script.pid)
        assert running.script.poll() is not None and not left, (
            f"still running after {STOPPED_WITHIN_S} s: {left}\n{running.log.read_text()}")
        assert not any(listening(port) for port in ports)
    finally:
        if group_members(running.script.pid):
            os.killpg(running.script.pid, signal.SIGKILL)


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
