"""--train-sources: a stretch of training on some of the corpus's sources (the test split's domains), validated on
the whole validation split, and recorded so the model card names it."""
from pathlib import Path

import pandas as pd
import pytest
import torch

from model.checkpoints.meta import clean_meta
from training.card_text import recipe_lines
from training.distributed import Ranks
from training.train import build_or_resume, parse_args

TOKENIZER = Path(__file__).resolve().parents[2] / "pretrained" / "en-de" / "tokenizer.model"
ROWS = [("ding", "train", "The house is small.", "Das Haus ist klein."),
        ("ding", "train", "Then Anna came at 5.", "Dann kam Anna um 5."),
        ("lohelp", "train", "Click the button.", "Klicken Sie auf die Schaltfläche."),
        ("wesnoth", "train", "The orcs are coming!", "Die Orks kommen!"),
        ("lohelp", "valid", "Open the file.", "Öffnen Sie die Datei."),
        ("ding", "valid", "The dog sleeps.", "Der Hund schläft.")]


def _run(tmp_path, *flags):
    tmp_path.mkdir(exist_ok=True)
    corpus = tmp_path / "corpus.tsv.gz"
    pd.DataFrame(ROWS, columns=["source", "split", "en", "de"]).to_csv(corpus, sep="\t", index=False)
    args = parse_args(["--task", "en-de", "--corpus", str(corpus), "--tokenizer", str(TOKENIZER), "--out",
                       str(tmp_path / "run"), "--d-model", "16", "--n-heads", "2", "--layers", "1", "--d-ff", "32",
                       *flags])
    return build_or_resume(args, Ranks(rank=0, world=1, device=torch.device("cpu")))


@pytest.mark.parametrize("fresh", [[], ["--copy-augment", "2", "--copy-fresh"]])
def test_only_the_named_sources_train_and_the_validation_split_stays_whole(tmp_path, fresh):
    whole = _run(tmp_path / "whole", *fresh)
    cut = _run(tmp_path / "cut", "--train-sources", "wesnoth, ding", *fresh)
    sources = {tuple(src) for src, _ in cut.epoch_pairs()}
    for source, split, en, _ in ROWS:
        if split == "train":
            assert (tuple(cut.tokenizer.encode_source(en)) in sources) == (source in {"ding", "wesnoth"})
    assert len(cut.epoch_pairs()) < len(whole.epoch_pairs())
    assert cut.valid_pairs == whole.valid_pairs and len(cut.valid_pairs) == 2  # lohelp's validation pair too
    meta = cut.meta()
    assert meta["train_sources"] == ["ding", "wesnoth"] and "train_sources" not in whole.meta()
    assert "training pairs from ding, wesnoth only (validation split whole)" in recipe_lines(clean_meta(meta))[1]


def test_a_source_with_no_training_pair_is_refused_with_the_ones_there_are(tmp_path):
    with pytest.raises(SystemExit, match=r"no training pair comes from \['ding_typo'\].*'lohelp'"):
        _run(tmp_path, "--train-sources", "ding_typo,wesnoth")


def test_the_reversal_task_has_no_sources_to_pick(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--task", "reverse", "--out", "unused", "--train-sources", "ding"])
    assert "--train-sources picks sources of the en-de corpus" in capsys.readouterr().err


@pytest.mark.parametrize("value, kept", [(["ding", "wesnoth"], True), ([], False), (["ding", 3], False),
                                         (["x" * 41], False), (["a\nb"], False)])
def test_an_uploaded_meta_keeps_train_sources_only_as_training_writes_them(value, kept):
    """The card prints the names; a checkpoint's meta says what its author likes."""
    meta = clean_meta({"train_sources": value, "continued_from": {"step": 5, "train_sources": value}})
    assert ("train_sources" in meta) == kept and ("train_sources" in meta["continued_from"]) == kept
