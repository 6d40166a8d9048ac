"""A skipped test fails the run: imported as a hook by tests/conftest.py (kept apart, free of torch, so that its own
test runs it in a pytest of its own cheaply)."""
from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus) -> None:
    """A skipped test asserts nothing, yet the run would still pass: every test here has what it needs once
    requirements-dev.txt and Chromium are installed, so a skip means something is missing, and the run fails."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped and exitstatus == pytest.ExitCode.OK:
        reporter.line("")  # the progress line ("[100%]") is still open here
        reporter.write_sep("=", f"{len(skipped)} test(s) skipped, which this project counts as a failure", red=True)
        for report in skipped:
            reporter.write_line(f"  {report.nodeid}: {report.longrepr[-1] if report.longrepr else ''}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
