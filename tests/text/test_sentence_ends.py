"""One rule for where a sentence ends, read by the app (a pasted paragraph) and the corpus build (a catalogue message
and its translation): the cases each of them met, and what they need of each other."""
from __future__ import annotations

import pytest

from text.sentences import split_sentences


def test_german_ordinals_abbreviations_and_quotes_do_not_end_a_sentence():
    assert split_sentences("Im 17. Jahrhundert kam er. Dann ging er.", "de") == ["Im 17. Jahrhundert kam er.",
                                                                                 "Dann ging er."]
    assert split_sentences("Ask Dr. Smith now. He knows.", "en") == ["Ask Dr. Smith now.", "He knows."]
    assert split_sentences("Er sagte: „Geh.“ Sie ging.", "de") == ["Er sagte: „Geh.“", "Sie ging."]
    assert split_sentences("Das gilt z. B. hier, z.B. dort und i.d.R. überall. Gut.", "de") == [
        "Das gilt z. B. hier, z.B. dort und i.d.R. überall.", "Gut."]


def test_an_ordinal_is_german_only_and_a_sentence_may_start_with_a_number():
    assert split_sentences("It was founded in 963. 1815 made it a grand duchy.", "en") == [
        "It was founded in 963.", "1815 made it a grand duchy."]
    assert split_sentences("Es wurde 1975 der 22. indische Staat.", "de") == ["Es wurde 1975 der 22. indische Staat."]
    assert split_sentences("Wait… 1989 was the year.") == ["Wait…", "1989 was the year."]


@pytest.mark.parametrize("text", ["Pick a value (0 ... 1, inclusive).", "I'll sell it for... 100."])
def test_a_number_after_three_stops_goes_on_the_sentence(text):
    assert split_sentences(text) == [text]


def test_an_abbreviation_that_is_also_a_word_counts_only_as_it_is_written():
    assert split_sentences("See No. 5 and Fig. 3 for it. Then stop.") == ["See No. 5 and Fig. 3 for it.", "Then stop."]
    assert split_sentences("He said no. Then he left.") == ["He said no.", "Then he left."]
    assert split_sentences("So. What do you think?") == ["So.", "What do you think?"]
    assert split_sentences("Add it, etc. Then save.") == ["Add it, etc. Then save."]


def test_at_most_some_sentences_keep_the_rest_of_the_text_whole():
    text = "One. Two. Three.\nFour."
    assert split_sentences(text, most=2) == ["One.", "Two. Three.\nFour."]
    assert split_sentences(text, most=1) == [text]
    assert split_sentences(" \n ") == []
