"""Convert a Hugging Face BART, mBART, M2M100 or NLLB folder (facebook/bart-*, mbart-large-*, m2m100_*,
nllb-200-*) into a checkpoint of this project: fairseq's encoder-decoders, which name their tensors alike.

BART is the paper's encoder-decoder with four differences, each a named ModelConfig option: learned positions, one
table per stack read from row position + 2 (positional_layout "learned", position_offset 2), a LayerNorm on each
stack's embedding sum (layernorm_embedding), GELU, and no sqrt(d_model) scale on the embedding (BART's
scale_embedding is false; mBART's true). mBART adds pre-norm layers with a final LayerNorm per stack (norm_first).
M2M100 and NLLB (model_type m2m_100) are pre-norm too, with ReLU, no embedding LayerNorm, and fixed sinusoids in
fairseq's layout (positional_layout "fairseq": sines then cosines, frequencies 10000^(-i/(d/2-1))), position p read
from row p + pad id + 1.
Decoding follows the config as generate() does: the decoder starts with decoder_start_token_id (</s> for BART, so
bos_id = eos_id here), the first piece is forced_bos_token_id when set (BART-large's <s>, mBART-50's target
language) and the last one at the length limit forced_eos_token_id. The tokenizer is the folder's tokenizer.json
(byte-level BPE for BART, sentencepiece pieces with language codes for mBART), read by the tokenizers package, or, in
an M2M100 folder without one (facebook/m2m100_* as save_pretrained writes it), its sentencepiece.bpe.model and
vocab.json (model.tokenization.m2m100.M2M100Tokenizer), or, in a BART folder without one (as the slow BartTokenizer's
save_pretrained wrote it), the tokenizer.json transformers builds of its vocab.json and merges.txt
(model.huggingface.bpe_files).
The converted model computes what BartForConditionalGeneration / MBartForConditionalGeneration compute
(tests/model/test_bart.py: logits and every attention weight to 1e-5, greedy and beam equal to generate()).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.checkpoints.files import MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES
from model.checkpoints.header import CheckpointError
from model.huggingface import folder as hf_folder
from model.huggingface.bpe_files import BPE_FILES, bart_settings_of, bpe_tokenizer_json
from model.huggingface.folder import ACTIVATIONS, HF_CONFIG, Stage, read_bytes, report
from model.network.config import ModelConfig
from model.network.transformer import SIDES, Transformer
from model.tokenization.huggingface import HF_TOKENIZER_FILE, HFTokenizer
from model.tokenization.m2m100 import M2M100_FILES, M2M100Tokenizer
from model.tokenization.pieces import TokenizerError

POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding's offset: rows 0 and 1 of each table are never read
# Hugging Face's BartConfig / MBartConfig defaults (the same keys and values): an absent key means this value.
HF_DEFAULTS: dict[str, Any] = {
    "vocab_size": 50265, "max_position_embeddings": 1024, "encoder_layers": 12, "encoder_ffn_dim": 4096,
    "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "activation_function": "gelu", "d_model": 1024, "dropout": 0.1, "scale_embedding": False, "pad_token_id": 1,
    "eos_token_id": 2, "decoder_start_token_id": None, "forced_eos_token_id": 2, "forced_bos_token_id": None,
    "tie_word_embeddings": True,
}


@dataclass(frozen=True)
class Family:
    """What a model_type fixes that its config.json does not say: the Hugging Face class, pre- or post-norm, the
    position table, a LayerNorm on the embeddings, and the defaults its config class has where BART's differ."""

    architecture: str
    norm_first: bool
    positions: str  # a ModelConfig.positional_layout
    layernorm_embedding: bool
    defaults: tuple[tuple[str, Any], ...] = ()


FAMILIES = {
    "bart": Family("BartForConditionalGeneration", norm_first=False, positions="learned", layernorm_embedding=True),
    "mbart": Family("MBartForConditionalGeneration", norm_first=True, positions="learned", layernorm_embedding=True),
    "m2m_100": Family("M2M100ForConditionalGeneration", norm_first=True, positions="fairseq",
                      layernorm_embedding=False,
                      defaults=(("vocab_size", 128112), ("activation_function", "relu"), ("scale_embedding", True),
                                ("decoder_start_token_id", 2), ("forced_eos_token_id", None))),
}


def _family(hf: dict[str, Any]) -> Family:
    if hf.get("model_type") not in FAMILIES:
        raise CheckpointError(f"{HF_CONFIG}: model_type is {str(hf.get('model_type'))[:40]!r}, not one of "
                              f"{', '.join(FAMILIES)}")
    return FAMILIES[hf["model_type"]]


