"""What a tokenizer.json may hold so that encoding a visitor's text stays linear in its length: the regexes and the
models the supported families' fast tokenizers use, nothing else.

The tokenizers package runs a file's regexes (Split pre-tokenizers, Replace normalizers and decoders) in a
backtracking engine (Oniguruma) while it holds the GIL: a pattern such as ``(?:a|aa){22}!`` takes seconds per 1,000
characters of a visitor's text and freezes every session of the server, and one such as ``^(a+)+$`` hits the engine's
retry limit and panics. No time limit can be put on that call from Python, so a tokenizer.json is refused, at
conversion and at load, unless every regex in it is one Hugging Face's converters write for BART, mBART, M2M100/NLLB
or T5 (KNOWN_REGEXES) or a short alternation of plain pieces (how sentencepiece's user-defined pieces are split off),
its model is BPE or Unigram, and a Unigram vocabulary's pieces are at most MAX_UNIGRAM_PIECE_CHARS long (Unigram's
lattice holds every piece matching at every position: pieces "a" to "a" x 3000 took 3.3 s for 4,000 characters).
Measured within these bounds: 8,000 characters in at most 80 ms.
"""
from __future__ import annotations

import json
import re
from typing import Any

# Every regex the converters of the supported families write (transformers' convert_slow_tokenizer, tokenizers'
# ByteLevel): sentencepiece's collapse of repeated spaces, its strip of leading and trailing spaces, the legacy
# dummy prefix, and GPT-2's byte-level split (BART).
KNOWN_REGEXES = frozenset({
    " {2,}",
    r"\A +| +\z",
    r"\A▁",
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
})
MAX_ALTERNATION_CHARS = 4096  # an alternation of plain pieces: its cost grows with its length (2,249 chars: 14 ms)
_PLAIN = r"(?:\\[^0-9A-Za-z]|[^\\.^$*+?{}\[\]()|])+"  # a piece: ordinary characters, or escaped punctuation
PLAIN_ALTERNATION = re.compile(rf"{_PLAIN}(?:\|{_PLAIN})*")
MAX_UNIGRAM_PIECE_CHARS = 64  # sentencepiece trains pieces of at most 16 characters (max_sentencepiece_length)
MODELS = ("BPE", "Unigram")  # what BART (byte-level BPE), mBART and M2M100 (BPE), NLLB and T5 (Unigram) use
COMPONENTS = ("normalizer", "pre_tokenizer", "decoder")  # the parts of a tokenizer.json that may hold regexes


def is_known_regex(pattern: str) -> bool:
    """Whether a tokenizer.json may hold ``pattern``: one of KNOWN_REGEXES, or an alternation of plain pieces at most
    MAX_ALTERNATION_CHARS long (no repetition, group, class or anchor, so no backtracking to speak of)."""
    return pattern in KNOWN_REGEXES or (len(pattern) <= MAX_ALTERNATION_CHARS
                                        and PLAIN_ALTERNATION.fullmatch(pattern) is not None)


def regexes_of(component: Any, where: str) -> list[tuple[str, str]]:
    """Every regex in a parsed component (a normalizer, pre-tokenizer or decoder, nested Sequences included), with
    where it is: [(where, pattern)], e.g. ("pre_tokenizer's Split", "(?:a|aa){22}!")."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(component, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, list):
            stack.extend((entry, at) for entry in item)
        elif isinstance(item, dict):
            named = f"{where}'s {item['type']}" if isinstance(item.get("type"), str) else at
            pattern = item.get("pattern")
            if isinstance(pattern, dict) and "Regex" in pattern:
                found.append((named, str(pattern["Regex"])))
            stack.extend((value, named) for key, value in item.items() if key != "pattern")
    return found


def shown_regex(pattern: str) -> str:
    """A regex as a message shows it: quoted, escaped, cut to 60 characters."""
    return repr(pattern[:60]) + ("..." if len(pattern) > 60 else "")


def unsafe_parts(model_type: str, components: dict[str, str | None], longest_piece: int) -> str | None:
    """Why a tokenizer is refused, None if it may be used: ``model_type`` is its model's kind ("BPE"), ``components``
    each of COMPONENTS as the tokenizers package serializes it (JSON; None when the file has none), ``longest_piece``
    the characters of its model's longest piece (added tokens aside)."""
    if model_type not in MODELS:
        return f"its model is {model_type[:40]}, not {' or '.join(MODELS)} as the supported families' tokenizers"
    if model_type == "Unigram" and longest_piece > MAX_UNIGRAM_PIECE_CHARS:
        return (f"its Unigram model has a piece of {longest_piece:,} characters, more than the "
                f"{MAX_UNIGRAM_PIECE_CHARS} allowed (its cost grows with the longest piece on a visitor's text)")
    for name, state in components.items():
        if state is None:
            continue
        for where, pattern in regexes_of(json.loads(state), name):
            if not is_known_regex(pattern):
                return (f"its {where} regex {shown_regex(pattern)} is not one the supported families use (a regex can "
                        "take unbounded time on a visitor's text)")
    return None
