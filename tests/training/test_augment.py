"""Copy-friendly augmentation: the same new string on both sides, and only in the training split."""
import random

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from training.augment import augment_copies, shared_strings, substitute


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
