"""M2M100's tokenizer for a folder without tokenizer.json: its sentencepiece model, vocab.json and the language
codes of fairseq's lists, as transformers' M2M100Tokenizer applies them.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable

from model.tokenization.marian import MARIAN_SPECIALS, parse_vocab
from model.tokenization.pieces import SPECIAL_PIECES, TokenizerError, load_sentencepiece, settings_of

# M2M100's tokenizer as save_pretrained writes it (no tokenizer.json): a sentencepiece model, vocab.json mapping its
# pieces to ids, and tokenizer_config.json naming the language-code list and the source language.
M2M100_FILES = ("sentencepiece.bpe.model", "vocab.json", "tokenizer_config.json")
# fairseq's language lists, in id order after vocab.json's ids (transformers' FAIRSEQ_LANGUAGE_CODES)
M2M100_LANGUAGES = {
    "m2m100": ("af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi "
               "hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns "
               "oc or pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh "
               "zu").split(),
    "wmt21": "en ha is ja cs ru zh de".split()}
M2M100_SPECIAL_TEXT = re.compile(r"<s>|</s>|<pad>|<unk>")  # specials the text is split on before sentencepiece


class M2M100Tokenizer:
    """M2M100's tokenizer as transformers' M2M100Tokenizer applies it, for a folder without tokenizer.json: the text is
    split on the special pieces written in it (<s>, </s>, <pad>, <unk>), each stretch is cut into pieces by the
    sentencepiece model, and vocab.json maps a piece to its id (a piece it lacks is <unk>). The language codes
    ("__de__") follow vocab.json's ids in fairseq's order; a source is wrapped as "__en__ ... </s>" (the source
    language tokenizer_config.json names, else English). ``bos_id`` is the decoder's start, the config's (</s>)."""

    language_tokens: tuple[str, ...] = ()  # the target language is forced first, not written in the source

    def __init__(self, spm_proto: bytes, vocab_json: bytes, tokenizer_config: bytes, *, bos_id: int) -> None:
        self.sp = load_sentencepiece(spm_proto, M2M100_FILES[0])
        self.vocab = parse_vocab(vocab_json, M2M100_FILES[1])
        settings = settings_of(tokenizer_config)
        listed, source = settings.get("language_codes") or "m2m100", settings.get("src_lang") or "en"
        if listed not in M2M100_LANGUAGES or source not in M2M100_LANGUAGES[listed]:
            raise TokenizerError(f"{M2M100_FILES[2]}: language_codes {str(listed)[:20]!r} and src_lang "
                                 f"{str(source)[:20]!r} are not one of M2M100's lists and a language in it")
        self.id_pieces = sorted(self.vocab, key=self.vocab.__getitem__) + [f"__{code}__" for code in
                                                                           M2M100_LANGUAGES[listed]]
        self.codes = {piece: i for i, piece in enumerate(self.id_pieces) if i >= len(self.vocab)}
        self.eos_id, self.unk_id, self.pad_id = (self.vocab[MARIAN_SPECIALS[k]] for k in ("eos", "unk", "pad"))
        self.bos_id = bos_id
        self.prefix = [self.codes[f"__{source}__"]]
        self.target_languages = tuple(sorted(self.codes))
        self.special_ids = frozenset({self.pad_id, self.eos_id, bos_id, *self.codes.values(),
                                      *(self.vocab[p] for p in SPECIAL_PIECES.values() if p in self.vocab)})
        config = {"language_codes": listed, "src_lang": source}  # what this tokenizer reads of the folder's file
        self._files = dict(zip(M2M100_FILES, (spm_proto, vocab_json, json.dumps(config).encode()), strict=True))

    @property
    def vocab_size(self) -> int:
        return len(self.id_pieces)

    def encode(self, text: str) -> list[int]:
        """Ids of the text's pieces, without the wrapping: special pieces written in the text are kept as they are."""
        ids, start = [], 0
        for match in [*M2M100_SPECIAL_TEXT.finditer(text), None]:
            end = len(text) if match is None else match.start()
            ids += [self.vocab.get(piece, self.unk_id) for piece in self.sp.encode(text[start:end], out_type=str)]
            if match is not None:
                ids.append(self.vocab.get(match.group(), self.unk_id))
                start = match.end()
        return ids

    def encode_source(self, text: str, max_len: int | None = None) -> list[int]:
        return self.source_ids(self.encode(text), max_len)

    def source_ids(self, ids: list[int], max_len: int | None = None) -> list[int]:
        """The source language's code, the pieces and </s>, cut to ``max_len`` positions (the wrapping included)."""
        keep = len(ids) if max_len is None else max(max_len - 2, 0)
        return [*self.prefix, *ids[:keep], self.eos_id]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids through the sentencepiece model, the specials and language codes left out."""
        pieces = [self.id_to_piece(i) for i in ids if int(i) not in self.special_ids and int(i) < len(self.vocab)]
        return self.sp.decode_pieces(pieces).strip()

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_piece(i) for i in ids]

    def id_to_piece(self, i: int) -> str:
        i = int(i)
        return self.id_pieces[i] if 0 <= i < len(self.id_pieces) else f"<{i}>"  # past the tokenizer: never emitted

    def piece_id(self, piece: str) -> int | None:
        """The id of a piece (a language code, say), None if the vocabulary lacks it."""
        return self.codes.get(piece, self.vocab.get(piece))

    def files(self) -> dict[str, bytes]:
        """The sentencepiece model and vocab.json as the folder has them, and the settings read from its config."""
        return dict(self._files)
