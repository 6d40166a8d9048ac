"""Read one source's extracted files into its filtered (en, de) pairs, picking the parser by source
name and file type.

The parsers are pure (strings or bytes in, pairs out); this module is where files are opened and
each source is routed to its parsers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from data.cleaning import looks_untranslated
from data.ding import parse_ding, parse_ding_words
from data.game_locales import pair_key_values, parse_lua_locale, parse_stamp_description, read_key_values
from data.gettext_catalogues import clean_mo_pair, parse_mo_catalog, read_mo, read_po
from data.html_prose import handbook_paragraphs, pair_help_pages, pair_paragraph_lists
from data.openttd import pair_openttd, read_openttd_lng
from data.qt_translations import parse_qm_messages, read_qm
from data.sources import MORE_SOURCES

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
            sys.exit("openttd: english.lng and german.lng are from different builds "
                     f"({en_version:#x}, {de_version:#x})")
        return pair_openttd(english, german)
    pairs = []
    for path in files:
        pairs.extend(parse_mo_catalog(read_mo(path.read_bytes())))
    return pairs
