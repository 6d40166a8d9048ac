"""The weak-model rule: the card and the Translate page warn unless one decoding setting reaches both bars."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.checkpoints.quality import QUALITY_FILE, WEAK_BLEU, WEAK_CHRF, is_weak, shipped_scores

score = st.floats(0, 100, allow_nan=False)
settings = st.dictionaries(st.sampled_from(["greedy", "beam4", "beam8"]),
                           st.fixed_dictionaries({"bleu": score, "chrf": score}), max_size=3)


@given(settings)
def test_a_model_is_weak_unless_one_setting_reaches_both_bars(scores):
    good = [k for k, s in scores.items() if s["bleu"] >= WEAK_BLEU and s["chrf"] >= WEAK_CHRF]
    assert is_weak(scores) == (bool(scores) and not good)


def test_the_bars_are_checked_together_not_across_settings():
    """BLEU from beam search and chrF from greedy do not add up to a good model."""
    assert is_weak({"greedy": {"bleu": 10.0, "chrf": 45.0}, "beam4": {"bleu": 16.0, "chrf": 38.0}})
    assert not is_weak({"beam4": {"bleu": 15.0, "chrf": 40.0}}) and not is_weak(None)


def test_shipped_scores_are_read_from_the_shipped_file_and_a_broken_one_is_reported(tmp_path):
    assert shipped_scores(tmp_path) is None
    (tmp_path / QUALITY_FILE).write_text(json.dumps({"split": "test",
                                                     "beam4": {"overall": {"bleu": 15.4, "chrf": 38.5}}}))
    assert shipped_scores(tmp_path) == {"beam4": {"bleu": 15.4, "chrf": 38.5}}
    (tmp_path / QUALITY_FILE).write_text('{"beam4": {"overall": {"bleu": 15.4}}}')
    with pytest.raises(ValueError, match="unreadable"):
        shipped_scores(tmp_path)
