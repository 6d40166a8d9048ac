"""Rebuild the English->German parallel corpus (data/en-de.tsv.gz) from Debian packages.

    python data/build_corpus.py [--out data/en-de.tsv.gz] [--cache .cache/debs]
    python data/build_corpus.py --extra    # + four more sources -> data/en-de-plus.tsv.gz
    python data/build_corpus.py --more     # + a third tier of eleven -> data/en-de-plus2.tsv.gz

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

`--more` adds a third tier on top of the plus corpus and writes data/en-de-plus2.tsv.gz with
data/ATTRIBUTION-plus2.md; the default and plus outputs stay byte for byte as they were:

    hedgewars    hedgewars-data        mission dialogue, campaign and mission briefings (Lua, .txt, .qm)
    tuxpaint     tuxpaint-data, tuxpaint-stamps-default   tool tips, stamp descriptions for children
    gbrainy      gbrainy               puzzle questions, answers and tips (.mo)
    pingus       pingus-data           level descriptions and story (.po)
    lincity      lincity-ng-data       city building messages and advice (.po)
    pioneers     pioneers-console-data Settlers of Catan messages and chat (.mo)
    kde          kstars-data, kalzium-data, kig, step, ksirk, kpat, kajongg   KDE education apps, games
    gnome        gnome-maps, gnome-software-common   GNOME help and error messages (.mo)
    scribus      scribus-data          desktop publishing tool tips (Qt .qm)
    handbook     debian-handbook       The Debian Administrator's Handbook (HTML, paired by paragraph)
    lohelp       libreoffice-help-de, -en-us   LibreOffice help pages (HTML, paired by paragraph id)

Same rule one tier up: every row of the plus corpus is kept unchanged, and only sentences whose
English is in neither earlier tier are added (their split comes from the same hash).

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
import ast
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
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

REPO_ROOT = Path(__file__).resolve().parent.parent

SOURCES = ("ding", "wesnoth", "libreoffice", "freeciv")
EXTRA_SOURCES = ("widelands", "warzone2100", "freedroidrpg", "openttd")   # with --extra only
# With --more only. Prose, dialogue and children's text first: within the tier an English sentence
# found in two sources is, at equal votes, taken from the earlier one (see `deduplicate`).
MORE_SOURCES = (
    "hedgewars", "tuxpaint", "gbrainy", "pingus", "lincity", "pioneers",
    "kde", "gnome", "scribus", "handbook", "lohelp",
)
WORDS_SOURCES = ("dingwords",)  # with --ding-words only, on top of any of the above: see parse_ding_words
PLUS_SOURCES = SOURCES + EXTRA_SOURCES
ALL_SOURCES = PLUS_SOURCES + MORE_SOURCES + WORDS_SOURCES
# Dedup tiers: an English sentence found in a tier is decided by that tier alone (see `deduplicate`).
SOURCE_TIERS = (SOURCES, EXTRA_SOURCES, MORE_SOURCES, WORDS_SOURCES)
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
    "dingwords": Source(
        "dingwords",
        ("trans-de-en",),
        ("usr/share/trans/de-en",),
        "Ding German-English dictionary, Frank Richter, TU Chemnitz (https://dict.tu-chemnitz.de/)",
        "GPL-2.0-or-later",
        "the dictionary's one- and two-word entries of common words",
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
    # ---- more sources (--more): a third tier, all ranked after the eight above
    "hedgewars": Source(
        "hedgewars",
        ("hedgewars-data",),
        tuple(
            f"usr/share/games/hedgewars/Data/Locale/{name}"
            for name in (
                "de.lua", "en.txt", "de.txt", "missions_en.txt", "missions_de.txt",
                "campaigns_en.txt", "campaigns_de.txt", "hedgewars_de.qm",
            )
        ),
        "Hedgewars 1.0, the Hedgewars Project and its German translators (https://www.hedgewars.org/)",
        "GPL-2.0-only",
        "mission dialogue, mission and campaign briefings, game messages",
    ),
    "tuxpaint": Source(
        "tuxpaint",
        ("tuxpaint-data", "tuxpaint-stamps-default"),
        ("usr/share/locale/de/LC_MESSAGES/tuxpaint.mo", "usr/share/tuxpaint/stamps/*.txt"),
        "Tux Paint 0.9.28 and Tux Paint Stamps 2022.06.04, Bill Kendrick (New Breed Software) and "
        "the Tux Paint translators (https://tuxpaint.org/)",
        "GPL-2.0-or-later",
        "drawing tool tips and stamp descriptions written for children",
    ),
    "gbrainy": Source(
        "gbrainy",
        ("gbrainy",),
        ("usr/share/locale/de/LC_MESSAGES/gbrainy.mo",),
        "gbrainy 2.4, Jordi Mas i Hernàndez and its German translators (https://wiki.gnome.org/Apps/gbrainy)",
        "GPL-2.0-or-later",
        "logic puzzles: questions, answers and tips; not the CC-BY-SA help pages",
    ),
    "pingus": Source(
        "pingus",
        ("pingus-data",),
        ("usr/share/games/pingus/data/po/de.po",),
        "Pingus 0.7, Ingo Ruhnke and others, and its German translators (https://pingus.seul.org/)",
        "GPL-2.0-or-later",
        "level descriptions and story",
    ),
    "lincity": Source(
        "lincity",
        ("lincity-ng-data",),
        ("usr/share/games/lincity-ng/locale/de.po", "usr/share/games/lincity-ng/locale/gui/de.po"),
        "LinCity-NG 2.9, I J Peters, Greg Sharp, Matthias Braun, Wolfgang Becker and others "
        "(https://github.com/lincity-ng/lincity-ng)",
        "GPL-2.0-or-later",
        "city building messages and advice; not the help pages, a free adaptation",
    ),
    "pioneers": Source(
        "pioneers",
        ("pioneers-console-data",),
        ("usr/share/locale/de/LC_MESSAGES/pioneers.mo",),
        "Pioneers 15.6, Dave Cole, Roland Clobus and the Pioneers developers and translators "
        "(https://pio.sourceforge.net/)",
        "GPL-2.0-or-later",
        "board game messages and computer player chat",
    ),
    "kde": Source(
        "kde",
        ("kstars-data", "kalzium-data", "kig", "step", "ksirk", "kpat", "kajongg"),
        ("usr/share/locale/de/LC_MESSAGES/*.mo",),
        "KStars 3.6 and KDE Gear 22.12 (Kalzium, Kig, Step, KsirK, KPatience, Kajongg), their authors "
        "and the KDE German translation team (https://kde.org/)",
        "GPL-2.0-or-later",
        "astronomy, chemistry, geometry and physics explanations, game messages",
    ),
    "gnome": Source(
        "gnome",
        ("gnome-maps", "gnome-software-common"),
        ("usr/share/locale/de/LC_MESSAGES/gnome-maps.mo", "usr/share/locale/de/LC_MESSAGES/gnome-software.mo"),
        "GNOME Maps 43 and GNOME Software 43, their authors and the GNOME German translation team "
        "(https://www.gnome.org/)",
        "GPL-2.0-or-later",
        "help and error messages",
    ),
    "scribus": Source(
        "scribus",
        ("scribus-data",),
        ("usr/share/scribus/translations/scribus.de.qm",),
        "Scribus 1.5.8, the Scribus Team and its German translators (https://www.scribus.net/)",
        "GPL-2.0-or-later",
        "desktop publishing tool tips and messages",
    ),
    "handbook": Source(
        "handbook",
        ("debian-handbook",),
        ("usr/share/doc/debian-handbook/html/en-US/*.html", "usr/share/doc/debian-handbook/html/de-DE/*.html"),
        "The Debian Administrator's Handbook (Debian 11), Raphaël Hertzog, Roland Mas and its German "
        "translators (https://debian-handbook.info/)",
        "GPL-2.0-or-later (dual GPL-2.0+ / CC-BY-SA-3.0, used under the GPL)",
        "a book: prose about running a Debian system, paired paragraph by paragraph",
    ),
    "lohelp": Source(
        "lohelp",
        ("libreoffice-help-en-us", "libreoffice-help-de"),
        ("usr/share/libreoffice/help/en-US/text/*.html", "usr/share/libreoffice/help/de/text/*.html"),
        "LibreOffice 7.4 help, The Document Foundation, German localisation (https://help.libreoffice.org/)",
        "MPL-2.0",
        "application help pages, paired by paragraph id; not the Basic programming reference",
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


# --------------------------------------------------------------------------------------------
# --more: Qt .qm translation files (Scribus, the Hedgewars front end)
# --------------------------------------------------------------------------------------------

_QM_MAGIC = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")
_QM_MESSAGES = 0x69
# Tags inside the messages block (qtbase src/corelib/kernel/qtranslator.cpp)
_QM_END, _QM_TRANSLATION, _QM_OBSOLETE1, _QM_SOURCE, _QM_CONTEXT, _QM_COMMENT = 1, 3, 5, 6, 7, 8
_QM_SKIPPED = (2, 4, 9)   # old 16-bit source text and context, obsolete: length-prefixed, unused


def read_qm(data: bytes) -> list[tuple[str, str]]:
    """(source text, first translation) of every message of a compiled Qt .qm file, in file order.

    lrelease writes a 16-byte magic, then blocks (one tag byte, a big-endian 32-bit length); the
    messages block is a run of records, each a sequence of fields ended by tag 1: a translation
    (UTF-16BE, length 0xFFFFFFFF for none; several for plural forms, the first is kept as for
    .mo files), the source text and context (UTF-8), a comment; tag 5 carries 4 bytes. The
    source text is there for the hash check, so the English comes from the same file."""
    if data[:16] != _QM_MAGIC:
        raise ValueError("not a Qt .qm file (bad magic)")
    pos, messages = 16, []
    while pos < len(data):
        tag, length = data[pos], int.from_bytes(data[pos + 1:pos + 5], "big")
        block, pos = data[pos + 5:pos + 5 + length], pos + 5 + length
        if tag != _QM_MESSAGES:
            continue
        i, source, translations = 0, None, []
        while i < len(block):
            field = block[i]
            i += 1
            if field == _QM_END:
                if source and translations:
                    messages.append((source, translations[0]))
                source, translations = None, []
                continue
            if field == _QM_OBSOLETE1:
                i += 4
                continue
            if field not in (_QM_TRANSLATION, _QM_SOURCE, _QM_CONTEXT, _QM_COMMENT) + _QM_SKIPPED:
                raise ValueError(f"unknown .qm message field {field:#x}")
            size = int.from_bytes(block[i:i + 4], "big")
            i += 4
            if size == 0xFFFFFFFF:   # a null translation
                continue
            value = block[i:i + size]
            i += size
            if field == _QM_TRANSLATION:
                translations.append(value.decode("utf-16-be"))
            elif field == _QM_SOURCE:
                source = value.decode("utf-8")
    return messages


def parse_qm_messages(messages: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Clean pairs of (source, translation) messages: the .mo rules (`clean_mo_pair`), which also
    drop Qt's %1 placeholders and & accelerators."""
    return [pair for en, de in messages for pair in clean_mo_pair(en, de)]


