"""The Translate page's number check (app.checks.carried_numbers): every number of the sentence must stand in the
translation, compared by its digits, so that German's "1.250" and "3,5" count and "14:000" does not."""
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.checks.carried_numbers import added_numbers, digits_of, dropped_numbers, numbers_in

WORDS = st.sampled_from(["Anna", "paid", "euros", "at", "room", "the", "train", "leaves", "B", "um", "Uhr", "und"])
NUMBERS = st.one_of(
    st.integers(0, 10**8).map(str),
    st.tuples(st.integers(1, 999), st.integers(0, 999)).map(lambda p: f"{p[0]},{p[1]:03d}"),  # 1,250
    st.tuples(st.integers(0, 99), st.integers(0, 9)).map(lambda p: f"{p[0]}.{p[1]}"),  # 3.5
    st.tuples(st.integers(0, 23), st.integers(0, 59)).map(lambda p: f"{p[0]:02d}:{p[1]:02d}"),  # 07:55
)
SENTENCES = st.lists(st.one_of(WORDS, NUMBERS), min_size=1, max_size=12).map(" ".join)


@given(SENTENCES)
def test_a_translation_that_keeps_every_number_drops_none(sentence):
    assert dropped_numbers(sentence, sentence) == added_numbers(sentence, sentence) == []
    german = sentence.translate(str.maketrans({",": ".", ".": ","}))  # 1,250 -> 1.250 and 3.5 -> 3,5
    assert dropped_numbers(sentence, german) == added_numbers(sentence, german) == []


@given(SENTENCES, st.data())
def test_a_number_taken_out_of_the_translation_is_named(sentence, data):
    numbers = numbers_in(sentence)
    if not numbers:
        return
    gone = data.draw(st.sampled_from(numbers))
    translation = re.sub(rf"(?<![\d.,:]){re.escape(gone)}(?![\d.,:])", "", sentence, count=1)
    assert len(numbers_in(translation)) == len(numbers) - 1  # that one number, whole
    assert [digits_of(n) for n in dropped_numbers(sentence, translation)] == [digits_of(gone)]
    assert added_numbers(sentence, translation) == []  # nothing came in its place
    assert added_numbers(translation, sentence) == dropped_numbers(sentence, translation)  # the same, the other way


@pytest.mark.parametrize("source, translation, dropped", [
    ("The cafeteria serves lunch from 11:30 to 14:00.", "Die Kantine serviert von 11:30 bis 14:000.", ["14:00"]),
    ("Call 0176 4402918.", "Rufen Sie 0176 402918 an.", ["4402918"]),
    ("She paid 1,250 euros for 3 tickets.", "Sie zahlte 1.250 Euro für 3 Tickets.", []),
    ("Table 3.5 compares the rents.", "Tabelle 3,5 vergleicht die Mieten.", []),
    ("Gate B42, seat 23F, flight LH 2041.", "Tor B42, Sitz 23F, Flug LH 2041.", []),
    ("Room 12 is next to room 12.", "Zimmer 12 ist neben dem Zimmer.", ["12"]),  # written twice, must stand twice
    ("On 14 March 2023 it rained.", "Am 14. März 2023 regnete es.", []),
    ("Three cats.", "Drei Katzen.", []),  # words for numbers are German's own: not checked
])
def test_what_a_reader_would_flag(source, translation, dropped):
    assert dropped_numbers(source, translation) == dropped


def test_a_number_the_translation_made_up_is_named():
    source = "The cafeteria serves lunch from 11:30 to 14:00 on weekdays."
    translation = "Der Vorfeter kommt von 11:30 bis 14:000 auf den 14.000 Wochenenden."  # the shipped model's
    assert dropped_numbers(source, translation) == ["14:00"]
    assert added_numbers(source, translation) == ["14:000", "14.000"]
