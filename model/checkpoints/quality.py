"""How good a checkpoint's translations are, from the test scores it ships (written by training.evaluate).

Lives in the model core because two packages judge by the same bars and neither may import the other: the model
card (training.card) and the app's note on the Translate page (app.models.quality).
"""
from __future__ import annotations

import json
from pathlib import Path

QUALITY_FILE = "test_scores.json"  # python -m training.evaluate --json, shipped beside the weights
# Below these test scores (reached together by no decoding setting) the model card and the Translate page warn that
# translations are poor. They are the bars issue 19 set for the shipped en-de model's test split (beam 4): under
# them, even its everyday sentences mix with fluent German that follows the source only loosely.
WEAK_BLEU = 15.0
WEAK_CHRF = 40.0


def shipped_scores(directory: Path | None) -> dict[str, dict[str, float]] | None:
    """Overall test BLEU and chrF per decoding setting ("greedy", "beam4", ...: {"bleu": ..., "chrf": ...}) from a
    checkpoint directory's QUALITY_FILE; None when it ships none. Raises ValueError when the file is there but
    unreadable."""
    path = directory / QUALITY_FILE if directory is not None else None
    if path is None or not path.is_file():
        return None
    try:
        return report_scores(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is unreadable ({exc})") from None


def decoding_settings(report: dict) -> list[str]:
    """The decoding settings an evaluation report (training.evaluate's JSON) scored, in its order: "greedy",
    "beam4", ...; its other keys (split, checkpoint, diagnostics, ...) are not scores."""
    return [k for k in report if k == "greedy" or k.startswith("beam")]


def report_scores(report: dict) -> dict[str, dict[str, float]]:
    """An evaluation report's overall BLEU and chrF per decoding setting."""
    return {k: {m: float(report[k]["overall"][m]) for m in ("bleu", "chrf")} for k in decoding_settings(report)}


def is_weak(scores: dict[str, dict[str, float]] | None) -> bool:
    """Whether measured test scores say the translations are poor: no decoding setting reaches both WEAK_BLEU and
    WEAK_CHRF (no scores: nothing to say)."""
    if not scores:
        return False
    return not any(s["bleu"] >= WEAK_BLEU and s["chrf"] >= WEAK_CHRF for s in scores.values())
