"""OpenTTD (--extra): compiled string tables (lang/english.lng, lang/german.lng), paired by string id.

OpenTTD ships no gettext catalogue: strgen compiles each language into a table of its own format,
read here byte by byte.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from data.cleaning import normalize_text
from data.sentence_pairs import has_markup, sentence_pairs

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