# --------------------------------------------------------------------------------------------
# --more: Hedgewars locale files (Lua string tables, key=value text files)
# --------------------------------------------------------------------------------------------

_LUA_ENTRY = re.compile(r'^\s*\["((?:[^"\\]|\\.)*)"\]\s*=\s*"((?:[^"\\]|\\.)*)"', re.MULTILINE)
_LUA_ESCAPE = re.compile(r"\\(.)")


def _lua_unescape(text: str) -> str:
    return _LUA_ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def parse_lua_locale(text: str) -> list[tuple[str, str]]:
    """Raw (English, German) pairs of a Hedgewars Data/Locale/<lang>.lua table.

    The missions look their text up in `locale = { ["English"] = "German", ... }`, so the
    English is the key itself; lines commented out with "--" are not entries."""
    return [(_lua_unescape(en), _lua_unescape(de)) for en, de in _LUA_ENTRY.findall(text)]


def read_key_values(text: str) -> dict[str, list[str]]:
    """key -> values of a "key=value" file (Hedgewars en.txt, missions_de.txt ...), in order.

    A value may be wrapped in double quotes (mission files); ";" and "#" start comments. A key can
    repeat (the random messages "02:00=..." are lists), hence a list per key."""
    table: dict[str, list[str]] = collections.defaultdict(list)
    for line in text.splitlines():
        if "=" not in line or line.lstrip().startswith((";", "#")):
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        table[key.strip()].append(value)
    return dict(table)


