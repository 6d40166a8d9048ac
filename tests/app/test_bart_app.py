"""Every page on a converted checkpoint of fairseq's families (tests.bart_helpers: byte-level BPE, </s> starting the
decoder and <s> forced first): BART (learned positions, a LayerNorm on the embeddings, GELU, post-norm), mBART (the
same, pre-norm) and M2M100 / NLLB (pre-norm, fairseq's sinusoids, ReLU). The model is this session's upload, as the sidebar keeps one (a converted model under pretrained/ is
served by the same pages)."""
from __future__ import annotations

import pytest
import streamlit as st
import torch

from app.translation import store
from model.checkpoint import load_checkpoint
from tests.bart_helpers import bart_checkpoint

NAME = "upload:tiny-bart"
PAGES = ["app/views/translate.py", "app/views/decoding.py", "app/views/positional.py", "app/views/masks.py",
         "app/views/mechanics.py", "app/views/model_training.py"]
SENTENCE = "The house is small."


@pytest.fixture(scope="module", params=["bart", "mbart", "m2m_100"])
def bart(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart") / f"tiny-{request.param}"
    return load_checkpoint(bart_checkpoint(folder, request.param), torch.device("cpu"))


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


@pytest.mark.parametrize("bart", ["bart", "mbart"], indirect=True)
def test_the_positional_page_shows_the_learned_tables_not_sinusoids(on_bart, figures, bart):
    at = on_bart(PAGES[2])
    assert any("This model learns its positions" in i.value for i in at.info)
    drawn = figures(at)
    table = drawn["pe_matrix"]["data"][0]["z"]
    expected = bart.model.embed.learned["encoder"].weight[2:2 + len(table)].detach().numpy()  # rows after the offset
    assert torch.allclose(torch.tensor(table, dtype=torch.float32), torch.from_numpy(expected), atol=1e-6)
    assert "learned" in drawn["pe_matrix"]["layout"]["title"]["text"]
    assert not at.latex, "the sinusoid formula is not this model's"


@pytest.mark.parametrize("bart", ["m2m_100"], indirect=True)
def test_fairseqs_sinusoids_are_drawn_as_the_model_reads_them(on_bart, figures, bart):
    """M2M100 / NLLB: sines then cosines at fairseq's frequencies; position p is row p + 2 of the table."""
    at = on_bart(PAGES[2], pe_positions=20)
    assert not at.exception and "d_{model}/2" in at.latex[0].value
    assert any("row p + 2" in c.value for c in at.caption)
    table = torch.tensor(figures(at)["pe_matrix"]["data"][0]["z"], dtype=torch.float32)  # positions 0..19 of the formula
    assert torch.allclose(table[2:], bart.model.embed.positions(0, 18), atol=1e-6)  # the model's position p: row p + 2


def test_the_model_page_lists_what_differs_from_the_paper(on_bart, bart):
    table = on_bart(PAGES[5]).dataframe[0].value.set_index("setting")["this model"]
    family = bart.meta["family"]
    assert table["Positional encoding"] == {"bart": "learned tables", "mbart": "learned tables",
                                            "m2m_100": "sines, then cosines (fairseq)"}[family]
    assert table["LayerNorm on embeddings"] == ("no" if family == "m2m_100" else "yes")
    assert table["Embedding × √d_model"] == ("no" if family == "bart" else "yes")
    assert table["Normalisation"] == ("post-norm" if family == "bart" else "pre-norm")


def test_the_decoding_page_says_the_first_piece_was_forced(on_bart):
    at = on_bart(PAGES[1], step=1)
    assert not at.exception
    said = [c.value for c in at.caption if "forced_bos_token_id" in c.value]
    assert len(said) == 1 and "makes the first piece \\<s\\>" in said[0], [c.value for c in at.caption]
    step = next(m.value for m in at.markdown if m.value.startswith("**Step 1**"))
    assert "(chosen: **\\<s\\>**" in step and "cumulative log-prob 0.000" in step  # forced: scored 0


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mbart50") / "tiny-mbart-50"
    path = bart_checkpoint(folder, "mbart", languages=("en_XX", "de_DE", "fr_XX"))
    return load_checkpoint(path, torch.device("cpu"))


def test_a_multilingual_model_translates_into_the_chosen_language(app_test, multilingual):
    """mBART-50 / NLLB / M2M100: the picker lists the codes (German first chosen), and decoding forces the chosen
    code as the first output piece."""
    st.session_state["uploads"] = {NAME: multilingual}
    try:
        at = app_test(PAGES[0], model_name=NAME, uploads={NAME: multilingual}, max_len=6, text=SENTENCE)
        picker = at.selectbox(key="target_lang")
        assert picker.options == ["German (de_DE)", "English (en_XX)", "French (fr_XX)"] and picker.value == "de_DE"
        at = at.button(key="translate").click().run()
        assert not at.exception and not at.error
        request = at.session_state["last_request"]
        assert request.forced_bos == multilingual.tokenizer.piece_id("de_DE")
        assert store().get(request).target_pieces[0] == "de_DE"
        at = at.selectbox(key="target_lang").set_value("fr_XX").run()
        at = at.button(key="translate").click().run()
        assert not at.exception and store().get(at.session_state["last_request"]).target_pieces[0] == "fr_XX"
    finally:
        st.session_state.pop("uploads", None)
