"""Marian opus-mt's tokenizer: a source and a target sentencepiece model whose pieces map into one shared
vocabulary (vocab.json), as Hugging Face's MarianTokenizer applies them.
"""
from __future__ import annotations

from collections.abc import Iterable

from model.tokenization.pieces import (
    LANGUAGE_TOKEN,
    LEADING_CODE,
    WORD_START,
    TokenizerError,
    json_of,
    load_sentencepiece,
)

MARIAN_FILES = ("source.spm", "target.spm", "vocab.json")  # a Marian tokenizer in a checkpoint (and in a HF folder)
MARIAN_SPECIALS = {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"}  # Marian's special pieces; it has no BOS


def parse_vocab(data: bytes, name: str = "vocab.json") -> dict[str, int]:
    """A Marian vocabulary: a JSON object piece -> id whose ids are exactly 0..n-1, with </s>, <unk> and <pad>."""
    vocab = json_of(data, name)
    if not isinstance(vocab, dict) or not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
        raise TokenizerError(f"{name} must map pieces to integer ids")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise TokenizerError(f"{name}: its {len(vocab)} ids are not exactly 0..{len(vocab) - 1}, each once")
    missing = [piece for piece in MARIAN_SPECIALS.values() if piece not in vocab]
    if missing:
        raise TokenizerError(f"{name} has no {', '.join(missing)}")
    return vocab


class MarianTokenizer:
    """Marian's tokenizer, as Hugging Face's MarianTokenizer applies it (shared vocabulary only): source text is
    cut into pieces by source.spm, target ids become text through target.spm, and vocab.json maps pieces to the
    one embedding's ids (a piece it lacks is <unk>). There is no BOS: bos_id is the pad id the decoder starts with.
    Source text may begin with a target-language token such as ">>fra<<" (multilingual models), kept as one piece.
    """

    target_languages: tuple[str, ...] = ()  # chosen by a token in the source text instead (language_tokens)

    def __init__(self, source_proto: bytes, target_proto: bytes, vocab_json: bytes) -> None:
        self.source = load_sentencepiece(source_proto, MARIAN_FILES[0])
        self.target = load_sentencepiece(target_proto, MARIAN_FILES[1])
        self.vocab = parse_vocab(vocab_json, MARIAN_FILES[2])
        self.id_pieces = sorted(self.vocab, key=self.vocab.__getitem__)
        self.eos_id, self.unk_id, self.pad_id = (self.vocab[MARIAN_SPECIALS[k]] for k in ("eos", "unk", "pad"))
        self.bos_id = self.pad_id
        self._files = dict(zip(MARIAN_FILES, (source_proto, target_proto, vocab_json), strict=True))
        # The target languages a multilingual model can be asked for (">>fra<<", ...), sorted; () for one language.
        self.language_tokens = tuple(sorted(piece for piece in self.vocab if LANGUAGE_TOKEN.fullmatch(piece)))

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """Ids of the text's pieces, without EOS: a leading ">>xx<<" language token, then source.spm's pieces."""
        code = []
        if match := LEADING_CODE.match(text):
            code, text = [match.group()], text[match.end():]
        pieces = code + self.source.encode(text, out_type=str)
        return [self.vocab.get(piece, self.unk_id) for piece in pieces]

    def encode_source(self, text: str, max_len: int | None = None) -> list[int]:
        """The pieces followed by EOS, cut to ``max_len`` positions (EOS included) when given."""
        return self.source_ids(self.encode(text), max_len)

    def source_ids(self, ids: list[int], max_len: int | None = None) -> list[int]:
        return (ids if max_len is None else ids[: max_len - 1]) + [self.eos_id]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of target ids through target.spm (as Hugging Face joins them), dropping EOS and PAD (= the start)."""
        pieces = [self.id_to_piece(i) for i in ids if int(i) not in (self.pad_id, self.eos_id)]
        return self.target.decode_pieces(pieces).replace(WORD_START, " ").strip()

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_piece(i) for i in ids]

    def id_to_piece(self, i: int) -> str:
        return self.id_pieces[int(i)]

    def files(self) -> dict[str, bytes]:
        """What a checkpoint stores of this tokenizer: file name -> bytes (the folder's own files, unchanged)."""
        return dict(self._files)
