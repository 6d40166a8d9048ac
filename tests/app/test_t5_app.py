"""Every page on a converted T5 v1.1 / Flan-T5 checkpoint (tests.bart_helpers.t5_checkpoint: relative position
buckets instead of a position code, QK^T not divided by sqrt(d_k), RMSNorm, no biases, 3 heads of width 16 in
d_model 32, a gated GELU, an output layer of its own, the decoder starting with <pad>), and what the pages say it
does instead of the paper."""
from __future__ import annotations

import pytest
import streamlit as st
import torch

from model.checkpoint import load_checkpoint
from tests.bart_helpers import t5_checkpoint

NAME = "upload:tiny-flan-t5"
PAGES = ["app/views/translate.py", "app/views/decoding.py", "app/views/positional.py", "app/views/masks.py",
         "app/views/mechanics.py", "app/views/model_training.py"]
SENTENCE = "The house is small."


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return load_checkpoint(t5_checkpoint(tmp_path_factory.mktemp("t5") / "tiny-flan-t5"), torch.device("cpu"))


@pytest.fixture
def on_t5(app_test, t5):
    """app_test on the T5 model, a short output (max_len 6) and an English sentence (see test_marian_app)."""
    def make(page: str, **state):
        st.session_state["uploads"] = {NAME: t5}
        return app_test(page, model_name=NAME, uploads={NAME: t5}, max_len=6, **{"text": SENTENCE, **state})
    yield make
    st.session_state.pop("uploads", None)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_a_t5_model_without_an_error(on_t5, page):
    at = on_t5(page)
    if page == PAGES[0]:
        at = at.button(key="translate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart"), "no figure drawn"


def test_the_mechanics_page_says_t5_does_not_divide_by_the_square_root(on_t5, figures, t5):
    at = on_t5(PAGES[4], mech_kind="enc_self")
    assert not at.exception
    step2 = next(m.value for m in at.markdown if m.value.startswith("**Step 2"))
    assert "**not** divided by √d_k" in step2 and "learned bias per head" in step2
    assert figures(at)["mech_scaled"]["layout"]["title"]["text"].startswith("QKᵀ + position bias")


def test_the_positional_page_draws_the_bias_each_head_adds_by_offset(on_t5, figures, t5):
    """No sinusoid formula and no table: the encoder's bias per head and offset, as the model's own table holds it."""
    at = on_t5(PAGES[2], pe_reach=10)
    assert not at.exception and any("adds no position code" in i.value for i in at.info)
    drawn = figures(at)["pe_relative"]["data"][0]
    bias = torch.tensor(drawn["z"], dtype=torch.float32)  # [H, 21]
    assert list(drawn["x"]) == list(range(-10, 11)) and bias.shape == (3, 21)
    table = t5.model.encoder.relative_bias.table.weight  # [buckets, H]: offset 0 is bucket 0, +1 is bucket 4 + 1
    torch.testing.assert_close(bias[:, 10], table[0].detach())
    torch.testing.assert_close(bias[:, 11], table[5].detach())


def test_the_model_page_lists_every_way_t5_differs(on_t5):
    table = on_t5(PAGES[5]).dataframe[0].value.set_index("setting")["this model"]
    assert (table["Norm"], table["Scores ÷ √d_k"], table["Biases in linear maps"], table["Gated FFN"],
            table["Output layer"], table["FFN activation"]) == ("RMSNorm", "no", "no", "yes", "its own",
                                                                 "GELU (tanh form)")
    assert table["Positional encoding"] == "relative buckets (bias)" and table["d_k = d_v (its own)"] == "16"
