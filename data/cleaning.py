"""Text rules every source shares: normalisation, word count, length ratio, the English key, and
which language a sentence reads as.

What a person types into the app is plain NFC text with single spaces, so every source is brought
to that form here; the length-ratio and language checks catch pairs whose sides are not a
translation of each other.
"""

from __future__ import annotations

import re
import unicodedata

MIN_WORDS = 3
MAX_WORDS = 40
MIN_RATIO = 0.4   # len(de) / len(en) in characters; German runs about 1.1-1.2x English
MAX_RATIO = 2.5


_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_WS = re.compile(r"\s+")
_APOSTROPHE = re.compile(r"(?<=\w)[\u2019\u02bc](?=\w)")


def normalize_text(text: str) -> str:
    """NFC, one plain space for any whitespace run, no invisible characters, trimmed.

    Also the two typographic forms a person never types: the ellipsis character becomes "..."
    and a right single quote between letters ("don’t") becomes "'", so training text matches
    what is typed into the app. German quotes „“ are left alone: they are real German.
    """
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    text = text.replace("\u2026", "...")
    text = _APOSTROPHE.sub("'", text)
    return _WS.sub(" ", text).strip()


def word_count(text: str) -> int:
    """Words = whitespace tokens holding a letter or digit ("..." or "-" are not words)."""
    return sum(1 for tok in text.split() if any(ch.isalnum() for ch in tok))


def ratio_ok(en: str, de: str, lo: float = MIN_RATIO, hi: float = MAX_RATIO) -> bool:
    """Character length ratio de/en inside [lo, hi]: outside it, one side is (nearly) surely a
    truncated, padded or free translation rather than a translation of the other."""
    if not en or not de:
        return False
    return lo <= len(de) / len(en) <= hi


def english_key(en: str) -> str:
    """Case-, accent- and punctuation-blind form of an English sentence.

    Used for deduplication and the split hash, so "Are you sure?" and "Are you sure!" count as
    one sentence and can never land in two different splits."""
    folded = unicodedata.normalize("NFKD", en.casefold())
    return " ".join("".join(ch for ch in folded if ch.isalnum() or ch.isspace()).split())


# --------------------------------------------------------------------------------------------
# Which language a sentence reads as: a vote of common function words
# --------------------------------------------------------------------------------------------

_EN_FUNCTION_WORDS = frozenset(
    "the a an and or of to in is are was were you your he she it we they this that with for "
    "not have has be on at by from my his her their what which who".split()
)
_DE_FUNCTION_WORDS = frozenset(
    "der die das und oder ist sind war waren ein eine einen dem den des nicht ich du er sie es "
    "wir ihr mit für auf von zu im sich auch noch wie was wer".split()
)


def _language_votes(text: str) -> tuple[int, int]:
    words = re.findall(r"\w+", text.lower())
    return sum(w in _EN_FUNCTION_WORDS for w in words), sum(w in _DE_FUNCTION_WORDS for w in words)


def looks_reversed(en: str, de: str) -> bool:
    """True if the "English" side reads as German and the "German" side as English.

    A vote of common function words on each side; both sides must disagree with their label,
    so one ambiguous word ("Die, villain, die!", "in") never flips a pair."""
    en_en, en_de = _language_votes(en)
    de_en, de_de = _language_votes(de)
    return en_de > en_en and de_en > de_de


# English function words that are not also German words ("in", "an", "was"), nor a letter ("PDF/A")
_EN_ONLY_WORDS = _EN_FUNCTION_WORDS - {"in", "an", "was", "a"}


def looks_untranslated(de: str) -> bool:
    """True if a "German" sentence reads as English: at least two English-only function words,
    more than its German ones. Catches an English sentence left in a translated page with a few
    words changed ("See Abschnitt 11.7 for an example."), which the German == English test
    does not."""
    words = re.findall(r"\w+", de.lower())
    en_votes = sum(w in _EN_ONLY_WORDS for w in words)
    de_votes = sum(w in _DE_FUNCTION_WORDS for w in words)
    return en_votes >= 2 and en_votes > de_votes
