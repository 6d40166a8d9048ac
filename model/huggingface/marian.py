"""Convert a Hugging Face Marian folder (Helsinki-NLP opus-mt-*) into a checkpoint of this project.

Marian's translation models are the paper's architecture (post-norm, sinusoidal positions, one embedding shared by
encoder, decoder and output layer, scaled by sqrt(d_model)). What differs is a named ModelConfig option: swish
activation, "halves" positions, a final logits bias, the decoder starting with <pad> (bos_id = pad_id), and two
sentencepiece models with one vocabulary (tokenizer "marian"). The converted model computes what Hugging Face's
MarianMTModel computes (tests/model/test_marian.py: logits and every attention weight to 1e-5, greedy and beam).

The folder is read by model.huggingface.folder (no download, no transformers, pickles only with weights_only=True);
every refusal is a one-line CheckpointError naming the file and the reason.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from model.checkpoints.files import MAX_TOKENIZER_BYTES
from model.checkpoints.header import CheckpointError
from model.huggingface import folder as hf_folder
from model.huggingface.folder import ACTIVATIONS, HF_CONFIG, HF_TOKENIZER_CONFIG, Stage, read_json, report
from model.network.config import ModelConfig
from model.network.positional import sinusoidal_encoding
from model.network.transformer import Transformer
from model.tokenization.marian import MARIAN_FILES, MarianTokenizer
from model.tokenization.pieces import TokenizerError

# Hugging Face's MarianConfig defaults: a config.json key that is absent means this value, as when HF loads it.
HF_DEFAULTS: dict[str, Any] = {
    "vocab_size": 58101, "decoder_vocab_size": None, "max_position_embeddings": 1024, "encoder_layers": 12,
    "encoder_ffn_dim": 4096, "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096,
    "decoder_attention_heads": 16, "activation_function": "gelu", "d_model": 1024, "dropout": 0.1,
    "decoder_start_token_id": 58100, "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
    "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
    "normalize_before": False, "normalize_embedding": False, "add_final_layer_norm": False,
    "static_position_embeddings": True, "add_bias_logits": False, "forced_eos_token_id": 0,
}
# Options of older Marian/BART configs this project's Transformer does not have: (key, refused value, what it is).
UNSUPPORTED = [
    ("normalize_before", True, "pre-norm layers (normalize_before: true); only the paper's post-norm is converted"),
    ("normalize_embedding", True, "a LayerNorm on the embeddings (normalize_embedding: true)"),
    ("add_final_layer_norm", True, "a final LayerNorm (add_final_layer_norm: true)"),
    ("static_position_embeddings", False, "learned positions (static_position_embeddings: false)"),
    ("scale_embedding", False, "embeddings not scaled by sqrt(d_model) (scale_embedding: false)"),
    ("share_encoder_decoder_embeddings", False, "separate source and target embeddings"),
    ("tie_word_embeddings", False, "an output layer separate from the embedding (tie_word_embeddings: false)"),
    ("add_bias_logits", True, "a bias inside the output layer (add_bias_logits: true)"),
]
POSITIONS = ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight")  # fixed sinusoids
FOLDER_NAME = re.compile(r"opus-mt-(?:tc-big-|tc-)?([A-Za-z_]+)-([A-Za-z_]+)$")


def _refuse_unsupported(hf: dict[str, Any]) -> None:
    """Only a Marian translation model in the paper's shape (its options read with HF's defaults)."""
    model_type, architectures = hf.get("model_type"), hf.get("architectures", ["MarianMTModel"])
    if model_type != "marian":
        raise CheckpointError(f"{HF_CONFIG}: model_type is {str(model_type)[:40]!r}, not 'marian' (only Marian "
                              "translation models, e.g. Helsinki-NLP/opus-mt-*, are converted)")
    if not isinstance(architectures, list) or "MarianMTModel" not in architectures:  # absent: model_type decides
        raise CheckpointError(f"{HF_CONFIG}: architectures is {str(architectures)[:60]}, not MarianMTModel")
    for key, refused, what in UNSUPPORTED:
        if hf.get(key, HF_DEFAULTS[key]) == refused:
            raise CheckpointError(f"{HF_CONFIG}: unsupported, {what}")
    pairs = (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim"))
    for a, b in pairs:
        if hf.get(a, HF_DEFAULTS[a]) != hf.get(b, HF_DEFAULTS[b]):
            raise CheckpointError(f"{HF_CONFIG}: unsupported, {a} and {b} differ (one value serves both here)")
    if hf.get("decoder_vocab_size") not in (None, hf.get("vocab_size", HF_DEFAULTS["vocab_size"])):
        raise CheckpointError(f"{HF_CONFIG}: unsupported, decoder_vocab_size differs from vocab_size")
    forced, eos = hf.get("forced_eos_token_id", HF_DEFAULTS["forced_eos_token_id"]), hf.get("eos_token_id", 0)
    eos = eos[0] if isinstance(eos, list) and len(eos) == 1 else eos  # as marian_config reads it
    if forced is not None and forced != eos:
        raise CheckpointError(f"{hf_folder.key_file(hf, 'forced_eos_token_id')}: unsupported, forced_eos_token_id "
                              f"{hf_folder.shown_value(forced)} is not the eos_token_id {hf_folder.shown_value(eos)} "
                              f"of {HF_CONFIG}")
    if hf.get("activation_function", HF_DEFAULTS["activation_function"]) not in ACTIVATIONS:
        raise CheckpointError(f"{HF_CONFIG}: unsupported activation_function "
                              f"{str(hf.get('activation_function'))[:40]!r} (relu, swish/silu or gelu)")


def marian_config(hf: dict[str, Any], unk_id: int, final_logits_bias: bool) -> ModelConfig:
    """The ModelConfig of a Marian config.json (checked by _refuse_unsupported); unk_id comes from vocab.json."""
    _refuse_unsupported(hf)

    def get(key: str) -> Any:
        return hf.get(key, HF_DEFAULTS[key])

    eos, pad, start = get("eos_token_id"), get("pad_token_id"), get("decoder_start_token_id")
    eos = eos[0] if isinstance(eos, list) and len(eos) == 1 else eos
    if start != pad:
        raise CheckpointError(f"{hf_folder.key_file(hf, 'decoder_start_token_id')}: unsupported, "
                              f"decoder_start_token_id {hf_folder.shown_value(start)} is not the pad id "
                              f"{hf_folder.shown_value(pad)} (Marian starts the decoder with <pad>)")
    try:
        return ModelConfig(
            vocab_size=get("vocab_size"), d_model=get("d_model"), n_heads=get("encoder_attention_heads"),
            n_encoder_layers=get("encoder_layers"), n_decoder_layers=get("decoder_layers"),
            d_ff=get("encoder_ffn_dim"), dropout=get("dropout"), max_len=get("max_position_embeddings"),
            pad_id=pad, unk_id=unk_id, bos_id=pad, eos_id=eos, activation=ACTIVATIONS[get("activation_function")],
            positional_layout="halves", final_logits_bias=final_logits_bias, decoder_start_id=pad,
            tokenizer="marian")
    except ValueError as exc:
        raise CheckpointError(f"{HF_CONFIG}: {exc}") from None


def read_marian_tokenizer(folder: Path) -> MarianTokenizer:
    """source.spm, target.spm and the one shared vocab.json (a separate target vocabulary is refused)."""
    tokenizer_config = folder / HF_TOKENIZER_CONFIG
    separate = tokenizer_config.is_file() and read_json(tokenizer_config).get("separate_vocabs") is True
    if separate or (folder / "target_vocab.json").is_file():
        raise CheckpointError(f"{HF_TOKENIZER_CONFIG}: unsupported, separate source and target vocabularies "
                              "(one embedding serves both sides here)")
    try:
        return MarianTokenizer(*(hf_folder.read_bytes(folder / name, MAX_TOKENIZER_BYTES) for name in MARIAN_FILES))
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None


def hf_names(config: ModelConfig) -> dict[str, str]:
    """Our state-dict name -> Hugging Face MarianMTModel's, for every tensor of Transformer(config)."""
    return hf_folder.layer_names(config)


