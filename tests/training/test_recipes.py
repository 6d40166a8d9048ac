"""Training runs as files: TrainConfig, the recipes of training/recipes/, --recipe and --set, and gpu_recipe.sh."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from training.config import RECIPES, SIDES, TrainConfig, config_from, load_recipe, recipe_names, to_toml
from training.flags import parse_args
from training.schedule import cooldown_span, training_segments
from training.train import main as train_main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "pretrained" / "en-de"
NAMES = recipe_names()
LINEAGE = [name for name in NAMES if name.startswith("lineage-")]


def comments(name: str) -> str:
    """A recipe's comment header as one line of words (its wrapped lines joined)."""
    lines = (RECIPES / f"{name}.toml").read_text().splitlines()
    return " ".join(line.lstrip("#").strip() for line in lines if line.startswith("#"))


def refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one line training.train's command line refuses ``argv`` with (exit status 2)."""
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("name", NAMES)
def test_every_recipe_loads_into_a_valid_config_with_repo_relative_paths(name: str) -> None:
    config = load_recipe(name)
    assert isinstance(config, TrainConfig)
    for path in (config.out, config.corpus, config.tokenizer, config.init_from):
        assert path is None or not Path(path).is_absolute()
    assert config.tokenizer is None or (ROOT / config.tokenizer).is_file()
    assert (ROOT / config.corpus).is_file() or "no longer in data/" in comments(name)
    assert comments(name).startswith(f"{name}: ")  # the header says what it is
    assert parse_args(["--recipe", name]) == config


def test_the_folder_holds_every_lineage_stage_and_every_study_row() -> None:
    study = pd.read_csv(SHIPPED / "study.csv").drop_duplicates(["setting", "start"])
    headers = {name: comments(name) for name in NAMES}
    for setting in study["setting"]:
        assert [name for name, text in headers.items() if f"study.csv row: {setting}" in text], setting
    assert len(LINEAGE) == len(training_segments(json.loads((SHIPPED / "config.json").read_text())["meta"]))


def test_each_lineage_recipe_trains_what_the_shipped_models_meta_records_for_its_stage() -> None:
    segments = training_segments(json.loads((SHIPPED / "config.json").read_text())["meta"])
    for name, segment in zip(LINEAGE, segments, strict=True):
        config = load_recipe(name)
        assert f"epochs {segment['first_epoch']}-{segment['last_epoch']}" in comments(name)
        assert config.epochs == segment["last_epoch"], name
        for key in ("lr_factor", "warmup", "max_tokens", "bf16", "label_smoothing", "copy_augment"):
            assert getattr(config, key) == segment[key], (name, key)
        for key in ("copy_made_up", "copy_codes", "copy_subjects", "copy_fresh"):
            assert getattr(config, key) == (segment[key] or type(getattr(config, key))()), (name, key)
        assert Path(config.corpus).name == segment["corpus"]
        assert (config.dropout or 0.1) == segment["dropout"]
        assert list(config.train_sources) == (segment["train_sources"] or [])
        span = cooldown_span(segment["cooldown"])
        assert config.cooldown_epochs == (span[1] - span[0] + 1 if span else 0)
        assert config.device == ("cpu" if segment["device"] == "CPU" else "cuda")
        assert config.widen_ff == (segment["widened_ff"] or [0, 0])[1]
        assert ("--nproc_per_node 2" in comments(name)) == (segment["processes"] == 2)


def test_the_readme_command_of_the_last_stage_is_the_recipe() -> None:
    """The flags path and the recipe path give equal configs for the shipped model's last stage (README's command
    for runs/en-de-dom, with the three settings the recipe states that the command left to its defaults)."""
    flags = ("--task en-de --corpus data/en-de-plus2-words.tsv.gz --out runs/en-de-dom --init-from runs/en-de-wc/avg "
             "--train-sources ding,dingwords,wesnoth,libreoffice,freeciv --copy-augment 4 --copy-made-up 0.5 "
             "--copy-codes 0.3 --copy-fresh --lr-factor 0.5 --max-tokens 8192 --warmup 1000 --bf16 --epochs 134 "
             "--cooldown-epochs 2 --keep-epochs 2").split()
    stated = ["--device", "cpu", "--valid-bleu", "100", "--tokenizer", "data/tokenizers/en-de-digits.model"]
    recipe = ["--recipe", "lineage-10-domains", "--set", "out=runs/en-de-dom", "init_from=runs/en-de-wc/avg"]
    assert parse_args(flags + stated) == parse_args(recipe)
    assert parse_args(flags) != parse_args(recipe)


