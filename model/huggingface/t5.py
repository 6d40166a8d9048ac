"""Convert a Hugging Face T5 folder (t5-*, google/t5-v1_1-*, google/flan-t5-*) into a checkpoint of this project.

T5 is the paper's encoder-decoder rebuilt by Raffel et al. (2020); each change is a named ModelConfig option: no
position code is added to the embeddings, a learned bias per head and bucket of relative offsets enters every
self-attention's scores instead (positional_layout "relative", model.network.relative_position), QK^T is not divided by
sqrt(d_k) (attention_scale), RMSNorm without biases (norm "rms"), pre-norm with a final norm per stack, no bias in
any linear map (linear_bias), heads of their own width d_kv (head_dim: flan-t5-small has 6 heads of 64 in d_model
512), and no sqrt(d_model) scale on the embedding. T5 v1 uses ReLU and reads its tied output layer from hidden x
d_model^-0.5 (rescale_output); v1.1 and Flan-T5 a gated GELU (tanh form; ffn_gated, "gelu_tanh") and an output
layer of their own (tie_output false). The decoder starts with <pad>, as Marian's does. The tokenizer is the
folder's tokenizer.json (sentencepiece pieces), read by the tokenizers package, or, in a folder without one (t5-small as
older save_pretrained wrote it), the tokenizer.json transformers' T5Tokenizer builds of spiece.model
(model.huggingface.spiece). The converted model computes what
T5ForConditionalGeneration computes (tests/model/test_t5.py: logits and every attention weight to 1e-5, greedy and
beam equal to generate()).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from model.checkpoints.files import MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES
from model.checkpoints.header import CheckpointError
from model.huggingface import folder as hf_folder
from model.huggingface.folder import HF_CONFIG, Stage, hf_get, read_bytes, report
from model.huggingface.spiece import SPIECE_FILE, extra_ids_of, spiece_tokenizer_json
from model.network.config import ModelConfig
from model.network.transformer import Transformer
from model.tokenization.huggingface import HF_TOKENIZER_FILE, HFTokenizer
from model.tokenization.pieces import TokenizerError

# Hugging Face's T5Config defaults: an absent key means this value.
HF_DEFAULTS: dict[str, Any] = {
    "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6, "num_decoder_layers": None,
    "num_heads": 8, "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
    "dropout_rate": 0.1, "layer_norm_epsilon": 1e-6, "feed_forward_proj": "relu", "tie_word_embeddings": True,
    "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0, "n_positions": 512,
    "forced_eos_token_id": None, "forced_bos_token_id": None,
}
# feed_forward_proj -> (gated, ModelConfig activation), as T5Config reads it ("gated-gelu" is the tanh GELU)
FEED_FORWARD = {"relu": (False, "relu"), "gated-gelu": (True, "gelu_tanh"), "gelu": (False, "gelu"),
                "gated-silu": (True, "swish"), "gated-relu": (True, "relu")}
TIED = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
ATTENTION = {"w_q": "q", "w_k": "k", "w_v": "v", "w_o": "o"}


def t5_config(hf: dict[str, Any], unk_id: int, tied: bool = True) -> ModelConfig:
    """The ModelConfig of a T5 config.json (its options read with HF's defaults); unk_id comes from tokenizer.json,
    ``tied`` from the weights (lm_head.weight absent or equal to the embedding). Whether the decoder's output is scaled
    by d_model^-0.5 is config.json's scale_decoder_outputs (transformers 5 writes it), else its tie_word_embeddings
    (v1: true, v1.1 and Flan-T5: false), as T5Config reads them."""
    get = hf_get(hf, HF_DEFAULTS)
    if get("feed_forward_proj") not in FEED_FORWARD:
        raise CheckpointError(f"{HF_CONFIG}: unsupported feed_forward_proj {str(get('feed_forward_proj'))[:40]!r} "
                              f"({', '.join(FEED_FORWARD)})")
    forced = get("forced_eos_token_id")
    if forced is not None and forced != get("eos_token_id"):
        raise CheckpointError(f"{hf_folder.key_file(hf, 'forced_eos_token_id')}: unsupported, forced_eos_token_id "
                              f"{hf_folder.shown_value(forced)} is not the eos_token_id "
                              f"{hf_folder.shown_value(get('eos_token_id'))} of {HF_CONFIG}")
    gated, activation = FEED_FORWARD[get("feed_forward_proj")]
    rescale = hf.get("scale_decoder_outputs", get("tie_word_embeddings") is not False) is True
    start, pad = get("decoder_start_token_id"), get("pad_token_id")
    try:
        return ModelConfig(
            vocab_size=get("vocab_size"), d_model=get("d_model"), n_heads=get("num_heads"),
            n_encoder_layers=get("num_layers"), n_decoder_layers=get("num_decoder_layers") or get("num_layers"),
            d_ff=get("d_ff"), dropout=get("dropout_rate"), max_len=get("n_positions"), pad_id=pad, unk_id=unk_id,
            bos_id=start, eos_id=get("eos_token_id"), norm_first=True, activation=activation,
            positional_layout="relative", decoder_start_id=start, tokenizer="hf", scale_embedding=False,
            head_dim=get("d_kv"), norm="rms", norm_eps=float(get("layer_norm_epsilon")), linear_bias=False,
            attention_scale=False, ffn_gated=gated, tie_output=tied, rescale_output=rescale,
            relative_buckets=get("relative_attention_num_buckets"),
            relative_max_distance=get("relative_attention_max_distance"))
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"{HF_CONFIG}: {exc}") from None


def hf_names(config: ModelConfig) -> dict[str, str]:
    """Our state-dict name -> T5ForConditionalGeneration's, for every tensor of Transformer(config)."""
    names = {"embed.token.weight": TIED[0]}
    if not config.tie_output:
        names["output.weight"] = "lm_head.weight"
    ffn = {"linear1": "wi_0", "gate": "wi_1", "linear2": "wo"} if config.ffn_gated else \
        {"linear1": "wi", "linear2": "wo"}
    for stack, n_layers, attentions in (("encoder", config.n_encoder_layers, ("SelfAttention",)),
                                        ("decoder", config.n_decoder_layers, ("SelfAttention", "EncDecAttention"))):
        for i in range(n_layers):
            block = f"{stack}.block.{i}.layer"
            for j, attention in enumerate(attentions):
                ours = "self_attn" if attention == "SelfAttention" else "cross_attn"
                for w, theirs in ATTENTION.items():
                    names[f"{stack}.layers.{i}.{ours}.{w}.weight"] = f"{block}.{j}.{attention}.{theirs}.weight"
                names[f"{stack}.layers.{i}.sublayers.{j}.norm.weight"] = f"{block}.{j}.layer_norm.weight"
            j = len(attentions)
            for ours, theirs in ffn.items():
                names[f"{stack}.layers.{i}.feed_forward.{ours}.weight"] = f"{block}.{j}.DenseReluDense.{theirs}.weight"
            names[f"{stack}.layers.{i}.sublayers.{j}.norm.weight"] = f"{block}.{j}.layer_norm.weight"
        names[f"{stack}.final_norm.weight"] = f"{stack}.final_layer_norm.weight"
        names[f"{stack}.relative_bias.table.weight"] = \
            f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    return names


def read_tokenizer(folder: Path, pad_id: int, bos_id: int, eos_id: int) -> tuple[HFTokenizer, str]:
    """The folder's tokenizer.json, else the one T5Tokenizer builds of its spiece.model (with tokenizer_config.json's
    extra_ids), config.json's special ids either way; and the file it was read from."""
    if (folder / HF_TOKENIZER_FILE).is_file() or not (folder / SPIECE_FILE).is_file():
        return hf_folder.read_tokenizer_json(folder, pad_id, bos_id, eos_id), HF_TOKENIZER_FILE
    settings = folder / hf_folder.HF_TOKENIZER_CONFIG
    try:
        extra_ids = extra_ids_of(read_bytes(settings, MAX_CONFIG_BYTES) if settings.is_file() else None)
        data = spiece_tokenizer_json(read_bytes(folder / SPIECE_FILE, MAX_TOKENIZER_BYTES), extra_ids)
        return HFTokenizer(data, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id), SPIECE_FILE
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None


def convert_t5(folder: str | Path, out: str | Path,
               progress: hf_folder.Progress | None = None) -> hf_folder.Conversion:
    """Read a Hugging Face T5 folder and write this project's checkpoint to ``out`` (a new or empty directory), telling
    ``progress`` each stage as it starts."""
    report(progress, Stage.READ_CONFIG)
    folder, out, hf_config = hf_folder.open_folder(folder, out)
    if hf_config.get("model_type") != "t5":
        raise CheckpointError(f"{HF_CONFIG}: model_type is {str(hf_config.get('model_type'))[:40]!r}, not 't5'")
    get = hf_get(hf_config, HF_DEFAULTS)
    report(progress, Stage.READ_TOKENIZER)
    tokenizer, tokenizer_file = read_tokenizer(folder, get("pad_token_id"), get("decoder_start_token_id"),
                                               get("eos_token_id"))
    config = t5_config(hf_config, tokenizer.unk_id)
    hf_folder.check_size(config)
    if tokenizer.vocab_size > config.vocab_size:  # T5's embedding has spare rows (32128 for 32100 pieces)
        raise CheckpointError(f"vocabulary mismatch: {tokenizer_file} has {tokenizer.vocab_size} pieces, "
                              f"{HF_CONFIG} says vocab_size {config.vocab_size}")
    report(progress, Stage.READ_WEIGHTS)
    hf_weights, file = hf_folder.read_weights(folder)
    report(progress, Stage.MAP_WEIGHTS)
    head, shared = hf_weights.get("lm_head.weight"), hf_weights.get(TIED[0])
    untied = head is not None and (shared is None or head.shape != shared.shape or not torch.equal(head, shared))
    config = t5_config(hf_config, tokenizer.unk_id, tied=not untied)
    model = Transformer(config)
    tied = TIED if untied else (*TIED, "lm_head.weight")
    model.load_state_dict(hf_folder.rename_weights(hf_weights, hf_names(config), config, file, set(),
                                                   "T5ForConditionalGeneration", tied))
    meta = {"converted_from": hf_folder.source_name(folder), "family": "t5",
            "forced_eos": get("forced_eos_token_id") is not None}
    return hf_folder.write_conversion(model, tokenizer, out, hf_config, meta, file, progress, source_lang=None,
                                      target_lang=None, family="t5")