def _check_positions(hf: dict[str, torch.Tensor], file: str) -> None:
    """Older files store the fixed sinusoid tables; they must be Marian's ("halves" layout), not learned ones."""
    for name in POSITIONS:
        if name in hf:
            table = hf[name].float()
            if table.dim() != 2 or not torch.allclose(
                    table, sinusoidal_encoding(table.size(0), table.size(1), "halves"), atol=1e-4):
                raise CheckpointError(f"{file}: unsupported, {name} is not Marian's sinusoidal table (learned "
                                      "positions)")


def map_weights(hf: dict[str, torch.Tensor], config: ModelConfig, file: str) -> dict[str, torch.Tensor]:
    """Hugging Face tensors renamed to ours, shapes checked against the config, float32, finite; stored position
    tables must be Marian's sinusoids."""
    _check_positions(hf, file)
    return hf_folder.rename_weights(hf, hf_names(config), config, file, set(POSITIONS), "MarianMTModel")


def languages(folder: Path) -> tuple[str | None, str | None]:
    """Source and target language: tokenizer_config.json's source_lang/target_lang, else a folder named
    opus-mt-XX-YY (also as a part of the path, e.g. Hugging Face's cache models--Helsinki-NLP--opus-mt-en-de/...)."""
    path = folder / HF_TOKENIZER_CONFIG
    if path.is_file():
        config = read_json(path)
        langs = config.get("source_lang"), config.get("target_lang")
        if all(isinstance(lang, str) and 0 < len(lang) <= 20 and lang.isprintable() for lang in langs):
            return langs
    for part in reversed(folder.resolve().parts):
        match = FOLDER_NAME.search(part)
        if match:
            return match.group(1), match.group(2)
    return None, None


