"""Rebuild the English->German parallel corpus (data/en-de.tsv.gz) from Debian packages.

    python data/build_corpus.py [--out data/en-de.tsv.gz] [--cache .cache/debs]
    python data/build_corpus.py --extra    # + four more sources -> data/en-de-plus.tsv.gz

One command, deterministic: the same .deb files give a byte-identical output. Real human
translations are taken from four Debian packages (see data/ATTRIBUTION.md, written by this
script next to the output):

    ding         trans-de-en           the Ding dictionary: everyday sentences, idioms, phrases
    wesnoth      wesnoth-1.16-*        game dialogue and unit descriptions (.mo catalogues)
    libreoffice  libreoffice-l10n-de   interface text and tool tips (.mo catalogues)
    freeciv      freeciv-data          game help text and nation legends (.mo catalogues)

`--extra` adds four more sources (an opt-in experiment: does more real human translation help?)
and writes data/en-de-plus.tsv.gz with data/ATTRIBUTION-plus.md; without it the output is
unchanged, byte for byte:

    widelands    widelands-data        campaign story, tutorials, building help (.mo catalogues)
    warzone2100  warzone2100-data      mission briefings and interface messages (.mo catalogue)
    freedroidrpg freedroidrpg-data     NPC dialogues, item descriptions (.mo catalogues)
    openttd      openttd-data          settings help and tool tips (compiled .lng string tables)

The plus corpus holds every row of the default corpus unchanged (same German, source and split;
see `deduplicate`), plus the new sources' sentences whose English is not in it yet.

The packages are fetched with `apt-get download` into a cache folder (no root, no install) and
read with `dpkg-deb --fsys-tarfile`; only the wanted members are written below the cache. The
system is not changed. A cached .deb is reused, so a rebuild is offline once the cache is warm.

Choices worth knowing (each has a reason in the docstring of the function that makes it):
- One German per English sentence (see `deduplicate`): identical inputs with different targets
  are label noise for a model and make a test reference arbitrary.
- A fixed split by a stable hash of the English sentence (see `assign_split`): a sentence lands
  in the same split on every rebuild, whatever else changes in the corpus.
- Only the first plural form, no format codes, markup or variables (see `clean_mo_pair`): the
  model should learn to translate what a person types, not printf templates.

The parsing and filtering functions are pure (strings in, strings out) so they are tested
without Debian: tests/data/test_build_corpus.py.
"""

from __future__ import annotations

import argparse
import collections
import csv
import fnmatch
import gettext
import gzip
import hashlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

REPO_ROOT = Path(__file__).resolve().parent.parent

SOURCES = ("ding", "wesnoth", "libreoffice", "freeciv")
EXTRA_SOURCES = ("widelands", "warzone2100", "freedroidrpg", "openttd")   # with --extra only
ALL_SOURCES = SOURCES + EXTRA_SOURCES
# Dedup tiers: an English sentence found in a tier is decided by that tier alone (see `deduplicate`).
SOURCE_TIERS = (SOURCES, EXTRA_SOURCES)
SPLITS = ("train", "valid", "test")

WESNOTH_CAMPAIGNS = (
    "did", "dm", "dw", "ei", "httt", "l", "low", "nr",
    "sof", "sota", "sotbe", "thot", "trow", "tsg", "ttb", "utbs",
)


@dataclass(frozen=True)
class Source:
    """Where one source's text lives: Debian packages, members wanted, licence facts."""

    name: str
    packages: tuple[str, ...]
    members: tuple[str, ...]  # fnmatch patterns on paths inside the .deb (no leading ./)
    upstream: str
    licence: str
    description: str


