"""Input in another language than the model's source is named; the model's own language never is."""
from __future__ import annotations

import pandas as pd
import pytest

from app.checks.language_check import base_language, looks_like
from training.evaluate import EVERYDAY, NAMES_HELDOUT, NAMES_NUMBERS


@pytest.mark.parametrize("path", [EVERYDAY, NAMES_NUMBERS, NAMES_HELDOUT])
def test_no_english_sentence_of_our_sets_is_taken_for_another_language(path):
    """A lecturer typing a sentence full of foreign names is not told it is in another language."""
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    assert [s for s in frame["en"] if looks_like(s, "en")] == []


@pytest.mark.parametrize("path", [EVERYDAY, NAMES_NUMBERS])
def test_the_german_references_of_our_sets_are_named_german(path):
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    named = [looks_like(s, "en") for s in frame["de"]]
    assert named.count("de") >= 0.9 * len(named)  # a short one ("Anna zahlte 250 Euro.") may carry too few words
    assert set(named) <= {"de", None}


def test_other_languages_codes_and_unlisted_sources():
    assert looks_like("Je ne sais pas où sont mes clés.", "en") == "fr"
    assert looks_like("Ich weiß nicht, wo meine Schlüssel sind.", "eng") == "de"
    assert looks_like("Ich weiß nicht, wo meine Schlüssel sind.", "de") is None
    assert looks_like("The house is in the city.", "de_DE") == "en"
    assert looks_like("Die Hard is a film.", "en") is None  # one German-looking word proves nothing
    assert looks_like("これは日本語です", "en") is None and looks_like("der die das und", "ja") is None
    assert base_language("deu") == "de" and base_language("en-US") == "en"