def _get(hf: dict[str, Any]) -> Callable[[str], Any]:
    """config.json's keys read with the family's defaults (an absent key means what Hugging Face assumes)."""
    return hf_folder.hf_get(hf, {**HF_DEFAULTS, **dict(_family(hf).defaults)})


def _refuse_unsupported(hf: dict[str, Any]) -> None:
    """A model of the family whose options this project's Transformer has (read with HF's defaults)."""
    get = _get(hf)
    if get("tie_word_embeddings") is False:
        raise CheckpointError(f"{HF_CONFIG}: unsupported, an output layer separate from the embedding "
                              "(tie_word_embeddings: false)")
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if get(a) != get(b):
            raise CheckpointError(f"{HF_CONFIG}: unsupported, {a} and {b} differ (one value serves both here)")
    if get("activation_function") not in ACTIVATIONS:
        raise CheckpointError(f"{HF_CONFIG}: unsupported activation_function {str(get('activation_function'))[:40]!r} "
                              "(relu, swish/silu or gelu)")
    if get("decoder_start_token_id") is None:
        raise CheckpointError(f"{HF_CONFIG}: decoder_start_token_id is not set (an mBART-cc25 model starts the decoder "
                              "with its target language's code: set decoder_start_token_id to it)")
    forced = get("forced_eos_token_id")
    if forced is not None and forced != get("eos_token_id"):
        raise CheckpointError(f"{hf_folder.key_file(hf, 'forced_eos_token_id')}: unsupported, forced_eos_token_id "
                              f"{hf_folder.shown_value(forced)} is not the eos_token_id "
                              f"{hf_folder.shown_value(get('eos_token_id'))} of {HF_CONFIG}")


def bart_config(hf: dict[str, Any], unk_id: int, final_logits_bias: bool, tokenizer: str = "hf") -> ModelConfig:
    """The ModelConfig of a BART, mBART or M2M100 config.json; unk_id comes from the tokenizer (``tokenizer``: its
    kind, "hf" for tokenizer.json, "m2m100" for M2M100's sentencepiece model and vocab.json)."""
    _refuse_unsupported(hf)
    get, family = _get(hf), _family(hf)
    start, pad = get("decoder_start_token_id"), get("pad_token_id")
    # fairseq's sinusoids: position p reads row p + pad + 1 (HF's create_position_ids_from_input_ids); BART's tables 2
    offset = pad + 1 if family.positions == "fairseq" else POSITION_OFFSET
    try:
        return ModelConfig(
            vocab_size=get("vocab_size"), d_model=get("d_model"), n_heads=get("encoder_attention_heads"),
            n_encoder_layers=get("encoder_layers"), n_decoder_layers=get("decoder_layers"),
            d_ff=get("encoder_ffn_dim"), dropout=get("dropout"), max_len=get("max_position_embeddings"),
            pad_id=pad, unk_id=unk_id, bos_id=start, eos_id=get("eos_token_id"), norm_first=family.norm_first,
            activation=ACTIVATIONS[get("activation_function")], positional_layout=family.positions,
            position_offset=offset, final_logits_bias=final_logits_bias, decoder_start_id=start, tokenizer=tokenizer,
            scale_embedding=get("scale_embedding") is True, layernorm_embedding=family.layernorm_embedding)
    except ValueError as exc:
        raise CheckpointError(f"{HF_CONFIG}: {exc}") from None


def hf_names(config: ModelConfig) -> dict[str, str]:
    """Our state-dict name -> Hugging Face's, for every tensor of Transformer(config) of a BART, mBART or M2M100
    model (M2M100's sinusoids are computed, not stored)."""
    names = hf_folder.layer_names(config)
    for side in SIDES:
        if config.positional_layout == "learned":
            names[f"embed.learned.{side}.weight"] = f"model.{side}.embed_positions.weight"
        for part in ("weight", "bias"):
            if config.layernorm_embedding:
                names[f"embed.norms.{side}.{part}"] = f"model.{side}.layernorm_embedding.{part}"
            if config.norm_first:  # the final LayerNorm of each pre-norm stack
                names[f"{side}.final_norm.{part}"] = f"model.{side}.layer_norm.{part}"
    return names


