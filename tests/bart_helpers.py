"""BART-family checkpoints for tests, built without transformers or any download.

BART's tokenizer layout (byte-level BPE without a prefix space; <s> 0, <pad> 1, </s> 2, <unk> 3; "<s> ... </s>"
around a source) trained here with the tokenizers package, and ``bart_checkpoint``: a converted BART, mBART or M2M100
(NLLB) checkpoint as `python -m model convert` writes it, with random weights. ``bart_folder`` is the other side: a
Hugging Face BART folder as save_pretrained writes it (random weights under Hugging Face's names), and ``cache_model``
puts a folder into a Hugging Face cache as the hub's libraries lay it out.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from model.checkpoints.files import save_checkpoint
from model.huggingface.bart import bart_config, hf_names
from model.network.config import ModelConfig
from model.network.transformer import Transformer
from model.tokenization.huggingface import HFTokenizer
from tests.marian_helpers import DE, EN

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # BART's ids 0-3


def bart_tokenizer_json(vocab_size: int = 400, languages: tuple[str, ...] = ()) -> bytes:
    """A tokenizer.json in BART's layout, trained on the helpers' English and German sentences. With ``languages``
    (codes such as "de_DE") it is multilingual as mBART-50's: each code a special piece after the others, and a
    source wrapped as "<first code> ... </s>" (its source language)."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tk.train_from_iterator((EN + DE) * 5, trainer)
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), add_prefix_space=False)
    if languages:
        tk.add_special_tokens(list(languages))
        tk.post_processor = processors.TemplateProcessing(
            single=f"{languages[0]} $A </s>",
            special_tokens=[(languages[0], tk.token_to_id(languages[0])), ("</s>", 2)])
    return tk.to_str().encode()


def bart_tokenizer(data: bytes | None = None) -> HFTokenizer:
    """BART's special ids: the decoder starts with </s> (bos_id = eos_id = 2)."""
    return HFTokenizer(data or bart_tokenizer_json(), pad_id=1, unk_id=3, bos_id=2, eos_id=2)


# What each family's converter sets (model.huggingface.bart.FAMILIES): norm_first, positions, layernorm_embedding,
# activation.
FAMILY_OPTIONS = {"bart": (False, "learned", True, "gelu"), "mbart": (True, "learned", True, "gelu"),
                  "m2m_100": (True, "fairseq", False, "relu")}


def bart_checkpoint(directory: Path, family: str = "bart", n_heads: int = 4, n_layers: int = 2, d_model: int = 32,
                    seed: int = 0, languages: tuple[str, ...] = ()) -> Path:
    """A converted checkpoint of ``family`` (BART: learned positions with offset 2, a LayerNorm on the embeddings,
    GELU, no embedding scale; mBART: the same, pre-norm and scaled; M2M100/NLLB: pre-norm, fairseq's sinusoids, ReLU)
    with random weights, </s> as the decoder's start and <s> forced first; with ``languages``, multilingual (see
    bart_tokenizer_json) and nothing forced by its own config."""
    tokenizer = bart_tokenizer(bart_tokenizer_json(languages=languages))
    norm_first, positions, layernorm_embedding, activation = FAMILY_OPTIONS[family]
    config = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=d_model, n_heads=n_heads, n_encoder_layers=n_layers,
                         n_decoder_layers=n_layers, d_ff=2 * d_model, max_len=64, pad_id=1, unk_id=3, bos_id=2,
                         eos_id=2, norm_first=norm_first, activation=activation, positional_layout=positions,
                         position_offset=2, final_logits_bias=family != "m2m_100", tokenizer="hf",
                         scale_embedding=family != "bart", layernorm_embedding=layernorm_embedding)
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    if config.final_logits_bias:
        with torch.no_grad():
            model.final_logits_bias.normal_()
    meta = {"converted_from": f"tiny-{family}", "family": family, "forced_eos": True}
    if not languages:
        meta["forced_bos"] = 0
    return save_checkpoint(model, tokenizer, directory, meta=meta)


T5_SPECIALS = ["<pad>", "</s>", "<unk>"]  # T5's ids 0-2


def t5_tokenizer_json(vocab_size: int = 300) -> bytes:
    """A tokenizer.json in T5's layout: sentencepiece-style unigram pieces ("▁The"), <pad> 0, </s> 1, <unk> 2, and
    "... </s>" after a source."""
    tk = Tokenizer(models.Unigram())
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tk.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=T5_SPECIALS, unk_token="<unk>",
                                      show_progress=False)
    tk.train_from_iterator((EN + DE) * 5, trainer)
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return tk.to_str().encode()


