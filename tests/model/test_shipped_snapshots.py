"""The snapshots shipped beside the models (pretrained/*/snapshots/, the Heads page's "Watch attention learn"):
each loads, is an earlier stage of the same recipe (the model's tokenizer and shape, fewer steps; FFNs the lineage
widened later may be narrower), says what it is, and all of them together stay small."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from model.checkpoints.files import SNAPSHOTS, checkpoint_snapshots, load_checkpoint
from model.checkpoints.shards import SHARD_BYTES
from training.schedule import training_segments

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
MAX_PRETRAINED_BYTES = 100 * 10**6  # everything the project ships in pretrained/, snapshots included (issue 31)
SHIPPED = ("en-de", "reverse", "vit-digits", "swin-digits")  # a model a user converted there is not ours


@pytest.mark.parametrize("name", ["en-de", "reverse"])
def test_every_shipped_snapshot_is_an_earlier_stage_of_its_model(name):
    model = load_checkpoint(PRETRAINED / name)
    snapshots = checkpoint_snapshots(PRETRAINED / name)
    assert len(snapshots) >= 2
    steps = [meta["steps"] for _, meta in snapshots.values()]
    assert steps == sorted(steps) and steps[-1] < model.meta["steps"]
    for path, meta in snapshots.values():
        snapshot = load_checkpoint(path)
        assert snapshot.tokenizer.files() == model.tokenizer.files()
        # the same heads, layers and vocabulary; an FFN width only as the lineage recorded widening it
        assert replace(snapshot.config, d_ff=model.config.d_ff) == model.config
        if snapshot.config.d_ff != model.config.d_ff:
            assert [snapshot.config.d_ff, model.config.d_ff] in [s["widened_ff"] for s in training_segments(model.meta)]
        assert meta["snapshot"] and isinstance(meta["valid_loss"], float) and isinstance(meta["epochs"], int)
        assert meta["valid_loss"] > model.meta["valid_loss"]  # earlier means worse on validation


def test_the_shipped_models_and_their_snapshots_fit_the_budget():
    files = [f for name in SHIPPED for f in (PRETRAINED / name).rglob("*") if f.is_file()]
    assert any(SNAPSHOTS in f.parts for f in files) and sum(f.stat().st_size for f in files) < MAX_PRETRAINED_BYTES
    # training.export shards as training does: no shipped file over 16 MiB (light in git, through a lent machine)
    assert max(f.stat().st_size for f in files) <= SHARD_BYTES