def pair_key_values(english: Mapping[str, list[str]], german: Mapping[str, list[str]]) -> list[tuple[str, str]]:
    """Raw pairs of two key=value tables by key, for keys with exactly one value on each side: a
    list of random variants ("02:00") need not have the same variants, or order, in German."""
    return [
        (english[key][0], german[key][0])
        for key in sorted(english)
        if len(english[key]) == 1 and len(german.get(key, ())) == 1
    ]


# --------------------------------------------------------------------------------------------
# --more: Tux Paint stamp descriptions (one .txt per stamp)
# --------------------------------------------------------------------------------------------


def parse_stamp_description(text: str) -> tuple[str, str] | None:
    """(English, German) of a Tux Paint stamp's description file, or None.

    The first line is the English description and each translation follows as "xx.utf8=text"
    (German: "de.utf8="); a file whose first line is itself such a line has no English."""
    lines = text.splitlines()
    if not lines or re.match(r"^[\w@]+\.utf8=", lines[0]):
        return None
    german = [line.split("=", 1)[1] for line in lines[1:] if line.startswith("de.utf8=")]
    return (lines[0], german[0]) if german else None


# --------------------------------------------------------------------------------------------
# --more: help pages and a book in HTML, paired paragraph by paragraph
# --------------------------------------------------------------------------------------------

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

    Sources come in tiers (SOURCE_TIERS): the four default sources, then the --extra ones, then
    the --more ones. An English sentence found in an earlier tier is decided by that tier alone,
    votes included, so the extra sources can only add sentences, never change or outvote a
    default row: the plus corpus is the default corpus plus new rows, and a comparison of the two
    trains on the same rows and tests on the same test set. The same holds one tier up (plus2 =
    plus + new rows). Within one tier the rules above apply unchanged.
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


