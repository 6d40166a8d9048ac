"""Reading a Hugging Face encoder-decoder folder, whatever its family: config.json, the weights, and our tensor names.

Nothing is downloaded: the folder is one the user already has, and transformers is not needed. The weights are read from
model.safetensors (or its shards, model.safetensors.index.json) when present, else from pytorch_model.bin, a pickle,
loaded only with torch.load(weights_only=True), whose restricted unpickler rebuilds tensors and refuses any other
object. Every file of the folder must resolve to a regular file inside it (a snapshot of Hugging Face's cache: inside
its model's folder there, whose blobs its files link to), checked before any is read: a link to /etc/passwd,
/proc/self/environ or /dev/zero is refused. Every refusal is a one-line CheckpointError naming the file and the reason.
The family converters (model.huggingface.marian, model.huggingface.bart, model.huggingface.t5) say what their config
means and which of their tensors go where, and tell an optional progress callback each of STAGES as it starts (a large
model takes minutes). cached_models lists what Hugging Face's cache already holds, so a model can be picked by its id.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from model.checkpoints.files import MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES, not_a_file, save_checkpoint
from model.checkpoints.header import MAX_WEIGHTS_BYTES, CheckpointError
from model.checkpoints.shapes import expected_shapes
from model.checkpoints.shards import INDEX, SINGLE, ShardError, has_weights, read_index
from model.network.config import MAX_MODEL_BYTES, ModelConfig, format_bytes, is_early_stopping
from model.network.transformer import Transformer
from model.tokenization.huggingface import HF_TOKENIZER_FILE, HFTokenizer
from model.tokenization.kinds import TextTokenizer
from model.tokenization.m2m100 import M2M100_FILES, M2M100Tokenizer
from model.tokenization.pieces import TokenizerError

HF_CONFIG, HF_SAFETENSORS, HF_PICKLE = "config.json", SINGLE, "pytorch_model.bin"
HF_TOKENIZER_CONFIG = "tokenizer_config.json"
HF_GENERATION_CONFIG = "generation_config.json"
# What generate() reads from the generation config, not the model's: how decoding starts and which pieces it forces.
GENERATION_KEYS = ("decoder_start_token_id", "forced_bos_token_id", "forced_eos_token_id", "no_repeat_ngram_size",
                   "length_penalty", "early_stopping")


class Stage(StrEnum):
    """What a converter does, in order: a progress callback (Progress) is told each stage, as text, as it starts."""

    READ_CONFIG = "reading config.json"
    READ_TOKENIZER = "reading the tokenizer"
    READ_WEIGHTS = "reading the weights"
    MAP_WEIGHTS = "converting the weights (names and shapes checked)"
    WRITE = "writing the checkpoint"


STAGES = tuple(Stage)
Progress = Callable[[str], None]
MAX_SOURCE_WEIGHTS_BYTES = MAX_MODEL_BYTES + 64 * 2**20  # a weights file a model within the config limits can have
# Our tensor names -> Hugging Face's, per encoder / decoder layer (weight and bias each): Marian, BART and mBART
# name their layers alike.
ENCODER_NAMES = {"self_attn.w_q": "self_attn.q_proj", "self_attn.w_k": "self_attn.k_proj",
                 "self_attn.w_v": "self_attn.v_proj", "self_attn.w_o": "self_attn.out_proj",
                 "sublayers.0.norm": "self_attn_layer_norm", "feed_forward.linear1": "fc1",
                 "feed_forward.linear2": "fc2", "sublayers.1.norm": "final_layer_norm"}
DECODER_NAMES = {**{k: v for k, v in ENCODER_NAMES.items() if k != "sublayers.1.norm"},
                 "cross_attn.w_q": "encoder_attn.q_proj", "cross_attn.w_k": "encoder_attn.k_proj",
                 "cross_attn.w_v": "encoder_attn.v_proj", "cross_attn.w_o": "encoder_attn.out_proj",
                 "sublayers.1.norm": "encoder_attn_layer_norm", "sublayers.2.norm": "final_layer_norm"}
EMBEDDINGS = ("model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
              "lm_head.weight")  # one matrix, tied: the first present is read, the others must equal it
ACTIVATIONS = {"relu": "relu", "swish": "swish", "silu": "swish", "gelu": "gelu"}  # HF name -> ModelConfig name


@dataclass(frozen=True)
class Conversion:
    """What a converter wrote: the checkpoint directory, its config, which weights file it read (and whether
    that was a pickle) and the languages it recorded in the checkpoint's meta (None when unknown)."""

    path: Path
    config: ModelConfig
    weights_file: str
    pickled: bool
    source_lang: str | None
    target_lang: str | None
    family: str = "marian"  # the model_type it was converted from
    target_languages: tuple[str, ...] = ()  # a multilingual model's language codes (translate --to)


