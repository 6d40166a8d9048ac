"""BART's byte-level BPE as the slow BartTokenizer's save_pretrained wrote it (vocab.json + merges.txt, no
tokenizer.json) turned into the tokenizer.json transformers builds of those files (its RobertaConverter, and
transformers 5's BartTokenizer, an alias of RobertaTokenizer), so that a converted BART reads its text as transformers
does and the checkpoint holds a tokenizer.json like every other converted BART.

The BPE model is read from the two files as they are (no <unk>, no dropout, no prefix or suffix, unknown pieces not
fused); the text is split as GPT-2 splits it, each byte mapped to a printable character (ByteLevel, a space before
the text only when tokenizer_config.json's add_prefix_space says so), read back the same way, and a source is wrapped
as "<s> ... </s>" (RobertaProcessing, offsets trimmed) with those pieces' ids in vocab.json. <s> <pad> </s> <unk>
<mask> are special pieces, kept whole in a text (one vocab.json lacks gets the next id, as transformers gives it),
matched as tokenizer_config.json says (BART's <mask> takes the space before it: lstrip).
Only the tokenizers package is used (transformers is the tests' reference).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
from tokenizers.models import BPE

from model.tokenization.pieces import TokenizerError, json_of, settings_of

BPE_FILES = ("vocab.json", "merges.txt")
BART_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # BartTokenizer's bos/cls, pad, eos/sep, unk, mask
MATCHING = ("lstrip", "rstrip", "single_word")  # how an added piece is found in a text


def bart_settings_of(tokenizer_config: bytes | None) -> tuple[bool, dict[str, dict[str, bool]]]:
    """tokenizer_config.json's add_prefix_space (BartTokenizer's False when it names none) and how each special piece
    is matched in a text: lstrip, rstrip, single_word as its added_tokens_decoder entry or its *_token object says
    (BART's <mask> takes the space before it); the tokenizers package's defaults (all false) otherwise."""
    settings = settings_of(tokenizer_config)
    prefix = settings.get("add_prefix_space", False)
    if not isinstance(prefix, bool):
        raise TokenizerError(f"tokenizer_config.json: add_prefix_space must be true or false, got {str(prefix)[:20]}")
    decoder = settings.get("added_tokens_decoder")
    entries = [*(decoder.values() if isinstance(decoder, dict) else ()), *settings.values()]
    matching = {}
    for entry in entries:  # a *_token object overrides the decoder's entry, as transformers reads them
        if isinstance(entry, dict) and entry.get("content") in BART_SPECIALS:
            matching[entry["content"]] = {key: entry[key] for key in MATCHING if isinstance(entry.get(key), bool)}
    return prefix, matching


def bpe_tokenizer_json(vocab: bytes, merges: bytes, add_prefix_space: bool = False,
                       matching: dict[str, dict[str, bool]] | None = None) -> bytes:
    """The tokenizer.json transformers builds for BART from vocab.json's and merges.txt's bytes; TokenizerError for
    files the tokenizers package cannot read or a vocab.json without <s> and </s>; ``matching``: a special piece's
    lstrip, rstrip, single_word (bart_settings_of)."""
    pieces = json_of(vocab, BPE_FILES[0])
    if not isinstance(pieces, dict) or not all(isinstance(pieces.get(s), int) for s in ("<s>", "</s>")):
        raise TokenizerError(f"{BPE_FILES[0]}: not a map of pieces to ids holding <s> and </s>")
    with tempfile.TemporaryDirectory() as tmp:  # BPE.from_file reads the files as transformers hands them over
        paths = [os.path.join(tmp, name) for name in BPE_FILES]
        for path, data in zip(paths, (vocab, merges), strict=True):
            Path(path).write_bytes(data)
        try:
            model = BPE.from_file(*paths, dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
                                  fuse_unk=False)
        except Exception as exc:  # tokenizers raises plain Exception for files it cannot read
            raise TokenizerError(f"{BPE_FILES[0]} + {BPE_FILES[1]}: not a BPE model the tokenizers package reads "
                                 f"({str(exc)[:80]})") from None
    tk = Tokenizer(model)
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(s, normalized=False, special=True, **(matching or {}).get(s, {}))
                           for s in BART_SPECIALS])
    tk.post_processor = processors.RobertaProcessing(("</s>", pieces["</s>"]), ("<s>", pieces["<s>"]),
                                                     trim_offsets=True, add_prefix_space=add_prefix_space)
    return tk.to_str().encode()
