"""Write a stand-in for a downloaded opus-mt or t5-small folder, to try the app on a model of real size offline.

    python benchmarks/standin.py --out /tmp/opus-fake-en-de [--heads 8] [--pieces 8000]
    python benchmarks/standin.py --family t5 --out /tmp/t5-fake-small [--pieces 32000]
    python -m model convert /tmp/opus-fake-en-de --out pretrained/opus-mt-fake-en-de

Nothing is downloaded and nothing in it has been trained to translate: random weights at the real model's shape,
saved with save_pretrained beside sentencepiece models trained here on the corpus and the tokenizer files
transformers' save_pretrained writes. Needs transformers (requirements-dev.txt).
  marian: MarianMTModel at opus-mt-en-de's shape (d_model 512, --heads heads, 6+6 layers, d_ff 2048, swish, a final
    logits bias); a source.spm and a target.spm on the corpus's English and German side (--pieces each, default
    8000) and MarianTokenizer's files (vocab.json, tokenizer_config.json).
  t5: T5ForConditionalGeneration at t5-small's shape (d_model 512, --heads heads of 512 / heads, 6+6 layers, d_ff
    2048, ReLU, 32 relative buckets, the output layer tied, 32,128 embedding rows); one unigram model on both sides
    (--pieces, default 32,000; T5's ids <pad> 0, </s> 1, <unk> 2) read by T5Tokenizer with its 100 sentinels and
    saved as it saves itself (tokenizer.json).
The result has the files, names, shapes and special ids of a real folder, so every page and the converter see what
they would see on one. The translations are noise: the random decoder rarely ends with </s>, so outputs run to the
length limit (a stress test of the layout).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import itertools
import json
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm
import torch
from transformers import (
    MarianConfig,
    MarianMTModel,
    MarianTokenizer,
    PreTrainedModel,
    T5Config,
    T5ForConditionalGeneration,
    T5Tokenizer,
)

QK_SCALE = 3.0
T5_SMALL_ROWS = 32_128  # t5-small's embedding rows: 32,000 pieces, 100 sentinels, 28 spare
T5_SENTINELS = 100
CORPUS = Path(__file__).resolve().parent.parent / "data" / "en-de.tsv.gz"


def corpus_side(column: str, limit: int = 30_000) -> list[str]:
    """The first ``limit`` sentences of one language column of the project's corpus."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [row[column] for row in itertools.islice(csv.DictReader(f, delimiter="\t"), limit)]


def train_spm(sentences: list[str], pieces: int, **ids: int) -> bytes:
    """A unigram sentencepiece model with its default ids (unk 0, bos 1, eos 2), as Marian's source.spm/target.spm
    are, unless ``ids`` name others (T5's spiece.model)."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=out, vocab_size=pieces,
                                   character_coverage=1.0, num_threads=1, minloglevel=2, hard_vocab_limit=False,
                                   **ids)
    return out.getvalue()


def marian_vocab(*protos: bytes) -> dict[str, int]:
    """Marian's shared vocabulary: </s> 0, <unk> 1, the pieces of both models once each, <pad> last."""
    pieces: dict[str, None] = {}
    for proto in protos:
        sp = spm.SentencePieceProcessor()
        sp.LoadFromSerializedProto(proto)
        pieces.update({sp.id_to_piece(i): None for i in range(sp.get_piece_size())
                       if not (sp.is_control(i) or sp.is_unknown(i))})
    vocab = {"</s>": 0, "<unk>": 1, **{piece: i + 2 for i, piece in enumerate(pieces)}}
    return {**vocab, "<pad>": len(vocab)}


def write_tokenizer(out: Path, source: bytes, target: bytes, source_lang: str, target_lang: str) -> int:
    """source.spm, target.spm, vocab.json and tokenizer_config.json as MarianTokenizer.save_pretrained writes them;
    returns the vocabulary size."""
    with tempfile.TemporaryDirectory() as tmp:
        files = {"source.spm": source, "target.spm": target,
                 "vocab.json": json.dumps(marian_vocab(source, target), ensure_ascii=False).encode()}
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        tokenizer = MarianTokenizer(str(Path(tmp) / "source.spm"), str(Path(tmp) / "target.spm"),
                                    str(Path(tmp) / "vocab.json"), source_lang=source_lang, target_lang=target_lang)
        tokenizer.save_pretrained(str(out))
    return len(tokenizer.encoder)


