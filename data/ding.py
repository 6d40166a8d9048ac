"""The Ding dictionary (trans-de-en): sentence and phrase pairs (the ding source) and its common
one- and two-word entries (the dingwords source, --ding-words).

A line is "German :: English"; " | " sub-entries line up in order on both sides, "; " separates
synonyms, and grammar and usage notes stand in brackets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from data.cleaning import MIN_WORDS, looks_reversed, normalize_text, ratio_ok, word_count

_DING_NOTE = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)|<[^<>]*>")
_DING_ABBREV = re.compile(r"(?<!\S)/[^/\s]+/(?=[\s;|]|$)")   # " /GFK/ " abbreviation markers
_DING_XREF = re.compile(r"(?<!\S)~\S+")                       # "~Prozesskostenhilfe" see-also
_DING_SLASH = re.compile(r"(?<![\w/])([^\W\d_]{2,}\.?)(?:/[^\W\d_]{2,}\.?)+(?![\w/])")


def strip_ding_notes(text: str) -> str:
    """Remove Ding's grammar and usage notes: {f} [ugs.] (Akk.) <purer>, /ABBR/ and ~see-also.

    Notes can nest ("(etw. (Akk.))"), so the innermost are removed until nothing changes.
    They are metadata about a word, not part of the sentence, and would teach the model to emit
    "{m}" after German nouns."""
    prev = None
    while prev != text:
        prev, text = text, _DING_NOTE.sub(" ", text)
    text = _DING_ABBREV.sub(" ", text)
    text = _DING_XREF.sub(" ", text)
    return text


def first_slash_alternative(text: str) -> str:
    """"sheer/pure mockery" -> "sheer mockery", "be/keep/stay" -> "be", "jdn./etw." -> "jdn.".

    Ding writes alternatives with a slash; a person never types them, and keeping them would
    make the model emit slashes. Both sides list alternatives in the same order, so taking the
    first on each side keeps the pair aligned. Only word/word is touched (two or more letters
    each), so "km/h", "24/7" and "1/2" stay. Spaced " / " alternatives have an unclear scope
    ("in Umlauf / in die Welt setzen") and are dropped by `parse_ding_line` instead."""
    return _DING_SLASH.sub(r"\1", text)


def _ding_clean(part: str) -> str:
    first = part.split("; ")[0]
    first = first_slash_alternative(first)
    first = re.sub(r"\s+([,.!?;:])", r"\1", normalize_text(first))
    return first.strip(" ,;:")


def parse_ding_line(line: str, min_words: int = MIN_WORDS) -> list[tuple[str, str]]:
    """One Ding line -> aligned (en, de) pairs, filtered.

    Sub-entries (" | ") line up in order on both sides; a line whose sides have a different
    number of sub-entries is skipped whole, since its alignment cannot be trusted. From each
    sub-entry the first synonym ("; ") is kept, notes are stripped, and the pair is kept if
    both sides have at least 3 words, no "..." placeholder (templates like "jdm. ... geben"),
    no spaced " / " alternatives and a sane length ratio. A few Ding example sentences have
    their sides swapped; they are swapped back (see `looks_reversed`).
    """
    line = line.rstrip("\n")
    if not line.strip() or line.startswith("#") or line.count(" :: ") != 1:
        return []
    de_side, en_side = line.split(" :: ")
    de_parts, en_parts = de_side.split(" | "), en_side.split(" | ")
    if len(de_parts) != len(en_parts):
        return []
    pairs = []
    for de_raw, en_raw in zip(de_parts, en_parts, strict=True):
        de = _ding_clean(strip_ding_notes(de_raw))
        en = _ding_clean(strip_ding_notes(en_raw))
        if any(bad in text for text in (en, de) for bad in ("...", "~", " /", "/ ")):
            continue
        if looks_reversed(en, de):
            en, de = de, en
        if word_count(en) < min_words or word_count(de) < min_words:
            continue
        if not ratio_ok(en, de):
            continue
        pairs.append((en, de))
    return pairs


def parse_ding(lines: Iterable[str]) -> list[tuple[str, str]]:
    """All pairs of a Ding file, in file order."""
    return [pair for line in lines for pair in parse_ding_line(line)]


# Zipf frequency (log10 of uses per billion words, wordfreq's scale): 3.5 is about the 20,000th English word,
# "pharmacy" 3.9, "Abwasserbeseitigungsanlage" 0. German gets less: its compounds split one word's use up.
WORDS_MIN_ZIPF = {"en": 3.5, "de": 3.0}
WORDS_MAX = 2  # words per side: the sentences and phrases of three and more are the "ding" source
_WORD = re.compile(r"[^\W\d_][\w'-]*")  # a word starts with a letter; numbers and punctuation are not judged


def parse_ding_words(lines: Iterable[str], zipf: Callable[[str, str], float]) -> list[tuple[str, str]]:
    """Ding's one- and two-word entries whose every word is common, in file order.

    Why: the sentence tiers teach grammar but leave everyday words unseen (the model wrote "Philosophie" for
    "pharmacy"), and a dictionary's own entries are human translations of exactly those words. Only common words
    are kept (``zipf(word, lang)``, wordfreq's zipf_frequency, at least WORDS_MIN_ZIPF): Ding's 267,000 short
    entries are mostly technical compounds and species names that would swamp the sentences."""
    def common(text: str, lang: str) -> bool:
        words = _WORD.findall(text)
        return bool(words) and min(zipf(w, lang) for w in words) >= WORDS_MIN_ZIPF[lang]

    return [(en, de) for line in lines for en, de in parse_ding_line(line, min_words=1)
            if word_count(en) <= WORDS_MAX and word_count(de) <= WORDS_MAX and common(en, "en") and common(de, "de")]
