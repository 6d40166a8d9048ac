"""Every concept of the team's study notes on the paper (../shared/seeds/) is visible on some page.

The pages are rendered with the English->German model and a sentence; their text (markdown, captions,
formulas, headings, notes) and figure titles are searched for a phrase that shows each concept. When
someone trims a page, this says which concept went missing.
"""
from __future__ import annotations

import re

PAGES = [None, "app/views/decoding.py", "app/views/positional.py", "app/views/masks.py",
         "app/views/mechanics.py", "app/views/model_training.py"]
SENTENCE = "I have read the book that you gave me."
# concept -> a pattern that shows it (case-insensitive); grouped roughly as the notes are
CONCEPTS = {
    "scaled dot-product attention formula": r"softmax.*\\frac\{QK",
    "query, key, value as lookup": r"search engine",
    "Q, K, V are learned projections": r"W<sup>Q</sup>",
    "why divide by sqrt(d_k)": r"Why divide by √d_k",
    "softmax favours large scores": r"largest scores take most of the weight",
    "additive attention (Bahdanau)": r"Bahdanau",
    "general / dot / location-based scores (Luong)": r"location-based",
    "attention's origin in RNN seq2seq": r"seq2seq",
    "self-attention (Cheng 2016)": r"Cheng 2016",
    "earlier uses of self-attention": r"reading comprehension",
    "soft vs hard attention (Xu 2015)": r"Xu 2015",
    "global vs local attention": r"Local attention",
    "Q/K/V sources per attention kind": r"final encoder output",
    "multi-head attention": r"\\mathrm\{MultiHead\}",
    "why several heads": r"representation subspaces",
    "encoder-decoder, auto-regressive": r"auto-regressive",
    "residual connection + LayerNorm": r"\\mathrm\{LayerNorm\}\\big\(x \+",
    "LayerNorm vs BatchNorm": r"BatchNorm",
    "why LayerNorm helps": r"converge faster",
    "every sub-layer outputs d_model": r"sums add up",
    "position-wise FFN": r"\\mathrm\{FFN\}\(x\)",
    "FFN as kernel-size-1 convolutions": r"kernel size 1",
    "shared embeddings times sqrt(d_model)": r"√d_model",
    "why positions are needed": r"ignores order",
    "sinusoidal positional encoding formula": r"PE_\{\(pos",
    "wavelengths 2pi .. 10000*2pi": r"10000·2π",
    "relative offsets: PE(pos+k) linear in PE(pos)": r"Relative offsets are a linear map",
    "learned vs fixed positional encoding": r"Learned vs fixed",
    "padding mask": r"padding mask",
    "sequence (causal) mask, lower-triangular": r"lower-triangular",
    "masked scores to -inf, weights exactly 0": r"−∞",
    "teacher forcing / shifted right": r"teacher forcing",
    "truncating long input": r"truncated",
    "RNN recurrence": r"h_t = f\(h_\{t-1\}",
    "RNN vs CNN vs self-attention complexity": r"longest path",
    "dispensing with recurrence and convolutions": r"dispensing with recurrence",
    "Adam settings": r"β₂ = 0\.98",
    "warm-up learning-rate schedule": r"warmup\^\{-1\.5\}",
    "dropout": r"overfitting",
    "label smoothing": r"Label smoothing",
    "BLEU": r"n-grams",
    "next-token probabilities (linear + softmax)": r"Top \d+ next pieces",
    "beam search": r"[Bb]eam search",
    "greedy decoding": r"[Gg]reedy",
    "paper's base sizes": r"2048",
}


def _page_text(at, figures) -> str:
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "latex", "info", "success", "warning"):
        parts += [str(getattr(el, "value", "")) for el in at.get(kind)]
    for table in at.dataframe:  # tables: their header and cells
        parts.append(table.value.to_string())
    for fig in figures(at).values():
        title = fig["layout"].get("title", {})
        parts.append(str(title.get("text", "") if isinstance(title, dict) else title))
    return "\n".join(parts)


def test_every_concept_of_the_study_notes_is_on_some_page(app_test, figures):
    texts = []
    for page in PAGES:
        at = app_test(page, model_name="en-de", text=SENTENCE)
        if page is None:  # the Translate page decodes on its button; the other pages translate by themselves
            at.button(key="translate").click().run()
        assert not at.exception, (page, [e.value for e in at.exception])
        texts.append(_page_text(at, figures))
    everything = "\n".join(texts)
    missing = [concept for concept, pattern in CONCEPTS.items() if not re.search(pattern, everything, re.I)]
    assert not missing, f"concepts of the study notes no page shows: {missing}"
