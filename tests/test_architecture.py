"""ARCHITECTURE.md names every module of the wings and every benchmark: one added without a word there fails here."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("model", "explain", "training", "app", "data", "text", "benchmarks")  # the wings, and what measures them


def test_every_module_and_benchmark_is_named_in_architecture_md():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    missing = sorted(str(path.relative_to(ROOT)) for folder in FOLDERS for path in (ROOT / folder).rglob("*.py")
                     if path.stem != "__init__" and "__pycache__" not in path.parts and path.stem not in named)
    assert not missing, f"modules ARCHITECTURE.md does not name: {missing}"
