"""The recipe study's table: every run's validation epochs gathered (a continued run from its own first epoch),
summarised per setting, and shown in the model card."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from model.checkpoints.files import load_checkpoint
from training.average import validation_losses
from training.card import study_table
from training.card_sections import new_sources_section, study_section
from training.study import COMPARE_EPOCH, STUDY_FILE, collect, main, rescored, summary


def write_run(directory, losses, first_epoch=1):
    directory.mkdir()
    epochs = range(first_epoch, first_epoch + len(losses))
    pd.DataFrame({"epoch": list(epochs), "step": [100 * e for e in epochs], "train_loss": 0.0,
                  "valid_loss": losses, "valid_bleu": [e / 10 for e in epochs],
                  "valid_chrf": [float(e) for e in epochs],
                  "elapsed_s": 1}).to_csv(directory / "epochs.csv", index=False)
    return directory


def test_a_study_gathers_runs_and_ranks_them_on_validation(tmp_path, capsys):
    scratch = write_run(tmp_path / "a", [6.0 - 0.3 * i for i in range(10)])  # epochs 1-10, best at 10
    continued = write_run(tmp_path / "b", [3.0, 2.9, 2.8, 2.95])  # epochs 1-4 inherited from what it continued
    study = collect([("baseline", "scratch", scratch, 1), ("more dropout", "epoch 2", continued, 3)])
    assert list(study["setting"].unique()) == ["baseline", "more dropout"]
    assert study[study["setting"] == "more dropout"]["epoch"].tolist() == [3, 4]  # only its own epochs
    table = summary(study).set_index("setting")
    assert table.loc["baseline", "epochs"] == "1-10" and table.loc["baseline", "steps"] == 1000
    assert table.loc["baseline", "best valid loss (epoch)"] == "3.300 (10)"
    assert table.loc["baseline", f"epoch {COMPARE_EPOCH}: loss / BLEU / chrF"] == "3.900 / 0.80 / 8.0"
    assert table.loc["more dropout", "best valid loss (epoch)"] == "2.800 (3)"
    assert table.loc["more dropout", "last valid loss"] == 2.95
    assert table.loc["more dropout", f"epoch {COMPARE_EPOCH}: loss / BLEU / chrF"] == ""  # not from scratch

    out = tmp_path / "model"
    out.mkdir()
    assert main(["--out", str(out / STUDY_FILE), "--run", f"baseline|scratch|{scratch}",
                 "--run", f"more dropout|epoch 2|{continued}|3"]) == 0
    lines = study_section(study_table(out))
    assert lines[0] == "## Recipe study (validation split only)"
    rows = [line for line in lines if line.startswith("| baseline") or line.startswith("| more dropout")]
    assert len(rows) == 2 and "3.300 (10)" in rows[0] and "2.800 (3)" in rows[1]
    assert study_section(study_table(tmp_path)) == []  # no study beside a model: no section


def test_a_malformed_run_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / STUDY_FILE), "--run", "only a setting"])
    with pytest.raises(SystemExit):  # nothing rescored, nothing to write: refused rather than silently ignored
        main(["--out", str(tmp_path / STUDY_FILE), "--update-epochs", "--run", f"x|scratch|{tmp_path}"])
    bad = tmp_path / "bad"
    bad.mkdir()
    pd.DataFrame({"epoch": [1], "valid_loss": [3.0]}).to_csv(bad / "epochs.csv", index=False)
    with pytest.raises(ValueError, match="step, valid_bleu, valid_chrf"):
        collect([("x", "scratch", bad, 1)])


def test_sources_added_to_the_corpus_are_scored_apart_from_the_comparable_test_split():
    def scores(*sources):
        return {"per_source": {s: {"bleu": 10.0 + i, "chrf": 30.0 + i, "n": 5 + i} for i, s in enumerate(sources)}}
    report = {"greedy": scores("ding", "wesnoth"), "beam4": scores("ding", "wesnoth")}
    extra = {"greedy": scores("ding", "wesnoth", "widelands"), "beam4": scores("ding", "wesnoth", "widelands")}
    extra["greedy"]["per_source"]["lohelp"] = {"bleu": 20.0, "chrf": 40.0, "n": 9}
    extra["beam4"]["per_source"]["lohelp"] = {"bleu": 21.0, "chrf": 41.0, "n": 9}
    lines = new_sources_section(report, extra)
    header = next(line for line in lines if line.startswith("| source"))
    assert header == "| source | test pairs | greedy BLEU / chrF | beam4 BLEU / chrF |"
    assert lines[-2:] == ["| lohelp | 9 | 20.0 / 40.0 | 21.0 / 41.0 |", "| widelands | 7 | 12.0 / 32.0 | 12.0 / 32.0 |"]
    assert new_sources_section(report, None) == [] and new_sources_section(report, report) == []


def test_rescoring_puts_every_kept_epoch_on_the_same_valid_sentences(tmp_path, tiny_checkpoint):
    """A run on a larger corpus logged its own valid split's loss: --rescore replaces it, for each epoch whose
    weights the run kept, by the loss on the comparable corpus's valid split."""
    corpus = tmp_path / "corpus.tsv"
    pd.DataFrame({"source": ["ding"] * 4, "split": ["valid", "valid", "train", "test"],
                  "en": ["The house is small.", "Where is the station?", "a b", "c d"],
                  "de": ["Das Haus ist klein.", "Wo ist der Bahnhof?", "a b", "c d"]}).to_csv(corpus, sep="\t",
                                                                                              index=False)
    run = write_run(tmp_path / "run", [3.0, 2.0])  # epochs 1 and 2; only epoch 2's weights kept
    shutil.copytree(tiny_checkpoint, run / "epochs" / "2")
    study = collect([("plus", "scratch", run, 1)])
    rescored_study = rescored(study, [("plus", "scratch", run, 1)], corpus)
    expected = validation_losses([load_checkpoint(tiny_checkpoint)], corpus)[0]
    assert rescored_study["valid_loss"].tolist() == [3.0, expected] and expected != 2.0
    assert study["valid_loss"].tolist() == [3.0, 2.0]  # the study itself is left as it was


