"""Qt .qm translation files (--more: Scribus, the Hedgewars front end), read without Qt.

A .qm file holds the English source text next to each translation, so it pairs itself; the pairs
are then cleaned by the .mo rules.
"""

from __future__ import annotations

from collections.abc import Iterable

from data.gettext_catalogues import clean_mo_pair

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
            if field not in (_QM_TRANSLATION, _QM_SOURCE, _QM_CONTEXT, _QM_COMMENT, *_QM_SKIPPED):
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
