"""The lecturer's prepared sentences: up to five, one per line, switched during the tour with a key.

A lecture shows the same attention on several sentences (a right translation, a wrong one, a long one): typing
each one in front of the room costs time and invites typos. The list travels in the lecture's link (?prepared=...),
so a lecturer prepares it once and opens the link in the hall.
"""
from __future__ import annotations

MAX_PREPARED = 5  # sentences a key can reach (the keys 1-5)
MAX_PREPARED_CHARS = 2000  # the whole list, as typed (checked where it enters: the box and the link)


def prepared_sentences(text: str) -> list[str]:
    """The sentences of the list: its non-blank lines, stripped, at most MAX_PREPARED (the rest is ignored)."""
    return [line.strip() for line in text[:MAX_PREPARED_CHARS].splitlines() if line.strip()][:MAX_PREPARED]


def next_sentence(sentences: list[str], current: str) -> str | None:
    """The sentence after ``current`` in the list (the first one after the last, or when ``current`` is not in it);
    None for an empty list."""
    if not sentences:
        return None
    if current.strip() in sentences:
        return sentences[(sentences.index(current.strip()) + 1) % len(sentences)]
    return sentences[0]
