"""training.train's command line: a TrainConfig from the flags, or from a recipe file with --set overrides.

    python -m training.train --task en-de --out runs/en-de --epochs 10          # flags: one per TrainConfig field
    python -m training.train --recipe lineage-10-domains --set device=cuda     # training/recipes/<name>.toml
    python -m training.train --recipe runs/x/recipe.toml --set epochs=12        # a run's own recipe, resumed further

The flags are TrainConfig's fields (``--d-model`` sets ``d_model``; a true/false field is a switch, ``--bf16``; a list
is comma-separated, ``--train-sources ding,wesnoth``), with the help and defaults the fields carry.

--recipe takes every setting from the file and the --set KEY=VALUE items after it (each value parsed to the field's
type; the last --set of a key wins). Any other flag beside --recipe is refused, naming the --set that says it, so that
a run's settings come from one place and a recipe read later is the run that ran. Refusals of a recipe (no such
file, an unknown key, a wrong type, a bad value) are one line and exit status 2, as argparse's are.

    python -m training.flags --recipe lineage-10-domains --set epochs=136   # the settings it gives, as a recipe file

prints the TrainConfig that training.train's arguments give, as TOML, without training (training/gpu_recipe.sh
checks its recipes so before any run starts).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .config import PRESET_KEYS, SIDES, TrainConfig, field_kind, field_types, load_recipe, parse_value, to_toml
from .presets import PRESETS

PROG = "python -m training.train"


def build_parser(description: str = "") -> argparse.ArgumentParser:
    """One flag per TrainConfig field, typed by the field (the preset ones default to None: the task's value)."""
    parser = argparse.ArgumentParser(prog=PROG, description=description)
    hints = field_types()
    for item in dataclasses.fields(TrainConfig):
        name, flag = item.name, "--" + item.name.replace("_", "-")
        kind, _, many = field_kind(hints[name])
        extra: dict[str, Any] = {"help": item.metadata.get("help") or None, "dest": name}
        if kind is bool:
            parser.add_argument(flag, action="store_true", **extra)
            continue
        if many:
            extra["type"] = _list_of(name)
        else:
            extra["type"] = kind
        if name == "task":
            extra["choices"] = sorted(PRESETS)
        if name == "bpe_dropout_sides":
            extra["choices"] = list(SIDES)
        if name == "out":
            parser.add_argument(flag, required=True, **extra)
        else:
            parser.add_argument(flag, default=None if name in PRESET_KEYS else item.default, **extra)
    parser.add_argument("--recipe", metavar="NAME", help="read the settings from training/recipes/NAME.toml (or a "
                        ".toml path) instead of these flags; only --set may stand beside it")
    parser.add_argument("--set", metavar="KEY=VALUE", nargs="+", help="with --recipe: override one of its settings")
    return parser


def _list_of(name: str) -> Any:
    """argparse's type for a comma-separated list flag (--train-sources, --snapshot-epochs)."""
    def parse(text: str) -> tuple[Any, ...]:
        return tuple(parse_value(name, text))

    parse.__name__ = "comma-separated list"  # argparse names the type in its refusal
    return parse


def parse_args(argv: Sequence[str] | None, description: str = "") -> TrainConfig:
    """The run's TrainConfig: from --recipe NAME and its --set items when argv holds --recipe, else from the flags."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(arg == "--recipe" or arg.startswith("--recipe=") for arg in argv):
        return _from_recipe(argv)
    parser = build_parser(description)
    args = parser.parse_args(argv)
    if args.set:
        parser.error("--set overrides the settings of a --recipe: without one, give the flags themselves")
    values = {k: v for k, v in vars(args).items() if k not in ("recipe", "set")}
    try:
        return TrainConfig(**values)
    except ValueError as error:
        parser.error(str(error))


def _from_recipe(argv: list[str]) -> TrainConfig:
    parser = argparse.ArgumentParser(prog=PROG, add_help=False)
    parser.add_argument("--recipe", required=True)
    parser.add_argument("--set", nargs="+", action="extend", default=[])
    args, rest = parser.parse_known_args(argv)
    if rest:
        first = next((arg for arg in rest if arg.startswith("--")), rest[0])
        key = first.removeprefix("--").partition("=")[0].replace("-", "_")
        said = f"--set {key}=..." if key in field_types() else "--set KEY=VALUE"
        _refuse(f"--recipe takes its settings from the file and --set only: instead of {first}, write {said}")
    try:
        return load_recipe(args.recipe, args.set)
    except ValueError as error:
        _refuse(str(error))


def _refuse(message: str) -> NoReturn:
    """One line on stderr and exit status 2 (argparse's status for a refused command line)."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    print(to_toml(parse_args(argv, "Print the settings training.train's arguments give, as a recipe file.")), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