def _has_bpe_files(folder: Path, hf: dict[str, Any]) -> bool:
    """Whether a BART folder holds the slow BartTokenizer's vocab.json and merges.txt and no tokenizer.json."""
    return (hf.get("model_type") == "bart" and not (folder / HF_TOKENIZER_FILE).is_file()
            and all((folder / name).is_file() for name in BPE_FILES))


def _read_tokenizer(folder: Path, hf: dict[str, Any]) -> tuple[HFTokenizer | M2M100Tokenizer, str]:
    """The folder's tokenizer.json, or, for an M2M100 folder as save_pretrained writes facebook/m2m100_* (no
    tokenizer.json), its sentencepiece model and vocab.json, or, for a BART folder as the slow BartTokenizer's
    save_pretrained wrote it, the tokenizer.json transformers builds of its vocab.json and merges.txt (with
    tokenizer_config.json's add_prefix_space and special pieces' matching); config.json's special ids either way.
    -> (the tokenizer, the file whose pieces it numbers, for messages)."""
    get = _get(hf)
    ids = (get("pad_token_id"), get("decoder_start_token_id"), get("eos_token_id"))
    if hf.get("model_type") == "m2m_100" and hf_folder.has_m2m100_tokenizer(folder):
        return hf_folder.read_m2m100_tokenizer(folder, *ids), M2M100_FILES[1]
    if _has_bpe_files(folder, hf):
        settings = folder / hf_folder.HF_TOKENIZER_CONFIG
        try:
            prefix, matching = bart_settings_of(read_bytes(settings, MAX_CONFIG_BYTES) if settings.is_file() else None)
            vocab, merges = (read_bytes(folder / name, MAX_TOKENIZER_BYTES) for name in BPE_FILES)
            data = bpe_tokenizer_json(vocab, merges, add_prefix_space=prefix, matching=matching)
            return HFTokenizer(data, pad_id=ids[0], bos_id=ids[1], eos_id=ids[2]), BPE_FILES[0]
        except TokenizerError as exc:
            raise CheckpointError(str(exc)) from None
    return hf_folder.read_tokenizer_json(folder, *ids), HF_TOKENIZER_FILE


def convert_bart(folder: str | Path, out: str | Path,
                 progress: hf_folder.Progress | None = None) -> hf_folder.Conversion:
    """Read a Hugging Face BART, mBART or M2M100/NLLB folder and write this project's checkpoint to ``out`` (a new or
    empty directory), telling ``progress`` each stage as it starts."""
    report(progress, Stage.READ_CONFIG)
    folder, out, hf_config = hf_folder.open_folder(folder, out)
    _refuse_unsupported(hf_config)
    report(progress, Stage.READ_TOKENIZER)
    tokenizer, tokenizer_file = _read_tokenizer(folder, hf_config)
    kind = "m2m100" if isinstance(tokenizer, M2M100Tokenizer) else "hf"
    config = bart_config(hf_config, tokenizer.unk_id, final_logits_bias=True, tokenizer=kind)
    hf_folder.check_size(config)
    # M2M100's embedding has spare rows past its language codes (128112 for 128100 pieces): never emitted
    if tokenizer.vocab_size > config.vocab_size or (kind == "hf" and tokenizer.vocab_size != config.vocab_size):
        raise CheckpointError(f"vocabulary mismatch: {tokenizer_file} has {tokenizer.vocab_size} pieces, {HF_CONFIG} "
                              f"says vocab_size {config.vocab_size}")
    report(progress, Stage.READ_WEIGHTS)
    hf_weights, file = hf_folder.read_weights(folder)
    report(progress, Stage.MAP_WEIGHTS)
    if "final_logits_bias" not in hf_weights:  # HF then adds zeros: the same as no bias
        config = bart_config(hf_config, tokenizer.unk_id, final_logits_bias=False, tokenizer=kind)
    model = Transformer(config)
    model.load_state_dict(hf_folder.rename_weights(hf_weights, hf_names(config), config, file, set(),
                                                   _family(hf_config).architecture))
    forced_bos = hf_config.get("forced_bos_token_id")
    meta = {"converted_from": hf_folder.source_name(folder), "family": hf_config["model_type"],
            "forced_eos": _get(hf_config)("forced_eos_token_id") is not None,
            "forced_bos": forced_bos if isinstance(forced_bos, int) and 0 <= forced_bos < config.vocab_size else None}
    return hf_folder.write_conversion(model, tokenizer, out, hf_config, meta, file, progress, source_lang=None,
                                      target_lang=None, family=hf_config["model_type"],
                                      target_languages=tokenizer.target_languages)