MORE_COPYRIGHTS = (
    "Hedgewars: Copyright 2004-2018 Andrey Korotaev, 2006-2008 Igor Ulyanov, 2004-2015 the Hedgewars Project",
    "and its translators, GNU GPL version 2 only.",
    "Tux Paint and Tux Paint Stamps: Copyright 2002-2022 Bill Kendrick and the Tux Paint translators, GNU GPL",
    "v2 or later.",
    "gbrainy: Copyright 2007-2022 Jordi Mas i Hernàndez, 2007-2018 Siegfried-A. Gevatter and its translators,",
    "GNU GPL v2 or later (its help pages, CC BY-SA 3.0, are not used).",
    "Pingus: Copyright 1999-2007 Ingo Ruhnke and others, GNU GPL v2 or later.",
    "LinCity-NG: Copyright 1995-1997 I J Peters, 1997-2002 Greg Sharp, 2004-2008 Matthias Braun, 2005-2007",
    "Wolfgang Becker and others, GNU GPL v2 or later.",
    "Pioneers: Copyright 2000-2014 Dave Cole, Roland Clobus and the other Pioneers authors, GNU GPL v2 or later.",
    "KStars, Kalzium, Kig, Step, KsirK, KPatience, Kajongg: copyright their KDE authors (among them 2001-2021",
    "Jasem Mutlaq and Jason Harris; 2003-2008 Carsten Niehaus; 2002-2007 Dominique Devriese and Pino Toscano;",
    "2007-2009 Vladimir Kuznetsov; 2001-2010 Gaël de Chalendar; 2001-2009 Stephan Kulow; 2008-2017 Wolfgang",
    "Rohdewald) and the KDE translators, GNU GPL v2 or later (their GFDL handbooks are not used).",
    "GNOME Maps and GNOME Software: Copyright 2011-2015 Red Hat, Inc., 2013-2018 Free Software Foundation,",
    "Inc., 2007-2016 Richard Hughes and others, and the GNOME translators, GNU GPL v2 or later.",
    "Scribus: Copyright 2001-2022 the Scribus Team and its translators, GNU GPL v2 or later.",
    "The Debian Administrator's Handbook: Copyright 2003-2015 Raphaël Hertzog, 2006-2015 Roland Mas, 2013-2015",
    "Freexian SARL and its translators, GNU GPL v2 or later or CC BY-SA 3.0 at your choice: used here under",
    "the GNU GPL v2 or later.",
    "LibreOffice help: Copyright 2000, 2010 Oracle and/or its affiliates, LibreOffice contributors, The",
    "Document Foundation and its German localisation team, MPL 2.0 (like the LibreOffice interface text, its",
    "files carry the notice of the OpenOffice.org work they incorporate, licensed to the ASF under Apache-2.0).",
    "The plus2 corpus as a whole (and a model trained on it) is distributed under GPL-2.0 (GPL-2.0-only):",
    "OpenTTD and Hedgewars are GPL-2.0-only, the other GPL texts allow version 2, the Debian Handbook is used",
    "under its GPL option, and MPL-2.0 (LibreOffice interface and help) lists GPL-2.0 among its secondary",
    "licences. Not used because their licence cannot be combined with GPL-2.0-only text: Cataclysm: Dark Days",
    "Ahead and 0 A.D. (CC BY-SA 3.0), GIMP, SuperTuxKart, Naev and the SuperTux game text (GPL-3.0 or",
    "later), Simutrans (Artistic-1.0), Endgame: Singularity and Unknown Horizons (their text ships as game",
    "data under CC BY-SA 3.0), Inkscape (a GPL of no stated version), and help pages under CC BY-SA or GFDL.",
)


