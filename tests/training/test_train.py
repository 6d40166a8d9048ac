import csv
import json
import math
import time
from string import ascii_lowercase as LETTERS

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from explain.model_training import smoothed_targets
from model.checkpoints.files import load_checkpoint
from model.network.transformer import Transformer
from model.tokenization.joint import train_tokenizer
from tests.conftest import tiny_config
from training.card_text import recipe_lines
from training.data import encode_pairs
from training.distributed import Ranks
from training.loss import validation_loss
from training.schedule import cooldown, noam_lr, training_segments
from training.train import main as train_main
from training.train import out_of_time

TINY = ["--task", "reverse", "--d-model", "32", "--n-heads", "2", "--layers", "1", "--d-ff", "64", "--warmup", "10",
        "--valid-bleu", "5", "--save-every", "10", "--threads", "1"]


def read_log(run):
    with (run / "log.csv").open() as f:
        return [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]


@pytest.mark.slow
def test_a_few_steps_lower_the_loss_and_resume_continues_from_the_saved_step(tmp_path):
    run = tmp_path / "run"
    assert train_main([*TINY, "--out", str(run), "--max-steps", "40"]) == 0
    log = read_log(run)
    assert [s for s, _ in log] == list(range(1, 41))
    first, last = sum(l for _, l in log[:5]) / 5, sum(l for _, l in log[-5:]) / 5
    assert last < first - 0.3
    state = json.loads((run / "last" / "state.json").read_text())
    assert state["step"] == 40 and state["batch"] == 40
    assert train_main([*TINY, "--out", str(run), "--max-steps", "50"]) == 0
    log = read_log(run)
    assert [s for s, _ in log] == list(range(1, 51))  # continued at 41, nothing repeated or lost
    assert json.loads((run / "last" / "state.json").read_text())["step"] == 50
    assert (run / "last" / "optimizer.safetensors").exists() and (run / "tokenizer.model").exists()


def test_warmup_schedule_rises_linearly_then_decays_as_inverse_sqrt():
    assert noam_lr(100, 512, 4000) == pytest.approx(100 * 512 ** -0.5 * 4000 ** -1.5)
    peak = noam_lr(4000, 512, 4000)
    assert peak == pytest.approx((512 * 4000) ** -0.5)
    assert noam_lr(3999, 512, 4000) < peak and noam_lr(4001, 512, 4000) < peak
    assert noam_lr(16000, 512, 4000) == pytest.approx(peak / 2)


@given(epochs_left=st.floats(-1, 50), later=st.floats(0, 50), n=st.integers(1, 10))
def test_the_cooldown_falls_linearly_to_zero_over_the_last_epochs_and_never_rises(epochs_left, later, n):
    factor = cooldown(epochs_left, n)
    assert 0.0 <= factor <= 1.0
    assert factor == (1.0 if epochs_left >= n else pytest.approx(max(epochs_left, 0.0) / n))
    assert cooldown(epochs_left + later, n) >= factor  # earlier in the run: never a lower rate
    assert cooldown(epochs_left, 0) == 1.0  # no cool-down: the paper's schedule as it is


def test_a_negative_cooldown_is_refused_rather_than_read_as_none(capsys):
    from training.train import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--task", "reverse", "--out", "unused", "--cooldown-epochs", "-1"])
    assert "--cooldown-epochs counts the run's last epochs" in capsys.readouterr().err


def _plain_run(tmp_path):
    run = tmp_path / "plain"
    assert train_main([*TINY, "--out", str(run), "--max-steps", "2"]) == 0
    return run / "last"


