"""gettext catalogues: compiled .mo files (Wesnoth, LibreOffice, Freeciv and most other sources) and
.po sources (Pingus, LinCity-NG), read and cleaned into sentence pairs.

`clean_mo_pair` is also the cleaning rule of the other message formats (Qt .qm, Hedgewars, Tux Paint
stamps): contexts and accelerators stripped, templates dropped.
"""

from __future__ import annotations

import ast
import gettext
import io
import re
from collections.abc import Iterator, Mapping

from data.cleaning import normalize_text
from data.sentence_pairs import has_markup, sentence_pairs


def read_mo(data: bytes) -> dict:
    """The raw msgid -> msgstr catalogue of a .mo file (gettext's own parser)."""
    return gettext.GNUTranslations(io.BytesIO(data))._catalog


def catalog_pairs(catalog: Mapping) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of a parsed catalogue, singular forms only, header and empty ones skipped.

    Plural entries are keyed (msgid, n); only n == 0 is kept, since the plural variants are
    near-copies of it (and their msgid is still the singular)."""
    for key, msgstr in catalog.items():
        if isinstance(key, tuple):
            msgid, n = key
            if n != 0:
                continue
        else:
            msgid = key
        if msgid and msgstr:
            yield msgid, msgstr


_CONTEXT_CARET = re.compile(r"^[\w.-]+\^")      # Wesnoth: "teamname^Illusion"
_CONTEXT_QMARK = re.compile(r"^\?[\w .-]*:")     # Freeciv: "?plural:Sicilians"


def strip_context(msgid: str) -> str:
    """Drop a message context: gettext's "ctx\\x04", Wesnoth's "ctx^" and Freeciv's "?ctx:".

    The context tells translators where a string is used; it is not part of the text."""
    msgid = msgid.rsplit("\x04", 1)[-1]
    msgid = _CONTEXT_CARET.sub("", msgid)
    return _CONTEXT_QMARK.sub("", msgid)


_ACCEL_UNDERSCORE = re.compile(r"_(?=\w)")
_ACCEL_AMP = re.compile(r"&(?=\w)")


def strip_accelerators(text: str) -> str:
    """Remove keyboard accelerator markers: "_Open", "E_bene", "&File", "~Slide Show".

    They mark a letter for Alt+key in menus and would split German words in the middle."""
    text = text.replace("~", "")
    text = _ACCEL_UNDERSCORE.sub("", text)
    return _ACCEL_AMP.sub("", text)


def clean_mo_pair(msgid: str, msgstr: str) -> list[tuple[str, str]]:
    """One catalogue entry -> zero or more clean (en, de) sentence pairs.

    Order matters: context is stripped first, then anything with markup or format codes is
    dropped (on the raw text, before accelerators are removed, so "&amp;" is still seen as an
    entity), then accelerators go and whitespace is normalised. A message with the same number
    of sentences on both sides is split into sentence pairs (shorter pairs make sharper
    attention maps and more training examples); otherwise it is kept whole if it is one
    acceptable sentence-like unit. Untranslated entries (German == English) are dropped.
    """
    en_raw, de_raw = strip_context(msgid), msgstr
    if has_markup(en_raw) or has_markup(de_raw):
        return []
    en = normalize_text(strip_accelerators(en_raw))
    de = normalize_text(strip_accelerators(de_raw))
    return sentence_pairs(en, de)


def parse_mo_catalog(catalog: Mapping) -> list[tuple[str, str]]:
    """All clean pairs of one parsed catalogue, in msgid order (catalogue order is a dict's)."""
    pairs = []
    for msgid, msgstr in sorted(catalog_pairs(catalog)):
        pairs.extend(clean_mo_pair(msgid, msgstr))
    return pairs


# --------------------------------------------------------------------------------------------
# --more: gettext .po files (Pingus, LinCity-NG)
# --------------------------------------------------------------------------------------------

_PO_KEYWORD = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(".*")$')
_PO_PLURAL = re.compile(r"msgstr\[(\d+)\]")


def read_po(text: str) -> dict:
    """The catalogue of a .po file, keyed as `read_mo` keys a .mo file's (a context as
    "ctx\\x04msgid", plural forms as (msgid, n)), so `parse_mo_catalog` reads both alike.

    Some games ship the .po source instead of a compiled .mo. Strings are read the way Python's
    own msgfmt.py reads them (a quoted C string per line, continuation lines appended). Fuzzy
    entries are skipped, as msgfmt skips them: they are machine guesses no translator confirmed."""
    catalog: dict = {}
    fields: dict[str, str] = {}
    fuzzy, last = False, ""

    def flush() -> None:
        nonlocal fuzzy, last
        msgid = fields.get("msgid")
        if msgid is not None and not fuzzy:
            if "msgctxt" in fields:
                msgid = f"{fields['msgctxt']}\x04{msgid}"
            for keyword, value in fields.items():
                plural = _PO_PLURAL.fullmatch(keyword)
                if plural and "msgid_plural" in fields:
                    catalog[(msgid, int(plural.group(1)))] = value
                elif keyword == "msgstr":
                    catalog[msgid] = value
        fields.clear()
        fuzzy, last = False, ""

    for raw in text.splitlines():
        line = raw.strip()
        match = _PO_KEYWORD.match(line)
        new_entry = not line or line.startswith("#") or (match and match.group(1) in ("msgctxt", "msgid"))
        if new_entry and last.startswith("msgstr"):   # the entry before is complete
            flush()
        if line.startswith("#,") and "fuzzy" in line:
            fuzzy = True
        elif match:
            last = match.group(1)
            fields[last] = ast.literal_eval(match.group(2))
        elif line.startswith('"') and last:
            fields[last] += ast.literal_eval(line)
    flush()
    return catalog
