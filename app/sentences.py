"""A pasted paragraph, cut into sentences: a translation model reads one sentence at a time.

The model was trained on single sentences (about 13 pieces each); a 287-word paragraph read as one input comes
out as one unrelated short sentence, and its 372-key heatmap is near-white. Translation tools split first, so
does the app: each sentence is translated and shown on its own, and a picker chooses the one on screen.

A sentence ends at ".", "!", "?" or "…" (with any closing quotes or brackets) followed by a space and what can
start a sentence; not after a title or a common abbreviation ("Dr. Schmidt", "e.g. this") nor inside a number
("3.5", "1,250.00").
"""
from __future__ import annotations

import re

# Words after which a full stop does not end the sentence (compared without the stop, lower case).
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt no nr vs etc e.g i.e cf approx ca fig vol ch p pp jan feb mar apr jun jul aug "
    "sep sept oct nov dec mon tue wed thu fri sat sun inc ltd co corp dept univ ave rd hr min sec z.b bzw usw "
    "ggf vgl d.h u.a".split())
# An end mark with its closing quotes or brackets, then the space (group 1) before what can start a sentence.
BOUNDARY = re.compile(r"""[.!?…]["'”’»)\]]*(\s+)(?=["'“‘«(\[]?[A-ZÄÖÜÀ-Þ0-9¿¡])""")
MAX_SENTENCES = 50  # a picker longer than this is no help; the rest of the text stays in the last one


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, stripped; [] for blank text, [text] for one sentence."""
    text = text.strip()
    if not text:
        return []
    sentences, start = [], 0
    for match in BOUNDARY.finditer(text):
        candidate = text[start:match.start(1)].strip()
        last_word = candidate.rsplit(None, 1)[-1] if candidate else ""
        if last_word.endswith(".") and _abbreviation(last_word):
            continue
        sentences.append(candidate)
        start = match.end()
        if len(sentences) == MAX_SENTENCES - 1:
            break
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _abbreviation(word: str) -> bool:
    """A word whose full stop marks an abbreviation or an initial ("Dr.", "e.g.", "J.")."""
    bare = word.lstrip("(\"'“‘«[").rstrip(".").lower()
    return bare in ABBREVIATIONS or (len(bare) == 1 and bare.isalpha())


def sentence_of(text: str, index: int) -> str:
    """The ``index``-th sentence of ``text`` (the last one if it has fewer); the text itself if it has one."""
    sentences = split_sentences(text)
    if len(sentences) <= 1:
        return text
    return sentences[min(max(index, 0), len(sentences) - 1)]