def test_set_overrides_a_recipe_with_values_parsed_to_each_settings_type() -> None:
    config = parse_args(["--recipe", "lineage-10-domains", "--set", "epochs=136", "lr_factor=0.3", "bf16=false",
                         "train_sources=wesnoth, ding", "init_from=", "snapshot_epochs=1,4", "--set", "epochs=137"])
    assert (config.epochs, config.lr_factor, config.bf16, config.init_from) == (137, 0.3, False, None)
    assert (config.train_sources, config.snapshot_epochs) == (("ding", "wesnoth"), (1, 4))
    set_keys = {"epochs", "lr_factor", "bf16", "train_sources", "init_from", "snapshot_epochs"}
    def unset(c: TrainConfig) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(c).items() if k not in set_keys}

    assert unset(config) == unset(load_recipe("lineage-10-domains"))


@pytest.mark.parametrize("argv, said", [
    (["--set", "epoch=3"], "no setting 'epoch' (did you mean epochs"),  # unknown key
    (["--set", "epochs=3.5"], "epochs takes a whole number, not '3.5'"),  # bad type
    (["--set", "bf16=yes please"], "bf16 takes true or false"),
    (["--set", "copy_made_up=1.5"], "--copy-made-up is a share from 0 to 1, not 1.5"),  # bad value
    (["--set", "copy_augment=0"], "--copy-fresh draws the copies of --copy-augment N anew each epoch"),
    (["--set", "epochs"], "--set takes KEY=VALUE: not 'epochs'"),
    (["--epochs", "3"], "instead of --epochs, write --set epochs=..."),  # flags beside --recipe
    (["--set", "epochs=3", "--bf16"], "instead of --bf16, write --set bf16=..."),
])
def test_a_bad_override_is_refused_in_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    err = refusal(capsys, ["--recipe", "lineage-10-domains", *argv])
    assert said in err and err.startswith("python -m training.train: error: ")


@pytest.mark.parametrize("text, said", [
    ('out = "runs/x"\nepoch = 3\n', "no setting 'epoch'"),
    ('out = "runs/x"\nepochs = "3"\n', "epochs takes a whole number, not '3' (str)"),
    ('out = "runs/x"\nbf16 = 1\n', "bf16 takes true or false, not 1 (int)"),
    ('out = "runs/x"\ntrain_sources = "ding"\n', "train_sources takes a list of strings, not 'ding' (str)"),
    ('out = "runs/x"\n[model]\nd_model = 3\n', "no setting 'model'"),
    ('out = "runs/x"\ntask = "reverse"\nbpe_dropout = 0.1\n', "the reversal task's are whole words"),
    ('out = "runs/x"\nwarmup = 0\n', "--warmup is a count, 1 or more: not 0"),
    ("epochs = 3\n", "no out: name the run directory"),
    ("epochs = \n", "is no TOML"),
])
def test_a_bad_recipe_file_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                  said: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert said in refusal(capsys, ["--recipe", str(path)])


def test_an_unknown_recipe_is_refused_with_the_names_near_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert "did you mean lineage-10-domains" in refusal(capsys, ["--recipe", "lineage-10-domain"])
    assert "is a name in training/recipes or a .toml file" in refusal(capsys, ["--recipe", "../etc/x"])


def test_the_flags_keep_their_refusals_and_set_needs_a_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--out", "x", "--set", "epochs=3"])
    assert "--set overrides the settings of a --recipe" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--out", "x", "--snapshot-epochs", "1,x"])
    assert "--snapshot-epochs" in capsys.readouterr().err


def test_a_config_is_frozen_and_fills_in_its_tasks_preset() -> None:
    config = TrainConfig(out="x", task="reverse")
    assert (config.d_model, config.lr_factor, config.epochs) == (64, 1.0, 20)
    assert TrainConfig(out="x", task="reverse", d_model=64) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.epochs = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="--task is one of en-de, reverse: not 'de-en'"):
        TrainConfig(out="x", task="de-en")
    assert config_from({"out": "x", "lr_factor": 1}).lr_factor == 1.0  # a TOML integer is a number too


# Valid settings of every kind: the flags they make, the recipe file they make and TrainConfig itself agree.
NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=8)
PATH = st.builds(lambda parts: "/".join(parts), st.lists(NAME, min_size=1, max_size=3)).map(lambda p: "runs/" + p)
SHARE = st.floats(0.0, 1.0, allow_nan=False)
SETTINGS: dict[str, st.SearchStrategy[Any]] = {
    "task": st.sampled_from(["en-de", "reverse"]), "corpus": PATH, "d_model": st.integers(1, 1024),
    "n_heads": st.integers(1, 16), "layers": st.integers(1, 6), "d_ff": st.integers(1, 4096),
    "vocab": st.integers(1, 32000), "max_tokens": st.integers(1, 65536), "warmup": st.integers(1, 8000),
    "epochs": st.integers(1, 200), "valid_bleu": st.integers(1, 400), "lr_factor": st.floats(0.01, 4.0),
    "cooldown_epochs": st.integers(0, 5), "dropout": st.floats(0.0, 0.9), "label_smoothing": st.floats(0.0, 0.5),
    "bf16": st.booleans(), "device": st.sampled_from(["auto", "cpu", "cuda"]), "threads": st.integers(0, 8),
    "save_every": st.integers(1, 1000), "keep_epochs": st.integers(0, 9), "max_steps": st.integers(0, 10**6),
    "stop_minutes": st.floats(0.0, 600.0), "seed": st.integers(0, 10**6), "copy_augment": st.integers(0, 12),
    "copy_made_up": SHARE, "copy_subjects": st.booleans(), "copy_codes": SHARE, "copy_fresh": st.booleans(),
    "bpe_dropout": st.floats(0.0, 0.5), "bpe_dropout_sides": st.sampled_from(SIDES),
    "align_copies": st.floats(0.0, 2.0), "align_head": st.sampled_from(["", "1:1", "3:4"]),
    "train_sources": st.lists(NAME, max_size=3), "snapshot_epochs": st.lists(st.integers(1, 64), max_size=4),
    "init_from": PATH, "widen_ff": st.integers(0, 4096), "tokenizer": PATH, "start_step": st.integers(0, 10**5),
    "start_epoch": st.integers(0, 200),
}


