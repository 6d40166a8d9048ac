"""How good a checkpoint's translations are, from the test scores it ships (written by training.evaluate).

Lives in the model core so the app can warn about a weak model without importing the training pipeline.
"""
from __future__ import annotations

import json
from pathlib import Path

QUALITY_FILE = "test_scores.json"  # python -m training.evaluate --json, shipped beside the weights
WEAK_BLEU = 10.0  # below this test BLEU the model card and the app's Translate page warn that translations are poor


def test_bleu(directory: Path | None) -> dict[str, float] | None:
    """Overall test BLEU per decoding setting ("greedy", "beam4", ...) from a checkpoint directory's
    QUALITY_FILE; None when it ships none. Raises ValueError when the file is there but unreadable."""
    path = directory / QUALITY_FILE if directory is not None else None
    if path is None or not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        return {k: float(report[k]["overall"]["bleu"]) for k in report if k == "greedy" or k.startswith("beam")}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is unreadable ({exc})") from None


def is_weak(scores: dict[str, float] | None) -> bool:
    """Whether measured test scores say the translations are poor (no scores: nothing to say)."""
    return bool(scores) and max(scores.values()) < WEAK_BLEU
