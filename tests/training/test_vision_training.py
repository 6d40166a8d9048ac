"""The vision training loop runs (two tiny steps, never a real training in CI) and its pieces behave."""
from __future__ import annotations

import csv
import json
from itertools import pairwise

import numpy as np
import pytest
import torch

from model.vision.checkpoint import load_vision
from model.vision.digits import Digits, load_digits
from training.vision import TrainSettings, lr_at, main, random_shift


def test_random_shift_moves_whole_images_by_at_most_one_pixel():
    images = torch.zeros(200, 8, 8, dtype=torch.uint8)
    images[:, 3:5, 3:5] = 16
    shifted = random_shift(images, 1, torch.Generator().manual_seed(0))
    assert shifted.shape == images.shape
    assert (shifted.sum((1, 2)) == images.sum((1, 2))).all(), "a centred blob never leaves the image"
    rows = shifted.amax(2).float().argmax(1)  # first inked row: 2, 3 or 4
    assert set(rows.tolist()) == {2, 3, 4}
    assert torch.equal(random_shift(images, 0, torch.Generator()), images)


def test_learning_rate_warms_up_then_decays_to_zero():
    rates = [lr_at(step, 100, 10, 1e-3) for step in range(100)]
    assert rates[9] == pytest.approx(1e-3) and rates[0] == pytest.approx(1e-4)
    assert all(a >= b for a, b in pairwise(rates[10:])) and rates[-1] < 1e-5


def test_settings_are_validated():
    with pytest.raises(ValueError):
        TrainSettings(epochs=0)
    with pytest.raises(ValueError):
        TrainSettings(label_smoothing=1.0)


@pytest.mark.parametrize("command", ["train-vit", "train-swin"])
def test_two_training_steps_write_a_loadable_checkpoint_log_and_card(tmp_path, command):
    data = load_digits()
    small = tmp_path / "digits.npz"
    keep = np.concatenate([np.flatnonzero(data.split == s)[:40] for s in range(3)])
    part = Digits(images=data.images[keep], labels=data.labels[keep], split=data.split[keep])
    np.savez(small, images=part.images, labels=part.labels, split=part.split,
             split_names=np.array(["train", "valid", "test"]))
    out = tmp_path / "run"
    assert main([command, "--out", str(out), "--data", str(small), "--epochs", "1", "--max-steps", "2",
                 "--batch-size", "8"]) == 0
    with (out / "epochs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]["step"] == "2"
    ckpt = load_vision(out)
    assert ckpt.kind == command.removeprefix("train-") and ckpt.meta["test_total"] == 40
    results = json.loads((out / "results.json").read_text())
    assert results["test_correct"] == ckpt.meta["test_correct"]
    assert f"**{results['test_correct']} / 40 = " in (out / "MODEL_CARD.md").read_text()
