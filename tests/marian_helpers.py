"""Marian (opus-mt) checkpoints for tests, built without transformers or any download.

Marian's tokenizer layout (a source and a target sentencepiece model, one vocab.json: </s> 0, <unk> 1, the pieces,
<pad> last) from tiny sentencepiece models trained here, and ``marian_checkpoint``: a converted opus-mt checkpoint
as `python -m model convert-marian` writes it (Marian's options, languages in the meta) with random weights, at a
tiny width but any number of layers and heads (the app's layout depends on those, not on the width).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import sentencepiece as spm
import torch

from model.checkpoints.files import save_checkpoint
from model.network.config import ModelConfig
from model.network.transformer import Transformer
from model.tokenization.marian import MarianTokenizer

EN = ["The house is small.", "I would like to drink a cup of tea.", "Where is the station?",
      "She has read the book that you gave her yesterday.", "We went home because it was raining.",
      "When does the train to Berlin leave?", "I get up at seven every morning.", "The children are playing."]
DE = ["Das Haus ist klein.", "Ich möchte eine Tasse Tee trinken.", "Wo ist der Bahnhof?",
      "Sie hat das Buch gelesen, das du ihr gestern gegeben hast.", "Wir gingen nach Hause, weil es regnete.",
      "Wann fährt der Zug nach Berlin?", "Ich stehe jeden Morgen um sieben auf.", "Die Kinder spielen."]


def train_spm(sentences: list[str]) -> bytes:
    """A sentencepiece model with its default ids (unk 0, bos 1, eos 2), as Marian's source.spm/target.spm are."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences * 5), model_writer=out, vocab_size=40,
                                   character_coverage=1.0, num_threads=1, minloglevel=2, hard_vocab_limit=False)
    return out.getvalue()


def marian_vocab(*protos: bytes, language_tokens: tuple[str, ...] = ()) -> dict[str, int]:
    """Marian's layout: </s> 0, <unk> 1, a multilingual model's target-language tokens (">>fra<<"), the pieces of
    both models, <pad> last."""
    pieces: list[str] = list(language_tokens)
    for proto in protos:
        sp = spm.SentencePieceProcessor()
        sp.LoadFromSerializedProto(proto)
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                   if not (sp.is_control(i) or sp.is_unknown(i)) and sp.id_to_piece(i) not in pieces]
    vocab = {"</s>": 0, "<unk>": 1, **{piece: i + 2 for i, piece in enumerate(pieces)}}
    return {**vocab, "<pad>": len(vocab)}


def marian_tokenizer_files(language_tokens: tuple[str, ...] = ()) -> dict[str, bytes]:
    """An English-German opus-mt folder's tokenizer files as MarianTokenizer.save_pretrained lays them out."""
    source, target = train_spm(EN), train_spm(DE)
    vocab = marian_vocab(source, target, language_tokens=language_tokens)
    return {"source.spm": source, "target.spm": target, "vocab.json": json.dumps(vocab).encode(),
            "tokenizer_config.json": json.dumps({"source_lang": "en", "target_lang": "de"}).encode()}


def marian_tokenizer(language_tokens: tuple[str, ...] = ()) -> MarianTokenizer:
    files = marian_tokenizer_files(language_tokens)
    return MarianTokenizer(files["source.spm"], files["target.spm"], files["vocab.json"])


def marian_checkpoint(directory: Path, n_heads: int = 16, n_layers: int = 6, d_model: int = 32,
                      languages: tuple[str, str] = ("en", "de"), seed: int = 0,
                      language_tokens: tuple[str, ...] = ()) -> Path:
    """A converted opus-mt checkpoint (swish, Marian's positions, a final logits bias, decoder starting with <pad>)
    with random weights, n_layers + n_layers layers of n_heads heads; its meta names the languages. With
    ``language_tokens`` it is multilingual: its vocabulary has them, as opus-mt-en-ROMANCE has ">>fra<<" etc."""
    tokenizer = marian_tokenizer(language_tokens)
    pad = tokenizer.pad_id
    config = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=d_model, n_heads=n_heads, n_encoder_layers=n_layers,
                         n_decoder_layers=n_layers, d_ff=2 * d_model, max_len=64, pad_id=pad, unk_id=tokenizer.unk_id,
                         bos_id=pad, eos_id=tokenizer.eos_id, activation="swish", positional_layout="halves",
                         final_logits_bias=True, decoder_start_id=pad, tokenizer="marian")
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_()
    meta = {"converted_from": f"opus-mt-{languages[0]}-{languages[1]}", "source_lang": languages[0],
            "target_lang": languages[1]}
    return save_checkpoint(model, tokenizer, directory, meta=meta)
