"""Evaluation and the model card: the numbers a reader of pretrained/*/MODEL_CARD.md relies on."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from model.checkpoints.files import load_checkpoint
from model.decoding.search import DecodeResult, decode_steps
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.serving.inference import translate
from training.card import build_card
from training.data import load_corpus, reversal_corpus
from training.diagnostics import source_reliance
from training.evaluate import EVERYDAY, NAMES_HELDOUT, NAMES_NUMBERS, carried_over, corpus_scores, translate_many
from training.evaluate import main as evaluate_main

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "en-de.tsv.gz"


@pytest.fixture(scope="module")
def reversal_tsv(tmp_path_factory):
    """The reversal model's own task (seed 1, as trained) as a corpus file: 200 train and 40 test rows."""
    frame = reversal_corpus(seed=1)
    frame = pd.concat([frame.query("split == 'train'").head(200), frame.query("split == 'test'").head(40)])
    path = tmp_path_factory.mktemp("corpus") / "reverse.tsv"
    frame.to_csv(path, sep="\t", index=False)
    return path


def reversal_tsv_rows_by_length(path) -> dict[str, int]:
    words = pd.read_csv(path, sep="\t").query("split == 'test'")["en"].str.split().str.len()
    bins = {"1-5 words": (1, 5), "6-10 words": (6, 10), "11-20 words": (11, 20), "over 20 words": (21, 10**6)}
    counts = {label: int(words.between(lo, hi).sum()) for label, (lo, hi) in bins.items()}
    return {label: n for label, n in counts.items() if n}