def flags_of(values: dict[str, Any]) -> list[str]:
    argv = []
    for key, value in values.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            argv += [flag] if value else []
        elif isinstance(value, list):
            argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    return argv


def repaired(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with what the cross-checks demand (a --copy-fresh needs copies, ...), so few draws are refused."""
    values = dict(values)
    if values.get("copy_subjects") or values.get("copy_fresh"):
        values["copy_augment"] = max(1, values.get("copy_augment", 0))
    if values.get("widen_ff"):
        values.setdefault("init_from", "runs/init")
    if values.get("align_head"):
        values["align_copies"] = values.get("align_copies") or 0.5
    if values.get("bpe_dropout_sides") == "source":
        values["bpe_dropout"] = values.get("bpe_dropout") or 0.1
    if values.get("task") == "reverse":
        for key in ("bpe_dropout", "bpe_dropout_sides", "train_sources"):
            values.pop(key, None)
    return values


@given(st.fixed_dictionaries({"out": PATH}, optional=SETTINGS).map(repaired))
def test_any_valid_flags_give_the_config_a_recipe_with_those_keys_gives(values: dict[str, Any]) -> None:
    try:
        config = config_from(values)
    except ValueError:
        assume(False)
        raise
    assert parse_args(flags_of(values)) == config
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.toml"
        path.write_text(to_toml(config))
        assert load_recipe(str(path)) == config
        path.write_text("\n".join(f"{key} = {json.dumps(value)}" for key, value in values.items()))
        assert load_recipe(str(path)) == config  # the keys as written, the rest from the defaults and the preset


@pytest.mark.slow
def test_a_run_writes_its_settings_as_a_recipe_that_resumes_it(tmp_path: Path) -> None:
    from tests.training.test_train import TINY

    run = tmp_path / "run"
    assert train_main([*TINY, "--out", str(run), "--max-steps", "2"]) == 0
    config = parse_args([*TINY, "--out", str(run), "--max-steps", "2"])
    assert load_recipe(str(run / "recipe.toml")) == config
    assert train_main(["--recipe", str(run / "recipe.toml"), "--set", "max_steps=4"]) == 0
    assert json.loads((run / "last" / "state.json").read_text())["step"] == 4
    assert load_recipe(str(run / "recipe.toml")) == dataclasses.replace(config, max_steps=4)


GPU_RECIPE = ROOT / "training" / "gpu_recipe.sh"
OVERRIDES = ("INIT", "START_STEP", "EPOCHS", "CORPUS", "MAX_TOKENS", "WARMUP", "LR_FACTOR", "SET", "MINUTES")


def gpu_recipe(tmp_path: Path, variants: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in OVERRIDES}
    env.update(PY=sys.executable, DEVICE="cpu", OUT=str(tmp_path / "out"), RUNS=str(tmp_path / "runs"),
               VARIANTS=variants)
    return subprocess.run(["bash", str(GPU_RECIPE)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_gpu_recipe_is_valid_bash_and_trains_recipes_by_name() -> None:
    assert subprocess.run(["bash", "-n", str(GPU_RECIPE)], capture_output=True).returncode == 0
    default = next(line for line in GPU_RECIPE.read_text().splitlines() if line.startswith("VARIANTS="))
    assert all(name in NAMES for name in default.split(":-")[1].rstrip("}").split())


@pytest.mark.parametrize("variants, said", [("aug2=2 aug4=4", "not aug2's colon-encoded flags"),
                                            ("lineage-01-scratch no-such-recipe", "no recipe 'no-such-recipe'")])
def test_gpu_recipe_refuses_a_variant_before_any_run_starts(tmp_path: Path, variants: str, said: str) -> None:
    done = gpu_recipe(tmp_path, variants)
    assert done.returncode == 2 and said in done.stdout + done.stderr
    assert not list((tmp_path / "runs").glob("*.log"))  # nothing trained
