"""Copy-friendly augmentation: the same new string on both sides, and only in the training split."""
import random
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from training.augment import NAMES, augment_copies, code_like, made_up_name, shared_strings, substitute
from training.distributed import Ranks
from training.evaluate import NAMES_HELDOUT, NAMES_NUMBERS
from training.train import build_or_resume, parse_args

TOKENIZER = Path(__file__).resolve().parents[2] / "pretrained" / "en-de" / "tokenizer.model"


def test_shared_strings_are_names_and_numbers_on_both_sides_not_sentence_starts():
    assert shared_strings("Yesterday Anna paid 250 euros in Oslo.", "Gestern zahlte Anna in Oslo 250 Euro.") == \
        ["Anna", "Oslo", "250"]
    assert shared_strings("The house is small.", "Das Haus ist klein.") == []


@given(st.integers(0, 99999), st.sampled_from(["Anna", "Kenji"]), st.integers(0, 10_000))
def test_a_substituted_pair_carries_one_new_string_on_both_sides(number, name, seed):
    en, de = f"Then {name} bought {number} apples.", f"Dann kaufte {name} {number} Äpfel."
    strings = shared_strings(en, de)
    assert set(strings) == {name, str(number)}
    new_en, new_de = substitute(en, de, strings, random.Random(seed))
    new_strings = shared_strings(new_en, new_de)
    assert len(new_strings) >= 1 and all(s in new_en and s in new_de for s in new_strings)
    assert new_en.startswith("Then ") and new_de.startswith("Dann kaufte ")


def test_only_training_pairs_are_copied():
    frame = pd.DataFrame({"source": ["a", "a", "a"], "split": ["train", "valid", "test"],
                          "en": ["Then Anna came at 9."] * 3, "de": ["Dann kam Anna um 9."] * 3})
    out = augment_copies(frame, copies=2, seed=0)
    assert len(out) == 5 and out.iloc[:3].equals(frame)
    assert set(out.iloc[3:]["split"]) == {"train"} and set(out.iloc[3:]["source"]) == {"a+copy"}


@given(st.integers(0, 10_000), st.sampled_from(["Anna", "Kenji", "Oslo"]))
def test_a_made_up_name_is_carried_on_both_sides_and_is_on_no_list(seed, name):
    """With made_up = 1 every substituted name is made up: the same new string on both sides, not one of the list's
    names (which the model would learn as such), capitalised, one or two words."""
    en, de = f"Then {name} came at 9.", f"Dann kam {name} um 9."
    new_en, new_de = substitute(en, de, [name, "9"], random.Random(seed), made_up=1.0)
    made = new_en.removeprefix("Then ").split(" came at ")[0]
    assert new_de == f"Dann kam {made} um {new_en.rsplit(' ', 1)[1]}" and made not in NAMES
    assert all(w[0].isupper() for w in made.split()) and 1 <= len(made.split()) <= 2


@pytest.mark.parametrize("path", [NAMES_NUMBERS, NAMES_HELDOUT])
def test_made_up_names_share_no_word_with_our_names_and_numbers_sets(path):
    """Made-up names are no back door for the test sets' names (training.evaluate.NAMES_NUMBERS, NAMES_HELDOUT)."""
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    words = {w for keep in frame["keep"] for s in keep.split(" | ") for w in s.split()}
    rng = random.Random(0)
    made = {w for _ in range(20_000) for w in made_up_name(rng).split()}
    assert len(made) > 15_000 and not made & words


CODE = re.compile(r"0\d{2,4} \d{5,8}|\+\d{1,2} \d{2,4} \d{4}|[A-Z]{2} [1-9]\d{1,3}")  # code_like's three shapes


@given(st.integers(0, 10_000), st.sampled_from(["9", "250", "14:30", "3.5"]))
def test_a_number_turned_code_is_carried_on_both_sides(seed, number):
    """With codes = 1 every substituted number becomes a phone number or code, the same on both sides, and the
    names stay names."""
    en, de = f"Then Anna paid {number} today.", f"Dann zahlte Anna heute {number}."
    new_en, new_de = substitute(en, de, ["Anna", number], random.Random(seed), codes=1.0)
    code = new_en.removeprefix("Then ").split(" paid ")[1].removesuffix(" today.")
    name = new_en.removeprefix("Then ").split(" paid ")[0]
    assert CODE.fullmatch(code) and new_de == f"Dann zahlte {name} heute {code}." and name in NAMES


@pytest.mark.parametrize("path", [NAMES_NUMBERS, NAMES_HELDOUT])
def test_codes_take_every_shape_and_none_is_a_string_of_our_sets(path):
    """20,000 codes: all three shapes, many distinct strings, and not one of the names-and-numbers sets' strings (the
    set's own "0171 5550199" or "LH 2041" in training would be a back door)."""
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    strings = {s for keep in frame["keep"] for s in keep.split(" | ")}
    rng = random.Random(0)
    made = [code_like(rng) for _ in range(20_000)]
    assert all(CODE.fullmatch(code) for code in made) and len(set(made)) > 19_000
    assert {code[0] for code in made} >= {"0", "+"} and any(code[0].isalpha() for code in made)
    assert not set(made) & strings