SOURCE_INFO: dict[str, Source] = {
    "ding": Source(
        "ding",
        ("trans-de-en",),
        ("usr/share/trans/de-en",),
        "Ding German-English dictionary, Frank Richter, TU Chemnitz (https://dict.tu-chemnitz.de/)",
        "GPL-2.0-or-later",
        "dictionary example sentences, idioms and phrases",
    ),
    "wesnoth": Source(
        "wesnoth",
        ("wesnoth-1.16-data",) + tuple(f"wesnoth-1.16-{c}" for c in WESNOTH_CAMPAIGNS),
        ("usr/share/games/wesnoth/1.16/locale/de/LC_MESSAGES/*.mo",),
        "The Battle for Wesnoth 1.16 and its German translation team (https://www.wesnoth.org/)",
        "GPL-2.0-or-later",
        "campaign dialogue, story text, unit descriptions and help",
    ),
    "libreoffice": Source(
        "libreoffice",
        ("libreoffice-l10n-de",),
        ("usr/lib/libreoffice/program/resource/de/LC_MESSAGES/*.mo",),
        "LibreOffice, The Document Foundation, German localisation (https://www.libreoffice.org/)",
        "MPL-2.0",
        "user interface messages and extended tool tips",
    ),
    "freeciv": Source(
        "freeciv",
        ("freeciv-data",),
        ("usr/share/locale/de/LC_MESSAGES/freeciv*.mo",),
        "Freeciv 3.0 and its German translators (https://www.freeciv.org/)",
        "GPL-2.0-or-later",
        "game help text, messages and nation legends",
    ),
    # ---- extra sources (--extra): all ranked after the four above
    "widelands": Source(
        "widelands",
        ("widelands-data",),
        ("usr/share/games/widelands/data/locale/de/LC_MESSAGES/*.mo",),
        "Widelands 1.1, the Widelands Development Team and its German translators "
        "(https://www.widelands.org/)",
        "GPL-2.0-or-later",
        "campaign and tutorial story text, building and worker help",
    ),
    "warzone2100": Source(
        "warzone2100",
        ("warzone2100-data",),
        ("usr/share/locale/de/LC_MESSAGES/warzone2100*.mo",),
        "Warzone 2100 4.3, the Warzone 2100 Project and its German translators (https://wz2100.net/)",
        "GPL-2.0-or-later",
        "mission briefings, research and interface messages",
    ),
    "freedroidrpg": Source(
        "freedroidrpg",
        ("freedroidrpg-data",),
        ("usr/share/locale/de/LC_MESSAGES/freedroidrpg*.mo",),
        "FreedroidRPG 1.0, the Freedroid developers and their German translators "
        "(https://www.freedroid.org/)",
        "GPL-2.0-or-later",
        "NPC dialogues, item and quest descriptions, interface text",
    ),
    "openttd": Source(
        "openttd",
        ("openttd-data",),
        ("usr/share/games/openttd/lang/english.lng", "usr/share/games/openttd/lang/german.lng"),
        "OpenTTD 13.0, the OpenTTD team and its German translators (https://www.openttd.org/)",
        "GPL-2.0-only",
        "settings help, tool tips and news messages",
    ),
}

# Split policy: buckets 0..9999 of a hash of the English sentence. Fixed thresholds (not ranks),
# so adding or removing other sentences never moves a sentence from one split to another.
SPLIT_SALT = "attention-explorer/en-de/v1"
SPLIT_BUCKETS = 10_000
TEST_BUCKETS = 200    # 2.0 %
VALID_BUCKETS = 170   # 1.7 %  (>= 1,000 pairs on the ~65k corpus; checked in `check_split_sizes`)
MIN_SPLIT_PAIRS = 1_000

MIN_WORDS = 3
MAX_WORDS = 40
MIN_RATIO = 0.4   # len(de) / len(en) in characters; German runs about 1.1-1.2x English
MAX_RATIO = 2.5


# --------------------------------------------------------------------------------------------
# Text normalisation (shared by all sources)
# --------------------------------------------------------------------------------------------

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
# Ding: "German :: English", " | " sub-entries aligned in order, "; " synonyms, notes in brackets
# --------------------------------------------------------------------------------------------

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


def parse_ding_line(line: str) -> list[tuple[str, str]]:
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
        if word_count(en) < MIN_WORDS or word_count(de) < MIN_WORDS:
            continue
        if not ratio_ok(en, de):
            continue
        pairs.append((en, de))
    return pairs


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


def parse_ding(lines: Iterable[str]) -> list[tuple[str, str]]:
    """All pairs of a Ding file, in file order."""
    return [pair for line in lines for pair in parse_ding_line(line)]


# --------------------------------------------------------------------------------------------
# gettext .mo catalogues (Wesnoth, LibreOffice, Freeciv)
# --------------------------------------------------------------------------------------------


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


_ACCEL_UNDERSCORE = re.compile(r"_(?=\w)")
_ACCEL_AMP = re.compile(r"&(?=\w)")


