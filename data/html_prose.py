"""Help pages and a book in HTML (--more: LibreOffice help, the Debian Administrator's Handbook),
paired paragraph by paragraph.

HTML pages have no message ids: paragraphs are paired by their id (help pages) or their order (the
handbook), and only inline prose is kept; code elements drop the sentences that hold them.
"""

from __future__ import annotations

import collections
import re
from html.parser import HTMLParser

from data.cleaning import normalize_text
from data.sentence_pairs import has_markup, sentence_pairs
from text.sentences import split_sentences

CODE_MARK = "\ue000"   # stands in prose text for a code element; a sentence holding it is dropped
_BLOCK_TAGS = frozenset(
    "div p pre table tr td th ul ol li dl dt dd img br hr object embed math sup sub "
    "h1 h2 h3 h4 h5 h6 script style".split()
)
_CODE_TAGS = frozenset(("code", "kbd", "samp", "tt", "var"))
_CODE_CLASSES = frozenset(
    "literal input filename command citerefentry replaceable parameter computeroutput userinput "
    "option varname function systemitem envar prompt".split()
)


class _ProseText(HTMLParser):
    """The text of one paragraph's inline HTML, with each code element replaced by CODE_MARK.

    `usable` turns False on anything that is not a run of inline prose: a nested block
    (list, table, image, line break) or hidden text (LibreOffice's per-platform alternatives
    "switchinline", whose hidden variants would be read as text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.usable = True
        self._skip: list[str] = []   # open code elements whose text is being skipped

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip:
            if tag == self._skip[0]:
                self._skip.append(tag)
            return
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        if tag in _BLOCK_TAGS or "hidden" in attributes or "switchinline" in classes:
            self.usable = False
        elif tag in _CODE_TAGS or classes & _CODE_CLASSES:
            self.parts.append(CODE_MARK)
            self._skip.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._skip and tag == self._skip[0]:
            self._skip.pop()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def prose_text(fragment: str) -> str | None:
    """Plain, normalised text of an inline HTML/XML fragment (entities decoded, formatting tags
    dropped, code elements as CODE_MARK), or None if it is not plain prose (see `_ProseText`)."""
    parser = _ProseText()
    parser.feed(fragment)
    parser.close()
    return normalize_text("".join(parser.parts)) if parser.usable else None


def prose_pairs(en_fragment: str, de_fragment: str) -> list[tuple[str, str]]:
    """Clean sentence pairs of one paragraph and its translation (HTML/XML fragments).

    Formatting (emphasis, menu names, links) is kept as text, since it is part of the sentence; a
    code element (file name, command, formula) becomes CODE_MARK first, so that after splitting
    into sentences only the sentences holding code are dropped, not the whole paragraph. The
    rest follows `sentence_pairs` (markup check, split when the counts match, is_sentence, ratio)."""
    en, de = prose_text(en_fragment), prose_text(de_fragment)
    if not en or not de:
        return []
    en_sents, de_sents = split_sentences(en, "en"), split_sentences(de, "de")
    candidates = list(zip(en_sents, de_sents, strict=True)) if len(en_sents) == len(de_sents) else [(en, de)]
    pairs = []
    for e, d in candidates:
        if CODE_MARK in e or CODE_MARK in d or has_markup(e) or has_markup(d):
            continue
        pairs.extend(sentence_pairs(e, d))
    return pairs


_HELP_PARAGRAPH = re.compile(r'<p id="([^"]+)"[^>]*>(.*?)</p>', re.DOTALL)
_HANDBOOK_PARAGRAPH = re.compile(r'<div class="para"[^>]*>(.*?)</div>', re.DOTALL)


def help_paragraphs(page: str) -> dict[str, list[str]]:
    """id -> inner HTML of the <p id=...> paragraphs of a LibreOffice help page, in order.

    Every language's page is generated from the same .xhp source, so a paragraph keeps its id
    ("par_id3149489") in every language: the id pairs a paragraph with its translation. An id
    can repeat within a page (a section embedded twice), hence a list."""
    table: dict[str, list[str]] = collections.defaultdict(list)
    for pid, body in _HELP_PARAGRAPH.findall(page):
        table[pid].append(body)
    return dict(table)


def pair_help_pages(en_page: str, de_page: str) -> list[tuple[str, str]]:
    """Clean sentence pairs of a LibreOffice help page and its German version, paired by
    paragraph id (an id seen a different number of times on the two sides is skipped)."""
    english, german = help_paragraphs(en_page), help_paragraphs(de_page)
    pairs = []
    for pid, en_bodies in english.items():
        de_bodies = german.get(pid, [])
        if len(de_bodies) == len(en_bodies):
            for en, de in zip(en_bodies, de_bodies, strict=True):
                pairs.extend(prose_pairs(en, de))
    return pairs


def pair_paragraph_lists(en_paragraphs: list[str], de_paragraphs: list[str]) -> list[tuple[str, str]]:
    """Clean sentence pairs of two pages' paragraphs, paired in order, or none at all if the
    counts differ: the translation then added, dropped or merged a paragraph, and pairing in
    order would shift every later pair onto the wrong paragraph."""
    if len(en_paragraphs) != len(de_paragraphs):
        return []
    return [pair for en, de in zip(en_paragraphs, de_paragraphs, strict=True) for pair in prose_pairs(en, de)]


def handbook_paragraphs(page: str) -> list[str]:
    """Inner HTML of the <div class="para"> paragraphs of a Debian Handbook page, in order. A
    paragraph holding a list or an example is cut at its first inner </div>, and the cut body
    is then dropped by `prose_text` (it holds a block tag)."""
    return _HANDBOOK_PARAGRAPH.findall(page)
