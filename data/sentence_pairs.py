"""The sentence rules every catalogue-like source shares: no markup, split into sentences, keep only
full sentences of a sane length ratio.

The .mo, .po, .qm, OpenTTD and HTML sources differ in how their text is stored, not in what counts
as a clean sentence pair; that is decided here once. Where a sentence ends is `text.sentences`' rule,
the one the app splits a pasted paragraph by (German reads "17." as an ordinal there).
"""

from __future__ import annotations

import re

from data.cleaning import MAX_WORDS, MIN_WORDS, ratio_ok, word_count
from text.sentences import split_sentences

_MARKUP = re.compile(
    r"""
      %(?:\(\w+\))?[-+#0]*\d*(?:\.\d+)?[a-zA-Z]    # printf: %s %d %(name)s %-5.2f
    | %\d | %%                                     # %1 positional, %% literal
    | [{}<>\[\]$\\|#@=^*`]                         # braces, tags, variables, escapes
    | &\w+;                                        # HTML entities
    | https?:// | \bwww\. | \bftp\.                 # URLs
    | \.(?:com|org|net|de|html?|png|svg|xml|txt|cfg|ui)\b
    | \b[A-Z]+_[A-Z_]+\b                           # identifiers: STR_SOMETHING
    """,
    re.VERBOSE,
)


def has_markup(text: str) -> bool:
    """True if a string holds anything that is not plain prose: format codes, tags, variables,
    entities, URLs, file names or code identifiers. Such strings are templates filled in at
    run time; their "translation" is partly code, so they are dropped (not repaired)."""
    return bool(_MARKUP.search(text))


_CLOSE_QUOTES = "\"'“”‘’»«)"


def is_sentence(text: str) -> bool:
    """3-40 words, starts with a capital letter, ends in . ? or ! (maybe then a closing quote).

    Keeps full sentences and drops labels, menu items and fragments ("Save As...", "Properties"),
    which teach nothing about word order and would flood the corpus with one-word pairs."""
    if not text or not MIN_WORDS <= word_count(text) <= MAX_WORDS:
        return False
    if not text[0].isupper():
        return False
    end = text.rstrip(_CLOSE_QUOTES) if text[-1] in _CLOSE_QUOTES else text
    if not end or end[-1] not in ".?!":
        return False
    return not end.endswith("...")   # trailing-off fragments ("Well, I...") and menu "Open..."


def sentence_pairs(en: str, de: str) -> list[tuple[str, str]]:
    """The sentence rules every catalogue-like source shares, on clean normalised text.

    Untranslated (German == English) is dropped; equal sentence counts are split into pairs,
    otherwise the message is kept whole; each pair must pass `is_sentence` on both sides and
    `ratio_ok`. A split that goes wrong gives a different count on the two sides, so the message
    stays whole then."""
    if not en or not de or en.casefold() == de.casefold():
        return []
    en_sents, de_sents = split_sentences(en, "en"), split_sentences(de, "de")
    candidates = list(zip(en_sents, de_sents, strict=True)) if len(en_sents) == len(de_sents) else [(en, de)]
    return [
        (e, d)
        for e, d in candidates
        if is_sentence(e) and is_sentence(d) and ratio_ok(e, d) and e.casefold() != d.casefold()
    ]
