"""How good a checkpoint's translations are, from the test scores it ships (written by training.evaluate).

Lives in the model core so the app can warn about a weak model without importing the training pipeline.
"""
from __future__ import annotations

import json
from pathlib import Path

QUALITY_FILE = "test_scores.json"  # python -m training.evaluate --json, shipped beside the weights
# Below this test BLEU (any decoding setting) the model card and the Translate page warn that translations are poor.
# 15 is the bar issue 19 set for the shipped en-de model's test split (beam 4): under it, even the best of its
# everyday sentences mix with fluent German that follows the source only loosely.
WEAK_BLEU = 15.0


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
