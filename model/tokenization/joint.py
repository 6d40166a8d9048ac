"""The project's own tokenizer: one joint English+German sentencepiece model, because the paper shares one
embedding matrix between the encoder, the decoder and the output layer.
"""
from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sentencepiece as spm

from model.tokenization.pieces import BOS, EOS, PAD, SPECIAL_PIECES, UNK, TokenizerError, load_sentencepiece

TOKENIZER_FILE = "tokenizer.model"  # the project's tokenizer in a checkpoint


class Tokenizer:
    """A loaded sentencepiece model with ids pad 0, unk 1, bos 2, eos 3."""

    target_languages: tuple[str, ...] = ()  # one target language: nothing to force

    def __init__(self, model_proto: bytes) -> None:
        self.sp = load_sentencepiece(model_proto)
        ids = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if ids != (PAD, UNK, BOS, EOS):
            raise TokenizerError(f"tokenizer special ids (pad, unk, bos, eos) are {ids}, expected (0, 1, 2, 3)")
        self.model_proto = model_proto

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        path = Path(path)
        if not path.is_file():
            raise TokenizerError(f"tokenizer model not found: {path}")
        return cls(path.read_bytes())

    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS
    language_tokens: tuple[str, ...] = ()  # one target language: nothing to choose

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Ids of the text's pieces, without BOS/EOS. Text is NFKC-normalised by sentencepiece itself."""
        return self.sp.encode(text, out_type=int)

    def encode_source(self, text: str, max_len: int | None = None) -> list[int]:
        """What the encoder reads (and what a decoder must output): the pieces followed by EOS, cut to
        ``max_len`` positions (EOS included) when given."""
        return self.source_ids(self.encode(text), max_len)

    @staticmethod
    def source_ids(ids: list[int], max_len: int | None = None) -> list[int]:
        """Encoded pieces as encoder input: cut to ``max_len`` positions with EOS, which is always last."""
        return (ids if max_len is None else ids[: max_len - 1]) + [EOS]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids, dropping BOS/EOS/PAD."""
        return self.sp.decode([int(i) for i in ids if int(i) not in (PAD, BOS, EOS)])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """Display pieces for ids, specials shown as <s>, </s>, <pad>, <unk>."""
        return [SPECIAL_PIECES.get(int(i)) or self.sp.id_to_piece(int(i)) for i in ids]

    def id_to_piece(self, i: int) -> str:
        return SPECIAL_PIECES.get(int(i)) or self.sp.id_to_piece(int(i))

    def files(self) -> dict[str, bytes]:
        """What a checkpoint stores of this tokenizer: file name -> bytes."""
        return {TOKENIZER_FILE: self.model_proto}


def train_tokenizer(sentences: Iterable[str], vocab_size: int, model_type: str = "bpe",
                    **options: Any) -> Tokenizer:
    """Train a sentencepiece model on in-memory sentences with the project's special ids."""
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=proto, vocab_size=vocab_size, model_type=model_type,
        character_coverage=1.0, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
        pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>",
        num_threads=1, minloglevel=2, **options)
    return Tokenizer(proto.getvalue())
