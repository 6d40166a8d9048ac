"""The run fails when a test is skipped (tests/no_skips.py): a skip asserts nothing and would pass unseen."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pytest_on(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    test_file = tmp_path / "test_sample.py"
    test_file.write_text(body)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.no_skips", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", "/dev/null", str(test_file)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_skipped_test_fails_the_run_and_is_named(tmp_path):
    result = run_pytest_on(tmp_path, "import pytest\n\ndef test_missing():\n    pytest.skip('no reference here')\n\n"
                                     "def test_fine():\n    assert 2 > 1\n")
    assert result.returncode == 1, result.stdout
    assert "1 test(s) skipped, which this project counts as a failure" in result.stdout
    assert "test_missing: Skipped: no reference here" in result.stdout


def test_a_run_without_skips_still_passes(tmp_path):
    result = run_pytest_on(tmp_path, "def test_fine():\n    assert 1 + 1 == 2\n")
    assert result.returncode == 0, result.stdout
