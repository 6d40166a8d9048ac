"""Fixtures for the real-browser tests: a `streamlit run` server on a free local port and Debian's Chromium.

The server runs as a child process and is always stopped by its own pid (terminate, then kill). A missing
Chromium is a failure, not a skip: these tests are the only check of what a person sees in a browser.

Playwright is imported where it is used, never at module level, so that the quick loop (`-m "not e2e"`) collects
on a machine without it. The tests wait for conditions, never for fixed times (tests/e2e/waits.py).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.waits import TrackedBrowser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
STARTUP_TIMEOUT_S = 60
STOP_TIMEOUT_S = 10


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


@dataclass(frozen=True)
class Server:
    url: str
    log_path: Path
    pid: int = 0  # the server process, to read its CPU time and memory from /proc

    def log_tail(self, lines: int = 80) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def run_server(script: str | Path, log_path: Path, env: dict[str, str] | None = None) -> Iterator[Server]:
    """`streamlit run <script>` on a free port of 127.0.0.1 with the project root as working directory (so
    .streamlit/config.toml applies), its stdout and stderr in ``log_path``, ``env`` added to its environment; stopped
    by its own pid afterwards."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", **(env or {})}
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1",
               "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
    with log_path.open("w+") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not _healthy(url):
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"streamlit exited with code {process.returncode} before answering:\n{log.read()}")
                if time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"streamlit did not answer /_stcore/health within {STARTUP_TIMEOUT_S} s:\n"
                                f"{log.read()}")
                time.sleep(0.3)
            yield Server(url, log_path, process.pid)
        finally:
            _stop(process)


@pytest.fixture(scope="module")
def streamlit_server(tmp_path_factory):
    """A fresh `streamlit run streamlit_app.py` on 127.0.0.1 (its log in a temp file, shown when a test fails)."""
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    with run_server("streamlit_app.py", log_path) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never `playwright install`: it cannot download here). Every page
    opened through it reports its script runs to `rerun`."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is missing: pip install -r requirements-dev.txt (the real-browser tests need it).")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install chromium` "
                    "(the real-browser tests need it; `playwright install` does not work offline).")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield TrackedBrowser(chromium)
        finally:
            chromium.close()


@pytest.fixture
def screenshot_dir(tmp_path) -> Path:
    """Where page screenshots go: $E2E_SCREENSHOTS if set (to look at them afterwards), else tmp_path."""
    directory = Path(os.environ["E2E_SCREENSHOTS"]) if os.environ.get("E2E_SCREENSHOTS") else tmp_path
    directory.mkdir(parents=True, exist_ok=True)
    return directory