def strip_accelerators(text: str) -> str:
    """Remove keyboard accelerator markers: "_Open", "E_bene", "&File", "~Slide Show".

    They mark a letter for Alt+key in menus and would split German words in the middle."""
    text = text.replace("~", "")
    text = _ACCEL_UNDERSCORE.sub("", text)
    return _ACCEL_AMP.sub("", text)


_OPEN_QUOTES = "\"'„“‚‘«»("
_CLOSE_QUOTES = "\"'“”‘’»«)"
_ABBREV_END = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|No|Nr|bzw|ca|vgl|usw|etc|Hr|Fr|Prof|Abb|Kap|Bd)"
    r"|(?<![\w'’])[A-Za-z]|\b(?:z|u|d|e|i)\. ?[A-Za-z])\.$"
)


def split_sentences(text: str, lang: str) -> list[str]:
    """Split a message at ". ", "! ", "? " (optionally after a closing quote) before a capital.

    Abbreviations ("Dr.", "z. B.", single letters) do not end a sentence. For German a number
    followed by a period is an ordinal ("im 17. Jahrhundert"), so it never ends one either.
    A split that goes wrong gives a different count on the two sides, and then the message is
    not split at all (see `clean_mo_pair`)."""
    pieces = re.split(
        r"(?:(?<=[.!?])|(?<=[.!?][\"'“”‘’«»]))\s+(?=[\"'„“‚‘«»(]?[A-ZÄÖÜ])", text
    )
    out: list[str] = []
    for piece in pieces:
        if out and (
            _ABBREV_END.search(out[-1]) or (lang == "de" and re.search(r"\b\d+\.$", out[-1]))
        ):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


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


def sentence_pairs(en: str, de: str) -> list[tuple[str, str]]:
    """The sentence rules every catalogue-like source shares, on clean normalised text.

    Untranslated (German == English) is dropped; equal sentence counts are split into pairs,
    otherwise the message is kept whole; each pair must pass `is_sentence` on both sides and
    `ratio_ok`."""
    if not en or not de or en.casefold() == de.casefold():
        return []
    en_sents, de_sents = split_sentences(en, "en"), split_sentences(de, "de")
    candidates = list(zip(en_sents, de_sents, strict=True)) if len(en_sents) == len(de_sents) else [(en, de)]
    return [
        (e, d)
        for e, d in candidates
        if is_sentence(e) and is_sentence(d) and ratio_ok(e, d) and e.casefold() != d.casefold()
    ]


def parse_mo_catalog(catalog: Mapping) -> list[tuple[str, str]]:
    """All clean pairs of one parsed catalogue, in msgid order (catalogue order is a dict's)."""
    pairs = []
    for msgid, msgstr in sorted(catalog_pairs(catalog)):
        pairs.extend(clean_mo_pair(msgid, msgstr))
    return pairs


# --------------------------------------------------------------------------------------------
# OpenTTD: compiled string tables (lang/english.lng, lang/german.lng), paired by string id
# --------------------------------------------------------------------------------------------

# The LanguagePackHeader of OpenTTD 13 (src/language.h), little-endian: ident "LANG", version
# (a hash of the string table, equal in every language of one build), name[32], own_name[32],
# isocode[16], then the number of strings in each of 32 tabs, three 8-byte separators, and
# gender and case names; the strings follow it.
_LNG_IDENT = b"LANG"
_LNG_TABS = 32
_LNG_OFFSETS_AT = 4 + 4 + 32 + 32 + 16
_LNG_HEADER_SIZE = _LNG_OFFSETS_AT + 2 * _LNG_TABS + 3 * 8 + 2 + 1 + 1 + 2 + 1 + 1 + 1 + 3 + 8 * 16 + 16 * 16


def read_openttd_lng(data: bytes) -> tuple[int, dict[tuple[int, int], str]]:
    """(version, {(tab, index): text}) of a compiled OpenTTD language file.

    strgen compiles lang/<language>.txt ("STR_NAME :text") into a table without the names: the
    string STR_X is the same (tab, index) in every language of one build, and `version` tells
    that the builds match. Each string is a length (one byte below 0xC0, else two bytes:
    0xC0 | high bits, low byte) and UTF-8 text, in which strgen has replaced every {CODE} by a
    control character (U+E000-U+E2FF, some followed by raw argument bytes). A file may end in
    one NUL; any other leftover means the header was misread, and that is an error."""
    if data[:4] != _LNG_IDENT:
        raise ValueError("not an OpenTTD language file (no LANG header)")
    version = int.from_bytes(data[4:8], "little")
    counts = [
        int.from_bytes(data[_LNG_OFFSETS_AT + 2 * t:_LNG_OFFSETS_AT + 2 * t + 2], "little")
        for t in range(_LNG_TABS)
    ]
    pos, strings = _LNG_HEADER_SIZE, {}
    for tab, count in enumerate(counts):
        for index in range(count):
            length = data[pos]
            pos += 1
            if length >= 0xC0:
                length = ((length & 0x3F) << 8) | data[pos]
                pos += 1
            strings[(tab, index)] = data[pos:pos + length].decode("utf-8")
            pos += length
    if data[pos:] not in (b"", b"\0"):
        raise ValueError(f"{len(data) - pos} bytes left after the last string")
    return version, strings