@pytest.mark.slow
def test_a_cooldown_run_keeps_the_papers_rate_then_cools_it_to_almost_zero(tmp_path):
    """--cooldown-epochs 1 of 2: the first epoch trains at noam_lr, the second at noam_lr times a factor falling
    from 1 to 1/batches, and the checkpoint's recipe says so (the card names it)."""
    run = tmp_path / "run"
    assert train_main([*TINY, "--out", str(run), "--epochs", "2", "--cooldown-epochs", "1"]) == 0
    with (run / "log.csv").open() as f:
        rows = [(int(r["step"]), int(r["epoch"]), float(r["lr"])) for r in csv.DictReader(f)]
    first = [(s, lr) for s, e, lr in rows if e == 1]
    second = [(s, lr) for s, e, lr in rows if e == 2]
    assert all(lr == pytest.approx(noam_lr(s, 32, 10), rel=1e-4) for s, lr in first)
    n = len(second)
    for i, (s, lr) in enumerate(second):
        assert lr == pytest.approx(noam_lr(s, 32, 10) * (n - i) / n, rel=1e-4)
    assert second[-1][1] < first[-1][1] / (n - 1)  # the last step at a sliver of the rate
    meta = load_checkpoint(run / "last").meta
    assert meta["cooldown"] == [2, 2]
    assert "falling linearly to 0 over epoch 2;" in recipe_lines(meta)[1]
    assert "over epochs 2-4 (these weights are from epoch 2, before it reached 0);" in recipe_lines(
        {**meta, "cooldown": [2, 4]})[1]  # a kept epoch, or a run --stop-minutes ended early
    assert "cooldown" not in load_checkpoint(_plain_run(tmp_path)).meta  # no cool-down: nothing claimed


def test_smoothed_targets_are_what_torch_label_smoothing_uses():
    logits = torch.randn(6, 11)
    target = torch.tensor([0, 3, 5, 10, 2, 2])
    dist = smoothed_targets(target, 11, 0.1)
    assert torch.allclose(dist.sum(-1), torch.ones(6))
    assert dist[0, 0] == pytest.approx(0.9 + 0.1 / 11)
    manual = -(dist * logits.log_softmax(-1)).sum(-1).mean()
    assert torch.allclose(manual, F.cross_entropy(logits, target, label_smoothing=0.1), atol=1e-6)


