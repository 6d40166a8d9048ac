"""SentencePiece wrappers: text <-> pieces and ids with the specials the model uses, and word grouping.

The project's own tokenizer is one joint English+German model, because the paper shares one embedding matrix
between the encoder, the decoder and the output layer. ``MarianTokenizer`` reads the other common layout (Marian
opus-mt): a source and a target sentencepiece model whose pieces map into one shared vocabulary (vocab.json).
"""
from __future__ import annotations

import io
import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sentencepiece as spm
import tokenizers

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL_PIECES = {PAD: "<pad>", UNK: "<unk>", BOS: "<s>", EOS: "</s>"}
BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")  # a byte-fallback piece: one byte of a character the vocabulary lacks
WORD_START = "\u2581"  # sentencepiece's "▁", marks a piece that begins a word
TOKENIZER_FILE = "tokenizer.model"  # the project's tokenizer in a checkpoint
MARIAN_FILES = ("source.spm", "target.spm", "vocab.json")  # a Marian tokenizer in a checkpoint (and in a HF folder)
MARIAN_SPECIALS = {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"}  # Marian's special pieces; it has no BOS
HF_TOKENIZER_FILE = "tokenizer.json"  # a Hugging Face fast tokenizer, as save_pretrained writes it
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
# A multilingual fairseq model's language codes, each one special piece: mBART-50's "de_DE", NLLB's "deu_Latn",
# M2M100's "__de__". The target language is the piece forced first (generate()'s forced_bos_token_id).
LANGUAGE_CODE = re.compile(r"[a-z]{2}_[A-Z]{2}|[a-z]{3}_[A-Z][a-z]{3}|__[a-z]{2,3}__")
# A multilingual Marian model (e.g. opus-mt-en-ROMANCE) reads its target language from a token such as ">>fra<<" at
# the start of the source; each is one piece of its vocabulary.
LANGUAGE_TOKEN = re.compile(r">>[^<>\s]{1,20}<<")
LEADING_CODE = re.compile(r">>.+?<<")  # what Hugging Face's MarianTokenizer splits off the start of a text


class TokenizerError(ValueError):
    """A tokenizer file that cannot be used."""


def _load_sentencepiece(proto: bytes, name: str | None = None) -> spm.SentencePieceProcessor:
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


class Tokenizer:
    """A loaded sentencepiece model with ids pad 0, unk 1, bos 2, eos 3."""

    target_languages: tuple[str, ...] = ()  # one target language: nothing to force

    def __init__(self, model_proto: bytes) -> None:
        self.sp = _load_sentencepiece(model_proto)
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
        self.source = _load_sentencepiece(source_proto, MARIAN_FILES[0])
        self.target = _load_sentencepiece(target_proto, MARIAN_FILES[1])
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


class M2M100Tokenizer:
    """M2M100's tokenizer as transformers' M2M100Tokenizer applies it, for a folder without tokenizer.json: the text is
    split on the special pieces written in it (<s>, </s>, <pad>, <unk>), each stretch is cut into pieces by the
    sentencepiece model, and vocab.json maps a piece to its id (a piece it lacks is <unk>). The language codes
    ("__de__") follow vocab.json's ids in fairseq's order; a source is wrapped as "__en__ ... </s>" (the source
    language tokenizer_config.json names, else English). ``bos_id`` is the decoder's start, the config's (</s>)."""

    language_tokens: tuple[str, ...] = ()  # the target language is forced first, not written in the source

    def __init__(self, spm_proto: bytes, vocab_json: bytes, tokenizer_config: bytes, *, bos_id: int) -> None:
        self.sp = _load_sentencepiece(spm_proto, M2M100_FILES[0])
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
        try:
            self.tk = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        except Exception as exc:  # UnicodeDecodeError, or the bare Exception the Rust side raises on a bad file
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
            raise TokenizerError(f"{HF_TOKENIZER_FILE}: not a tokenizers file ({reason})") from None
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
        return self.tk.encode(text, add_special_tokens=False).ids

    def encode_source(self, text: str, max_len: int | None = None) -> list[int]:
        return self.source_ids(self.encode(text), max_len)

    def source_ids(self, ids: list[int], max_len: int | None = None) -> list[int]:
        """The pieces wrapped as the tokenizer wraps a source, cut to ``max_len`` positions (wrapping included)."""
        keep = len(ids) if max_len is None else max(max_len - len(self.prefix) - len(self.suffix), 0)
        return [*self.prefix, *ids[:keep], *self.suffix]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids, the specials left out (as generate()'s output is decoded with skip_special_tokens)."""
        return self.tk.decode([int(i) for i in ids if int(i) not in self.special_ids],
                              skip_special_tokens=True).strip()

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_piece(i) for i in ids]

    def id_to_piece(self, i: int) -> str:
        i = int(i)
        piece = self.tk.id_to_token(i)
        if piece is None:
            return f"<{i}>"  # an id past the tokenizer's vocabulary (an embedding row it never emits)
        if not self.byte_level or i in self.special_ids:
            return piece
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

# A checkpoint's tokenizer (ModelConfig.tokenizer says which)
TextTokenizer = Tokenizer | MarianTokenizer | HFTokenizer | M2M100Tokenizer


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


def train_tokenizer(sentences: Iterable[str], vocab_size: int, model_type: str = "bpe",
                    **options) -> Tokenizer:
    """Train a sentencepiece model on in-memory sentences with the project's special ids."""
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=proto, vocab_size=vocab_size, model_type=model_type,
        character_coverage=1.0, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
        pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>",
        num_threads=1, minloglevel=2, **options)
    return Tokenizer(proto.getvalue())
