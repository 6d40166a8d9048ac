"""A pasted paragraph is cut into its sentences, never inside one, and nothing of the text is lost."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.checks.paragraphs import MAX_SENTENCES, sentence_of, split_sentences

WORDS = st.sampled_from(["the", "house", "Dr.", "Anna", "3.5", "1,250.00", "e.g.", "(see", "it)", "J.", "“quoted”",
                         "Haus", "über", "42", "café"])
ENDS = st.sampled_from([".", "!", "?", "…", ".”", "?)"])
SENTENCE = st.builds(lambda first, rest, end: " ".join([first, *rest]) + end,
                     st.sampled_from(["The", "Anna", "Where", "Über", "1989", "“Yes"]),
                     st.lists(WORDS, max_size=8), ENDS)


@given(st.lists(SENTENCE, min_size=1, max_size=6), st.sampled_from([" ", "  ", "\n", " \n\n"]))
def test_sentences_split_where_they_end_and_keep_every_character(sentences, space):
    text = space.join(sentences)
    found = split_sentences(text)
    assert "".join("".join(s.split()) for s in found) == "".join(text.split())  # nothing lost, nothing added
    assert found == sentences  # every generated sentence ends with its mark and starts like one: cut exactly there


def test_titles_abbreviations_initials_and_numbers_do_not_end_a_sentence():
    text = "Dr. Schmidt paid 1,250.00 euros on 14.03.2023, e.g. for J. Smith. Then she left! Did it work?"
    assert split_sentences(text) == ["Dr. Schmidt paid 1,250.00 euros on 14.03.2023, e.g. for J. Smith.",
                                     "Then she left!", "Did it work?"]
    assert split_sentences("  One sentence only.  ") == ["One sentence only."]
    assert split_sentences(" \n ") == []


def test_a_sentence_is_picked_by_index_and_a_long_text_keeps_its_rest_in_the_last():
    text = "First one. Second one. Third one."
    assert [sentence_of(text, i) for i in (0, 1, 2, 9, -3)] == ["First one.", "Second one.", "Third one.",
                                                              "Third one.", "First one."]
    assert sentence_of("Just one.", 5) == "Just one."
    many = " ".join(f"Sentence {i}." for i in range(MAX_SENTENCES + 10))
    found = split_sentences(many)
    assert len(found) == MAX_SENTENCES and found[-1].startswith(f"Sentence {MAX_SENTENCES - 1}.")
