"""Which words of an English source a German translation writes as they are: names, numbers and codes.

The rule reads a ``CopyLexicon``, counted on the training corpus by ``training.copy_lexicon``: the capitalised
words the corpus's translations copy (Berlin, Anna), those they translate (Monday -> Montag, English -> Englisch),
and the words it writes in lower case (so "Table" opening a sentence is the word table, not a name). A capitalised
word the corpus never saw is taken for a name. Numbers are kept when German writes them the same way: digit
strings and times (2019, 0176, 14:30), dates and versions with two dots or more (10.1.2000), codes (B42, 23F);
not amounts with a thousands comma (1,250 -> 1.250), ordinals (3rd -> 3.) or decimals (1.5 -> 1,5, and a version
"3.11" cannot be told from a decimal): in the training corpus those shapes are copied in under half of their pairs,
the kept ones in 57-96%. Only words that stand alone are kept ("F1" of "Shift+F1" is not), and words that stand next
to each other are kept as one phrase ("Aisha Rahman"), so the search writes them in that order; so is a title German
writes as English does with the name after it ("Dr. Anna Schmidt": kept apart, a forced "Dr" drew the name after it
a second time).
model.decoding.constrained_beam makes the output keep them.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

WORD = re.compile(r"[^\W_]+(?:[-'.,:][^\W_]+)*")  # a word with inner hyphens, apostrophes and number separators
SENTENCE_ENDS = ".!?:;\"“‘'("  # what may stand before a word that opens a sentence (spaces aside)
OPENERS = "\"“„‘'(["  # what may stand right before a word that stands alone (besides a space)
CLOSERS = ".,;:!?\"”“’')]"  # and right after it
# Suffixes English builds common nouns and adjectives with, and names hardly ever end in
COMMON_SUFFIX = re.compile(r"[a-z](tions?|sion|ness|ments?|ship|isms?|ology|ity|ous|ical|able|ible|ful|less)$")
COPIED_SHARE = 0.5  # a capitalised word is copied when at least this share of its corpus pairs copy it
TITLES = ("Dr", "Prof")  # titles German writes as English does, period and all
TITLE_BEFORE = re.compile(rf"(?<!\w)(?:{'|'.join(TITLES)})\. $")  # a title and its period right before a word
MAX_PHRASES = 8  # phrases one sentence keeps (model.decoding.constrained_beam.MAX_KEEPS)
LEXICON_FILE = "copy_lexicon.json"


@dataclass(frozen=True)
class CopyLexicon:
    """What the corpus does with words: ``copied`` and ``translated`` capitalised words (seen at least twice), and
    ``lower`` the words it writes in lower case (at least twice)."""

    copied: frozenset[str]
    translated: frozenset[str]
    lower: frozenset[str]

    def to_json(self) -> str:
        return json.dumps({key: sorted(getattr(self, key)) for key in ("copied", "translated", "lower")},
                          ensure_ascii=False, indent=0)

    @classmethod
    def from_json(cls, text: str) -> CopyLexicon:
        data = json.loads(text)
        if not isinstance(data, dict) or not all(
                isinstance(data.get(k), list) and all(isinstance(w, str) for w in data[k])
                for k in ("copied", "translated", "lower")):
            raise ValueError("a copy lexicon is a JSON object of three word lists: copied, translated, lower")
        return cls(frozenset(data["copied"]), frozenset(data["translated"]), frozenset(data["lower"]))

    @classmethod
    def count(cls, pairs: Iterable[tuple[str, str]], min_seen: int = 2) -> CopyLexicon:
        """Count it on (English, German) pairs: how often each English word appears, and how often the same pair's
        German side has it verbatim."""
        seen: dict[str, int] = {}
        copied: dict[str, int] = {}
        for english, german in pairs:
            target = set(WORD.findall(german))
            for word in WORD.findall(english):
                seen[word] = seen.get(word, 0) + 1
                copied[word] = copied.get(word, 0) + (word in target)
        common = {w: n for w, n in seen.items() if n >= min_seen}
        capitalised = {w: n for w, n in common.items() if w[0].isupper()}
        return cls(copied=frozenset(w for w, n in capitalised.items() if copied[w] >= COPIED_SHARE * n),
                   translated=frozenset(w for w, n in capitalised.items() if copied[w] < COPIED_SHARE * n),
                   lower=frozenset(w for w in common if w.islower()))

    def is_name(self, word: str) -> bool:
        """A capitalised word the corpus copies, or one it never saw that is no capitalised common word: not in
        lower case in the corpus, not the plural of a word it translates (Mondays), not built with a suffix of
        English common words (Meteorology, Protectorship; -ance and -ence are left out: Constance, Florence)."""
        if not word[:1].isupper() or word.endswith("'s") or any(c.isdigit() for c in word):
            return False
        if word in self.copied:
            return True
        if word in self.translated or word.lower() in self.lower or COMMON_SUFFIX.search(word):
            return False
        return not (word.endswith("s") and word[:-1] in self.translated)


def written_whole(phrase: str, text: str) -> bool:
    """Whether ``text`` has ``phrase`` verbatim and whole: "Anna" is not in "Annatin" (the names-and-numbers metric,
    and what the Translate page checks of a kept phrase)."""
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def kept_number(word: str) -> bool:
    """A number or code German writes the same way."""
    return re.fullmatch(r"\d+(:\d+)?|\d+(\.\d+){2,}|[A-Z0-9]*\d[A-Z0-9]*", word) is not None


def words_to_keep(text: str, lexicon: CopyLexicon) -> list[str]:
    """The phrases of ``text`` a translation should write verbatim, in order, at most MAX_PHRASES (keep_spans says
    which words each is made of)."""
    unique = dict.fromkeys(text[p[0][0]:p[-1][1]] for p in keep_spans(text, lexicon))
    return list(unique)[:MAX_PHRASES]


def keep_spans(text: str, lexicon: CopyLexicon) -> list[list[tuple[int, int]]]:
    """Every phrase of ``text`` to keep, in order, uncapped and repeats included, as the (start, end) of its words:
    so a phrase too long to keep whole can be kept in parts cut between its words. A name that opens a sentence is
    kept only when the corpus copies it or another name follows it ("Aisha Rahman will"), since any word opening a
    sentence is capitalised ("Vegetarians give up meat")."""
    matches = list(WORD.finditer(text))
    phrases: list[list[re.Match]] = []
    for i, match in enumerate(matches):
        word, start, end = match.group(), match.start(), match.end()
        before, after = text[start - 1:start], text[end:end + 1]  # "" at either end of the text
        if not (before in ("", *OPENERS) or before.isspace()) or not (after in ("", *CLOSERS) or after.isspace()):
            keep = False  # inside a longer token: "F1" of "Shift+F1"
        elif any(c.isdigit() for c in word) or (word.isupper() and len(word) > 1):
            keep = kept_number(word) if any(c.isdigit() for c in word) else lexicon.is_name(word)
        elif _after_title(text, start) and word[:1].isupper() and not word.endswith("'s"):
            keep = True  # "Dr. Anna": a name, whatever else the corpus does with the word
        elif lexicon.is_name(word):
            preceding = text[:start].rstrip()
            opens = not preceding or preceding[-1] in SENTENCE_ENDS
            following = matches[i + 1].group() if i + 1 < len(matches) else ""
            keep = not opens or word in lexicon.copied or lexicon.is_name(following)
        else:
            keep = False
        if not keep:
            continue
        gap = text[phrases[-1][-1].end():start] if phrases else None
        if gap == " " or (gap == ". " and _after_title(text, start)):
            phrases[-1].append(match)  # next to the last kept word, or to a title: one phrase
        else:
            phrases.append([match])
    return [[match.span() for match in phrase] for phrase in phrases]


def _after_title(text: str, start: int) -> bool:
    """Whether the word at ``start`` follows a title and its period ("Dr. Anna"): a name, not a sentence's opening."""
    span = max(map(len, TITLES)) + 2  # looked at only right before the word: linear in the text, not quadratic
    return TITLE_BEFORE.search(text, max(0, start - span), start) is not None