# Display-only codes at the start of a string: {TINY_FONT} {BIG_FONT} and the colours {BLUE} ..
# {BLACK}, {PUSH_COLOUR} (U+E002, U+E003, U+E03B-U+E04C in OpenTTD 13). "{BLACK}Build a depot."
# is a tool tip's prose in a colour; anything else that is a code ({STRING}, {COMMA}, {G=m},
# plurals, cases, sprites) is part of a template and drops the string.
_OPENTTD_DISPLAY_CODES = re.compile("^[\ue002\ue003\ue03b-\ue04c]+")


def has_control_code(text: str) -> bool:
    """True if text holds a control character (C0/C1) or a private-use one (OpenTTD codes)."""
    return any(unicodedata.category(ch) in ("Cc", "Co") for ch in text)


def clean_openttd_pair(en_raw: str, de_raw: str) -> list[tuple[str, str]]:
    """One OpenTTD string id -> zero or more clean (en, de) sentence pairs.

    Leading colour and font codes are removed (they only colour the text); a string that still
    holds a code ({STRING}, {COMMA}, {G=m}, plural and case lists, sprites), a newline or any
    other control character, or markup as `has_markup` sees it, is dropped: like .mo format
    strings, it is a template filled in at run time. The rest follows `sentence_pairs`, so
    untranslated strings (strgen writes the English where German is missing), labels
    ("Income Graph") and fragments go. No accelerators or message contexts in OpenTTD."""
    en_raw = _OPENTTD_DISPLAY_CODES.sub("", en_raw)
    de_raw = _OPENTTD_DISPLAY_CODES.sub("", de_raw)
    if any(has_control_code(t) or has_markup(t) for t in (en_raw, de_raw)):
        return []
    return sentence_pairs(normalize_text(en_raw), normalize_text(de_raw))


def pair_openttd(english: Mapping, german: Mapping) -> list[tuple[str, str]]:
    """Pair two OpenTTD string tables by string id (any sortable key: (tab, index) from
    `read_openttd_lng`, or "STR_..." names); ids missing on either side are skipped."""
    pairs = []
    for sid in sorted(english):
        if sid in german:
            pairs.extend(clean_openttd_pair(english[sid], german[sid]))
    return pairs


# --------------------------------------------------------------------------------------------
# Corpus: dedup, split, rows, output
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Row:
    source: str
    split: str
    en: str
    de: str


