"""Which source words a translation keeps (model.decoding.copy_words): the lexicon counted on pairs, and the rule on
the kinds
of words a lecturer types."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.decoding.copy_words import MAX_PHRASES, CopyLexicon, kept_number, words_to_keep

PAIRS = [
    ("We met in Berlin.", "Wir trafen uns in Berlin."),
    ("Berlin is big.", "Berlin ist groß."),
    ("See you on Monday.", "Bis Montag."),
    ("Monday again.", "Schon wieder Montag."),
    ("The table is red.", "Der Tisch ist rot."),
    ("A table and a chair.", "Ein Tisch und ein Stuhl."),
    ("She speaks English.", "Sie spricht Englisch."),
    ("English is easy.", "Englisch ist leicht."),
]
LEXICON = CopyLexicon.count(PAIRS)


def test_the_lexicon_counts_what_the_pairs_do():
    assert "Berlin" in LEXICON.copied
    assert {"Monday", "English"} <= LEXICON.translated
    assert "table" in LEXICON.lower
    assert "chair" not in LEXICON.lower  # seen once


def test_the_lexicon_round_trips_through_json():
    assert CopyLexicon.from_json(LEXICON.to_json()) == LEXICON
    with pytest.raises(ValueError, match="three word lists"):
        CopyLexicon.from_json('{"copied": ["a"], "translated": [1], "lower": []}')


@pytest.mark.parametrize(("text", "kept"), [
    ("Anna Schmidt moved from Hamburg to Oslo in 2019.", ["Anna Schmidt", "Hamburg", "Oslo", "2019"]),
    ("Table 3.5 compares the rents in Sydney.", ["Sydney"]),  # a common word opening a sentence is no name, a
    # decimal German writes with a comma
    ("Kiel is in the north.", []),  # one unknown capitalised word opening a sentence: maybe a name, maybe not
    ("Berlin is in the east.", ["Berlin"]),  # ... unless the corpus copies it
    ("The museum is closed on Mondays and Monday.", []),  # translated, and the plural of a translated word
    ("Call 0171 5550199 at 14:30 or gate B42 on 10.1.2027.", ["0171 5550199", "14:30", "B42", "10.1.2027"]),
    ("so press Shift+F1 or (F2) in Berlin-Mitte.", ["F2", "Berlin-Mitte"]),  # only words that stand alone
    ("She paid 1,250 euros for the 3rd seat and 1.5 litres.", []),  # German writes these differently
    ("Please call Thomas Berger before Friday's lecture.", ["Thomas Berger"]),
    ("He said: Aisha Rahman will come.", ["Aisha Rahman"]),
    ("She studied Meteorology and Politics in Florence.", ["Politics", "Florence"]),  # -ology: a common word
    ("On Monday, Dr. Anna Schmidt paid 14 euros.", ["Dr. Anna Schmidt", "14"]),  # a title and its name: one phrase
    ("We met Prof. Table at Dr. Grove's.", ["Prof. Table", "Dr"]),  # after a title, any capitalised word but a
    # possessive (German writes "Groves")
    ("We went to Berlin. Anna stayed.", ["Berlin"]),  # a period that ends a sentence joins nothing
])
def test_names_and_numbers_that_stay_the_same_are_kept(text, kept):
    assert words_to_keep(text, LEXICON) == kept


def test_numbers():
    assert kept_number("23F") and kept_number("10.1.2000") and kept_number("2019") and kept_number("07:55")
    assert not kept_number("18th") and not kept_number("100,000") and not kept_number("3.5")
    assert not kept_number("10m")


@given(st.text(max_size=300))
def test_any_text_gives_at_most_max_phrases_each_in_the_text(text):
    kept = words_to_keep(text, LEXICON)
    assert len(kept) <= MAX_PHRASES and len(set(kept)) == len(kept)
    assert all(phrase and phrase in text for phrase in kept)