def report(progress: Progress | None, stage: str) -> None:
    """Tell the caller's progress callback (the app's progress bar) that ``stage`` of STAGES starts."""
    if progress is not None:
        progress(stage)


MAX_FOLDER_ENTRIES = 10_000  # files and folders checked in a folder to convert (a model has a dozen)


def allowed_root(folder: Path) -> Path:
    """The real folder a folder's files may lie in: for a snapshot in Hugging Face's cache the model's folder there
    (models--owner--name, whose snapshots link to its blobs/), else the folder itself."""
    real = folder.resolve()
    if len(real.parts) >= 3 and real.parts[-2] == "snapshots" and real.parts[-3].startswith(CACHE_PREFIX):
        return real.parent.parent
    return real


def check_inside(path: Path, folder: Path, root: Path) -> None:
    """``path`` (in ``folder``) must resolve to a regular file or folder inside ``root``: a link to /etc/passwd,
    /proc/self/environ or /dev/zero is refused in one line naming the file, before anything is read from it."""
    name = path.relative_to(folder).as_posix()[:100] if path.is_relative_to(folder) else path.name[:100]
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        raise CheckpointError(f"{name} is a link that cannot be resolved (a loop?): refused") from None
    if not real.is_relative_to(root):
        raise CheckpointError(f"{name} is a link to a file outside the folder: refused (copy the file into it)")
    if real.exists() and not (real.is_file() or real.is_dir()):
        raise CheckpointError(f"{name} is not a regular file (a device, pipe or socket): refused")


def check_folder_files(folder: Path) -> None:
    """Every file and folder under ``folder`` (links not followed), checked by check_inside against its allowed_root,
    before a converter reads any of them."""
    root, seen = allowed_root(folder), 0
    for top, folders, files in os.walk(folder, followlinks=False):
        for name in (*folders, *files):
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                raise CheckpointError(f"{folder.name[:100]} holds more than {MAX_FOLDER_ENTRIES:,} files: not a model "
                                      "folder")
            check_inside(Path(top) / name, folder, root)


