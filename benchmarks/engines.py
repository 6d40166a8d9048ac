"""Other engines with a model of the same size as ours, for side-by-side speed (benchmark-only dependencies:
requirements-bench.txt). Random weights: speed does not depend on them.

Hugging Face Marian is the same architecture as the paper (post-norm, sinusoidal positions, shared
embeddings x sqrt(d_model)); CTranslate2 converts it. Marian keeps <pad> as the last vocabulary entry and
CTranslate2 drops it, so the HF model has one extra row and both end up with our 8,000 pieces.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from model.tokenization.joint import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "pretrained" / "en-de" / "tokenizer.model"


def marian_folder(directory: Path, d_model: int, heads: int, layers: int, d_ff: int) -> Path:
    """A random Hugging Face Marian model of our size, saved with a vocabulary of our pieces."""
    from transformers import MarianConfig, MarianMTModel

    tokenizer = Tokenizer.load(TOKENIZER)
    pad = tokenizer.vocab_size  # Marian's <pad> is last; ours (id 0) is renamed so the names stay unique
    config = MarianConfig(vocab_size=pad + 1, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                          encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=d_ff,
                          decoder_ffn_dim=d_ff, activation_function="relu", max_position_embeddings=256,
                          scale_embedding=True, pad_token_id=pad, eos_token_id=tokenizer.eos_id,
                          decoder_start_token_id=pad, share_encoder_decoder_embeddings=True)
    torch.manual_seed(0)
    folder = directory / "marian"
    MarianMTModel(config).eval().save_pretrained(folder)
    vocab = {tokenizer.id_to_piece(i) if i else "<unused>": i for i in range(tokenizer.vocab_size)} | {"<pad>": pad}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    for name in ("source.spm", "target.spm"):
        (folder / name).write_bytes(TOKENIZER.read_bytes())
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "en", "target_lang": "de"}))
    return folder


def installed() -> bool:
    """Whether the other engines (requirements-bench.txt) are there to compare with."""
    return importlib.util.find_spec("ctranslate2") is not None and importlib.util.find_spec("transformers") is not None


@functools.cache
def converted(d_model: int, heads: int, layers: int, d_ff: int) -> tuple[Path, Path]:
    """A random Marian of our size (its folder) and its CTranslate2 conversion, made once per run."""
    import ctranslate2

    directory = Path(tempfile.mkdtemp(prefix="engines-"))
    folder = marian_folder(directory, d_model, heads, layers, d_ff)
    ctranslate2.converters.TransformersConverter(str(folder)).convert(str(directory / "ct2"), force=True)
    return folder, directory / "ct2"


def pieces_of(src_ids: list[int]) -> list[str]:
    tokenizer = Tokenizer.load(TOKENIZER)
    return [tokenizer.id_to_piece(i) for i in src_ids]


def ct2_batch(sources: list[list[int]], n_tokens: int, threads: int, d_model: int, heads: int, layers: int,
              d_ff: int) -> Callable[[], object] | None:
    """A call that has CTranslate2 float32 decode every source greedily as one batch (``translate_batch``), exactly
    n_tokens each; None when it is not installed."""
    if not installed():
        return None
    import ctranslate2

    translator = ctranslate2.Translator(str(converted(d_model, heads, layers, d_ff)[1]), device="cpu",
                                        compute_type="float32", inter_threads=1, intra_threads=threads)
    batch = [pieces_of(ids) for ids in sources]
    return lambda: translator.translate_batch(batch, beam_size=1, max_batch_size=len(batch),
                                              max_decoding_length=n_tokens, min_decoding_length=n_tokens)


def engine_cases(src_ids: list[int], n_tokens: int, threads: int, d_model: int, heads: int, layers: int, d_ff: int
                 ) -> dict[str, Callable[[], object]]:
    """name -> a call that decodes n_tokens for the source, for each engine that is installed ({} if none)."""
    if not installed():
        return {}
    import ctranslate2
    from transformers import MarianMTModel

    folder, ct2_folder = converted(d_model, heads, layers, d_ff)
    pieces = pieces_of(src_ids)
    translators = {kind: ctranslate2.Translator(str(ct2_folder), device="cpu", compute_type=kind,
                                                inter_threads=1, intra_threads=threads) for kind in ("float32", "int8")}
    hf = MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    src = torch.tensor([src_ids])

    def ct2(kind: str, beam: int) -> Callable[[], object]:
        return lambda: translators[kind].translate_batch([pieces], beam_size=beam, max_decoding_length=n_tokens,
                                                          min_decoding_length=n_tokens)

    @torch.inference_mode()
    def hf_generate(beam: int) -> object:
        return hf.generate(src, num_beams=beam, do_sample=False, max_new_tokens=n_tokens, min_new_tokens=n_tokens,
                           output_attentions=True, return_dict_in_generate=True)

    return {"CTranslate2 float32, greedy": ct2("float32", 1), "CTranslate2 float32, beam 4": ct2("float32", 4),
            "CTranslate2 int8, greedy": ct2("int8", 1), "CTranslate2 int8, beam 4": ct2("int8", 4),
            "HF Marian + attentions, greedy": lambda: hf_generate(1),
            "HF Marian + attentions, beam 4": lambda: hf_generate(4)}
