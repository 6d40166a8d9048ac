"""One training run's settings as a value: a frozen, validated ``TrainConfig``, and the recipe files that hold one.

A recipe is a TOML file of ``key = value`` lines whose keys are TrainConfig's field names (``training/recipes/`` holds
every stage of the shipped model's lineage and every run of its recipe study); paths in it are relative to the
repository root, where training runs. ``python -m training.train --recipe NAME --set key=value`` reads one
(training.flags). A key the file leaves out keeps its default; the model's sizes and schedule (``PRESET_KEYS``)
default to the task's preset (training.presets), as the flags do.

Every check a run's settings pass is made here, on construction, so a config that exists is one ``training.train``
can run: a wrong type, a value out of range or settings that contradict each other raise ValueError with one line
naming the setting by its flag (``--copy-made-up`` is the key ``copy_made_up``). What only the data, the checkpoint
or the machine can tell (a corpus source, a head the model lacks, bf16 on this CPU) is checked when the run starts.

``dataclasses.replace`` keeps the preset values filled in on construction: to change ``task``, build a new config.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import re
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .presets import PRESETS

RECIPES = Path(__file__).resolve().parent / "recipes"  # training/recipes/<name>.toml
PRESET_KEYS = tuple(PRESETS["en-de"])  # the settings whose default is the task's own (training.presets)
SIDES = ("both", "source")  # --bpe-dropout-sides


def _preset(help: str) -> Any:
    """A preset setting's default, None until construction fills in the task's value."""
    return field(default=None, metadata={"help": help})


def _setting(default: Any, help: str = "") -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class TrainConfig:
    """Everything ``python -m training.train`` is told: one flag per field (``--d-model`` for ``d_model``)."""

    out: str = field(metadata={"help": "run directory (created; resumed if it holds last/)"})
    task: str = _setting("en-de")
    corpus: str = _setting("data/en-de.tsv.gz", "TSV with source, split, en, de (en-de task)")
    d_model: int = _preset("")
    n_heads: int = _preset("")
    layers: int = _preset("")
    d_ff: int = _preset("")
    vocab: int = _preset("")
    max_tokens: int = _preset("")
    warmup: int = _preset("")
    epochs: int = _preset("")
    max_len: int = _preset("")
    train_max_len: int = _preset("")
    valid_bleu: int = _preset("")
    lr_factor: float = _preset("")
    cooldown_epochs: int = _setting(0, "multiply the rate by a factor falling linearly from 1 to 0 over the last N "
                                    "of --epochs (training.schedule.cooldown; 0 = none)")
    dropout: float | None = _setting(None, "residual, attention and FFN dropout (default 0.1; with --init-from: the "
                                     "checkpoint's own unless given)")
    label_smoothing: float = _setting(0.1)
    bf16: bool = _setting(False, "bfloat16 autocast (faster on GPUs and on CPUs with native bf16, e.g. AMX; emulated "
                          "and far slower on others, so it is then refused)")
    device: str = _setting("auto", "auto (CUDA if present), cpu or cuda")
    threads: int = _setting(0, "torch threads (0 = torch's default)")
    save_every: int = _setting(100, "steps between resumable saves")
    keep_epochs: int = _setting(5, "keep the weights of the last N epochs in <out>/epochs/ for checkpoint averaging "
                                "(python -m training.average; 0 = none)")
    max_steps: int = _setting(0, "stop after this many steps in total (0 = no cap)")
    stop_minutes: float = _setting(0.0, "wall-clock budget of this launch: stop after the last epoch that ends within "
                                   "it, as fairseq's --stop-time-hours (0 = none; for a lent GPU's fixed minutes)")
    seed: int = _setting(1)
    copy_augment: int = _setting(0, "add N copies of every training pair that shares a name or number between its "
                                 "sides, that string replaced on both (training.augment)")
    copy_made_up: float = _setting(0.0, "with --copy-augment: the share (0-1) of substituted names made up from "
                                   "random syllables instead of taken from training.augment's list, whose names a "
                                   "model then learns rather than learning to copy")
    copy_subjects: bool = _setting(False, "with --copy-augment: also copy every pair that opens with He/She and "
                                   "Er/Sie, a name in the pronoun's place on both sides, so that names are copied at "
                                   "the start of a sentence too (training.augment)")
    copy_codes: float = _setting(0.0, "with --copy-augment: the share (0-1) of substituted numbers replaced by phone "
                                 "numbers and codes (\"0171 5550199\", \"LH 2041\"), shapes the corpus hardly has")
    copy_fresh: bool = _setting(False, "with --copy-augment: draw the copies anew every epoch (other names and "
                                "numbers in the same pairs) instead of once per run, so the model cannot learn the "
                                "substituted strings themselves")
    bpe_dropout: float = _setting(0.0, "segment the training pairs as BPE-dropout does, each merge skipped with this "
                                  "probability (e.g. 0.1), drawn anew every epoch; validation keeps the one "
                                  "segmentation inference uses (training.data.encode_pairs)")
    bpe_dropout_sides: Literal["both", "source"] = _setting(
        "both", "with --bpe-dropout: sample the pieces of both sides, or of the source only (the decoder learns to "
        "write the pieces inference writes from finer ones)")
    align_copies: float = _setting(0.0, "guided alignment of copies (e.g. 0.05): teach one cross-attention head to "
                                   "look at the source piece the decoder copies, this factor times its -log weight "
                                   "added to the loss (training.alignment)")
    align_head: str = _setting("", "with --align-copies: LAYER:HEAD of the supervised cross-attention head, counted "
                               "from 1 as the app does (default: the last layer's head 1)")
    train_sources: tuple[str, ...] = _setting((), "comma-separated corpus sources (its 'source' column) to train on, "
                                              "e.g. those of the test split's domains for a last in-domain stretch; "
                                              "the validation split is kept whole (default: every source)")
    snapshot_epochs: tuple[int, ...] = _setting((), "comma-separated epochs whose weights are kept for good in "
                                                "<out>/snapshots/<n> (the 'watch attention learn' snapshots, e.g. "
                                                "1,2,4,8,16)")
    init_from: str | None = _setting(None, "start a new run from this checkpoint's weights (e.g. the shipped model, "
                                     "to keep training it when its optimizer state is gone); Adam starts afresh")
    widen_ff: int = _setting(0, "with --init-from: widen every FFN to this many hidden units first, the new ones "
                             "silent so the model computes what it did (training.grow)")
    tokenizer: str | None = _setting(None, "a sentencepiece model to use instead of training one (e.g. another run's "
                                     "tokenizer.model); with --init-from of another vocabulary, the checkpoint's "
                                     "embeddings are carried over piece by piece (training.vocab_transfer)")
    start_step: int = _setting(0, "with --init-from: the schedule's step to start at (default: the checkpoint's own)")
    start_epoch: int = _setting(0, "with --init-from: epochs already done (default: the checkpoint's own)")

    def __post_init__(self) -> None:
        if self.task not in PRESETS:
            raise ValueError(f"--task is one of {', '.join(sorted(PRESETS))}: not {self.task!r}")
        for key, value in PRESETS[self.task].items():
            if getattr(self, key) is None:
                object.__setattr__(self, key, value)
        hints = field_types()
        for name in hints:
            object.__setattr__(self, name, _typed(name, hints[name], getattr(self, name)))
        object.__setattr__(self, "train_sources", tuple(source_names(",".join(self.train_sources))))
        _check(self)

    @property
    def per_epoch_draw(self) -> bool:
        """Whether each epoch trains on pairs of its own (--copy-fresh's copies, --bpe-dropout's pieces)."""
        return self.copy_fresh or self.bpe_dropout > 0


def source_names(sources: str) -> list[str]:
    """--train-sources as a sorted list of names ("wesnoth, ding" -> ["ding", "wesnoth"])."""
    return sorted({name.strip() for name in sources.split(",") if name.strip()})


def _check(c: TrainConfig) -> None:
    """The cross-checks of the settings, each refusal one line (the flags' messages since they were flags)."""
    for flag in ("copy_made_up", "copy_codes"):
        if not 0.0 <= getattr(c, flag) <= 1.0:
            raise ValueError(f"--{flag.replace('_', '-')} is a share from 0 to 1, not {getattr(c, flag):g}")
    if not 0.0 <= c.bpe_dropout < 1.0:
        raise ValueError("--bpe-dropout is a merge's probability of being skipped, 0 to below 1: "
                         f"not {c.bpe_dropout:g}")
    if c.bpe_dropout_sides not in SIDES:
        raise ValueError(f"--bpe-dropout-sides is {' or '.join(SIDES)}: not {c.bpe_dropout_sides!r}")
    if c.bpe_dropout_sides != "both" and not c.bpe_dropout:
        raise ValueError("--bpe-dropout-sides says where --bpe-dropout P samples: give P too")
    if c.bpe_dropout and c.task == "reverse":
        raise ValueError("--bpe-dropout samples the pieces of the en-de tokenizer; the reversal task's are whole words")
    if not (math.isfinite(c.align_copies) and c.align_copies >= 0):
        raise ValueError(f"--align-copies is a loss factor, 0 (off) or more: not {c.align_copies:g}")
    if c.align_head and not c.align_copies:
        raise ValueError("--align-head says which head --align-copies F supervises: give F too")
    if c.align_head and not re.fullmatch(r"[1-9]\d*:[1-9]\d*", c.align_head):
        raise ValueError(f"--align-head is LAYER:HEAD counted from 1, e.g. 3:1: not {c.align_head!r}")
    if c.widen_ff < 0:
        raise ValueError(f"--widen-ff is a number of hidden units, not {c.widen_ff}")
    if c.widen_ff and not c.init_from:
        raise ValueError("--widen-ff grows the model of --init-from: give that too (a new model takes --d-ff)")
    if c.copy_subjects and c.copy_augment <= 0:
        raise ValueError("--copy-subjects gives He/She pairs the copies of --copy-augment N: give N too")
    if c.cooldown_epochs < 0:
        raise ValueError("--cooldown-epochs counts the run's last epochs: 0 (none) or more")
    if c.train_sources and c.task == "reverse":
        raise ValueError("--train-sources picks sources of the en-de corpus; the reversal task has one")
    if c.copy_fresh and c.copy_augment <= 0:
        raise ValueError("--copy-fresh draws the copies of --copy-augment N anew each epoch: give N too")
    _check_ranges(c)


def _check_ranges(c: TrainConfig) -> None:
    """Numbers that no run can use (a zero warm-up divides by zero, a negative count means nothing)."""
    for name in ("d_model", "n_heads", "layers", "d_ff", "vocab", "max_tokens", "warmup", "epochs", "max_len",
                 "train_max_len", "valid_bleu", "save_every"):
        if getattr(c, name) < 1:
            raise ValueError(f"{_flag(name)} is a count, 1 or more: not {getattr(c, name)}")
    for name in ("threads", "keep_epochs", "max_steps", "seed", "copy_augment", "start_step", "start_epoch"):
        if getattr(c, name) < 0:
            raise ValueError(f"{_flag(name)} is 0 or more: not {getattr(c, name)}")
    if not (math.isfinite(c.lr_factor) and c.lr_factor > 0):
        raise ValueError(f"--lr-factor multiplies the schedule's rate: above 0, not {c.lr_factor:g}")
    for name in ("dropout", "label_smoothing"):
        value = getattr(c, name)
        if value is not None and not 0.0 <= value < 1.0:
            raise ValueError(f"{_flag(name)} is a probability, 0 to below 1: not {value:g}")
    if not (math.isfinite(c.stop_minutes) and c.stop_minutes >= 0):
        raise ValueError(f"--stop-minutes is a budget in minutes, 0 (none) or more: not {c.stop_minutes:g}")
    if any(epoch < 1 for epoch in c.snapshot_epochs):
        raise ValueError(f"--snapshot-epochs counts epochs from 1: not {list(c.snapshot_epochs)}")
    if not c.out:
        raise ValueError("--out names the run directory: give one")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# Types ---------------------------------------------------------------------------------------------------------

_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


@functools.cache
def field_types() -> dict[str, Any]:
    """TrainConfig's field types, resolved once (the annotations are strings under __future__.annotations)."""
    return typing.get_type_hints(TrainConfig)


def field_kind(hint: Any) -> tuple[Any, bool, bool]:
    """(scalar type, optional, a tuple of them) of a field's type: int, float | None, tuple[str, ...]."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return next(a for a in args if a is not type(None)), True, False
    if typing.get_origin(hint) is tuple:
        return args[0], False, True
    if typing.get_origin(hint) is Literal:  # checked against its values with the other settings
        return str, False, False
    return hint, False, False


def _scalar_ok(kind: Any, value: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _typed(name: str, hint: Any, value: Any) -> Any:
    """``value`` as field ``name`` holds it (an int for a float field becomes a float, a list a tuple), or a
    ValueError naming the type it should have."""
    kind, optional, many = field_kind(hint)
    if value is None and optional:
        return None
    if many:
        if isinstance(value, list | tuple) and all(_scalar_ok(kind, v) for v in value):
            return tuple(kind(v) for v in value)
        raise ValueError(f"{name} takes a list of {_WORDS[kind].removeprefix('a ')}s, not {_shown(value)}")
    if _scalar_ok(kind, value):
        return kind(value)
    raise ValueError(f"{name} takes {_WORDS[kind]}, not {_shown(value)}")


def _shown(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def parse_value(name: str, text: str) -> Any:
    """A --set value as field ``name`` takes it: "3" for an int, "0.5" for a float, "true"/"false", a string as it
    is, "a,b" for a list, and "" for None where a field may be unset (--set init_from=)."""
    hints = field_types()
    if name not in hints:
        raise ValueError(f"no setting {name!r}{_close(name)}")
    kind, optional, many = field_kind(hints[name])
    if optional and text == "":
        return None
    if many:
        return [_parse_scalar(name, kind, part.strip()) for part in text.split(",") if part.strip()]
    return _parse_scalar(name, kind, text)


def _parse_scalar(name: str, kind: Any, text: str) -> Any:
    if kind is str:
        return text
    if kind is bool and text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        if kind is not bool:
            return kind(text)
    except ValueError:
        pass
    raise ValueError(f"{name} takes {_WORDS[kind]}, not {text!r}")


def _close(name: str) -> str:
    near = difflib.get_close_matches(name, field_types(), n=3)
    return f" (did you mean {', '.join(near)}?)" if near else f" (the settings: {', '.join(field_types())})"


# Recipes -------------------------------------------------------------------------------------------------------

def config_from(values: Mapping[str, Any]) -> TrainConfig:
    """A TrainConfig of ``values`` keyed by field name; an unknown key is refused (a typo would else be ignored)."""
    for key in values:
        if key not in field_types():
            raise ValueError(f"no setting {key!r}{_close(key)}")
    if "out" not in values:
        raise ValueError("no out: name the run directory, out = \"runs/NAME\" (or --set out=runs/NAME)")
    return TrainConfig(**values)


def recipe_path(name: str) -> Path:
    """training/recipes/NAME.toml, or NAME itself when it is a path to a .toml file (a run's own recipe.toml)."""
    if name.endswith(".toml"):
        return Path(name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ValueError(f"a recipe is a name in training/recipes or a .toml file: not {name!r}")
    return RECIPES / f"{name}.toml"


def recipe_names() -> list[str]:
    """The recipes in training/recipes, sorted."""
    return sorted(path.stem for path in RECIPES.glob("*.toml"))


def recipe_values(name: str) -> dict[str, Any]:
    """A recipe file's table as read (keys not yet checked)."""
    path = recipe_path(name)
    if not path.is_file():
        near = difflib.get_close_matches(name, recipe_names(), n=3)
        hint = f"did you mean {', '.join(near)}?" if near else "`ls training/recipes` lists them"
        shown = path if name.endswith(".toml") else f"training/recipes/{name}.toml"
        raise ValueError(f"no recipe {name!r} ({shown}): {hint}")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path} is no TOML: {error}") from None


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """--set KEY=VALUE items as {key: value}, each value parsed to its field's type."""
    values = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--set takes KEY=VALUE: not {item!r}")
        values[key.strip()] = parse_value(key.strip(), text)
    return values


def load_recipe(name: str, overrides: Sequence[str] = ()) -> TrainConfig:
    """The TrainConfig of recipe ``name`` with the --set ``overrides`` applied (a later one wins)."""
    values = recipe_values(name)
    try:
        return config_from({**values, **parse_overrides(overrides)})
    except ValueError as error:
        raise ValueError(f"recipe {name}: {error}") from None


def to_toml(config: TrainConfig) -> str:
    """``config`` as a recipe file: every setting that differs from its default, one ``key = value`` a line (the
    presets' values included, so the file holds the whole run)."""
    lines = []
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        if value is None or (item.name not in PRESET_KEYS and item.name != "out" and value == item.default):
            continue
        lines.append(f"{item.name} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else f"{'-' * (value < 0)}inf")
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")  # a TOML basic string
    return str(value)
