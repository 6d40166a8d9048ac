"""Checkpoints: one directory with safetensors weights, a JSON config and the tokenizer (tokenizer.model, a
converted Marian model's source.spm, target.spm and vocab.json, a converted model's tokenizer.json, or a converted
M2M100's sentencepiece.bpe.model, vocab.json and tokenizer_config.json: the config's ``tokenizer`` says which).

A checkpoint may come from anyone (``--checkpoint``, the app's upload), so loading trusts nothing in it:
- no code runs: weights are read only as safetensors (plain numbers); a pickle (PyTorch's .bin/.pt) is
  refused, never unpickled;
- nothing absurd is allocated: every file's size is bounded, the config is checked against the limits in
  ``model.network.config`` before a model is built, and the safetensors header (its length field, every tensor's dtype,
  shape and byte offsets) is read and checked against the file size and the config's tensors before any tensor
  data is read;
- every problem (missing file, bad JSON, wrong names, shapes or dtypes, NaN, vocabulary mismatch) becomes a
  one-line CheckpointError whose message names the file and says what is wrong.
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load as load_safetensors_bytes
from torch import nn

from model.checkpoints.header import MAX_WEIGHTS_BYTES, CheckpointError, check_header, shown_name
from model.checkpoints.meta import clean_meta, decode_rules_of, forced_eos_of, length_penalty_of
from model.checkpoints.shapes import expected_shapes
from model.checkpoints.shards import INDEX, SINGLE, ShardError, has_weights, read_index, save_weights
from model.decoding.copy_words import LEXICON_FILE, CopyLexicon
from model.network.config import ModelConfig, format_bytes
from model.network.transformer import Transformer
from model.network.weight_layout import lay_out_for_decoding
from model.tokenization.huggingface import HF_TOKENIZER_FILE, HFTokenizer
from model.tokenization.joint import TOKENIZER_FILE, Tokenizer
from model.tokenization.kinds import TextTokenizer
from model.tokenization.m2m100 import M2M100_FILES, M2M100Tokenizer
from model.tokenization.marian import MARIAN_FILES, MARIAN_SPECIALS, MarianTokenizer
from model.tokenization.pieces import TokenizerError

WEIGHTS, CONFIG, TOKENIZER = SINGLE, "config.json", TOKENIZER_FILE  # SINGLE: model.safetensors, unsharded
FORMAT_VERSION = 1
# The largest config and tokenizer read (the shipped en-de: 2 kB of config, 0.3 MB of tokenizer; Marian opus-mt:
# 0.8 MB of sentencepiece model; converted NLLB-200-600M and mBART-large-50: 17 MB of tokenizer.json).
MAX_CONFIG_BYTES = 2**20
MAX_TOKENIZER_BYTES = 64 * 2**20
SAFETENSORS_DTYPE = {torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
                     torch.bool: "BOOL"}
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")  # what a pickled checkpoint is called


@dataclass
class Checkpoint:
    model: Transformer
    tokenizer: TextTokenizer
    config: ModelConfig
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    copy_lexicon: CopyLexicon | None = None  # copy_lexicon.json: the names and numbers it can keep
    # (model.decoding.copy_words)

    @property
    def length_penalty(self) -> float:
        return length_penalty_of(self.meta)

    @property
    def forced_eos(self) -> bool:
        return forced_eos_of(self.meta)

    @property
    def decode_rules(self) -> dict[str, Any]:
        """The decoding rules this model brings (model.checkpoints.meta.decode_rules_of), as DecodeConfig's keyword
        arguments."""
        return decode_rules_of(self.meta)


def save_checkpoint(model: Transformer, tokenizer: TextTokenizer, directory: str | Path,
                    dtype: torch.dtype = torch.float32, meta: dict[str, Any] | None = None,
                    max_shard_bytes: int | None = None) -> Path:
    """Write model.safetensors (in ``dtype``, e.g. float16 to ship; sharded with an index when larger than
    ``max_shard_bytes``), config.json and the tokenizer's files."""
    kinds = {"sentencepiece": Tokenizer, "marian": MarianTokenizer, "hf": HFTokenizer, "m2m100": M2M100Tokenizer}
    if not isinstance(tokenizer, kinds[model.config.tokenizer]):
        raise ValueError(f"the config's tokenizer is {model.config.tokenizer!r}, got a {type(tokenizer).__name__}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    save_weights(weights, directory, {"format": str(FORMAT_VERSION)}, max_shard_bytes)
    payload = {"format": FORMAT_VERSION, "model": model.config.to_dict(), "meta": meta or {}}
    (directory / CONFIG).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    for name, data in tokenizer.files().items():
        (directory / name).write_bytes(data)
    return directory


def update_meta(directory: str | Path, **entries: Any) -> None:
    """Add or replace entries of a saved checkpoint's meta (its config.json), in save_checkpoint's layout: for facts
    measured after training, such as the length penalty chosen on the validation split."""
    path = Path(directory) / CONFIG
    payload = json.loads(path.read_text())
    payload.setdefault("meta", {}).update(entries)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def _read_file(path: Path, limit: int) -> bytes:
    """The bytes of one checkpoint file, refused when missing, not a regular file or larger than ``limit``."""
    if not path.is_file():
        raise not_a_file(path)
    try:
        size = path.stat().st_size
        if size > limit:
            raise CheckpointError(f"{path.name} has {format_bytes(size)}, more than the limit of {format_bytes(limit)}")
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise CheckpointError(f"{path.name}: cannot read it ({exc.strerror})") from None
    if len(data) > limit:
        raise CheckpointError(f"{path.name} has more than the limit of {format_bytes(limit)}")
    return data


def _refuse_foreign_config(payload: Any) -> None:
    """A Hugging Face config.json (a "model_type", no "model" section) is named as such, with the way to convert a
    Marian one, instead of "no usable 'model' section"."""
    if isinstance(payload, dict) and "model" not in payload and isinstance(payload.get("model_type"), str):
        raise CheckpointError(f"{CONFIG} is a Hugging Face config (model_type {shown_name(payload['model_type'])}), "
                              "not "
                              "this project's checkpoint; convert a Marian (opus-mt) folder first: python -m model "
                              "convert-marian FOLDER --out pretrained/NAME")


def read_config(directory: Path) -> tuple[ModelConfig, dict[str, Any]]:
    """The validated ModelConfig (types, ranges and size limits: see model.config) and the cleaned meta."""
    data = _read_file(Path(directory) / CONFIG, MAX_CONFIG_BYTES)
    try:
        payload = json.loads(data.decode("utf-8"))
        _refuse_foreign_config(payload)
        return ModelConfig.from_dict(payload["model"]), clean_meta(payload.get("meta", {}))
    except CheckpointError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{CONFIG} is not valid JSON ({exc})") from None
    except RecursionError:
        raise CheckpointError(f"{CONFIG} is not valid JSON (nested too deeply)") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{CONFIG} has no usable 'model' section ({type(exc).__name__}: {exc})") from None
    except ValueError as exc:
        raise CheckpointError(f"{CONFIG}: {exc}") from None


def tokenizer_files(config: ModelConfig) -> tuple[str, ...]:
    """The tokenizer files a checkpoint of ``config`` holds."""
    return {"marian": MARIAN_FILES, "hf": (HF_TOKENIZER_FILE,), "m2m100": M2M100_FILES}.get(config.tokenizer,
                                                                                            (TOKENIZER,))


def read_tokenizer(directory: Path, config: ModelConfig | None = None) -> TextTokenizer:
    """The checkpoint's tokenizer (the kind ``config.tokenizer`` names; sentencepiece without a config), its special
    ids checked against the config's."""
    directory = Path(directory)
    if config is None or config.tokenizer == "sentencepiece":
        try:
            return Tokenizer(_read_file(directory / TOKENIZER, MAX_TOKENIZER_BYTES))
        except TokenizerError as exc:
            raise CheckpointError(f"{TOKENIZER}: {exc}") from None
    if config.tokenizer == "hf":  # its special ids are the config's: the file does not say which starts the decoder
        try:
            return HFTokenizer(_read_file(directory / HF_TOKENIZER_FILE, MAX_TOKENIZER_BYTES), pad_id=config.pad_id,
                               unk_id=config.unk_id, bos_id=config.bos_id, eos_id=config.eos_id)
        except TokenizerError as exc:
            raise CheckpointError(str(exc)) from None
    tokenizer: M2M100Tokenizer | MarianTokenizer
    try:
        if config.tokenizer == "m2m100":
            tokenizer = M2M100Tokenizer(*(_read_file(directory / name, MAX_TOKENIZER_BYTES) for name in M2M100_FILES),
                                        bos_id=config.bos_id)
        else:
            tokenizer = MarianTokenizer(*(_read_file(directory / name, MAX_TOKENIZER_BYTES) for name in MARIAN_FILES))
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None
    ids = {"pad_id": tokenizer.pad_id, "unk_id": tokenizer.unk_id, "eos_id": tokenizer.eos_id}
    wrong = [f"{MARIAN_SPECIALS[name[:-3]]} is {value}, {CONFIG} says {name} {getattr(config, name)}"
             for name, value in ids.items() if value != getattr(config, name)]
    if wrong:
        raise CheckpointError(f"vocab.json does not match {CONFIG}: {'; '.join(wrong)}")
    return tokenizer


def peek_checkpoint(directory: Path) -> tuple[ModelConfig, dict[str, Any]] | None:
    """The config and meta of a directory that holds a Transformer checkpoint (its config.json has a 'model' section
    that is a valid ModelConfig, and its weights and tokenizer files are there), None otherwise. Reads only config.json:
    for listing checkpoints; load_checkpoint does every check."""
    try:
        config, meta = read_config(Path(directory))
    except (CheckpointError, OSError):
        return None
    found = has_weights(Path(directory)) and all((Path(directory) / name).is_file() for name in tokenizer_files(config))
    return (config, meta) if found else None


SNAPSHOTS = "snapshots"


def checkpoint_snapshots(directory: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Earlier stages of a checkpoint's training shipped beside it, <directory>/snapshots/<name>/ (each a checkpoint
    of its own): name -> (path, meta), in training order (by the steps in their meta). Reads only config.json."""
    root = Path(directory) / SNAPSHOTS
    found = [(path, peek_checkpoint(path)) for path in sorted(root.iterdir())] if root.is_dir() else []
    ordered = sorted(((path, peeked[1]) for path, peeked in found if peeked is not None),
                     key=lambda item: (item[1].get("steps", 0), item[0].name))
    return {path.name: (path, meta) for path, meta in ordered}


def read_weights(data: bytes, model: nn.Module) -> dict[str, torch.Tensor]:
    """Parse safetensors bytes after check_header's checks against ``model``'s state dict (name, shape, dtype,
    offsets, size); -> name -> float32 tensor (other dtypes kept), finite."""
    expected = model.state_dict()
    dtypes = {name: SAFETENSORS_DTYPE.get(t.dtype, str(t.dtype)) for name, t in expected.items()
              if not t.is_floating_point()}
    check_header(io.BytesIO(data), len(data), {name: tuple(t.shape) for name, t in expected.items()}, dtypes)
    try:
        weights = load_safetensors_bytes(data)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{WEIGHTS} is not a valid safetensors file ({exc})") from None
    for name, tensor in weights.items():
        if tensor.is_floating_point() and not torch.isfinite(tensor.float()).all():
            raise CheckpointError(f"{WEIGHTS}: {name} contains NaN or infinite values")
    return {k: v.float() if v.is_floating_point() else v for k, v in weights.items()}


def not_a_file(path: Path) -> CheckpointError:
    """Why ``path`` cannot be read as a file: missing, or there but a device, pipe, folder or broken link (a link to
    /dev/zero is not "missing")."""
    if path.is_symlink() and not path.exists():
        return CheckpointError(f"{path.name} is a link to nothing in {path.parent}")
    if path.exists():
        return CheckpointError(f"{path.name} is not a regular file (a device, pipe or folder) in {path.parent}")
    return CheckpointError(f"{path.name} is missing in {path.parent}")


def _missing_weights(directory: Path) -> CheckpointError:
    if (directory / WEIGHTS).is_symlink() or (directory / WEIGHTS).exists():
        return not_a_file(directory / WEIGHTS)
    pickles = sorted(p.name for p in directory.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES)[:3]
    verb = "is" if len(pickles) == 1 else "are"
    hint = (f" ({', '.join(pickles)} {verb} not read: only safetensors weights are loaded, a pickle can run code)"
            if pickles else "")
    return CheckpointError(f"{WEIGHTS} is missing in {directory}{hint}")


def _weight_groups(files: dict[Path, list[str]], expected: dict[str, tuple[int, ...]]
                   ) -> list[tuple[Path, dict[str, tuple[int, ...]]]]:
    """Each shard with the tensors it must hold; the shards together hold every tensor of the config, no other."""
    named = [name for names in files.values() for name in names]
    missing, unexpected = sorted(set(expected) - set(named)), sorted(set(named) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{INDEX} does not match the config: missing {missing[:5]}, unexpected "
                              f"[{', '.join(shown_name(n) for n in unexpected[:5])}]")
    total = sum(path.stat().st_size for path in files)
    if total > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"the shards in {INDEX} have {format_bytes(total)}, more than the limit of "
                              f"{format_bytes(MAX_WEIGHTS_BYTES)}")
    return [(path, {name: expected[name] for name in names}) for path, names in files.items()]


def load_weights(path: Path | dict[Path, list[str]], config: ModelConfig) -> Transformer:
    """A Transformer(config) holding the weights in ``path`` (one file, or shard -> its tensor names, from an
    index), after check_header's checks on every file (converted to float32)."""
    expected = expected_shapes(config)
    groups = [(path, expected)] if isinstance(path, Path) else _weight_groups(path, expected)
    try:
        for file, subset in groups:
            with file.open("rb") as f:
                check_header(f, os.fstat(f.fileno()).st_size, subset)
    except OSError as exc:
        raise CheckpointError(f"{WEIGHTS}: cannot read it ({exc.strerror})") from None
    try:
        model = Transformer(config)
    except MemoryError:
        raise CheckpointError(f"{CONFIG}: not enough memory to build this model "
                              f"({format_bytes(config.estimated_bytes())} as float32)") from None
    targets = model.state_dict()
    for file, subset in groups:
        _copy_tensors(file, subset, targets)
    return model


def _copy_tensors(path: Path, names: dict[str, tuple[int, ...]], targets: dict[str, torch.Tensor]) -> None:
    """Copy one checked file's tensors into the model, one at a time, refusing NaN and a file changed meanwhile."""
    try:
        with safe_open(str(path), framework="pt") as f, torch.no_grad():
            if set(f.keys()) != set(names):
                raise CheckpointError(f"{path.name} changed while it was read")
            for name in names:
                target = targets[name].copy_(f.get_tensor(name))  # one tensor at a time next to the model
                if target.is_floating_point() and not torch.isfinite(target).all():  # fast in float32
                    raise CheckpointError(f"{path.name}: {name} contains NaN or infinite values")
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"{path.name} is not a valid safetensors file ({exc})") from None


