"""The app's word on a weak model: the Translate page's note when a checkpoint's own test scores
(model.checkpoints.quality, the
bars the model card shares) say its translations are poor."""
from __future__ import annotations

import logging

from app.models.examples import language_name, languages
from model.checkpoints.files import Checkpoint
from model.checkpoints.quality import is_weak, shipped_scores

log = logging.getLogger("attention_explorer")


def quality_note(ckpt: Checkpoint) -> str | None:
    """A one-line warning when the checkpoint's own test scores say its translations are poor, so nobody
    presents them as good ones; None when it scores well or ships no scores."""
    try:
        scores = shipped_scores(ckpt.path)
    except ValueError:
        log.exception("unreadable test scores of %s", ckpt.path)
        return None
    if scores is None or not is_weak(scores):
        return None
    listed = ", ".join(f"{k} BLEU {v['bleu']:.1f} / chrF {v['chrf']:.1f}" for k, v in scores.items())
    pair = languages(ckpt.meta)
    output = f"Its {language_name(pair[1])}" if pair else "Its output"
    return (f"This small model, trained for a few hours on a 2-core CPU, translates poorly (test {listed}; "
            f"see Model and training). {output} is often wrong, but every attention weight shown is exactly the "
            "one it used.")
