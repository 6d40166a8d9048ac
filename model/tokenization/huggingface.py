"""A Hugging Face tokenizer.json, read by the ``tokenizers`` package as the family's fast tokenizer applies it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import tokenizers

from model.tokenization.bounded import unsafe_parts
from model.tokenization.pieces import LANGUAGE_CODE, WORD_START, TokenizerError

HF_TOKENIZER_FILE = "tokenizer.json"  # a Hugging Face fast tokenizer, as save_pretrained writes it


def is_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic inside the tokenizers package: pyo3_runtime.PanicException, a BaseException
    (so ``except Exception`` lets it through) that no module exports to name in an ``except`` clause."""
    return type(exc).__name__ == "PanicException" and type(exc).__module__ == "pyo3_runtime"


@contextmanager
def library_errors(doing: str) -> Iterator[None]:
    """Any error the tokenizers package raises inside the block, a Rust panic included, as a one-line TokenizerError
    naming the file and what failed (``doing``); KeyboardInterrupt, SystemExit and the like pass through."""
    try:
        yield
    except TokenizerError:
        raise
    except BaseException as exc:
        if not (isinstance(exc, Exception) or is_panic(exc)):
            raise
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
        raise TokenizerError(f"{HF_TOKENIZER_FILE}: {doing} ({reason})") from None


class HFTokenizer:
    """A Hugging Face tokenizer.json read by the ``tokenizers`` package, as the family's fast tokenizer applies it:
    BART's byte-level BPE, mBART's and NLLB's sentencepiece pieces with language codes. The file's own post-processor
    says what wraps a source ("<s> ... </s>" for BART, "en_XX ... </s>" for mBART-50); it is read once, off a probe.

    The special ids come from the model's config (the decoder start may be </s>, as in BART), not the file. Byte-level
    pieces are shown as the text they spell, a leading space as "▁", like sentencepiece's pieces ("ĠGrÃ¼ÃŁe" is shown
    "▁Grüße"); a piece that is part of a character shows its bytes as <0xNN>.
    """

    def __init__(self, tokenizer_json: bytes, *, pad_id: int, bos_id: int, eos_id: int, unk_id: int | None = None
                 ) -> None:
        # Parsed from the bytes themselves: decoded first, a file of byte-level pieces (Ġ, Ã...) took twice its size
        # again as a str, and reading it peaked at 7.3 times the file's size, 4.4 now (a 53 MB file, 2026-11-28;
        # tests/model/test_tokenizer_memory.py)
        with library_errors("not a tokenizers file"):  # invalid UTF-8 or JSON: the Rust side's bare Exception
            self.tk = tokenizers.Tokenizer.from_buffer(tokenizer_json)
        model_type = type(self.tk.model).__name__
        longest = max(map(len, self.tk.get_vocab(with_added_tokens=False)), default=0) if model_type == "Unigram" else 0
        refused = unsafe_parts(model_type, {
            name: None if part is None else part.__getstate__().decode("utf-8")
            for name, part in (("normalizer", self.tk.normalizer), ("pre_tokenizer", self.tk.pre_tokenizer),
                               ("decoder", self.tk.decoder))}, longest)
        if refused:
            raise TokenizerError(f"{HF_TOKENIZER_FILE}: {refused}")
        if unk_id is None:  # a converter's: the file's own <unk> piece (the config names none)
            unk_id = self.tk.token_to_id("<unk>")
            if unk_id is None:
                raise TokenizerError(f"{HF_TOKENIZER_FILE} has no <unk> piece")
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = pad_id, unk_id, bos_id, eos_id
        self.tokenizer_json = tokenizer_json
        self.byte_level = isinstance(self.tk.decoder, tokenizers.decoders.ByteLevel)
        added = self.tk.get_added_tokens_decoder()  # id -> AddedToken
        self.special_ids = frozenset(i for i, token in added.items() if token.special) | {pad_id, bos_id, eos_id}
        self.prefix, self.suffix = self._wrapping()
        # The languages a multilingual model translates into (forced first), sorted; () for other models.
        self.target_languages = tuple(sorted(token.content for token in added.values()
                                             if token.special and LANGUAGE_CODE.fullmatch(token.content)))

    language_tokens: tuple[str, ...] = ()  # no target-language token in the source text (Marian's way)

    def _wrapping(self) -> tuple[list[int], list[int]]:
        """The ids the file's post-processor puts before and after a source's pieces."""
        with library_errors("cannot encode a probe"):
            plain = self.tk.encode("a", add_special_tokens=False).ids
            wrapped = self.tk.encode("a", add_special_tokens=True).ids
        for i in range(len(wrapped) - len(plain) + 1):
            if wrapped[i:i + len(plain)] == plain:
                return wrapped[:i], wrapped[i + len(plain):]
        raise TokenizerError(f"{HF_TOKENIZER_FILE}: its post-processor changes the pieces it wraps")

    @property
    def vocab_size(self) -> int:
        return self.tk.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Ids of the text's pieces, without the specials that wrap a source."""
        with library_errors("cannot encode the text"):
            return self.tk.encode(text, add_special_tokens=False).ids

    def encode_source(self, text: str, max_len: int | None = None) -> list[int]:
        return self.source_ids(self.encode(text), max_len)

    def source_ids(self, ids: list[int], max_len: int | None = None) -> list[int]:
        """The pieces wrapped as the tokenizer wraps a source, cut to ``max_len`` positions (wrapping included)."""
        keep = len(ids) if max_len is None else max(max_len - len(self.prefix) - len(self.suffix), 0)
        return [*self.prefix, *ids[:keep], *self.suffix]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids, the specials left out (as generate()'s output is decoded with skip_special_tokens)."""
        kept = [int(i) for i in ids if int(i) not in self.special_ids]
        with library_errors("cannot decode the pieces"):
            return self.tk.decode(kept, skip_special_tokens=True).strip()

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_piece(i) for i in ids]

    def id_to_piece(self, i: int) -> str:
        i = int(i)
        piece = self.tk.id_to_token(i)
        if piece is None:
            return f"<{i}>"  # an id past the tokenizer's vocabulary (an embedding row it never emits)
        if not self.byte_level or i in self.special_ids:
            return piece
        with library_errors("cannot decode a piece"):
            text = self.tk.decode([i], skip_special_tokens=False)
        if "\ufffd" in text:  # part of a character: its bytes
            raw = bytes(BYTE_LEVEL_DECODE.get(ch, 63) for ch in piece)
            return "".join(f"<0x{b:02X}>" for b in raw)
        return WORD_START + text[1:] if text.startswith(" ") else text

    def piece_id(self, piece: str) -> int | None:
        """The id of a piece (a language code, say), None if the vocabulary lacks it."""
        return self.tk.token_to_id(piece)

    def files(self) -> dict[str, bytes]:
        return {HF_TOKENIZER_FILE: self.tokenizer_json}


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet, character -> byte: printable bytes stand for themselves, the others are moved to
    256 + n (so "Ġ" is the space, byte 32). Only to show a piece that is part of a character as its bytes."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + n): b for n, b in enumerate(shifted)}}


BYTE_LEVEL_DECODE = _byte_level_alphabet()