def test_without_made_up_names_the_augmentation_is_what_it_was():
    """made_up = 0 and codes = 0 draw nothing more from the generator: the shipped model's recipe stays reproducible."""
    frame = pd.DataFrame({"source": ["a"] * 3, "split": ["train"] * 3,
                          "en": ["Then Anna came at 9.", "Oslo is cold in 2024.", "Peter has 3 cats."],
                          "de": ["Dann kam Anna um 9.", "Oslo ist 2024 kalt.", "Peter hat 3 Katzen."]})
    copies = augment_copies(frame, copies=3, seed=5)
    assert copies.equals(augment_copies(frame, copies=3, seed=5, made_up=0.0, codes=0.0))
    assert copies.iloc[3:6]["en"].tolist() == ["Then Hansen came at 6.", "Then Boston came at 8.",  # as before the
                                               "Then Chicago came at 1."]  # made-up names (recorded from that code)
    assert not augment_copies(frame, copies=3, seed=5).equals(augment_copies(frame, copies=3, seed=5, made_up=1.0))
    assert not augment_copies(frame, copies=3, seed=5).equals(augment_copies(frame, copies=3, seed=5, codes=1.0))


@pytest.mark.parametrize("flag", ["--copy-made-up", "--copy-codes"])
def test_a_share_outside_0_to_1_is_refused_before_any_work(flag, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-de", "--out", "unused", "--copy-augment", "4", flag, "1.5"])
    assert f"{flag} is a share from 0 to 1, not 1.5" in capsys.readouterr().err


@given(st.integers(0, 10_000), st.sampled_from([("He", "Er"), ("She", "Sie")]), st.floats(0, 1))
def test_a_he_or_she_opening_becomes_one_name_on_both_sides_and_the_rest_stays(seed, pronouns, made_up):
    """--copy-subjects: a copy of "He paid 250 euros." / "Er zahlte 250 Euro." opens with one person's name on
    both sides, the rest of both sentences as they were (the number substituted as always)."""
    en, de = f"{pronouns[0]} has a small house.", f"{pronouns[1]} hat ein kleines Haus."
    frame = pd.DataFrame({"source": ["a"], "split": ["train"], "en": [en], "de": [de]})
    copies = augment_copies(frame, copies=3, seed=seed, made_up=made_up, subjects=True).iloc[1:]
    assert len(copies) == 3
    for new_en, new_de in zip(copies["en"], copies["de"], strict=True):
        name = new_en.removesuffix(" has a small house.")
        assert new_de == f"{name} hat ein kleines Haus." and name not in ("He", "She")
        assert 1 <= len(name.split()) <= 2 and all(word[0].isupper() for word in name.split())


def test_subjects_are_copied_only_when_asked_and_only_when_both_sides_open_with_the_pronoun():
    frame = pd.DataFrame({"source": ["a"] * 4, "split": ["train"] * 3 + ["valid"],
                          "en": ["He sleeps.", "He sleeps.", "She sings.", "She sings."],
                          "de": ["Er schläft.", "Schlafen tut er.", "Sie singt.", "Sie singt."]})
    assert len(augment_copies(frame, copies=2, seed=0)) == 4  # off: nothing shared, nothing copied
    out = augment_copies(frame, copies=2, seed=0, subjects=True)
    assert len(out) == 8 and out.iloc[:4].equals(frame)  # rows 0 and 2 twice each; not 1 (German differs), not valid
    assert [de.split()[-1] for de in out.iloc[4:]["de"]] == ["schläft.", "schläft.", "singt.", "singt."]


def test_copy_subjects_without_copies_is_refused_rather_than_ignored(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-de", "--out", "unused", "--copy-subjects"])
    assert "--copy-subjects gives He/She pairs the copies of --copy-augment N" in capsys.readouterr().err
    assert parse_args(["--task", "en-de", "--out", "unused", "--copy-augment", "4", "--copy-subjects"]).copy_subjects


def test_copy_fresh_without_copies_is_refused_rather_than_ignored(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-de", "--out", "unused", "--copy-fresh"])
    assert "--copy-augment" in capsys.readouterr().err


@pytest.mark.parametrize("fresh", [True, False])
def test_fresh_copies_are_drawn_anew_each_epoch_and_the_same_again_on_a_resume(tmp_path, fresh):
    """With --copy-fresh every epoch trains on other names and numbers in the same pairs (a model cannot learn the
    substitutes themselves); an epoch resumed halfway draws what it drew before, so its batches are the same.
    Without it every epoch sees the run's one draw, as runs always did."""
    rows = [("train", f"Then {name} came at {hour}.", f"Dann kam {name} um {hour}.")
            for name, hour in zip(["Anna", "Kenji", "Oslo", "Pedro"] * 3, range(1, 13), strict=True)]
    rows += [("train", "The house is small.", "Das Haus ist klein."), ("valid", "Then Anna came.", "Dann kam Anna.")]
    corpus = tmp_path / "corpus.tsv.gz"
    pd.DataFrame([("test", *row) for row in rows], columns=["source", "split", "en", "de"]).to_csv(
        corpus, sep="\t", index=False)
    args = parse_args(["--task", "en-de", "--corpus", str(corpus), "--tokenizer", str(TOKENIZER), "--out",
                       str(tmp_path / "run"), "--d-model", "16", "--n-heads", "2", "--layers", "1", "--d-ff", "32",
                       "--copy-augment", "2", "--copy-made-up", "0.5", *(["--copy-fresh"] if fresh else [])])
    run = build_or_resume(args, Ranks(rank=0, world=1, device=torch.device("cpu")))
    first = run.epoch_pairs()
    assert len(first) == 13 + 2 * 12 and run.epoch_pairs() == first  # 12 pairs share a string: 2 copies each
    run.progress.epoch = 1
    second = run.epoch_pairs()
    assert second[:13] == first[:13]  # the corpus's own pairs are untouched
    assert (second[13:] != first[13:]) is fresh and len(second) == len(first)