def test_a_study_grows_and_its_rescored_losses_become_the_runs_curve(tmp_path, tiny_checkpoint):
    """A later session's run joins the study file without the earlier runs' directories (--keep), and the losses
    rescored on the comparable valid split replace the run's own in the epochs.csv that export ships."""
    corpus = tmp_path / "corpus.tsv"
    pd.DataFrame({"source": ["ding"] * 3, "split": ["valid", "valid", "train"],
                  "en": ["The house is small.", "Where is the station?", "a b"],
                  "de": ["Das Haus ist klein.", "Wo ist der Bahnhof?", "a b"]}).to_csv(corpus, sep="\t", index=False)
    out = tmp_path / STUDY_FILE
    earlier = write_run(tmp_path / "earlier", [3.0, 2.5])
    assert main(["--out", str(out), "--run", f"baseline|scratch|{earlier}"]) == 0
    shutil.rmtree(earlier)  # gone, as a run directory of an earlier session is
    later = write_run(tmp_path / "later", [2.5, 2.4, 2.3])  # epochs 1-2 inherited, epoch 3 its own and kept
    shutil.copytree(tiny_checkpoint, later / "epochs" / "3")
    assert main(["--out", str(out), "--keep", "--rescore", "--update-epochs", "--valid-corpus", str(corpus),
                 "--run", f"continued|the baseline (epoch 2)|{later}|3"]) == 0
    expected = validation_losses([load_checkpoint(tiny_checkpoint)], corpus)[0]
    study = pd.read_csv(out)
    assert study[["setting", "epoch"]].values.tolist() == [["baseline", 1], ["baseline", 2], ["continued", 3]]
    assert study["valid_loss"].tolist() == [3.0, 2.5, expected] and expected != 2.3
    assert pd.read_csv(later / "epochs.csv")["valid_loss"].tolist() == [2.5, 2.4, expected]
    assert main(["--out", str(out), "--keep", "--run", f"continued|the baseline (epoch 2)|{later}|2"]) == 0
    assert pd.read_csv(out)["epoch"].tolist() == [1, 2, 2, 3]  # a setting given again replaces its rows
