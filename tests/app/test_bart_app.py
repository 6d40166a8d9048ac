"""Every page on a converted BART-family checkpoint (tests.bart_helpers: learned positions, a LayerNorm on the
embeddings, GELU, byte-level BPE, </s> starting the decoder and <s> forced first), post-norm like BART and pre-norm
like mBART. The model is this session's upload, as the sidebar keeps one (a converted model under pretrained/ is
served by the same pages)."""
from __future__ import annotations

import pytest
import streamlit as st
import torch

from model.checkpoint import load_checkpoint
from tests.bart_helpers import bart_checkpoint

NAME = "upload:tiny-bart"
PAGES = ["app/views/translate.py", "app/views/decoding.py", "app/views/positional.py", "app/views/masks.py",
         "app/views/mechanics.py", "app/views/model_training.py"]
SENTENCE = "The house is small."


@pytest.fixture(scope="module", params=[False, True], ids=["bart", "mbart"])
def bart(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart") / "tiny-bart"
    return load_checkpoint(bart_checkpoint(folder, norm_first=request.param), torch.device("cpu"))


@pytest.fixture
def on_bart(app_test, bart):
    """app_test on the BART model, a short output (max_len 6) and an English sentence (see test_marian_app)."""
    def make(page: str, **state):
        st.session_state["uploads"] = {NAME: bart}
        return app_test(page, model_name=NAME, uploads={NAME: bart}, max_len=6, **{"text": SENTENCE, **state})
    yield make
    st.session_state.pop("uploads", None)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_a_bart_model_without_an_error(on_bart, page):
    at = on_bart(page)
    if page == PAGES[0]:
        at = at.button(key="translate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart"), "no figure drawn"


def test_the_positional_page_shows_the_learned_tables_not_sinusoids(on_bart, figures, bart):
    at = on_bart(PAGES[2])
    assert any("This model learns its positions" in i.value for i in at.info)
    drawn = figures(at)
    table = drawn["pe_matrix"]["data"][0]["z"]
    expected = bart.model.embed.learned["encoder"].weight[2:2 + len(table)].detach().numpy()  # rows after the offset
    assert torch.allclose(torch.tensor(table, dtype=torch.float32), torch.from_numpy(expected), atol=1e-6)
    assert "learned" in drawn["pe_matrix"]["layout"]["title"]["text"]
    assert not at.latex, "the sinusoid formula is not this model's"


def test_the_model_page_lists_what_differs_from_the_paper(on_bart, bart):
    table = on_bart(PAGES[5]).dataframe[0].value.set_index("setting")["this model"]
    assert table["Positional encoding"] == "learned tables" and table["LayerNorm on embeddings"] == "yes"
    assert table["Embedding × √d_model"] == ("yes" if bart.config.norm_first else "no")
    assert table["Normalisation"] == ("pre-norm" if bart.config.norm_first else "post-norm")


def test_the_decoding_page_says_the_first_piece_was_forced(on_bart):
    at = on_bart(PAGES[1], step=1)
    assert not at.exception
    said = [c.value for c in at.caption if "forced_bos_token_id" in c.value]
    assert len(said) == 1 and "makes the first piece \\<s\\>" in said[0], [c.value for c in at.caption]
    step = next(m.value for m in at.markdown if m.value.startswith("**Step 1**"))
    assert "(chosen: **\\<s\\>**" in step and "cumulative log-prob 0.000" in step  # forced: scored 0