def test_evaluation_scores_the_reversal_model_near_perfect_and_shows_it_reads_its_source(reversal_tsv, tmp_path):
    out = tmp_path / "scores.json"
    assert evaluate_main(["--checkpoint", str(PRETRAINED / "reverse"), "--corpus", str(reversal_tsv),
                          "--split", "test", "--beam", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["greedy"]["overall"]["n"] == 40 and report["greedy"]["overall"]["bleu"] > 90
    assert report["greedy"]["per_source"]["reverse"]["n"] == 40
    # Scored again by source length (a reversal input has one "word" per letter): every row in exactly one bin.
    lengths = reversal_tsv_rows_by_length(reversal_tsv)
    assert {k: v["n"] for k, v in report["greedy"]["per_length"].items()} == lengths
    d = report["diagnostics"]
    assert d["n"] == 40 and d["nll"] < 0.2 < 2.0 < d["nll_other_source"]  # another string's letters: useless
    # Reversing needs each output letter to read one source letter: the last layer's cross-attention is sharp.
    assert len(d["attention_entropy"]["cross"]) == 2 and d["attention_entropy"]["cross"][-1] < 0.2


@pytest.mark.slow  # over 5 s (measured 11 s): runs in CI, not in the quick loop
def test_shipped_en_de_uses_its_source(tmp_path):
    """Given another sentence's source, the shipped model must predict the references clearly worse:
    fails if cross-attention stopped carrying the source (or the weights lost their training)."""
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    frame = load_corpus(CORPUS)
    test = frame[frame["split"] == "test"].groupby("source").head(25)
    d = source_reliance(ckpt.model, ckpt.tokenizer, test, frame[frame["split"] == "train"])
    assert d["n"] == 100
    assert d["nll_other_source"] - d["nll"] > 0.5
    assert d["nll_train_sample"] < d["nll"]  # it has learned from its training pairs
    # The collapse that kept an earlier model from translating: first-layer encoder heads each fixed on one
    # token (spread 0.02). Spread out, the encoder's positions stay distinct for cross-attention to tell apart.
    assert d["attention_entropy"]["encoder_self"][0] > 0.2


def test_card_reports_the_measured_numbers(reversal_tsv, tmp_path):
    report = {"split": "test",
              "greedy": {"overall": {"bleu": 99.1, "chrf": 99.5, "n": 40},
                         "per_source": {"reverse": {"bleu": 99.1, "chrf": 99.5, "n": 40}}},
              "diagnostics": {"nll": 0.05, "nll_other_source": 5.25, "nll_train_sample": 0.04, "n": 40,
                              "attention_entropy": {"cross": [0.95, 0.9], "encoder_self": [0.05, 0.3]}}}
    report["greedy"]["per_length"] = {"over 20 words": {"bleu": 90.0, "chrf": 95.0, "n": 15},
                                      "1-5 words": {"bleu": 100.0, "chrf": 100.0, "n": 25}}
    card = build_card(PRETRAINED / "reverse", report, reversal_tsv, n_examples=2)
    assert "| greedy | 99.1 | 99.5 | 99.1 / 99.5 (n=40) |" in card
    assert "| decoding | 1-5 words BLEU / chrF | over 20 words BLEU / chrF |" in card  # shortest first
    assert "| greedy | 100.0 / 100.0 (n=25) | 90.0 / 95.0 (n=15) |" in card
    assert "| their own source sentences | 0.05 |" in card and "worth 5.20 nats" in card
    assert "under-fits" in card and "does not translate reliably" not in card  # BLEU >= WEAK_BLEU: no warning
    assert "cross-attention 0.95, 0.90; encoder self-attention 0.05, 0.30" in card
    assert "has not learned to align" in card and "positions come out alike" in card
    assert card.count("| reverse |") == 2 + 1  # two examples and the per-source count row


@pytest.mark.parametrize("losses, says", [
    ([3.40, 3.30, 3.21, 3.15], ["falling by 0.083 per epoch", "3.400 -> 3.150",
                                "**it is undertrained**", "--epochs 17"]),
    ([3.130, 3.123, 3.118, 3.110], ["falling, slowly, by 0.007 per epoch", "3.130 -> 3.110", "buy a little each"]),
    ([3.130, 3.128, 3.127, 3.124], ["fell by only 0.002 per epoch", "3.130 -> 3.124", "would gain little"]),
])
def test_weak_model_warning_says_what_the_validation_curve_says(reversal_tsv, tmp_path, losses, says):
    """Under WEAK_BLEU the card warns, and whether more epochs would help is read from the last epochs' losses."""
    checkpoint = tmp_path / "weak"
    shutil.copytree(PRETRAINED / "reverse", checkpoint)
    rows = [{"epoch": e, "step": 100 * e, "train_loss": 4.0, "valid_loss": v, "valid_bleu": 5.0, "valid_chrf": 25.0,
             "elapsed_s": 60 * e} for e, v in enumerate([4.0, *losses], start=3)]
    pd.DataFrame(rows).to_csv(checkpoint / "epochs.csv", index=False)
    report = {"split": "test", "greedy": {"overall": {"bleu": 8.0, "chrf": 30.0, "n": 40},
                                          "per_source": {"reverse": {"bleu": 8.0, "chrf": 30.0, "n": 40}}}}
    card = build_card(checkpoint, report, reversal_tsv, n_examples=1)
    assert "**It does not translate reliably.**" in card
    for phrase in says:
        assert phrase in card


def test_card_examples_are_drawn_from_every_source_in_turn():
    """The corpus file is sorted, so its first test rows are quoted titles: the card must not show only those."""
    report = {"split": "test", "greedy": {"overall": {"bleu": 5.0, "chrf": 20.0, "n": 4}, "per_source": {}},
              "diagnostics": {"nll": 3.0, "nll_other_source": 4.0, "nll_train_sample": 2.9, "n": 4}}
    card = build_card(PRETRAINED / "en-de", report, CORPUS, n_examples=4)
    section = card.split("test-split examples")[1].split("## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert sorted(r[0].strip("| ") for r in rows) == ["ding", "freeciv", "libreoffice", "wesnoth"]
    assert not any(r[1].startswith(("'", '"')) for r in rows)


def test_everyday_sentences_are_in_no_corpus_and_have_one_reference_each():
    """'In no corpus' is what makes them a fair check of any model trained here: no row may leak into training."""
    everyday = pd.read_csv(EVERYDAY, sep="\t", keep_default_na=False)
    corpus = load_corpus(CORPUS)
    assert len(everyday) == 40 and list(everyday.columns) == ["en", "de"]
    assert (everyday["en"].str.len() > 0).all() and (everyday["de"].str.len() > 0).all()
    seen = set(corpus["en"].str.lower().str.strip())
    assert not [s for s in everyday["en"] if s.lower().strip() in seen]


def test_card_scores_the_everyday_sentences_it_lists(tmp_path):
    everyday = tmp_path / "everyday.tsv"
    pd.DataFrame({"en": ["The children are playing in the garden.", "Where can I buy a ticket?"],
                  "de": ["Die Kinder spielen im Garten.", "Wo kann ich eine Fahrkarte kaufen?"]}
                 ).to_csv(everyday, sep="\t", index=False)
    report = {"split": "test", "greedy": {"overall": {"bleu": 5.0, "chrf": 20.0, "n": 4}, "per_source": {}},
              "diagnostics": {"nll": 3.0, "nll_other_source": 4.0, "nll_train_sample": 2.9, "n": 4}}
    card = build_card(PRETRAINED / "en-de", report, CORPUS, n_examples=1, everyday=everyday)
    section = card.split("## Everyday sentences (2 typed, in no corpus)")[1].split("\n## ")[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| The")
            or line.startswith("| Where")]
    assert [r[0].strip() for r in rows] == ["The children are playing in the garden.", "Where can I buy a ticket?"]
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    english = [r[0].strip() for r in rows]
    for column, beam in ((2, 1), (3, 4)):
        assert [r[column].strip() for r in rows] == translate_many(ckpt.model, ckpt.tokenizer, english, beam,
                                                                   length_penalty=ckpt.length_penalty)  # its α
    expected = corpus_scores([r[2].strip() for r in rows],
                             ["Die Kinder spielen im Garten.", "Wo kann ich eine Fahrkarte kaufen?"])
    assert f"| greedy | {expected['bleu']} | {expected['chrf']} |" in section


@pytest.mark.parametrize("path", [NAMES_NUMBERS, NAMES_HELDOUT])
def test_names_numbers_sets_are_in_no_corpus_and_every_keep_string_stands_on_both_sides(path):
    """A set measures copying: a keep string the reference itself lacks would count a correct output as a miss,
    a keep string inside another of its row would count one string twice, and a row from a training corpus (or
    from the other set) would measure memory instead."""
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    assert list(frame.columns) == ["en", "de", "keep"] and len(frame) >= 60
    keeps = [k.split(" | ") for k in frame["keep"]]
    assert sum(map(len, keeps)) >= 150
    assert not [(en, s) for en, de, keep in zip(frame["en"], frame["de"], keeps, strict=True)
                for s in keep if not s or s not in en or s not in de]
    assert not [(a, b) for keep in keeps for a in keep for b in keep if a != b and a in b]
    seen = {s.lower().strip() for s in pd.read_csv(NAMES_HELDOUT if path == NAMES_NUMBERS else NAMES_NUMBERS,
                                                      sep="\t", keep_default_na=False)["en"]}
    for path in sorted(CORPUS.parent.glob("en-de*.tsv.gz")):
        seen |= set(load_corpus(path)["en"].str.lower().str.strip())
    seen |= set(pd.read_csv(EVERYDAY, sep="\t", keep_default_na=False)["en"].str.lower().str.strip())
    assert not [s for s in frame["en"] if s.lower().strip() in seen]


def test_carried_over_counts_every_keep_string_and_lists_the_misses():
    report = carried_over(["Anna zahlte 250 Euro.", "Um 14:30 Uhr in Oslo."],
                          [["Anna", "250"], ["14:30", "Oslo", "314"]])
    assert report == {"share": 80.0, "n": 5, "misses": [(1, "314")]}
    assert carried_over(["Annatin zahlte 2500 Euro."], [["Anna", "250"]])["misses"] == [(0, "Anna"), (0, "250")]


def test_card_lists_the_share_carried_over_and_every_miss(tmp_path):
    path = tmp_path / "names.tsv"
    pd.DataFrame({"en": ["Anna paid 250 euros.", "Call 0199 4471 in Oslo."],
                  "de": ["Anna zahlte 250 Euro.", "Ruf 0199 4471 in Oslo an."],
                  "keep": ["Anna | 250", "0199 4471 | Oslo"]}).to_csv(path, sep="\t", index=False)
    report = {"split": "test", "greedy": {"overall": {"bleu": 5.0, "chrf": 20.0, "n": 4}, "per_source": {}},
              "diagnostics": {"nll": 3.0, "nll_other_source": 4.0, "nll_train_sample": 2.9, "n": 4}}
    heldout = tmp_path / "heldout.tsv"
    pd.DataFrame({"en": ["Kofi Mensah paid 95 euros in Bochum."], "de": ["Kofi Mensah zahlte in Bochum 95 Euro."],
                  "keep": ["Kofi Mensah | 95 | Bochum"]}).to_csv(heldout, sep="\t", index=False)
    card = build_card(PRETRAINED / "en-de", report, CORPUS, n_examples=1, names_numbers=path, names_heldout=heldout)
    section = card.split("## Names and numbers (2 sentences, 4 strings to carry over)")[1].split("\n### ")[0]
    held = card.split("### Held out from the keep rule (1 sentences, 3 strings)")[1].split("\n## ")[0]
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    size = sum(p.numel() for p in ckpt.model.parameters()) / 1e6  # the limitation names the model's own size
    assert f"It is small by design ({size:.1f}M\n  parameters, {ckpt.config.n_encoder_layers}+" in card
    for text, english, keeps in ((section, ["Anna paid 250 euros.", "Call 0199 4471 in Oslo."],
                                  [["Anna", "250"], ["0199 4471", "Oslo"]]),
                                 (held, ["Kofi Mensah paid 95 euros in Bochum."], [["Kofi Mensah", "95", "Bochum"]])):
        for key, beam in (("greedy", 1), ("beam 4", 4)):
            hyps = translate_many(ckpt.model, ckpt.tokenizer, english, beam, length_penalty=ckpt.length_penalty)
            carried = carried_over(hyps, keeps)
            assert f"| {key} | {carried['share']}% |" in text
            for row, string in carried["misses"]:  # each miss is listed with the translation that lost it
                assert f"| {key} | {string} | {english[row]} | {hyps[row]} |" in text


def test_batched_greedy_evaluation_gives_each_sentence_its_own_greedy_translation():
    """translate_many decodes greedy in length-sorted batches: each output, in input order, is what the sentence
    gets decoded alone (a wrong reorder or a padding leak would change the scores of the card)."""
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    english = ["Good morning.", "The old man who lives next door gave me the book yesterday.", "Thank you!",
               "On 14 March 2023, Dr. Anna Schmidt paid 1,250 euros for 3 tickets to Berlin.", "Where is it?"]
    config = DecodeConfig(beam_size=1, max_len=100)
    alone = []
    for text in english:
        ids = ckpt.tokenizer.encode_source(text, ckpt.model.config.max_len)
        steps = list(decode_steps(ckpt.model, torch.tensor(ids), config, capture=Capture.NONE))
        alone.append(ckpt.tokenizer.decode(DecodeResult.from_steps(steps, 1).best.tokens))
    assert translate_many(ckpt.model, ckpt.tokenizer, english, beam_size=1) == alone
    assert len(set(alone)) == len(alone)


def test_the_card_splits_names_the_augmentation_taught_from_names_it_never_saw_copied():
    """A name on training.augment's list was copied into training pairs, so carrying it over is no test of copying a
    new name: the card counts those apart, and every string falls in exactly one kind."""
    from training.augment import NAMES
    from training.card_sections import STRING_KINDS, carried_by_kind, names_numbers_section, string_kind

    assert string_kind("0171 5550199") == string_kind("LH 2041") == "numbers and codes"
    assert string_kind("Anna Schmidt") == "names on the augmentation's list" and {"Anna", "Schmidt"} <= set(NAMES)
    assert string_kind("Anna Zwirbelkamp") == "other names"  # one word not on the list: a new name
    keep = [["Anna", "2023"], ["Zeynep Kaya"], ["Oslo", "17"]]
    hyps = ["Anna 2023", "Zeynep Kaja", "Osloer 17"]  # misses: "Zeynep Kaya" (other), "Oslo" (on the list)
    report = {"en": ["a", "b", "c"], "keep": keep,
              **{key: {"carried": carried_over(hyps, keep), "overall": {"bleu": 1.0, "chrf": 2.0},
                       "translations": hyps} for key in ("greedy", "beam4")}}
    kinds = carried_by_kind(report, "beam4")
    assert kinds == {STRING_KINDS[0]: (2, 2), STRING_KINDS[1]: (1, 2), STRING_KINDS[2]: (0, 1)}
    text = "\n".join(names_numbers_section(report))
    assert "| beam 4 | 2/2 (100.0%) | 1/2 (50.0%) | 0/1 (0.0%) |" in text and "2 of this set's name words" in text


def test_the_card_counts_strings_that_open_the_sentence_apart():
    """The names a sentence opens with are the ones the model loses most: the card says how many of each place."""
    from training.card_sections import PLACES, carried_by_place, names_numbers_section

    english = ["Anna paid 2023 euros.", "Zeynep Kaya met Oslo's mayor.", "In Oslo, 17 people."]
    keep = [["Anna", "2023"], ["Zeynep Kaya", "Oslo"], ["Oslo", "17"]]
    hyps = ["Anna zahlte 2023 Euro.", "Zeynepaya traf Oslos Bürgermeister.", "In Oslo, 17 Leute."]
    report = {"en": english, "keep": keep,
              **{key: {"carried": carried_over(hyps, keep), "overall": {"bleu": 1.0, "chrf": 2.0},
                       "translations": hyps} for key in ("greedy", "beam4")}}
    assert carried_by_place(report, "greedy") == {PLACES[0]: (1, 2), PLACES[1]: (3, 4)}  # "Oslo" in "Oslos": lost
    assert "| greedy | 1/2 (50.0%) | 3/4 (75.0%) |" in "\n".join(names_numbers_section(report))


def test_the_card_adds_the_search_that_keeps_names_as_its_own_row_with_its_misses():
    """A checkpoint with a copy lexicon gets a third row (beam 4 keeping names and numbers) in every table, told apart
    from the model's plain decoding, and its misses are listed under its own name."""
    from training.card_sections import KEEP_NAME, names_numbers_section

    keep = [["Anna", "2023"], ["Zeynep Kaya"]]
    plain, kept = ["Anna 2023", "Zeynepaya"], ["Anna 2023", "Zeynep Kaja"]
    report = {"en": ["Anna 2023.", "Zeynep Kaya came."], "keep": keep,
              **{key: {"carried": carried_over(hyps, keep), "overall": {"bleu": 1.0, "chrf": 2.0},
                       "translations": hyps} for key, hyps in (("greedy", plain), ("beam4", plain),
                                                                ("beam4_keep", kept))}}
    text = "\n".join(names_numbers_section(report))
    assert f"| {KEEP_NAME} | 66.67% | 1.0 | 2.0 |" in text and "searched differently, not a different model" in text
    assert f"| {KEEP_NAME} | Zeynep Kaya | Zeynep Kaya came. | Zeynep Kaja |" in text
    del report["beam4_keep"]
    assert KEEP_NAME not in "\n".join(names_numbers_section(report))


def test_translating_many_with_a_lexicon_keeps_what_the_app_keeps():
    """training.evaluate's keep run gives, sentence by sentence, what model.serving.inference.translate gives with the
    same
    lexicon: the card's row is what the Translate page's toggle does."""
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    english = ["Aisha Rahman will present her results at 11:45 in lecture hall 23.", "Good morning."]
    many = translate_many(ckpt.model, ckpt.tokenizer, english, beam_size=4, length_penalty=ckpt.length_penalty,
                          lexicon=ckpt.copy_lexicon)
    config = DecodeConfig(beam_size=4, max_len=100, length_penalty=ckpt.length_penalty, keep_words=True)
    assert many == [translate(ckpt.model, ckpt.tokenizer, text, config, lexicon=ckpt.copy_lexicon).text
                    for text in english]
    assert "Aisha Rahman" in many[0]