def write_model(out: Path, vocab_size: int, heads: int, seed: int) -> MarianMTModel:
    """opus-mt-en-de's config.json (its keys and values, this vocabulary) and random weights, via save_pretrained."""
    config = MarianConfig(
        vocab_size=vocab_size, decoder_vocab_size=vocab_size, d_model=512, encoder_layers=6, decoder_layers=6,
        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
        max_position_embeddings=512, activation_function="swish", scale_embedding=True, pad_token_id=vocab_size - 1,
        eos_token_id=0, decoder_start_token_id=vocab_size - 1, forced_eos_token_id=0, bos_token_id=0,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True, normalize_before=False,
        static_position_embeddings=True, dropout=0.1, num_beams=4, max_length=512, architectures=["MarianMTModel"])
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_(0.0, 1.0)  # real models learn one: make it non-zero
        for name, weight in model.named_parameters():  # init std 0.02 gives scores of std ~0.2, near-uniform
            if name.endswith(("q_proj.weight", "k_proj.weight")):  # attention; x3 each: peaked maps as trained ones
                weight.mul_(QK_SCALE)
    model.save_pretrained(str(out), safe_serialization=True)
    return model


def write_marian(out: Path, pieces: int, heads: int, seed: int) -> tuple[PreTrainedModel, int]:
    """opus-mt-en-de's tokenizer files and model; returns (the model, the vocabulary size)."""
    source, target = train_spm(corpus_side("en"), pieces), train_spm(corpus_side("de"), pieces)
    vocab_size = write_tokenizer(out, source, target, "en", "de")
    return write_model(out, vocab_size, heads, seed), vocab_size


def write_t5(out: Path, pieces: int, heads: int, seed: int) -> tuple[PreTrainedModel, int]:
    """t5-small's tokenizer (T5Tokenizer's save_pretrained) and config.json (its keys and values, d_kv 512 / heads)
    with random weights (transformers' own init); returns (the model, the tokenizer's size)."""
    proto = train_spm(corpus_side("en") + corpus_side("de"), pieces, pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "spiece.model").write_bytes(proto)
        tokenizer = T5Tokenizer.from_pretrained(tmp, extra_ids=T5_SENTINELS)
        tokenizer.save_pretrained(str(out))
    config = T5Config(
        vocab_size=max(T5_SMALL_ROWS, len(tokenizer)), d_model=512, d_kv=512 // heads, d_ff=2048, num_layers=6,
        num_decoder_layers=6, num_heads=heads, relative_attention_num_buckets=32, relative_attention_max_distance=128,
        dropout_rate=0.1, layer_norm_epsilon=1e-6, feed_forward_proj="relu", tie_word_embeddings=True, pad_token_id=0,
        eos_token_id=1, decoder_start_token_id=0, n_positions=512, architectures=["T5ForConditionalGeneration"])
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(config).eval()
    model.save_pretrained(str(out), safe_serialization=True)
    return model, len(tokenizer)


FAMILIES = {"marian": (write_marian, 8000), "t5": (write_t5, 32_000)}  # family -> (writer, default --pieces)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="a new folder (named opus-mt-XX-YY-like is fine)")
    parser.add_argument("--family", choices=FAMILIES, default="marian")
    parser.add_argument("--heads", type=int, default=8, help="attention heads (8 as opus-mt-en-de and t5-small)")
    parser.add_argument("--pieces", type=int, help="pieces of each sentencepiece model (marian 8000, t5 32,000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: {args.out} is not empty", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    write, pieces = FAMILIES[args.family]
    model, vocab_size = write(args.out, args.pieces or pieces, args.heads, args.seed)
    n = sum(p.numel() for p in model.parameters())
    print(f"{args.out}: {type(model).__name__}, random weights, {n:,} parameters, vocabulary {vocab_size:,}, "
          f"{args.heads} heads; files: {', '.join(sorted(p.name for p in args.out.iterdir()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
