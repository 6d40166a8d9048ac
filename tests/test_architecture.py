"""ARCHITECTURE.md names every module of the wings: a module added without a word there fails here."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WINGS = ("model", "explain", "training", "app", "data", "text")


def test_every_module_of_the_wings_is_named_in_architecture_md():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    missing = sorted(str(path.relative_to(ROOT)) for wing in WINGS for path in (ROOT / wing).rglob("*.py")
                     if path.stem != "__init__" and "__pycache__" not in path.parts and path.stem not in named)
    assert not missing, f"modules ARCHITECTURE.md does not name: {missing}"