def _model_name(folder: Path) -> str:
    """The folder's model name for the meta: the model id of a snapshot in Hugging Face's cache, else opus-mt-XX-YY
    when a part of its path says so, else its name."""
    match = next((p for p in reversed(folder.resolve().parts) if FOLDER_NAME.search(p)), folder.resolve().name)
    return (hf_folder.hub_id(folder) or match.split("--")[-1])[:100]


def convert_marian(folder: str | Path, out: str | Path,
                   progress: hf_folder.Progress | None = None) -> hf_folder.Conversion:
    """Read a Hugging Face Marian folder and write this project's checkpoint to ``out`` (a new or empty directory),
    telling ``progress`` each stage as it starts."""
    report(progress, Stage.READ_CONFIG)
    folder, out, hf_config = hf_folder.open_folder(folder, out, "Marian")
    _refuse_unsupported(hf_config)
    report(progress, Stage.READ_TOKENIZER)
    tokenizer = read_marian_tokenizer(folder)
    config = marian_config(hf_config, tokenizer.unk_id, final_logits_bias=True)
    hf_folder.check_size(config)
    _check_vocabulary(tokenizer, config)
    report(progress, Stage.READ_WEIGHTS)
    hf_weights, file = hf_folder.read_weights(folder)
    report(progress, Stage.MAP_WEIGHTS)
    embedding = hf_folder.tied_embedding(hf_weights, file)
    if embedding.dim() != 2 or embedding.size(0) != tokenizer.vocab_size:
        raise CheckpointError(f"vocabulary mismatch: {MARIAN_FILES[2]} has {tokenizer.vocab_size} pieces, the "
                              f"embedding in {file} has shape {tuple(embedding.shape)}")
    if "final_logits_bias" not in hf_weights:  # HF then adds zeros: the same as no bias
        config = marian_config(hf_config, tokenizer.unk_id, final_logits_bias=False)
    model = Transformer(config)
    model.load_state_dict(map_weights(hf_weights, config, file))
    source_lang, target_lang = languages(folder)
    meta = {"converted_from": _model_name(folder), "source_lang": source_lang, "target_lang": target_lang,
            # generate() ends a hypothesis at the length limit with </s> when the config says so (Marian's default)
            "forced_eos": hf_config.get("forced_eos_token_id", HF_DEFAULTS["forced_eos_token_id"]) is not None}
    return hf_folder.write_conversion(model, tokenizer, out, hf_config, meta, file, progress,
                                      source_lang=source_lang, target_lang=target_lang)


def _check_vocabulary(tokenizer: MarianTokenizer, config: ModelConfig) -> None:
    """vocab.json must have the config's size and put </s> and <pad> where config.json says."""
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"vocabulary mismatch: {MARIAN_FILES[2]} has {tokenizer.vocab_size} pieces, "
                              f"{HF_CONFIG} says vocab_size {config.vocab_size}")
    for piece, ours, theirs, key in (("</s>", tokenizer.eos_id, config.eos_id, "eos_token_id"),
                                     ("<pad>", tokenizer.pad_id, config.pad_id, "pad_token_id")):
        if ours != theirs:
            raise CheckpointError(f"{MARIAN_FILES[2]} puts {piece} at {ours}, {HF_CONFIG} says {key} {theirs}")
