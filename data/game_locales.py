"""Two games' own text formats (--more): Hedgewars' Lua string tables and key=value files, and Tux
Paint's stamp description files.

They are not gettext catalogues, so they are read here into raw (English, German) pairs, which the
.mo rules then clean (see source_readers.py).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Mapping

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