@pytest.mark.slow
def test_init_from_continues_a_checkpoint_and_its_history_without_its_optimizer(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert train_main([*TINY, "--out", str(first), "--max-steps", "20"]) == 0
    shipped = first / "last"  # shaped like an exported model: weights, config, tokenizer and the run's log
    (shipped / "log.csv").write_bytes((first / "log.csv").read_bytes())
    assert train_main([*TINY, "--out", str(second), "--init-from", str(shipped), "--lr-factor", "0.5",
                       "--dropout", "0.3", "--max-steps", "25"]) == 0
    log = read_log(second)
    assert [s for s, _ in log] == list(range(1, 26))  # the shipped history, then steps 21..25
    assert log[:20] == read_log(first)
    assert (second / "tokenizer.model").read_bytes() == (first / "tokenizer.model").read_bytes()
    assert log[20][1] < log[0][1] - 0.3  # it starts from the trained weights, not from scratch
    meta = json.loads((second / "last" / "config.json").read_text())["meta"]
    assert meta["steps"] == 25 and meta["lr_factor"] == 0.5
    assert meta["continued_from"]["step"] == 20 and meta["continued_from"]["lr_factor"] == 1.0
    # --dropout holds for a continued model too (it keeps the weights), and every segment records its own
    config = json.loads((second / "last" / "config.json").read_text())["model"]
    assert config["dropout"] == 0.3 and meta["dropout"] == 0.3 and meta["continued_from"]["dropout"] == 0.1
    # resumed: its own 0.3
    assert train_main([*TINY, "--out", str(second), "--lr-factor", "0.5", "--max-steps", "26"]) == 0
    assert json.loads((second / "last" / "config.json").read_text())["model"]["dropout"] == 0.3
    third = tmp_path / "third"  # continuing the continuation keeps the first recipe too
    assert train_main([*TINY, "--out", str(third), "--init-from", str(second / "last"), "--max-steps", "28"]) == 0
    segments = training_segments(json.loads((third / "last" / "config.json").read_text())["meta"])
    assert ([(s["first_step"], s["last_step"], s["lr_factor"]) for s in segments]
            == [(1, 20, 1.0), (21, 26, 0.5), (27, 28, 1.0)])
    assert [s["dropout"] for s in segments] == [0.1, 0.3, 0.3]  # without --dropout a continuation keeps the model's


def test_training_segments_follow_every_continuation_of_a_checkpoint():
    """A model continued twice keeps all three recipes (the model card and the LR chart name them)."""
    meta = {"steps": 300, "epochs": 9, "lr_factor": 0.5, "warmup": 80, "max_tokens": 512, "bf16": False, "processes": 2,
            "continued_from": {"step": 200, "epoch": 6, "lr_factor": 0.5, "warmup": 80, "max_tokens": 512,
                               "bf16": False, "earlier": {"step": 100, "epoch": 3, "lr_factor": 1.0, "warmup": 80,
                                                          "max_tokens": 1024, "bf16": True}}}
    segments = training_segments(meta)
    assert [(s["first_step"], s["last_step"], s["first_epoch"], s["last_epoch"]) for s in segments] == [
        (1, 100, 1, 3), (101, 200, 4, 6), (201, 300, 7, 9)]
    assert [s["lr_factor"] for s in segments] == [1.0, 0.5, 0.5] and segments[0]["max_tokens"] == 1024
    recipe = "\n".join(recipe_lines(meta))
    assert "steps 1-100 (epochs 1-3): learning rate factor 1.0" in recipe and "bf16 autocast: True" in recipe
    assert "steps 201-300 (epochs 7-9) (continued from the checkpoint before, Adam restarted)" in recipe
    # a torchrun segment says its step took a batch per process; one recorded before torchrun reads as one process
    assert "512 tokens per side on each of 2 processes (torchrun; one optimizer step takes 2 batches)" in recipe
    assert recipe.count("processes") == 1
    assert training_segments({"steps": 50, "epochs": 2, "lr_factor": 1.0})[0]["last_step"] == 50


@pytest.mark.parametrize("mode", [False, True])
def test_validation_loss_has_no_dropout_and_leaves_the_model_in_its_mode(tokenizer, mode):
    """Training validates mid-run (and goes on training); the card and the study validate a loaded checkpoint and
    then decode it, which must not happen with dropout on."""
    torch.manual_seed(0)
    model = Transformer(tiny_config(tokenizer.vocab_size, dropout=0.5)).train(mode)
    pairs = encode_pairs(tokenizer, ["the house is small", "where is the station"], ["das haus", "wo ist er"], 64)
    first = validation_loss(model, pairs, 256)
    assert model.training == mode
    assert validation_loss(model, pairs, 256) == first  # deterministic: dropout off while validating


@pytest.mark.slow
def test_init_from_with_another_tokenizer_carries_the_weights_over_to_its_vocabulary(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert train_main([*TINY, "--out", str(first), "--max-steps", "30"]) == 0
    # The same 26 letters, numbered in another order (sentencepiece numbers pieces by frequency).
    other = train_tokenizer([" ".join(LETTERS[::-1][:k]) for k in range(1, 27) for _ in range(3)], 30,
                            model_type="word")
    (tmp_path / "other.model").write_bytes(other.model_proto)
    assert train_main([*TINY, "--out", str(second), "--init-from", str(first / "last"), "--tokenizer",
                       str(tmp_path / "other.model"), "--max-steps", "32"]) == 0
    moved = load_checkpoint(second / "last")
    before = load_checkpoint(first / "last")
    assert moved.config.vocab_size == other.vocab_size and before.tokenizer.model_proto != other.model_proto
    assert (second / "tokenizer.model").read_bytes() == other.model_proto
    meta = moved.meta
    assert meta["continued_from"]["step"] == 30 and meta["continued_from"]["vocabulary_after"]
    log = read_log(second)
    assert log[0][0] == 31 and log[0][1] < read_log(first)[0][1] - 0.3  # from what 30 steps learned, not scratch
    third = tmp_path / "third"  # a run that has a tokenizer of its own, continuing a model of another vocabulary
    third.mkdir()
    (third / "tokenizer.model").write_bytes(before.tokenizer.model_proto)
    with pytest.raises(SystemExit, match="--tokenizer"):  # said, not guessed
        train_main([*TINY, "--out", str(third), "--init-from", str(second / "last"), "--max-steps", "33"])


def test_out_of_time_stops_before_an_epoch_that_would_end_past_the_deadline():
    one = Ranks(rank=0, world=1, device=torch.device("cpu"))
    now = time.perf_counter()
    assert not out_of_time(now + 60, epoch_seconds=10, ranks=one)  # room for another epoch
    assert out_of_time(now + 60, epoch_seconds=70, ranks=one)  # the next one would end a minute late
    assert not out_of_time(math.inf, epoch_seconds=1e9, ranks=one)  # no budget given


@pytest.mark.slow
def test_stop_minutes_ends_the_run_after_the_last_epoch_that_fits_with_everything_saved(tmp_path, capsys):
    run = tmp_path / "run"
    assert train_main([*TINY, "--out", str(run), "--epochs", "3", "--stop-minutes", "0.001"]) == 0
    assert "another epoch would end after --stop-minutes" in capsys.readouterr().out
    with (run / "epochs.csv").open() as f:
        assert [row["epoch"] for row in csv.DictReader(f)] == ["1"]  # epochs 2 and 3 did not fit
    assert json.loads((run / "last" / "state.json").read_text())["epoch"] == 1  # a rerun resumes at epoch 2
    meta = load_checkpoint(run / "best").meta
    assert meta["device"] == "CPU" and meta["valid_sentences"] == 5  # the card says where and on how many
    assert (meta["copy_augment"], meta["copy_made_up"], meta["copy_codes"], meta["copy_subjects"],
            meta["copy_fresh"]) == (0, 0.0, 0.0, False, False)  # and what it copied


def test_the_card_says_where_each_stretch_of_training_ran():
    from training.card_text import where_trained

    gpu = {"step": 6864, "epoch": 39, "lr_factor": 1.0, "warmup": 3000, "max_tokens": 16384, "bf16": True,
           "device": "CUDA (NVIDIA H100 80GB HBM3)"}
    meta = {"steps": 7800, "epochs": 45, "lr_factor": 0.7, "warmup": 3000, "max_tokens": 8192, "bf16": True,
            "processes": 2, "device": "CPU", "continued_from": gpu}
    assert where_trained(meta).startswith("on one NVIDIA H100 80GB HBM3 GPU then on shared 2-core ")
    recipe = recipe_lines(meta)
    assert (recipe[1].startswith("  - steps 1-6864 (epochs 1-39): ")
            and recipe[1].endswith("on CUDA (NVIDIA H100 80GB HBM3);"))
    assert recipe[2].startswith("  - steps 6865-7800 (epochs 40-45) (continued") and recipe[2].endswith("on CPU.")
    assert "no GPU" in where_trained({"steps": 10, "epochs": 1})  # no device recorded (older checkpoints): shared CPUs


def test_the_card_names_each_stretch_of_trainings_copy_augmentation():
    """Which names and numbers each stretch was taught to copy is part of the recipe; a stretch recorded before
    the copy settings were says nothing about them rather than guessing."""
    older = {"step": 100, "epoch": 3, "lr_factor": 1.0, "warmup": 80, "max_tokens": 512, "bf16": True}
    listed = {"step": 200, "epoch": 6, "lr_factor": 1.0, "warmup": 80, "max_tokens": 512, "bf16": True,
              "copy_augment": 4, "copy_made_up": 0.0, "copy_codes": 0.0, "earlier": older}
    meta = {"steps": 300, "epochs": 9, "lr_factor": 0.7, "warmup": 80, "max_tokens": 512, "bf16": True,
            "copy_augment": 4, "copy_made_up": 0.5, "copy_codes": 0.3, "continued_from": listed}
    first, second, third = recipe_lines(meta)[1:]
    assert "copy" not in first
    assert second.endswith("; copy augmentation 4;")
    assert third.endswith("; copy augmentation 4 (50% of the names made up, 30% of the numbers turned into codes).")
    assert recipe_lines({**meta, "copy_augment": 0, "continued_from": None})[1].endswith("; no copy augmentation.")
    assert recipe_lines({**meta, "copy_subjects": True})[3].endswith(
        "; copy augmentation 4 (50% of the names made up, 30% of the numbers turned into codes, He/She openings "
        "turned into names).")
    assert "; BPE-dropout 0.1 (each epoch's pieces sampled anew);" in recipe_lines({**meta, "bpe_dropout": 0.1})[3]
    assert "; BPE-dropout 0.1 on the source side only (each epoch's pieces sampled anew);" in recipe_lines(
        {**meta, "bpe_dropout": 0.1, "bpe_dropout_sides": "source"})[3]
    assert "BPE-dropout" not in "".join(recipe_lines(meta))
    assert recipe_lines({**meta, "copy_fresh": True})[3].endswith(
        "; copy augmentation 4 (50% of the names made up, 30% of the numbers turned into codes, drawn anew each "
        "epoch).")
