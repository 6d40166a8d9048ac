"""Every page on a converted checkpoint of each Hugging Face family this project converts (tests.bart_helpers:
random weights, tiny widths): BART (learned positions, a LayerNorm on the embeddings, GELU, post-norm, byte-level
BPE, </s> starting the decoder and <s> forced first), mBART (the same, pre-norm), M2M100 / NLLB (pre-norm, fairseq's
sinusoids, ReLU) and T5 v1.1 / Flan-T5 (relative position buckets instead of a position code, QK^T not divided by
sqrt(d_k), RMSNorm, no biases, 3 heads of width 16 in d_model 32, a gated GELU, an output layer of its own, the
decoder starting with <pad>), and what each page says the model does instead of the paper. The model is this
session's upload, as the sidebar keeps one (a converted model under pretrained/ is served by the same pages)."""
from __future__ import annotations

import pytest
import streamlit as st
import torch

from app.checks.escape import md
from app.serving.scheduler import store
from explain.integrated_gradients import MEAN_BASELINE
from model.checkpoints.files import load_checkpoint
from tests.bart_helpers import bart_checkpoint, t5_checkpoint

PAGES = ["app/views/translate.py", "app/views/decoding.py", "app/views/positional.py", "app/views/masks.py",
         "app/views/mechanics.py", "app/views/model_training.py"]
SENTENCE = "The house is small."
FAMILIES = ["bart", "mbart", "m2m_100", "t5"]


@pytest.fixture(scope="module", params=FAMILIES)
def converted(request, tmp_path_factory):
    """One converted checkpoint of the family the test asks for (indirect) or of each family."""
    folder = tmp_path_factory.mktemp(request.param) / f"tiny-{request.param}"
    path = t5_checkpoint(folder) if request.param == "t5" else bart_checkpoint(folder, request.param)
    return load_checkpoint(path, torch.device("cpu"))


@pytest.fixture
def on_model(app_test):
    """app_test on an uploaded checkpoint, a short output (max_len 6) and an English sentence (see test_marian_app:
    the upload is also put in this process's bare session state for the model choice's format_func)."""
    def make(page: str, ckpt, **state):
        name = f"upload:{ckpt.path.name}"  # one name per model, as an upload's hash is: the shared store keys on it
        st.session_state["uploads"] = {name: ckpt}
        return app_test(page, model_name=name, uploads={name: ckpt}, max_len=6, **{"text": SENTENCE, **state})
    yield make
    st.session_state.pop("uploads", None)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_a_converted_model_without_an_error(on_model, converted, page):
    at = on_model(page, converted)
    if page == PAGES[0]:
        at = at.button(key="translate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart"), "no figure drawn"


@pytest.mark.parametrize("converted", ["bart", "mbart"], indirect=True)
def test_the_positional_page_shows_the_learned_tables_not_sinusoids(on_model, figures, converted):
    at = on_model(PAGES[2], converted)
    assert any("This model learns its positions" in i.value for i in at.info)
    drawn = figures(at)
    table = drawn["pe_matrix"]["data"][0]["z"]
    # rows after the offset
    expected = converted.model.embed.learned["encoder"].weight[2:2 + len(table)].detach().numpy()
    assert torch.allclose(torch.tensor(table, dtype=torch.float32), torch.from_numpy(expected), atol=1e-6)
    assert "learned" in drawn["pe_matrix"]["layout"]["title"]["text"]
    assert not at.latex, "the sinusoid formula is not this model's"


@pytest.mark.parametrize("converted", ["m2m_100"], indirect=True)
def test_fairseqs_sinusoids_are_drawn_as_the_model_reads_them(on_model, figures, converted):
    """M2M100 / NLLB: sines then cosines at fairseq's frequencies; position p is row p + 2 of the table."""
    at = on_model(PAGES[2], converted, pe_positions=20)
    assert not at.exception and "d_{model}/2" in at.latex[0].value
    assert any("row p + 2" in c.value for c in at.caption)
    # positions 0..19 of the formula
    table = torch.tensor(figures(at)["pe_matrix"]["data"][0]["z"], dtype=torch.float32)
    # the model's position p: row p + 2
    assert torch.allclose(table[2:], converted.model.embed.positions(0, 18), atol=1e-6)