def deduplicate(pairs: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(source, en, de) triples -> at most one pair per English sentence (by `english_key`).

    Why one German per English: the same input with two targets is label noise (the model learns
    to hedge between them), a test sentence with an arbitrary one of several references is a
    noisy score, and a unique English side makes "no sentence in two splits" hold by
    construction. The German kept is the most frequent one for that English across all sources
    (the consensus translation), then the earlier source in SOURCES (Ding is edited as a
    dictionary), then the shorter, then alphabetical: deterministic whatever the input order.

    Sources come in tiers (SOURCE_TIERS): the four default sources, then the --extra ones. An
    English sentence found in an earlier tier is decided by that tier alone, votes included, so
    the extra sources can only add sentences, never change or outvote a default row: the plus
    corpus is the default corpus plus new rows, and a comparison of the two trains on the same
    rows and tests on the same test set. Within one tier the rules above apply unchanged.
    """
    source_rank = {name: i for i, name in enumerate(ALL_SOURCES)}
    tier_of = {name: i for i, group in enumerate(SOURCE_TIERS) for name in group}
    counts = collections.Counter((src, en, de) for src, en, de in pairs)
    pair_counts = collections.Counter()
    for (src, en, de), n in counts.items():
        pair_counts[(tier_of.get(src, len(SOURCE_TIERS)), english_key(en), de)] += n
    best: dict[str, tuple] = {}
    for src, en, de in counts:
        key = english_key(en)
        tier = tier_of.get(src, len(SOURCE_TIERS))
        rank = (tier, -pair_counts[(tier, key, de)], source_rank.get(src, len(ALL_SOURCES)), len(de), de, en, src)
        if key and (key not in best or rank < best[key][0]):
            best[key] = (rank, (src, en, de))
    return sorted(item for _, item in best.values())


def split_bucket(en: str) -> int:
    """Stable bucket 0..9999 of an English sentence: SHA-256 of its `english_key` (salted).

    Python's hash() is randomised per process; SHA-256 is the same on every machine and run."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{english_key(en)}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % SPLIT_BUCKETS


def assign_split(en: str) -> str:
    """"train", "valid" or "test", from the English sentence alone.

    Fixed thresholds on a stable hash: the same sentence gets the same split on every rebuild,
    regardless of what else is in the corpus, so a model trained on one build is never tested on
    its own training sentences from another. Every source gets the same 2.0% / 1.7% share in
    expectation, i.e. the split is stratified by source (checked per source in the report)."""
    bucket = split_bucket(en)
    if bucket < TEST_BUCKETS:
        return "test"
    if bucket < TEST_BUCKETS + VALID_BUCKETS:
        return "valid"
    return "train"


def make_rows(pairs: Iterable[tuple[str, str, str]]) -> list[Row]:
    """Deduplicated, split and sorted rows: by split (train, valid, test), source, en, de."""
    rows = [Row(src, assign_split(en), en, de) for src, en, de in deduplicate(pairs)]
    split_rank = {s: i for i, s in enumerate(SPLITS)}
    source_rank = {s: i for i, s in enumerate(ALL_SOURCES)}
    return sorted(rows, key=lambda r: (split_rank[r.split], source_rank[r.source], r.en, r.de))


def rows_to_tsv(rows: Iterable[Row]) -> bytes:
    """UTF-8 TSV with header "source split en de", LF line ends, csv quoting.

    Text never holds tabs or newlines (normalised away); a field holding a double quote is
    quoted the csv way, so read it with pandas.read_csv(sep="\\t", keep_default_na=False) or the
    csv module, not with str.split."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(["source", "split", "en", "de"])
    for r in rows:
        writer.writerow([r.source, r.split, r.en, r.de])
    return buf.getvalue().encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    """gzip with mtime 0 and no file name in the header: same input, same bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def count_rows(rows: Iterable[Row], sources: Iterable[str] = SOURCES) -> dict[str, collections.Counter]:
    """{source: Counter(split -> n)} for each of sources, plus "all"."""
    table: dict[str, collections.Counter] = {s: collections.Counter() for s in sources}
    table["all"] = collections.Counter()
    for r in rows:
        table[r.source][r.split] += 1
        table["all"][r.split] += 1
    return table


def check_split_sizes(counts: Mapping[str, collections.Counter]) -> list[str]:
    """Problems with the split sizes (empty list = fine): valid and test need >= 1,000 pairs."""
    problems = []
    for split in ("valid", "test"):
        n = counts["all"][split]
        if n < MIN_SPLIT_PAIRS:
            problems.append(f"{split} has {n} pairs (< {MIN_SPLIT_PAIRS}); raise its buckets")
    return problems


def format_counts(counts: Mapping[str, collections.Counter]) -> str:
    """A small text table of pairs per source and split."""
    lines = [f"{'source':<13}{'train':>8}{'valid':>8}{'test':>8}{'total':>8}"]
    for name in counts:   # the sources in order, then "all" (as `count_rows` builds it)
        c = counts[name]
        lines.append(
            f"{name:<13}{c['train']:>8}{c['valid']:>8}{c['test']:>8}{sum(c.values()):>8}"
        )
    return "\n".join(lines)


EXTRA_COPYRIGHTS = (
    "Widelands: Copyright 2002-2019 the Widelands Development Team and its translators, GNU GPL v2 or later.",
    "Warzone 2100 translations (po/*.po): Copyright 2007-2008 Warzone 2100 Resurrection Project, 2008 Rosetta",
    "Contributors and Canonical Ltd (game: 1999-2004 Eidos Interactive, 2005-2013 Warzone 2100 Project),",
    "GNU GPL v2 or later.",
    "FreedroidRPG: Copyright 1994, 2002-2004 Johannes Prix and Reinhard Prix, 2009-2010 the Freedroid dev team",
    "and contributors, GNU GPL v2 or later.",
    "OpenTTD: Copyright 2004-2012 Ludvig Strigeous and others, GNU GPL version 2 only. Since this text is",
    "GPL-2.0-only, the plus corpus as a whole (and a model trained on it) is distributed under GPL-2.0: the",
    "other GPL texts allow version 2, and MPL-2.0 lists GPL-2.0 among its secondary licences.",
)


def render_attribution(
    counts: Mapping[str, collections.Counter],
    versions: Mapping[str, str],
    sources: Iterable[str] = SOURCES,
    corpus: str = "data/en-de.tsv.gz",
) -> str:
    """data/ATTRIBUTION.md: each source, its packages and versions, upstream, licence, counts.

    With the extra sources (data/ATTRIBUTION-plus.md) their copyright lines are added, and the
    note that the plus corpus holds the default one unchanged."""
    sources = tuple(sources)
    extra = [name for name in sources if name in EXTRA_SOURCES]
    out = [
        f"# Attribution and licences of {corpus}",
        "",
        "Written by `data/build_corpus.py`; do not edit by hand (rebuild instead).",
        "",
        "Every pair in the corpus is a human translation taken from a Debian package. The text keeps",
        "the licence of the work it comes from. **A model trained on this corpus (its weights, and",
        "any checkpoint or tokenizer derived from the text) is a derived work of these sources**:",
        "ship this file with it and respect each licence (GPL-2.0-or-later: offer the corresponding",
        "source, i.e. this corpus or the means to rebuild it; MPL-2.0: keep the notice, file-level",
        "copyleft for the LibreOffice text).",
        "",
    ]
    if extra:
        out += [
            "Built with `python data/build_corpus.py --extra`: every row of data/en-de.tsv.gz (same",
            f"German, source and split), plus the sentences of {', '.join(extra)} whose English",
            "is not in it.",
            "",
        ]
    out += [
        "| source | pairs | Debian package(s) | upstream | licence |",
        "|---|---:|---|---|---|",
    ]
    for name in sources:
        info = SOURCE_INFO[name]
        first = info.packages[0]
        pkgs = f"`{first}` {versions.get(first, '')}".strip()
        if name == "wesnoth":
            pkgs += f" and its campaign packages `wesnoth-1.16-{{{','.join(WESNOTH_CAMPAIGNS)}}}`"
        out.append(
            f"| {name} ({info.description}) | {sum(counts[name].values()):,} | {pkgs} "
            f"| {info.upstream} | {info.licence} |"
        )
    out += [
        f"| **all** | **{sum(counts['all'].values()):,}** | | | |",
        "",
        "Ding: Copyright (c) 1995-2023 Frank Richter, GNU GPL v2 or later.",
        "Wesnoth and Freeciv translations: copyright their translators, GNU GPL v2 or later.",
        "LibreOffice translations: copyright The Document Foundation and contributors, MPL 2.0.",
        *(EXTRA_COPYRIGHTS if extra else ()),
        "",
        "The full licence texts are in each package under `/usr/share/doc/<package>/copyright`.",
        "",
    ]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Debian side: download, extract, read (the only impure part)
# --------------------------------------------------------------------------------------------


def find_deb(cache: Path, package: str) -> Path | None:
    """The cached .deb of a package (package names never hold "_", so the glob is exact)."""
    found = sorted(cache.glob(f"{package}_*.deb"))
    return found[-1] if found else None


def download_debs(packages: Iterable[str], cache: Path) -> dict[str, Path]:
    """apt-get download every package missing from the cache; return package -> .deb path."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if find_deb(cache, p) is None]
    if missing:
        print(f"apt-get download {len(missing)} package(s) into {cache} ...", flush=True)
        proc = subprocess.run(
            ["apt-get", "download", "-q", *missing], cwd=cache, capture_output=True, text=True
        )
        if proc.returncode != 0:
            sys.exit(
                f"apt-get download failed:\n{proc.stderr.strip()}\n"
                "(on a fresh machine run 'apt-get update' once first)"
            )
    debs = {p: find_deb(cache, p) for p in packages}
    lost = [p for p, d in debs.items() if d is None]
    if lost:
        sys.exit(f"no .deb found in {cache} for: {', '.join(lost)}")
    return debs  # type: ignore[return-value]


def deb_version(deb: Path) -> str:
    return subprocess.run(
        ["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True, check=True
    ).stdout.strip()


def extract_members(deb: Path, patterns: Iterable[str], dest: Path) -> list[Path]:
    """Write the members of a .deb matching the patterns below dest; return their paths, sorted.

    `dpkg-deb --fsys-tarfile` is streamed through tarfile so only the wanted files touch the
    disk. A ".done" marker makes a re-run skip the (slow, xz) decompression."""
    marker = dest / ".done"
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                name = member.name.lstrip("./")
                if member.isfile() and any(fnmatch.fnmatch(name, p) for p in patterns):
                    target = dest / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
        if proc.wait() != 0:
            sys.exit(f"dpkg-deb --fsys-tarfile {deb} failed")
        marker.touch()
    return sorted(p for p in dest.rglob("*") if p.is_file() and p.name != ".done")


def read_source(name: str, files: list[Path]) -> list[tuple[str, str]]:
    """All filtered pairs of one source from its extracted files."""
    if name == "ding":
        pairs = []
        for path in files:
            with open(path, encoding="utf-8") as fh:
                pairs.extend(parse_ding(fh))
        return pairs
    if name == "openttd":
        tables = {path.name: read_openttd_lng(path.read_bytes()) for path in files}
        (en_version, english), (de_version, german) = tables["english.lng"], tables["german.lng"]
        if en_version != de_version:   # string ids only match within one build
            sys.exit(f"openttd: english.lng and german.lng are from different builds ({en_version:#x}, {de_version:#x})")
        return pair_openttd(english, german)
    pairs = []
    for path in files:
        pairs.extend(parse_mo_catalog(read_mo(path.read_bytes())))
    return pairs


def build(out: Path, cache: Path, attribution: Path, extra: bool = False) -> dict[str, collections.Counter]:
    started = time.monotonic()
    sources = ALL_SOURCES if extra else SOURCES
    all_packages = [p for name in sources for p in SOURCE_INFO[name].packages]
    debs = download_debs(all_packages, cache)
    versions = {p: deb_version(d) for p, d in debs.items()}
    triples: list[tuple[str, str, str]] = []
    for name in sources:
        info = SOURCE_INFO[name]
        files = []
        for pkg in info.packages:
            files += extract_members(debs[pkg], info.members, cache / "extract" / debs[pkg].stem)
        pairs = read_source(name, files)
        print(f"{name:<12} {len(files):>3} file(s) -> {len(pairs):>6} candidate pairs", flush=True)
        triples += [(name, en, de) for en, de in pairs]
    rows = make_rows(triples)
    counts = count_rows(rows, sources)
    problems = check_split_sizes(counts)
    if problems:
        sys.exit("; ".join(problems))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip_bytes(rows_to_tsv(rows)))
    corpus = "data/en-de-plus.tsv.gz" if extra else "data/en-de.tsv.gz"   # the file's name in the repo
    attribution.write_text(render_attribution(counts, versions, sources, corpus), encoding="utf-8")
    print(f"\n{len(triples)} candidates -> {len(rows)} pairs after deduplication\n")
    print(format_counts(counts))
    print(
        f"\nwrote {out} ({out.stat().st_size / 1e6:.2f} MB) and {attribution} "
        f"in {time.monotonic() - started:.0f} s"
    )
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="corpus to write (default: data/en-de.tsv.gz, with --extra data/en-de-plus.tsv.gz)")
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache" / "debs",
                        help="where .deb files are downloaded and extracted (git-ignored)")
    parser.add_argument("--attribution", type=Path, default=None,
                        help="licence file to write (default: ATTRIBUTION.md next to --out, "
                             "with --extra ATTRIBUTION-plus.md)")
    parser.add_argument("--extra", action="store_true",
                        help=f"add the sources {', '.join(EXTRA_SOURCES)} (after the default ones)")
    args = parser.parse_args(argv)
    out = args.out or REPO_ROOT / "data" / ("en-de-plus.tsv.gz" if args.extra else "en-de.tsv.gz")
    attribution = args.attribution or out.parent / ("ATTRIBUTION-plus.md" if args.extra else "ATTRIBUTION.md")
    build(out, args.cache, attribution, extra=args.extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