def read_bytes(path: Path, limit: int) -> bytes:
    check_inside(path, path.parent, allowed_root(path.parent))
    if not path.is_file():
        raise not_a_file(path)
    size = path.stat().st_size
    if size > limit:
        raise CheckpointError(f"{path.name} has {format_bytes(size)}, more than the limit of {format_bytes(limit)}")
    return path.read_bytes()


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bytes(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CheckpointError(f"{path.name} is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path.name} must be a JSON object, got {type(data).__name__}")
    return data


def _read_size(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_SOURCE_WEIGHTS_BYTES:
        raise CheckpointError(f"{path.name} has {format_bytes(size)}, more than the limit of "
                              f"{format_bytes(MAX_SOURCE_WEIGHTS_BYTES)}")


def _load_pickle(path: Path) -> dict[str, torch.Tensor]:
    """pytorch_model.bin through torch's restricted unpickler: tensors only, any other object refused."""
    _read_size(path)
    try:
        with warnings.catch_warnings():  # torch's note on an old pickle protocol says nothing to whoever converts
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # UnpicklingError for a forbidden object, RuntimeError/EOFError for a corrupt file
        raise pickle_refusal(path.name, exc) from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise CheckpointError(f"{path.name} is not a state dict (names -> tensors)")
    return state


UNSAFE_GLOBAL = re.compile(r"GLOBAL ([\w.]{1,80})")  # what torch's restricted unpickler names in its refusal
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def pickle_refusal(name: str, exc: Exception) -> CheckpointError:
    """One line for a pickle torch.load(weights_only=True) refused, in our words: torch's own message advises loading
    the file with weights_only=False, which must never be done with a file from someone else."""
    text = ANSI.sub("", str(exc))
    if isinstance(exc, pickle.UnpicklingError):
        found = UNSAFE_GLOBAL.search(text)
        named = f" ({found.group(1)})" if found else ""
        return CheckpointError(f"{name} holds an object other than tensors{named}: refused, never run (a pickle can "
                               f"run code); convert the model's {HF_SAFETENSORS} instead")
    reason = (text.strip().split(". ")[0].splitlines() or [""])[0][:120]
    if not reason or "weights_only" in reason:
        reason = type(exc).__name__
    return CheckpointError(f"{name} is not a readable PyTorch weights file ({reason})")


def read_weights(folder: Path) -> tuple[dict[str, torch.Tensor], str]:
    """The folder's tensors by Hugging Face name and the file they came from: model.safetensors preferred."""
    if (folder / f"{HF_PICKLE}.index.json").is_file() and not has_weights(folder):
        raise CheckpointError(f"unsupported: the weights in {folder} are sharded pickles "
                              "(pytorch_model.bin.index.json); save the model with safetensors")
    if (folder / INDEX).is_file() and not (folder / HF_SAFETENSORS).is_file():
        return _read_shards(folder), INDEX
    path = folder / HF_SAFETENSORS
    if not path.is_file():
        if path.is_symlink() or path.exists():  # a link to /dev/zero, a pipe: there, but not a file
            raise not_a_file(path)
        if not (folder / HF_PICKLE).is_file():
            raise CheckpointError(f"{HF_SAFETENSORS} (or {HF_PICKLE}) is missing in {folder}")
        return _load_pickle(folder / HF_PICKLE), HF_PICKLE
    _read_size(path)
    try:
        with safe_open(str(path), framework="pt") as f:
            return {name: f.get_tensor(name) for name in f.keys()}, HF_SAFETENSORS  # noqa: SIM118 (no __iter__)
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        raise CheckpointError(f"{HF_SAFETENSORS} is not a valid safetensors file ({exc})") from None


def _read_shards(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a sharded safetensors folder (model.safetensors.index.json and its shards)."""
    tensors: dict[str, torch.Tensor] = {}
    try:
        for path, names in read_index(folder).items():
            _read_size(path)
            with safe_open(str(path), framework="pt") as f:
                if not set(names) <= set(f.keys()):
                    raise CheckpointError(f"{path.name} lacks tensors that {INDEX} places in it")
                tensors.update((name, f.get_tensor(name)) for name in names)
    except ShardError as exc:
        raise CheckpointError(str(exc)) from None
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"a shard in {folder} is not a valid safetensors file ({exc})") from None
    return tensors


def tied_embedding(hf: dict[str, torch.Tensor], file: str, embeddings: tuple[str, ...] = EMBEDDINGS) -> torch.Tensor:
    """The shared embedding; every tied copy the file holds (``embeddings``: the family's names) must be the same
    matrix."""
    present = [name for name in embeddings if name in hf]
    if not present:
        raise CheckpointError(f"{file} has no embedding ({embeddings[0]})")
    for name in present[1:]:
        if hf[name].shape != hf[present[0]].shape or not torch.equal(hf[name], hf[present[0]]):
            raise CheckpointError(f"{file}: unsupported, {name} differs from {present[0]} (untied embeddings)")
    return hf[present[0]]


def layer_names(config: ModelConfig) -> dict[str, str]:
    """Our state-dict name -> Hugging Face's, for the embedding, the optional final logits bias and every layer."""
    names = {"embed.token.weight": EMBEDDINGS[0]}
    if config.final_logits_bias:
        names["final_logits_bias"] = "final_logits_bias"
    for stack, n_layers, table in (("encoder", config.n_encoder_layers, ENCODER_NAMES),
                                   ("decoder", config.n_decoder_layers, DECODER_NAMES)):
        for i in range(n_layers):
            for ours, theirs in table.items():
                for part in ("weight", "bias"):
                    names[f"{stack}.layers.{i}.{ours}.{part}"] = f"model.{stack}.layers.{i}.{theirs}.{part}"
    return names


def rename_weights(hf: dict[str, torch.Tensor], names: dict[str, str], config: ModelConfig, file: str,
                   ignored: set[str], family: str, embeddings: tuple[str, ...] = EMBEDDINGS) -> dict[str, torch.Tensor]:
    """Hugging Face tensors renamed to ours (``names``: ours -> theirs), shapes checked against the config, float32,
    finite. A tensor neither named nor ``ignored`` (nor a tied copy of the embedding, ``embeddings``) is refused: not
    a plain ``family`` model."""
    shapes = expected_shapes(config)
    unexpected = sorted(set(hf) - set(names.values()) - set(embeddings) - ignored)
    if unexpected:
        raise CheckpointError(f"{file}: unsupported, unexpected tensors {[n[:60] for n in unexpected[:3]]}"
                              f"{'...' if len(unexpected) > 3 else ''} (not a plain {family})")
    weights = {}
    for ours, theirs in names.items():
        tensor = tied_embedding(hf, file, embeddings) if ours == "embed.token.weight" else hf.get(theirs)
        if tensor is None:
            raise CheckpointError(f"{file}: {theirs} is missing")
        if ours == "final_logits_bias":
            tensor = tensor.reshape(-1)  # HF keeps it as [1, V]
        if tuple(tensor.shape) != shapes[ours]:
            raise CheckpointError(f"{file}: {theirs} has shape {tuple(tensor.shape)}, {HF_CONFIG} needs {shapes[ours]}")
        if not tensor.is_floating_point() or not torch.isfinite(tensor.float()).all():
            raise CheckpointError(f"{file}: {theirs} is not finite floating point ({tensor.dtype})")
        weights[ours] = tensor.float()
    return weights


def check_output(out: Path) -> None:
    """The converter writes only into a new or empty directory."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CheckpointError(f"{out} already exists and is not empty: choose a new --out directory")


def open_folder(folder: str | Path, out: str | Path, what: str = "Hugging Face") -> tuple[Path, Path, dict[str, Any]]:
    """(folder, out, its config.json with generate()'s decoding keys): the folder must exist and the output be new or
    empty, checked before anything is read."""
    folder, out = resolve_folder(folder), Path(out)
    if not folder.is_dir():
        raise CheckpointError(f"{what} folder not found: {folder} (nor a model of that name in Hugging Face's cache, "
                              f"{hub_cache()})")
    check_output(out)
    check_folder_files(folder)
    return folder, out, with_generation_config(folder, read_json(folder / HF_CONFIG))


def check_size(config: ModelConfig) -> None:
    """The converted model must fit a checkpoint's weights limit as float32, checked before anything is read."""
    if 4 * config.estimated_parameters() > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{HF_CONFIG}: {config.estimated_parameters():,} parameters take "
                              f"{format_bytes(4 * config.estimated_parameters())} as float32, more than a "
                              f"checkpoint's limit of {format_bytes(MAX_WEIGHTS_BYTES)}")


MODEL_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")  # "facebook/bart-base", as the hub names it


def hub_cache() -> Path:
    """Hugging Face's cache of downloaded models, where its libraries put it: HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    return Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "hub"


def resolve_folder(name: str | Path) -> Path:
    """A folder as given, or a model id ("facebook/bart-base") found in Hugging Face's cache: the snapshot its
    refs/main names, else its only snapshot. Nothing is downloaded; a model id not in the cache stays as given (and
    is then refused as a folder not found)."""
    path = Path(name)
    if path.is_dir() or not MODEL_ID.fullmatch(str(name)):
        return path
    return _snapshot(hub_cache() / f"{CACHE_PREFIX}{str(name).replace('/', '--')}") or path


CACHE_PREFIX = "models--"  # the hub cache's folder of one model: models--owner--name
MAX_CACHED_MODELS = 500  # folders of the cache looked at when listing it
COMMIT = re.compile(r"[0-9A-Za-z_-]{1,64}")  # what refs/main may name: a folder of snapshots/, nothing above it


def _snapshot(repo: Path) -> Path | None:
    """The snapshot of a cached model's folder that refs/main names, else its only one; None when neither."""
    ref = repo / "refs" / "main"
    commit = ref.read_text(errors="replace").strip() if ref.is_file() and ref.stat().st_size <= 100 else ""
    if COMMIT.fullmatch(commit) and (repo / "snapshots" / commit).is_dir():
        return repo / "snapshots" / commit
    snapshots = sorted((repo / "snapshots").iterdir()) if (repo / "snapshots").is_dir() else []
    return snapshots[0] if len(snapshots) == 1 else None


def hub_id(folder: Path) -> str | None:
    """The model id ("facebook/bart-base") of a snapshot in Hugging Face's cache (…/models--facebook--bart-base/
    snapshots/<commit>), None for any other folder."""
    parts = folder.resolve().parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith(CACHE_PREFIX):
        return _model_id(parts[-3])
    return None


def _model_id(repo_name: str) -> str:
    """The model id a cache folder stands for: models--facebook--bart-base -> facebook/bart-base."""
    return repo_name[len(CACHE_PREFIX):].replace("--", "/", 1)


def source_name(folder: Path) -> str:
    """What a converted checkpoint's meta says it was converted from: the model id of a cached snapshot (its folder
    name is a commit hash), else the folder's name."""
    return (hub_id(folder) or folder.resolve().name)[:100]


def model_type_of(folder: Path) -> str | None:
    """config.json's model_type, None when the folder has no readable config.json or it names none (for listing:
    the converter says why when asked to convert)."""
    try:
        found = read_json(folder / HF_CONFIG).get("model_type")
    except (CheckpointError, OSError):
        return None
    return found[:40] if isinstance(found, str) else None


@dataclass(frozen=True)
class CachedModel:
    """A model in Hugging Face's cache: its id, the snapshot a conversion reads and config.json's model_type."""

    model_id: str
    folder: Path
    model_type: str | None


def cached_models() -> list[CachedModel]:
    """Every model in Hugging Face's cache (hub_cache()) with a snapshot holding config.json, by id (datasets, spaces
    and half-downloaded models left out). Only config.json is read: nothing is downloaded or converted."""
    root = hub_cache()
    try:
        repos = sorted(path for path in root.iterdir() if path.name.startswith(CACHE_PREFIX))[:MAX_CACHED_MODELS]
    except OSError:  # no cache (yet), or not readable
        return []
    found = []
    for repo in repos:
        snapshot = _snapshot(repo) if repo.is_dir() else None
        if snapshot is not None and (snapshot / HF_CONFIG).is_file():
            found.append(CachedModel(model_id=_model_id(repo.name), folder=snapshot,
                                     model_type=model_type_of(snapshot)))
    return found


def with_generation_config(folder: Path, hf: dict[str, Any]) -> dict[str, Any]:
    """config.json's keys, with the decoding keys generate() takes from generation_config.json when the folder has one
    (save_pretrained writes it; a forced piece it does not name is not forced, whatever config.json says)."""
    path = folder / HF_GENERATION_CONFIG
    if not path.is_file():
        return hf
    generation = read_json(path)
    start = generation.get("decoder_start_token_id", hf.get("decoder_start_token_id"))
    taken = (*(GENERATION_KEYS[:1] if "decoder_start_token_id" in generation else ()), *GENERATION_KEYS[1:])
    return {**hf, "decoder_start_token_id": start, **{key: generation.get(key) for key in GENERATION_KEYS[1:]},
            FROM_GENERATION_CONFIG: taken}


FROM_GENERATION_CONFIG = "(keys read from generation_config.json)"  # not a config key: says which file a key is from


def key_file(hf: dict[str, Any], key: str) -> str:
    """The file a key of with_generation_config's dict came from, for a message: generation_config.json or
    config.json."""
    return HF_GENERATION_CONFIG if key in hf.get(FROM_GENERATION_CONFIG, ()) else HF_CONFIG


def shown_value(value: Any) -> str:
    """A config value as a message shows it: short, and a huge number as its magnitude (10**30 as "1e+30", never cut
    to its first digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**12:
        return format(Decimal(value), ".3g")  # exact for any size, where float() overflows past 1e308
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 24 else text[:21] + "..."


def generation_meta(hf: dict[str, Any]) -> dict[str, Any]:
    """The decoding rules a converted checkpoint's meta records from generate()'s keys (the forced pieces are each
    family's to check): no_repeat_ngram_size, beam search's length penalty as generate() applies it, log P /
    |Y|^α with the config's α (Hugging Face's default 1.0 when it names none; one outside the app's 0-2 is left to
    the app's default), and its stopping rule early_stopping (Hugging Face's default False when it names none)."""
    stopping = hf.get("early_stopping")
    meta: dict[str, Any] = {"length_penalty_formula": "hf",
                            "early_stopping": stopping if is_early_stopping(stopping) else False}
    n = hf.get("no_repeat_ngram_size")
    if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 16:
        meta["no_repeat_ngram"] = n
    alpha = hf.get("length_penalty", 1.0)
    if alpha is None:
        alpha = 1.0
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0.0 <= alpha <= 2.0:
        meta["length_penalty"] = float(alpha)
    return meta


def write_conversion(model: Transformer, tokenizer: TextTokenizer, out: Path, hf: dict[str, Any], meta: dict[str, Any],
                     file: str, progress: Progress | None, **languages: Any) -> Conversion:
    """The last stage of every family's converter: the family's meta plus generate()'s decoding rules
    (generation_meta; keys without a value left out) saved with the model and tokenizer in ``out``, and what was
    written told back (``languages``: the Conversion fields a family knows, source_lang and target_lang at least)."""
    report(progress, Stage.WRITE)
    meta = {**meta, **generation_meta(hf)}
    save_checkpoint(model, tokenizer, out, meta={k: v for k, v in meta.items() if v is not None})
    return Conversion(path=out, config=model.config, weights_file=file, pickled=file == HF_PICKLE, **languages)


def read_tokenizer_json(folder: Path, pad_id: int, bos_id: int, eos_id: int) -> HFTokenizer:
    """The folder's tokenizer.json with config.json's special ids (its <unk> is the file's own piece)."""
    data = read_bytes(folder / HF_TOKENIZER_FILE, MAX_TOKENIZER_BYTES)
    try:
        return HFTokenizer(data, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None


def hf_get(hf: dict[str, Any], defaults: dict[str, Any]) -> Callable[[str], Any]:
    """A reader of config.json's keys with the family's defaults (an absent key means what Hugging Face assumes)."""
    return lambda key: hf.get(key, defaults[key])


def has_m2m100_tokenizer(folder: Path) -> bool:
    """Whether the folder holds M2M100's slow tokenizer (sentencepiece.bpe.model and vocab.json) and no
    tokenizer.json: what save_pretrained writes for facebook/m2m100_*."""
    return not (folder / HF_TOKENIZER_FILE).is_file() and all((folder / name).is_file() for name in M2M100_FILES[:2])


def read_m2m100_tokenizer(folder: Path, pad_id: int, bos_id: int, eos_id: int) -> M2M100Tokenizer:
    """M2M100's sentencepiece model, vocab.json and tokenizer_config.json (absent: English source, M2M100's language
    list), its <pad> and </s> checked against config.json's ids."""
    settings = folder / M2M100_FILES[2]
    try:
        proto, vocab = (read_bytes(folder / name, MAX_TOKENIZER_BYTES) for name in M2M100_FILES[:2])
        tokenizer = M2M100Tokenizer(proto, vocab,
                                    read_bytes(settings, MAX_CONFIG_BYTES) if settings.is_file() else b"{}",
                                    bos_id=bos_id)
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None
    if (tokenizer.pad_id, tokenizer.eos_id) != (pad_id, eos_id):
        raise CheckpointError(f"{M2M100_FILES[1]} does not match {HF_CONFIG}: <pad> and </s> are "
                              f"{tokenizer.pad_id} and {tokenizer.eos_id}, {HF_CONFIG} says {pad_id} and {eos_id}")
    return tokenizer