@pytest.mark.parametrize("converted", ["bart", "mbart", "m2m_100"], indirect=True)
def test_the_model_page_lists_what_differs_from_the_paper(on_model, converted):
    table = on_model(PAGES[5], converted).dataframe[0].value.set_index("setting")["this model"]
    family = converted.meta["family"]
    assert table["Positional encoding"] == {"bart": "learned tables", "mbart": "learned tables",
                                            "m2m_100": "sines, then cosines (fairseq)"}[family]
    assert table["LayerNorm on embeddings"] == ("no" if family == "m2m_100" else "yes")
    assert table["Embedding × √d_model"] == ("no" if family == "bart" else "yes")
    assert table["Normalisation"] == ("post-norm" if family == "bart" else "pre-norm")


@pytest.mark.parametrize("converted", ["bart", "mbart", "m2m_100"], indirect=True)
def test_the_decoding_page_says_the_first_piece_was_forced(on_model, converted):
    at = on_model(PAGES[1], converted, step=1)
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


def test_a_multilingual_model_translates_into_the_chosen_language(on_model, multilingual):
    """mBART-50 / NLLB / M2M100: the picker lists the codes (German first chosen), and decoding forces the chosen
    code as the first output piece."""
    at = on_model(PAGES[0], multilingual)
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


@pytest.mark.parametrize("converted", ["t5"], indirect=True)
def test_the_mechanics_page_says_t5_does_not_divide_by_the_square_root(on_model, figures, converted):
    at = on_model(PAGES[4], converted, mech_kind="enc_self")
    assert not at.exception
    step2 = next(m.value for m in at.markdown if m.value.startswith("**Step 2"))
    assert "**not** divided by √d_k" in step2 and "learned bias per head" in step2
    assert figures(at)["mech_scaled"]["layout"]["title"]["text"].startswith("QKᵀ + position bias")


@pytest.mark.parametrize("converted", ["t5"], indirect=True)
def test_the_positional_page_draws_the_bias_each_head_adds_by_offset(on_model, figures, converted):
    """No sinusoid formula and no table: the encoder's bias per head and offset, as the model's own table holds it."""
    at = on_model(PAGES[2], converted, pe_reach=10)
    assert not at.exception and any("adds no position code" in i.value for i in at.info)
    drawn = figures(at)["pe_relative"]["data"][0]
    bias = torch.tensor(drawn["z"], dtype=torch.float32)  # [H, 21]
    assert list(drawn["x"]) == list(range(-10, 11)) and bias.shape == (3, 21)
    table = converted.model.encoder.relative_bias.table.weight  # [buckets, H]: offset 0 is bucket 0, +1 is bucket 4 + 1
    torch.testing.assert_close(bias[:, 10], table[0].detach())
    torch.testing.assert_close(bias[:, 11], table[5].detach())


@pytest.mark.parametrize("converted", ["t5"], indirect=True)
def test_the_model_page_lists_every_way_t5_differs(on_model, converted):
    table = on_model(PAGES[5], converted).dataframe[0].value.set_index("setting")["this model"]
    assert (table["Norm"], table["Scores ÷ √d_k"], table["Biases in linear maps"], table["Gated FFN"],
            table["Output layer"], table["FFN activation"]) == ("RMSNorm", "no", "no", "yes", "its own",
                                                                 "GELU (tanh form)")
    assert table["Positional encoding"] == "relative buckets (bias)" and table["d_k = d_v (its own)"] == "16"


@pytest.mark.parametrize("converted", ["t5"], indirect=True)
def test_the_decoding_page_says_t5s_integrated_gradients_start_from_the_mean_token_vector(on_model, converted):
    """T5 adds no position code, so zero token vectors are no baseline for it (explain.integrated_gradients): the
    caption beside the contrastive attribution names the one it starts from instead."""
    at = on_model(PAGES[1], converted, step=2)
    at.button(key="decoding_why_run").click().run()
    assert not at.exception and not at.error
    said = " ".join(c.value for c in at.caption)
    assert f"baseline = {md(MEAN_BASELINE)} (f = " in said and "completeness gap" in said
