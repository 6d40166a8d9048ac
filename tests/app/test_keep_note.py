"""The caption under a translation that keeps names and numbers names what it could not keep, and why."""
from __future__ import annotations

from app.checks.escape import md


def test_the_caption_says_what_was_not_kept_and_why(app_test):
    at = app_test(model_name="en-de")
    at.slider(key="beam_size").set_value(2).run()
    at.toggle(key="keep_names").set_value(True).run()
    at.text_area(key="text").input(f"Call {'7' * 120} at 11:45.")
    at = at.button(key="translate").click().run()
    assert not at.exception
    captions = [c.value for c in at.caption if "It had to keep" in c.value]
    assert len(captions) == 1 and "“11:45”" in captions[0]
    assert md("Not kept (longer than 24 pieces): " + "7" * 39 + "…") + "." in captions[0]
