"""The committed corpus is what training and the model card rely on."""
from pathlib import Path

from training.data import load_corpus

CORPUS = Path(__file__).resolve().parents[2] / "data" / "en-de.tsv.gz"


def test_committed_corpus_has_fixed_disjoint_stratified_splits():
    frame = load_corpus(CORPUS)
    assert set(frame["split"]) == {"train", "valid", "test"}
    assert set(frame["source"]) == {"ding", "wesnoth", "libreoffice", "freeciv"}
    sizes = frame["split"].value_counts()
    assert sizes["test"] >= 1000 and sizes["valid"] >= 1000 and sizes["train"] > 60000
    english = {split: set(group["en"]) for split, group in frame.groupby("split")}
    assert not english["test"] & english["train"] and not english["valid"] & english["train"]
    assert not english["test"] & english["valid"]
    for source, group in frame.groupby("source"):  # every source is represented in the test split
        assert (group["split"] == "test").sum() >= 0.015 * len(group), source
    assert (frame["en"].str.strip() != "").all() and (frame["de"].str.strip() != "").all()
