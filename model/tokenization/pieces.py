"""What every tokenizer here shares: the special ids and pieces, word grouping for labels, text cleaning, the
loading of a sentencepiece model and of a tokenizer's JSON files, each refused in one line (TokenizerError).
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import sentencepiece as spm

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL_PIECES = {PAD: "<pad>", UNK: "<unk>", BOS: "<s>", EOS: "</s>"}
BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")  # a byte-fallback piece: one byte of a character the vocabulary lacks
WORD_START = "\u2581"  # sentencepiece's "▁", marks a piece that begins a word
# A multilingual fairseq model's language codes, each one special piece: mBART-50's "de_DE", NLLB's "deu_Latn",
# M2M100's "__de__". The target language is the piece forced first (generate()'s forced_bos_token_id).
LANGUAGE_CODE = re.compile(r"[a-z]{2}_[A-Z]{2}|[a-z]{3}_[A-Z][a-z]{3}|__[a-z]{2,3}__")
# A multilingual Marian model (e.g. opus-mt-en-ROMANCE) reads its target language from a token such as ">>fra<<" at
# the start of the source; each is one piece of its vocabulary.
LANGUAGE_TOKEN = re.compile(r">>[^<>\s]{1,20}<<")
LEADING_CODE = re.compile(r">>.+?<<")  # what Hugging Face's MarianTokenizer splits off the start of a text


class TokenizerError(ValueError):
    """A tokenizer file that cannot be used."""


def load_sentencepiece(proto: bytes, name: str | None = None) -> spm.SentencePieceProcessor:
    """A sentencepiece processor of serialized model bytes; TokenizerError (prefixed with ``name``) if corrupt."""
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(proto)
    except Exception as exc:  # sentencepiece raises bare RuntimeError/OSError on a corrupt file
        reason = str(exc).strip()
        if "ParseFromArray" in reason:  # its message is a C++ source location
            reason = "the file cannot be parsed as one"
        raise TokenizerError(f"{name + ': ' if name else ''}not a valid sentencepiece model ({reason})") from None
    return sp


def json_of(data: bytes, name: str) -> Any:
    """A tokenizer file's JSON; a one-line TokenizerError naming the file when it is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise TokenizerError(f"{name} is not valid JSON ({type(exc).__name__})") from None


def settings_of(tokenizer_config: bytes | None) -> dict[str, Any]:
    """tokenizer_config.json's settings: {} when the folder has none or it holds no JSON object."""
    settings = json_of(tokenizer_config, "tokenizer_config.json") if tokenizer_config else {}
    return settings if isinstance(settings, dict) else {}


def word_groups(pieces: list[str]) -> list[list[int]]:
    """Indices of the pieces forming each word: a piece starting with "▁" (or a special token) opens a new word.

    ["▁The", "▁hou", "se", "</s>"] -> [[0], [1, 2], [3]]
    """
    groups: list[list[int]] = []
    for i, piece in enumerate(pieces):
        is_special = piece in SPECIAL_PIECES.values()
        prev_special = bool(groups) and pieces[groups[-1][-1]] in SPECIAL_PIECES.values()
        if not groups or piece.startswith(WORD_START) or is_special or prev_special:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def word_labels(pieces: list[str], groups: list[list[int]]) -> list[str]:
    """Readable word for each group: pieces joined with the word-start marks removed."""
    return ["".join(pieces[i] for i in g).replace(WORD_START, "") or WORD_START for g in groups]


def clean_text(text: str) -> str:
    """NFC-normalise and collapse whitespace and control characters the tokenizer would choke on."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in text)
    return " ".join(text.split())