def render_attribution(
    counts: Mapping[str, collections.Counter],
    versions: Mapping[str, str],
    sources: Iterable[str] = SOURCES,
    corpus: str = "data/en-de.tsv.gz",
) -> str:
    """data/ATTRIBUTION.md: each source, its packages and versions, upstream, licence, counts.

    With the extra sources (data/ATTRIBUTION-plus.md) their copyright lines are added, and the
    note that the plus corpus holds the default one unchanged; with the --more sources
    (data/ATTRIBUTION-plus2.md) theirs too, every package of theirs with its version, the licence
    of the whole and the candidates left out for their licence."""
    sources = tuple(sources)
    extra = [name for name in sources if name in EXTRA_SOURCES]
    more = [name for name in sources if name in MORE_SOURCES]
    words_flag = " --ding-words" if "dingwords" in sources else ""
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
    if more:
        out += [
            f"Built with `python data/build_corpus.py --more{words_flag}`: every row of data/en-de-plus.tsv.gz (same",
            "German, source and split; it holds every row of data/en-de.tsv.gz), plus the sentences of",
            f"{', '.join(more)} whose English is in neither.",
            "",
        ]
    elif extra:
        out += [
            f"Built with `python data/build_corpus.py --extra{words_flag}`: every row of data/en-de.tsv.gz (same",
            f"German, source and split), plus the sentences of {', '.join(extra)} whose English",
            "is not in it.",
            "",
        ]
    if "dingwords" in sources:
        out += [
            f"With `--ding-words`, a last tier adds the {sum(counts['dingwords'].values()):,} one- and two-word "
            "entries of the Ding dictionary",
            f"whose every word is common (wordfreq Zipf frequency >= {WORDS_MIN_ZIPF['en']} in English, >= "
            f"{WORDS_MIN_ZIPF['de']} in German)",
            "and whose English is not in the tiers before; the rows of the tiers before are unchanged.",
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
        if name in MORE_SOURCES:   # every package by name and version
            pkgs = ", ".join(f"`{p}` {versions.get(p, '')}".strip() for p in info.packages)
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
        *(MORE_COPYRIGHTS if more else ()),
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


# Pages of the LibreOffice help left out: the Basic programming reference (macro language,
# ScriptForge API) is about code more than about using the program.
LOHELP_SKIP = ("text/sbasic/",)


def pair_page_trees(
    files: Iterable[Path], en_dir: str, de_dir: str, pair_pages, skip: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """Pair each English page (below a folder named en_dir) with the German page at the same
    relative path below de_dir, via pair_pages(en_text, de_text); pages under skip are left out."""
    english: dict[str, Path] = {}
    german: dict[str, Path] = {}
    for path in files:
        text = path.as_posix()
        for marker, table in ((f"/{en_dir}/", english), (f"/{de_dir}/", german)):
            if marker in text:
                table[text.split(marker, 1)[1]] = path
    pairs = []
    for rel in sorted(english):
        if rel in german and not rel.startswith(skip):
            en_page, de_page = (p.read_text(encoding="utf-8-sig") for p in (english[rel], german[rel]))
            pairs.extend(pair_pages(en_page, de_page))
    return pairs


def read_hedgewars(files: list[Path]) -> list[tuple[str, str]]:
    """Hedgewars: the missions' Lua table, the key=value files (game text, missions, campaigns)
    paired by key, and the Qt front end's .qm; all cleaned by the .mo rules."""
    texts = {p.name: p.read_text(encoding="utf-8-sig") for p in files if p.suffix != ".qm"}
    raw = parse_lua_locale(texts["de.lua"])
    for en_name, de_name in (
        ("en.txt", "de.txt"), ("missions_en.txt", "missions_de.txt"), ("campaigns_en.txt", "campaigns_de.txt"),
    ):
        raw += pair_key_values(read_key_values(texts[en_name]), read_key_values(texts[de_name]))
    pairs = [pair for en, de in raw for pair in clean_mo_pair(en, de)]
    for path in files:
        if path.suffix == ".qm":
            pairs += parse_qm_messages(read_qm(path.read_bytes()))
    return pairs


def read_more_source(name: str, files: list[Path]) -> list[tuple[str, str]]:
    """All filtered pairs of one --more source, without the German sentences that read as English
    (see `looks_untranslated`)."""
    if name == "hedgewars":
        pairs = read_hedgewars(files)
    elif name == "lohelp":
        pairs = pair_page_trees(files, "help/en-US", "help/de", pair_help_pages, LOHELP_SKIP)
    elif name == "handbook":
        pairs = pair_page_trees(
            files, "html/en-US", "html/de-DE",
            lambda en, de: pair_paragraph_lists(handbook_paragraphs(en), handbook_paragraphs(de)),
        )
    else:
        pairs = []
        for path in files:
            if path.suffix == ".mo":
                pairs += parse_mo_catalog(read_mo(path.read_bytes()))
            elif path.suffix == ".po":
                pairs += parse_mo_catalog(read_po(path.read_text(encoding="utf-8")))
            elif path.suffix == ".qm":
                pairs += parse_qm_messages(read_qm(path.read_bytes()))
            elif path.suffix == ".txt" and "/stamps/" in path.as_posix():
                stamp = parse_stamp_description(path.read_text(encoding="utf-8-sig"))
                pairs += clean_mo_pair(*stamp) if stamp else []
    return [(en, de) for en, de in pairs if not looks_untranslated(de)]


def read_source(name: str, files: list[Path]) -> list[tuple[str, str]]:
    """All filtered pairs of one source from its extracted files."""
    if name in MORE_SOURCES:
        return read_more_source(name, files)
    if name in ("ding", "dingwords"):
        if name == "dingwords":
            from wordfreq import zipf_frequency  # corpus building only: requirements-data.txt
        pairs = []
        for path in files:
            with open(path, encoding="utf-8") as fh:
                pairs.extend(parse_ding(fh) if name == "ding" else parse_ding_words(fh, zipf_frequency))
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


def build(
    out: Path, cache: Path, attribution: Path, extra: bool = False, more: bool = False, words: bool = False
) -> dict[str, collections.Counter]:
    started = time.monotonic()
    sources = (PLUS_SOURCES + MORE_SOURCES if more else PLUS_SOURCES if extra else SOURCES) + (WORDS_SOURCES if words else ())
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
    # the file's name in the repo
    corpus = f"data/{corpus_stem(extra, more, words)}.tsv.gz"
    attribution.write_text(render_attribution(counts, versions, sources, corpus), encoding="utf-8")
    print(f"\n{len(triples)} candidates -> {len(rows)} pairs after deduplication\n")
    print(format_counts(counts))
    print(
        f"\nwrote {out} ({out.stat().st_size / 1e6:.2f} MB) and {attribution} "
        f"in {time.monotonic() - started:.0f} s"
    )
    return counts


def corpus_stem(extra: bool, more: bool, words: bool) -> str:
    """The corpus file's name without .tsv.gz; its attribution file is ATTRIBUTION<what follows en-de>.md."""
    return "en-de" + ("-plus2" if more else "-plus" if extra else "") + ("-words" if words else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="corpus to write (default: data/en-de.tsv.gz, with --extra "
                             "data/en-de-plus.tsv.gz, with --more data/en-de-plus2.tsv.gz)")
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache" / "debs",
                        help="where .deb files are downloaded and extracted (git-ignored)")
    parser.add_argument("--attribution", type=Path, default=None,
                        help="licence file to write (default: ATTRIBUTION.md next to --out, "
                             "with --extra ATTRIBUTION-plus.md, with --more ATTRIBUTION-plus2.md)")
    parser.add_argument("--extra", action="store_true",
                        help=f"add the sources {', '.join(EXTRA_SOURCES)} (after the default ones)")
    parser.add_argument("--more", action="store_true",
                        help=f"implies --extra, and adds a third tier: {', '.join(MORE_SOURCES)} "
                             "-> data/en-de-plus2.tsv.gz")
    parser.add_argument("--ding-words", action="store_true",
                        help="adds a last tier, Ding's one- and two-word entries of common words (needs wordfreq: "
                             "requirements-data.txt) -> data/en-de[-plus|-plus2]-words.tsv.gz")
    args = parser.parse_args(argv)
    stem = corpus_stem(args.extra, args.more, args.ding_words)
    out = args.out or REPO_ROOT / "data" / f"{stem}.tsv.gz"
    attribution = args.attribution or out.parent / f"ATTRIBUTION{stem.removeprefix('en-de')}.md"
    build(out, args.cache, attribution, extra=args.extra or args.more, more=args.more, words=args.ding_words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
