"""Choosing beam search's α on the validation split: what the test scores, the model card and the app rely on."""
import json
import math
import shutil
from pathlib import Path

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from app.models.registry import default_length_penalty
from app.state import DEFAULTS
from model.checkpoints.files import load_checkpoint
from model.checkpoints.meta import MAX_LENGTH_PENALTY, length_penalty_of
from training.evaluate import main as evaluate_main
from training.evaluate import translate_many
from training.length_penalty import best_alpha, sweep
from training.length_penalty import main as tune_main

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"


@given(st.lists(st.tuples(st.sampled_from([0.0, 0.3, 0.6, 1.0, 1.5, 2.0]), st.integers(0, 4)), min_size=1,
                unique_by=lambda row: row[0]))
def test_the_chosen_alpha_has_the_best_bleu_and_ties_go_to_the_papers(rows):
    table = pd.DataFrame([{"alpha": a, "bleu": float(b)} for a, b in rows])
    chosen = best_alpha(table)
    best = table["bleu"].max()
    assert table.loc[table["alpha"] == chosen, "bleu"].item() == best
    assert abs(chosen - 0.6) == min(abs(a - 0.6) for a in table.loc[table["bleu"] == best, "alpha"])


@given(st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.integers(-5, 5),
                 st.floats(allow_nan=True, allow_infinity=True)))
def test_a_checkpoint_alpha_is_used_only_if_it_is_a_number_in_the_sliders_range(value):
    alpha = length_penalty_of({"length_penalty": value})
    sane = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_LENGTH_PENALTY
    assert alpha == (float(value) if sane else 0.6) and math.isfinite(alpha)


def test_the_sweep_reads_the_validation_split_only_and_writes_its_choice_where_evaluation_reads_it(tmp_path):
    """Reversal task as a corpus whose test rows would score 0: the sweep's n and scores show only valid rows were
    read; --write puts the table beside the checkpoint and the α into its config.json, and training.evaluate then
    decodes with that α (and says so) unless told another."""
    ckpt_dir = tmp_path / "reverse"
    shutil.copytree(PRETRAINED / "reverse", ckpt_dir)
    rows = [("reverse", "valid", " ".join(w), " ".join(reversed(w))) for w in ("abcde", "hello", "world", "xyzzy")]
    rows += [("reverse", "test", "a b c", "garbage that matches nothing"), ("reverse", "train", "a b", "b a")]
    corpus = tmp_path / "corpus.tsv"
    pd.DataFrame(rows, columns=["source", "split", "en", "de"]).to_csv(corpus, sep="\t", index=False)
    assert tune_main(["--checkpoint", str(ckpt_dir), "--corpus", str(corpus), "--alphas", "0", "1.5",
                      "--write"]) == 0
    table = pd.read_csv(ckpt_dir / "length_penalty.csv")
    assert list(table["alpha"]) == [0.0, 1.5] and set(table["n"]) == {4} and table["bleu"].min() > 90
    chosen = best_alpha(table)
    assert load_checkpoint(ckpt_dir).length_penalty == chosen
    assert json.loads((ckpt_dir / "config.json").read_text())["meta"]["length_penalty"] == chosen
    out = tmp_path / "scores.json"
    assert evaluate_main(["--checkpoint", str(ckpt_dir), "--corpus", str(corpus), "--beam", "4", "--json",
                          str(out)]) == 0
    assert json.loads(out.read_text())["length_penalty"] == chosen
    assert evaluate_main(["--checkpoint", str(ckpt_dir), "--corpus", str(corpus), "--beam", "4",
                          "--length-penalty", "0.3", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["length_penalty"] == 0.3


def test_alpha_reaches_beam_search_and_a_larger_one_keeps_the_shipped_model_from_cutting_sentences_short():
    """The shipped en-de ends too early at α = 0 (raw log-prob favours short outputs); the sweep's α must reach the
    decoder, so a larger one gives longer outputs on the same sentences."""
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    english = ["My mother cooks dinner every evening for the whole family and the neighbours.",
               "She bought fresh bread at the bakery on the corner before she went to work.",
               "We visited our grandparents last weekend, and they told us about their long journey.",
               "The water in the lake is too cold for swimming, but the children went in anyway."]
    short = translate_many(ckpt.model, ckpt.tokenizer, english, beam_size=4, length_penalty=0.0)
    long = translate_many(ckpt.model, ckpt.tokenizer, english, beam_size=4, length_penalty=2.0)
    pieces = [sum(len(ckpt.tokenizer.encode(s)) for s in outputs) for outputs in (short, long)]
    assert pieces[0] < pieces[1]
    table = sweep(ckpt.model, ckpt.tokenizer, english, long, alphas=(0.0, 2.0))  # scored against α 2's outputs
    assert table["bleu"].iloc[1] == 100 and table["bleu"].iloc[0] < 100  # the sweep decodes with each α it names
    assert table["length_ratio"].iloc[0] <= table["length_ratio"].iloc[1] == 1


def test_the_app_starts_with_the_alpha_chosen_for_its_default_model():
    assert DEFAULTS["length_penalty"] == default_length_penalty("en-de") == \
        load_checkpoint(PRETRAINED / "en-de").length_penalty
