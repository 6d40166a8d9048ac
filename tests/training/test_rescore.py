"""Rescoring a run's per-epoch BLEU/chrF on the same sentences (training.rescore)."""
import shutil

import pandas as pd
import torch

from model.checkpoints.files import load_checkpoint, update_meta
from tests.training.test_train import TINY
from training.evaluate import corpus_scores, translate_many
from training.rescore import kept_epochs, rescore
from training.train import main as train_main

ENGLISH, GERMAN = ["a b c d", "e f g", "h i j k l"], ["d c b a", "g f e", "l k j i h"]


def test_every_kept_epoch_of_the_run_is_scored_again_and_the_rest_stay(tmp_path):
    run = tmp_path / "run"
    assert train_main([*TINY, "--out", str(run), "--epochs", "3", "--keep-epochs", "2"]) == 0
    epochs = pd.read_csv(run / "epochs.csv")
    side = tmp_path / "side"  # another run's epoch 3 (other steps): not this run's epoch 3
    shutil.copytree(run / "epochs" / "3", side / "3")
    update_meta(side / "3", steps=int(epochs["step"].iloc[-1]) + 7)
    kept = kept_epochs(epochs, [run / "epochs", side])
    assert kept == {2: run / "epochs" / "2", 3: run / "epochs" / "3"}
    out = rescore(epochs, kept, ENGLISH, GERMAN)
    for epoch in (2, 3):
        ckpt = load_checkpoint(kept[epoch])
        with torch.no_grad():
            expected = corpus_scores(translate_many(ckpt.model.eval(), ckpt.tokenizer, ENGLISH, 1), GERMAN)
        row = out[out["epoch"] == epoch].iloc[0]
        assert (row["valid_bleu"], row["valid_chrf"]) == (expected["bleu"], expected["chrf"])
    assert out[out["epoch"] == 1].equals(epochs[epochs["epoch"] == 1])  # its weights are gone: as it was
    assert out.drop(columns=["valid_bleu", "valid_chrf"]).equals(epochs.drop(columns=["valid_bleu", "valid_chrf"]))