def load_checkpoint(directory: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    """Load and validate a checkpoint directory; the model comes back in eval mode on ``device``.

    Order: config (limits checked before anything is built), tokenizer (its vocabulary must be the config's),
    the weights' header (checked against the config and the file size), then the weights themselves."""
    directory = Path(directory)
    try:
        if not directory.exists():
            raise CheckpointError(f"checkpoint directory not found: {directory}")
        if not directory.is_dir():
            raise CheckpointError(f"{directory} is a file: a checkpoint is a directory with {WEIGHTS}, {CONFIG} "
                                  f"and {TOKENIZER}")
        config, meta = read_config(directory)
        tokenizer = read_tokenizer(directory, config)
        # A tokenizer.json may have fewer pieces than the embedding rows (T5: 32100 of 32128; the rest never emitted),
        # and so may M2M100's (128100 of 128112)
        spare = config.tokenizer in ("hf", "m2m100") and tokenizer.vocab_size < config.vocab_size
        if tokenizer.vocab_size != config.vocab_size and not spare:
            raise CheckpointError(f"vocabulary mismatch: {tokenizer_files(config)[-1]} has {tokenizer.vocab_size} "
                                  f"pieces, {CONFIG} says vocab_size {config.vocab_size}")
        if (directory / WEIGHTS).is_file():
            model = load_weights(directory / WEIGHTS, config)
        elif (directory / INDEX).is_file():
            model = load_weights(read_index(directory), config)
        else:
            raise _missing_weights(directory)
        lexicon = read_copy_lexicon(directory)
    except ShardError as exc:
        raise CheckpointError(str(exc)) from None
    except OSError as exc:
        raise CheckpointError(f"cannot read the checkpoint in {directory} ({exc.strerror})") from None
    model = model.to(device).eval()
    if torch.device(device).type == "cpu":
        lay_out_for_decoding(model)  # faster decoding steps on the CPU; the same values (model.network.weight_layout)
    return Checkpoint(model=model, tokenizer=tokenizer, config=config, meta=meta, path=directory,
                      copy_lexicon=lexicon)


MAX_LEXICON_BYTES = 16 * 2**20


def read_copy_lexicon(directory: Path) -> CopyLexicon | None:
    """The checkpoint's copy lexicon, None without one (a converted or uploaded model: it cannot keep names)."""
    path = directory / LEXICON_FILE
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_LEXICON_BYTES:
        raise CheckpointError(f"{LEXICON_FILE} is larger than {format_bytes(MAX_LEXICON_BYTES)}")
    try:
        return CopyLexicon.from_json(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{LEXICON_FILE} is not a copy lexicon ({str(exc)[:200]})") from None