def t5_tokenizer(data: bytes | None = None) -> HFTokenizer:
    """T5's special ids: the decoder starts with <pad> (bos_id = pad_id = 0), </s> 1, <unk> 2."""
    return HFTokenizer(data or t5_tokenizer_json(), pad_id=0, unk_id=2, bos_id=0, eos_id=1)


def t5_checkpoint(directory: Path, n_heads: int = 3, n_layers: int = 2, d_model: int = 32, seed: int = 0) -> Path:
    """A converted T5 v1.1 / Flan-T5 checkpoint (relative buckets, RMSNorm, no biases, no sqrt(d_k), heads of width
    16 whatever d_model, gated GELU, an output layer of its own, the decoder starting with <pad>), random weights."""
    tokenizer = t5_tokenizer()
    config = ModelConfig(vocab_size=tokenizer.vocab_size + 4, d_model=d_model, n_heads=n_heads, head_dim=16,
                         n_encoder_layers=n_layers, n_decoder_layers=n_layers, d_ff=2 * d_model, max_len=64, pad_id=0,
                         unk_id=2, bos_id=0, eos_id=1, norm_first=True, activation="gelu_tanh",
                         positional_layout="relative", tokenizer="hf", scale_embedding=False, norm="rms",
                         norm_eps=1e-6, linear_bias=False, attention_scale=False, ffn_gated=True, tie_output=False,
                         relative_buckets=8, relative_max_distance=16)
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    return save_checkpoint(model, tokenizer, directory, meta={"converted_from": "tiny-flan-t5", "family": "t5"})


def write_bart_weights(folder: Path) -> None:
    """Random weights under Hugging Face's names for the folder's config.json, without transformers."""
    hf = json.loads((folder / "config.json").read_text())
    config = bart_config(hf, 3, final_logits_bias=True)
    ours = Transformer(config).state_dict()
    save_file({theirs: ours[name].clone() for name, theirs in hf_names(config).items()},
              str(folder / "model.safetensors"))


def bart_folder(folder: Path, **config: object) -> Path:
    """A tiny Hugging Face BART folder (config.json with ``config``'s changes, tokenizer.json, random weights in
    model.safetensors), as `python -m model convert` reads it; no weights when config changes model_type."""
    data = bart_tokenizer_json()
    hf = {"model_type": "bart", "vocab_size": bart_tokenizer(data).vocab_size, "d_model": 16, "encoder_layers": 2,
          "decoder_layers": 2, "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32,
          "decoder_ffn_dim": 32, "max_position_embeddings": 40, "activation_function": "gelu", "pad_token_id": 1,
          "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2, "forced_eos_token_id": 2, **config}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(hf))
    (folder / "tokenizer.json").write_bytes(data)
    if hf["model_type"] == "bart":
        write_bart_weights(folder)
    return folder


def cache_model(cache: Path, model_id: str, source: Path, commit: str = "0123abcd") -> Path:
    """``source``'s files as the snapshot of ``model_id`` in the Hugging Face cache ``cache``
    (models--owner--name/snapshots/<commit>/ and refs/main naming it); the snapshot's path."""
    repo = cache / f"models--{model_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for file in source.iterdir():  # the cache holds links to blobs; a copy reads the same
        (snapshot / file.name).write_bytes(file.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


# ------------------------------------------------------- the reference models' settings (tests/model/test_bart*.py)
MAX_NEW = 12
EOS_SCALE = {"bart": 2.5, "mbart": -2.0, "m2m_100": -6.0}  # found by trying: outputs of 1-12 pieces


def hf_config(family: str, vocab_size: int, **overrides) -> dict:
    return {"vocab_size": vocab_size, "d_model": 16, "encoder_layers": 2, "decoder_layers": 2,
            "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
            "max_position_embeddings": 40, "activation_function": "relu" if family == "m2m_100" else "gelu",
            "scale_embedding": family != "bart",
            "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2,
            "forced_eos_token_id": 2, "dropout": 0.1, **overrides}


def hf_output(sequence: torch.Tensor, start: int, pad: int) -> tuple[int, ...]:
    """A generated sequence without its start token and the padding after </s>."""
    tokens = sequence.tolist()
    assert tokens[0] == start
    tokens = tokens[1:]
    while tokens and tokens[-1] == pad:
        tokens.pop()
    return tuple(tokens)


def generate(hf, src: torch.Tensor, beams: int, max_new: int = MAX_NEW, **options):
    return hf.generate(src[None], num_beams=beams, do_sample=False, max_new_tokens=max_new, bad_words_ids=[[1]],
                       num_return_sequences=beams, output_scores=True, return_dict_in_generate=True, **options)
