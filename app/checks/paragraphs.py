"""A pasted paragraph, cut into sentences: a translation model reads one sentence at a time.

The model was trained on single sentences (about 13 pieces each); a 287-word paragraph read as one input comes
out as one unrelated short sentence, and its 372-key heatmap is near-white. Translation tools split first, so
does the app: each sentence is translated and shown on its own, and a picker chooses the one on screen. Where a
sentence ends is `text.sentences`' rule, the one the corpus build pairs sentences by.
"""
from __future__ import annotations

from text import sentences

MAX_SENTENCES = 50  # a picker longer than this is no help; the rest of the text stays in the last one


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, stripped, at most MAX_SENTENCES; [] for blank text."""
    return sentences.split_sentences(text, most=MAX_SENTENCES)


def sentence_of(text: str, index: int) -> str:
    """The ``index``-th sentence of ``text`` (the last one if it has fewer); the text itself if it has one."""
    found = split_sentences(text)
    if len(found) <= 1:
        return text
    return found[min(max(index, 0), len(found) - 1)]
