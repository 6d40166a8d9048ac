"""A lecturer's flow (AppTest): the sentence box on the lecture page, the prepared sentences and their keys' buttons,
links that carry them, and the view a Back or Forward URL names (presenter mode kept)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.lecture.prepared import MAX_PREPARED, MAX_PREPARED_CHARS, next_sentence, prepared_sentences
from app.state import model_limits, parse_link

LECTURE = "app/views/lecture.py"
PREPARED = "a b c\nd e f\n\n  g h i  \nj k\nl m\nn o"  # 6 sentences and a blank line: the first 5 are used


def _caption(at) -> str:
    found = [c.value for c in at.caption if c.value.startswith("Current sentence:")]
    assert len(found) == 1
    return found[0]


def test_the_sentence_box_changes_the_sentence_and_keeps_the_slide(app_test):
    at = app_test(LECTURE, slide=3)
    assert not at.exception
    assert at.text_input(key="lecture_text").value == at.session_state["text"]
    at.text_input(key="lecture_text").input("  x y z  ").run()
    assert not at.exception
    assert at.session_state["text"] == "x y z" and at.session_state["slide"] == 3
    assert "**x y z** → **z y x**" in _caption(at)  # the reverse model
    assert at.query_params["text"] == "x y z"
    at.text_input(key="lecture_text").input("   ").run()  # blank: nothing changes
    assert at.session_state["text"] == "x y z"


def test_prepared_sentences_are_switched_by_their_buttons_and_in_the_link(app_test):
    at = app_test(LECTURE, prepared=PREPARED, text="q r")
    assert "Only the first 5 lines are used." in [c.value for c in at.caption]
    assert at.query_params["prepared"] == PREPARED
    at.button(key="lecture_sentence_next").click().run()  # S: the current sentence is not in the list: the first
    assert at.session_state["text"] == "a b c"
    at.button(key="lecture_sentence_next").click().run()
    assert at.session_state["text"] == "d e f" and "**d e f**" in _caption(at)
    at.button(key="lecture_sentence_3").click().run()  # 3: the third non-blank line, stripped
    assert at.session_state["text"] == "g h i"
    at.button(key="lecture_sentence_5").click().run()
    assert at.session_state["text"] == "l m"
    at.button(key="lecture_sentence_next").click().run()  # after the last: the first again
    assert at.session_state["text"] == "a b c"
    assert not at.exception


def test_a_number_beyond_the_list_changes_nothing(app_test):
    at = app_test(LECTURE, prepared="a b\nc d", text="q r")
    at.button(key="lecture_sentence_4").click().run()
    assert at.session_state["text"] == "q r" and not at.exception


def test_keys_are_said_on_the_slide(app_test):
    at = app_test(LECTURE)
    assert any("**S** next prepared sentence, **1**–**5** that one" in c.value for c in at.caption)


@given(st.text(max_size=3000))
def test_prepared_sentences_are_bounded_and_stripped(text):
    sentences = prepared_sentences(text)
    assert len(sentences) <= MAX_PREPARED
    assert all(s and s == s.strip() and "\n" not in s for s in sentences)
    if sentences:
        assert next_sentence(sentences, sentences[-1]) == sentences[0]
        assert next_sentence(sentences, "not in the list \u2603") == sentences[0]
    assert next_sentence([], "x") is None


def test_a_link_carries_the_prepared_sentences_within_their_bound():
    values, notes = parse_link({"prepared": "a\nb"}, model_limits)
    assert values == {"prepared": "a\nb"} and not notes
    values, notes = parse_link({"prepared": "x" * (MAX_PREPARED_CHARS + 1)}, model_limits)
    assert "prepared" not in values and notes and "longer than" in notes[0]


def test_back_and_forward_urls_set_the_view_and_keep_presenter_mode(app_test):
    """What Back brings (a URL the app did not write) is the view shown; a parameter it leaves out is its default
    (slide 1); presenter mode stays on whatever the URL says."""
    at = app_test(LECTURE, slide=4, presenter=True, text="x y")
    assert at.query_params["slide"] == "4" and at.query_params["presenter"] == "1"
    at.query_params.clear()  # Back to the entry the lecture began with: ?text=u v&slide=2, no presenter
    at.query_params["text"] = "u v"
    at.query_params["slide"] = "2"
    at.run()
    assert not at.exception
    assert at.session_state["slide"] == 2 and at.session_state["text"] == "u v"
    assert at.session_state["presenter"] is True and at.query_params["presenter"] == "1"
    at.query_params.pop("slide")  # Back once more: slide 1, written as no parameter at all
    at.run()
    assert at.session_state["slide"] == 1 and at.session_state["text"] == "u v"


def test_an_unchanged_url_keeps_what_the_session_chose(app_test):
    at = app_test(LECTURE, slide=2)
    at.button(key="lecture_next").click().run()
    assert at.session_state["slide"] == 3 and at.query_params["slide"] == "3"
    at.run()
    assert at.session_state["slide"] == 3
