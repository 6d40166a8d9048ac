"""A Translation as plain JSON-ready data (the CLI's --json and the app's trace download share it).

Attention is nested lists [layer][head][query][key] of the best output's teacher-forced forward. The ``decode`` block
is written here too, from the settings the translation was decoded with, so the CLI and the app cannot drift apart.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from model.decoding.search import DecodeStep
from model.network.trace import KINDS
from model.serving.inference import Translation
from model.tokenization.kinds import TextTokenizer

SCHEMA_VERSION = 1


def _round(values: Any, digits: int = 6) -> Any:  # a float, or nested lists of floats
    if isinstance(values, list):
        return [_round(v, digits) for v in values]
    return round(float(values), digits)


def step_to_dict(step: DecodeStep, tokenizer: TextTokenizer) -> dict[str, Any]:
    rows = [{
        "prefix": tokenizer.pieces(step.prefixes[r].tolist()),
        "log_prob": round(float(step.prefix_scores[r]), 6),
        "top_k": [{"id": int(i), "piece": tokenizer.id_to_piece(int(i)), "prob": round(float(p), 6)}
                  for i, p in zip(step.topk_ids[r], step.topk_probs[r], strict=True)],
    } for r in range(step.prefixes.size(0))]
    candidates = [{"row": c.row, "id": c.token, "piece": tokenizer.id_to_piece(c.token),
                   "log_prob": round(c.log_prob, 6), "status": c.status} for c in step.candidates]
    data = {"step": step.step, "rows": rows, "candidates": candidates}
    if step.banks is not None:  # the search that keeps names and numbers: the kept pieces each live beam holds
        data["banks"] = list(step.banks)
    if step.sample is not None:  # what the sampler did: the model's top pieces before and after temperature and cut
        s = step.sample
        data["sample"] = {"kept": s.kept, "token": s.token, "piece": tokenizer.id_to_piece(s.token),
                          "prob_before": round(s.token_before, 6), "prob_after": round(s.token_after, 6),
                          "top": [{"id": int(i), "piece": tokenizer.id_to_piece(int(i)), "before": round(float(b), 6),
                                   "after": round(float(a), 6)} for i, b, a in zip(s.ids, s.before, s.after,
                                                                                  strict=True)]}
    if step.forced is not None:  # a translation the model was handed (teacher forcing): how the given piece stood
        f = step.forced
        data["forced"] = {"id": f.token, "piece": tokenizer.id_to_piece(f.token), "log_prob": round(f.log_prob, 6),
                          "rank": f.rank, "first_id": f.first, "first_piece": tokenizer.id_to_piece(f.first),
                          "first_log_prob": round(f.first_log_prob, 6)}
    return data


def decode_block(translation: Translation, checkpoint: str) -> dict[str, Any]:
    """The settings it was decoded with (after the budget's cuts), the device it ran on and the checkpoint's name."""
    device = str(translation.trace.weights("cross").device)
    return {**dataclasses.asdict(translation.decode), "device": device, "checkpoint": checkpoint}


def translation_to_dict(translation: Translation, tokenizer: TextTokenizer, *, checkpoint: str) -> dict[str, Any]:
    """Everything about one translation; see docs/cli.md ("JSON output") for the schema. ``checkpoint``: where the
    model came from, as its user named it (a directory, or the app's model name)."""
    src, trace = translation.source, translation.trace
    return {
        "schema_version": SCHEMA_VERSION,
        "source": {"text": src.text, "ids": list(src.ids), "pieces": list(src.pieces), "dropped_pieces": src.dropped,
                   "kept": list(src.kept)},
        "translation": {"text": translation.text, "ids": list(translation.target_ids),
                        "pieces": list(translation.target_pieces),
                        "decoder_input_pieces": list(translation.target_input_pieces)},
        "decode": decode_block(translation, checkpoint),
        "steps": [step_to_dict(s, tokenizer) for s in translation.result.steps],
        "n_best": [{"text": tokenizer.decode(h.tokens), "pieces": tokenizer.pieces(h.tokens),
                    "log_prob": round(h.log_prob, 6), "score": round(h.score, 6), "ended_with_eos": h.ended_with_eos}
                   for h in translation.result.hypotheses],
        "attention": {kind: _round(trace.weights(kind)[:, 0].tolist()) for kind in KINDS},
    }
