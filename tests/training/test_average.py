"""Checkpoint averaging (paper section 6.1) and the per-epoch checkpoints training keeps for it."""
from __future__ import annotations

import json

import pytest
import torch

from model.checkpoints.files import checkpoint_snapshots, load_checkpoint, save_checkpoint
from model.checkpoints.header import CheckpointError
from model.network.transformer import Transformer
from tests.conftest import tiny_config
from tests.training.test_train import TINY
from training.average import average_checkpoints
from training.average import main as average_main
from training.card import snapshot_metas
from training.card_sections import snapshots_section
from training.export import main as export_main
from training.train import main as train_main


def _saved(tmp_path, tokenizer, name: str, seed: int, steps: int, **config):
    torch.manual_seed(seed)
    model = Transformer(tiny_config(tokenizer.vocab_size, **config))
    return save_checkpoint(model, tokenizer, tmp_path / name, meta={"steps": steps, "epochs": steps // 10})


def test_the_average_is_the_element_wise_mean_and_keeps_the_newest_meta(tmp_path, tokenizer):
    paths = [_saved(tmp_path, tokenizer, f"e{i}", seed=i, steps=10 * (i + 1)) for i in range(3)]
    states = [load_checkpoint(p).model.state_dict() for p in paths]
    averaged = average_checkpoints([load_checkpoint(p) for p in paths])
    for name, tensor in averaged.model.state_dict().items():
        torch.testing.assert_close(tensor, (states[0][name] + states[1][name] + states[2][name]) / 3)
    assert averaged.meta["steps"] == 30  # where training stood: the newest input
    assert [a["steps"] for a in averaged.meta["averaged"]] == [10, 20, 30]


def test_checkpoints_of_different_shapes_are_refused_with_a_message(tmp_path, tokenizer, capsys):
    a = _saved(tmp_path, tokenizer, "a", seed=0, steps=10)
    b = _saved(tmp_path, tokenizer, "b", seed=1, steps=20, d_ff=64)
    with pytest.raises(CheckpointError, match="another configuration"):
        average_checkpoints([load_checkpoint(a), load_checkpoint(b)])
    assert average_main([str(a), str(b), "--out", str(tmp_path / "avg")]) == 2
    assert "another configuration" in capsys.readouterr().err
    assert not (tmp_path / "avg").exists()


@pytest.mark.slow
def test_training_keeps_the_last_epochs_and_their_average_can_be_shipped(tmp_path):
    run = tmp_path / "run"
    assert train_main([*TINY, "--out", str(run), "--epochs", "3", "--keep-epochs", "2", "--max-tokens", "16384"]) == 0
    kept = sorted(p.name for p in (run / "epochs").iterdir())
    assert kept == ["2", "3"]  # epoch 1 was dropped once two newer ones existed
    assert [load_checkpoint(run / "epochs" / e).meta["epochs"] for e in kept] == [2, 3]
    assert average_main([str(run / "epochs" / "2"), str(run / "epochs" / "3"), "--out", str(run / "avg")]) == 0
    assert export_main(["--run", str(run), "--which", "avg", "--out", str(tmp_path / "shipped")]) == 0
    shipped = load_checkpoint(tmp_path / "shipped")
    assert [a["epochs"] for a in shipped.meta["averaged"]] == [2, 3]
    assert json.loads((tmp_path / "shipped" / "config.json").read_text())["meta"]["epochs"] == 3
    assert (tmp_path / "shipped" / "epochs.csv").exists()  # the run's curves travel with it


def test_epochs_ship_as_snapshots_listed_in_training_order(tmp_path, tokenizer, capsys):
    run = tmp_path / "run"
    for epoch in (1, 2):
        _saved(run / "epochs", tokenizer, str(epoch), seed=epoch, steps=10 * epoch)
    (run / "epochs.csv").write_text("epoch,step,train_loss,valid_loss\n1,10,5.0,4.5\n2,20,4.0,3.25\n")
    (run / "log.csv").write_text("step,loss\n")
    shipped = tmp_path / "pretrained" / "m"
    for epoch, name in ((2, "late"), (1, "early")):  # names out of training order on purpose
        assert export_main(["--run", str(run), "--which", f"epochs/{epoch}", "--out", str(shipped / "snapshots" / name),
                            "--snapshot", f"Epoch {epoch} of a test run"]) == 0
    (shipped / "snapshots" / "broken").mkdir()  # not a checkpoint: not listed
    listed = checkpoint_snapshots(shipped)
    assert list(listed) == ["early", "late"]
    assert [meta["valid_loss"] for _, meta in listed.values()] == [4.5, 3.25]
    assert listed["late"][1]["snapshot"] == "Epoch 2 of a test run"
    late = load_checkpoint(listed["late"][0])
    for name, tensor in late.model.state_dict().items():  # fp16 on disk, the same weights to fp16 precision
        torch.testing.assert_close(tensor,
                                   load_checkpoint(run / "epochs" / "2").model.state_dict()[name].half().float())
    assert (sorted(p.name for p in listed["late"][0].iterdir())
            == ["config.json", "model.safetensors", "tokenizer.model"])
    assert checkpoint_snapshots(tmp_path / "pretrained" / "none") == {}
    card = snapshots_section(snapshot_metas(shipped))  # the card's table: one row per snapshot, in training order
    assert card[0] == "## Snapshots of earlier training"
    assert [line.split("|")[1].strip() for line in card if line.startswith("| `")] == ["`snapshots/early`",
                                                                                    "`snapshots/late`"]
    assert snapshots_section(snapshot_metas(tmp_path / "pretrained" / "none")) == []
    with pytest.raises(SystemExit):  # a description the app would drop (over 100 characters) is refused up front
        export_main(["--run", str(run), "--which", "epochs/1", "--out", str(tmp_path / "x"), "--snapshot", "a" * 101])
    assert not (tmp_path / "x").exists()


def test_a_model_averaged_with_the_epochs_that_continued_it_says_what_it_is_the_mean_of(tmp_path, tokenizer):
    """The shipped model (itself the mean of epochs 8 and 9) averaged with two later epochs: four inputs of equal
    weight, and the card names the epochs inside the earlier mean rather than calling it epoch 9."""
    from training.card_text import which_weights

    earlier = average_checkpoints([load_checkpoint(_saved(tmp_path, tokenizer, f"e{e}", seed=e, steps=10 * e))
                                   for e in (8, 9)])
    save_checkpoint(earlier.model, earlier.tokenizer, tmp_path / "shipped", meta=earlier.meta)
    later = [load_checkpoint(_saved(tmp_path, tokenizer, f"e{e}", seed=e, steps=10 * e)) for e in (10, 11)]
    mean = average_checkpoints([load_checkpoint(tmp_path / "shipped"), *later])
    assert [a["epochs"] for a in mean.meta["averaged"][0]["averaged"]] == [8, 9]
    assert which_weights({**mean.meta, "valid_loss": 2.5}) == (
        "this checkpoint is the mean of the weights after epochs 10, 11 and of the model that was the mean of epochs "
        "8, 9 (validation loss 2.5, 3 inputs of equal weight): checkpoint averaging, as the paper did for its base "
        "models (section 6.1).")
    assert which_weights({"averaged": [{"epochs": 3}, {"epochs": 2}]}) == (
        "this checkpoint is the mean of the weights after epochs 2, 3: checkpoint averaging, as the paper did for its "
        "base models (section 6.1).")
    later_one = average_checkpoints([load_checkpoint(tmp_path / "shipped"), later[0]])  # the shipped model's shape
    assert which_weights(later_one.meta).startswith("this checkpoint is the mean of the weights after epoch 10 and "
                                                     "of the model that was the mean of epochs 8, 9 (2 inputs")


def test_a_single_epoch_is_named_with_its_validation_loss():
    """A shipped epoch that no mean beat (a cooled-down run's last) is named, with the loss it was chosen by."""
    from training.card_text import which_weights

    assert which_weights({"epochs": 134, "valid_loss": 2.4502}) == (
        "this checkpoint is epoch 134, the epoch with the lowest validation loss (2.4502).")
    assert which_weights({}) == "this checkpoint is the epoch with the lowest validation loss."
