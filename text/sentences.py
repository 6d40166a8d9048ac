"""Where a sentence ends: one rule for the app (a pasted paragraph, translated sentence by sentence) and for the
corpus build (a catalogue message and its translation, paired sentence by sentence).

A sentence ends at ".", "!", "?" or "…" (with any closing quotes or brackets) followed by a space and what can start
a sentence (an upper-case letter or a digit, maybe after an opening quote or bracket; "¿", "¡"). Not after a title
or a common abbreviation ("Dr. Schmidt", "e.g. this", "z. B. hier"), an initial ("J. Smith") or, in German, an
ordinal ("im 17. Jahrhundert"); a stop inside a number ("3.5", "1,250.00") is no end, as no space follows it.
"""
from __future__ import annotations

import re

# Words after which a full stop does not end the sentence, English and German, compared without the stop. One written
# in lower case counts in any case ("etc.", "Etc."); a capitalised one only capitalised, as it is also a word ("No. 5"
# but "or no. Then", "Sun." but "the sun. Then"). Letters joined by stops ("e.g.", "z.B.", "i.d.R.") and single letters
# are abbreviations without a list.
ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr Prof Sr Jr St Mt No Nr vs etc cf approx ca Fig Vol Ch Art p pp Jan Feb Mar Apr Jun Jul Aug Sep Sept "
    "Oct Nov Dec Mon Tue Wed Thu Fri Sat Sun Inc Ltd Co Corp Dept Univ Ave Rd max min sec sb "
    "Hr Fr Tel Abb Kap Bd Mär Okt Dez Mo Di Mi Sa bzw usw ggf vgl jdm".split())
_ANY_CASE = frozenset(word for word in ABBREVIATIONS if word.islower())
_OPENERS = "\"'„“‚‘«»(["
_CLOSERS = "\"'“”‘’«»)]"
# An end mark with its closing quotes or brackets, then the space (group 1) and the next sentence's first character
# after an opening quote or bracket (group 2), which must be able to start a sentence.
_BOUNDARY = re.compile(rf"[.!?…][{re.escape(_CLOSERS)}]*(\s+)(?=[{re.escape(_OPENERS)}]?(\S))")
_ORDINAL = re.compile(r"\b\d+\.$")


def split_sentences(text: str, lang: str = "en", most: int | None = None) -> list[str]:
    """The sentences of ``text`` in order, stripped; [] for blank text. ``lang`` "de" reads "17." as an ordinal;
    with ``most``, the text after the ``most - 1``-th end stays whole in the last sentence."""
    text = text.strip()
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        candidate = text[start:match.start(1)].strip()
        if not _can_start(match.group(2), after_dots=candidate.rstrip(_CLOSERS).endswith("...")):
            continue
        if _no_end(candidate.rsplit(None, 1)[-1], lang):
            continue
        if most is not None and len(sentences) == most - 1:
            break
        sentences.append(candidate)
        start = match.end(1)
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _can_start(first: str, after_dots: bool) -> bool:
    """Whether a sentence may start with ``first``: a digit may, but not after three stops, which there stand for a
    range or a pause ("0 ... 1", "for... 100")."""
    return first.isupper() or first in "¿¡" or (first.isdigit() and not after_dots)


def _no_end(word: str, lang: str) -> bool:
    """A last word whose full stop marks an abbreviation, an initial or a German ordinal
    ("Dr.", "e.g.", "J.", "17.")."""
    if not word.endswith("."):
        return False
    word = word.lstrip(_OPENERS)
    bare = word[:-1]
    initials = all(len(letter) == 1 and letter.isalpha() for letter in bare.split("."))
    return (bare in ABBREVIATIONS or bare.lower() in _ANY_CASE or initials
            or (lang == "de" and bool(_ORDINAL.search(word))))
