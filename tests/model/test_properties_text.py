"""Property tests: ``translate`` on any Unicode text either returns a sound Translation or raises InputError.

Runs on the shipped tiny "reverse" checkpoint and on the tiny random model. Text comes from
``hypothesis.strategies.text()`` (and a variant that also draws lone surrogates) plus explicit edge cases.
Profiles (derandomized "ci" by default, HYPOTHESIS_PROFILE=long for 500 examples) live in tests/conftest.py.
"""
from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
import torch
from hypothesis import event, example, given
from hypothesis import strategies as st

from model.checkpoints.files import load_checkpoint, read_config
from model.network.config import DecodeConfig
from model.network.positional import MAX_POSITIONS
from model.network.trace import KINDS
from model.serving.inference import InputError, Translation, translate
from tests.conftest import tiny_config

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
REVERSE = PRETRAINED / "reverse"
# The shipped en-de model joins in the long profile: HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest
# tests/model/test_properties_text.py (CI keeps to the two tiny models).
WHICH = ["reverse", "random"] + (["en-de"] if os.environ.get("HYPOTHESIS_PROFILE") == "long" else [])
CONFIG = DecodeConfig(max_len=8)
TOL = 1e-5
LOW = torch.finfo(torch.float32).min
# Both models read at most max_len positions; this text has ten times as many words, each a piece of both
# tokenizers (the reverse model's word-level tokenizer merges a run of unknown words into one <unk>).
MAX_LEN = max(read_config(REVERSE)[0].max_len, tiny_config(vocab_size=8).max_len)
TEN_TIMES_MAX_LEN = " ".join("abcdefghij"[i % 10] for i in range(10 * MAX_LEN))
PAST_THE_CAP = " ".join("abcdefghij"[i % 10] for i in range(MAX_POSITIONS + 50))

texts = (st.text()
         | st.text(st.characters(exclude_categories=()))  # also lone surrogates
         # what the reverse model reads, space-separated letters, some longer than its max_len
         | st.lists(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), max_size=80).map(" ".join))


@pytest.fixture(scope="module")
def models(tokenizer, tiny_model):
    shipped = {name: load_checkpoint(PRETRAINED / name) for name in WHICH if name != "random"}
    return {"random": (tiny_model, tokenizer)} | {name: (c.model, c.tokenizer) for name, c in shipped.items()}


def assert_sound(translation: Translation, model) -> None:
    """Every attention tensor of the trace is finite where not masked, its rows sum to 1, masked entries are
    exactly 0 (scores finfo.min) and dec_self is strictly causal; the shapes fit the source and the output."""
    trace, cfg = translation.trace, model.config
    n_src, n_tgt = len(translation.source.ids), len(translation.target_ids)
    assert 2 <= n_src <= MAX_POSITIONS and translation.source.ids[-1] == cfg.eos_id
    assert 1 <= n_tgt <= CONFIG.max_len
    expected_keys = {"enc_self": (n_src, n_src), "dec_self": (n_tgt, n_tgt), "cross": (n_tgt, n_src)}
    for kind in KINDS:
        weights, scores = trace.weights(kind), trace.scores(kind)  # [L, 1, H, Q, K]
        assert weights.shape[1:] == (1, cfg.n_heads, *expected_keys[kind]), kind
        allowed = trace.mask(kind).expand(weights.shape[1:]).expand_as(weights)  # [L, 1, H, Q, K]
        assert torch.isfinite(weights).all(), kind
        assert torch.isfinite(scores[allowed]).all(), kind
        assert (weights[~allowed] == 0).all(), kind
        assert (scores[~allowed] == LOW).all(), kind
        sums = weights.sum(-1)
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=TOL, rtol=0, msg=kind)
    future = torch.ones(n_tgt, n_tgt, dtype=torch.bool).triu(1)
    assert (trace.weights("dec_self")[..., future] == 0).all()


@pytest.mark.parametrize("which", WHICH)
@given(text=texts)
@example(text="")
@example(text="   \t\n  ")
@example(text="\x01\x02\x1b[31m\x7f\x85")  # C0/C1 control characters
@example(text="\x00")
@example(text="\ud800")  # a lone surrogate, as a Python str
@example(text="a\udfffb \ud800")
@example(text="\u200d")  # zero-width joiner
@example(text="\u200f")  # right-to-left mark
@example(text="\u05e9\u05dc\u05d5\u05dd \u200fworld\u200e")
@example(text="e\u0301\u0308 \u0301\u0302\u0303")  # combining marks, also with no base character
@example(text="\U0001f642\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f1e9\U0001f1ea")  # emoji, ZWJ family, flag
@example(text="日本語のテキスト、中文文本。")  # CJK
@example(text="<s></s><pad>")  # markup that spells the special pieces
@example(text="x" * 5000)  # one 5,000-character word
@example(text=TEN_TIMES_MAX_LEN)
@example(text=PAST_THE_CAP)
def test_translate_returns_a_sound_translation_or_raises_input_error(models, which, text):
    model, tokenizer = models[which]
    try:
        translation = translate(model, tokenizer, text, CONFIG)
    except InputError as exc:
        event("InputError")
        assert str(exc).strip(), "an InputError needs a message for the user"
        return
    n_src = len(translation.source.ids)
    event("Translation, source cut" if translation.source.dropped
          else f"Translation, {min(n_src, 4)}{'+' * (n_src >= 4)} source positions")
    assert isinstance(translation, Translation) and isinstance(translation.text, str)
    # What the page shows is valid text: the cleaned source has no control character or lone surrogate left.
    assert not any(unicodedata.category(ch).startswith("C") for ch in translation.source.text)
    translation.source.text.encode("utf-8")
    translation.text.encode("utf-8")
    assert_sound(translation, model)
    if text == TEN_TIMES_MAX_LEN:  # the example does what it is for: the model runs past its max_len, uncut
        assert len(translation.source.ids) > model.config.max_len and not translation.source.dropped
    if text == PAST_THE_CAP:  # and past the server's cap the source is cut
        assert len(translation.source.ids) == MAX_POSITIONS and translation.source.dropped > 0
