"""Every page on a converted Marian (opus-mt) checkpoint of opus-mt's shape: 6+6 layers of 16 heads (the tiny width
keeps it fast; the layout depends on layers and heads only), the decoder starting with <pad>, languages from the
checkpoint. The model is this session's upload, as the sidebar keeps one (a converted model under pretrained/ is
served by the same pages)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import streamlit as st
import torch

from app.charts.attention import head_titles
from app.models.examples import BY_LANGUAGE
from model.checkpoints.files import load_checkpoint
from tests.marian_helpers import marian_checkpoint

NAME = "upload:marian-6x16"
PAGES = ["app/views/translate.py", "app/views/decoding.py", "app/views/positional.py", "app/views/masks.py",
         "app/views/mechanics.py", "app/views/heads.py", "app/views/model_training.py", "app/views/lecture.py"]
SENTENCE = "The house is small."


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    return load_checkpoint(marian_checkpoint(tmp_path_factory.mktemp("marian") / "opus-mt-en-de"), torch.device("cpu"))


@pytest.fixture
def on_marian(app_test, marian):
    """app_test on the Marian model, a short output (max_len 6) and an English sentence. The upload is also put in
    this process's bare session state: AppTest calls the model choice's format_func (app.models.registry.model_label,
    which reads the session's uploads) outside the script run when it sends a widget's value."""
    def make(page: str, ckpt=None, **state):
        ckpt = ckpt or marian
        st.session_state["uploads"] = {NAME: ckpt}
        return app_test(page, model_name=NAME, uploads={NAME: ckpt}, max_len=6, **{"text": SENTENCE, **state})
    yield make
    st.session_state.pop("uploads", None)


def translated(at):
    """The Translate page after pressing Translate."""
    return at.button(key="translate").click().run()


@pytest.mark.parametrize("page", [pytest.param(page, marks=pytest.mark.slow) if page.endswith("heads.py") else page
                                  for page in PAGES])  # the Heads page's over 5 s: CI runs it, the quick loop not
def test_every_page_draws_a_6x16_marian_model_without_an_error(on_marian, page):
    at = on_marian(page)
    if page == PAGES[0]:
        at = translated(at)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart"), "no figure drawn"


def test_the_layer_and_head_pickers_and_the_model_view_hold_every_head(on_marian, figures):
    at = translated(on_marian(PAGES[0], translate_view="Model view"))
    assert len(at.segmented_control(key="head").options) == 17  # mean + 16 heads
    assert len(at.segmented_control(key="layer").options) == 6
    grid = figures(at)["translate_model_view"]
    assert sum(trace["type"] == "heatmap" for trace in grid["data"]) == 6 * 16
    titles = [a["text"] for a in grid["layout"]["annotations"] if a["text"].startswith("H")]
    assert titles == head_titles(16) == [f"H{h}" for h in range(1, 17)]


def test_the_masks_page_never_masks_marians_start_token_as_padding(on_marian, figures, marian):
    """The decoder input starts with <pad> (id = pad_id): the target padding mask lets every query see it, and
    padding AND causal is exactly what the forward pass used."""
    at = on_marian(PAGES[3], mask_other="We went home because it was raining and we were tired.")
    assert not at.exception
    drawn = figures(at)
    padding, causal, used = (np.asarray(drawn[k]["data"][0]["z"], dtype=bool)
                             for k in ("mask_tpad", "mask_causal", "mask_dec"))
    assert padding[:, 0].all() and used[:, 0].all()
    np.testing.assert_array_equal(used, padding & causal)
    pieces = at.dataframe[0].value
    assert (pieces.filter(like="decoder input", axis=0)["0"] == "<pad>").all()
    assert any("never masked as padding" in c.value for c in at.caption)


def test_the_beam_tree_starts_at_marians_start_piece(on_marian, figures):
    at = on_marian(PAGES[1], beam_size=2)
    assert not at.exception
    tree = figures(at)["beam_tree"]
    root = next(t for t in tree["data"] if str(t.get("name", "")).startswith("start"))
    assert root["name"] == "start &lt;pad&gt;" and root["hovertemplate"].startswith("start: &lt;pad&gt;")
    assert tree["layout"]["xaxis2"]["ticktext"][0] == "&lt;pad&gt;"  # the best path's axis names it first
    assert any("reads <pad>" in c.value for c in at.caption)


def test_the_model_page_names_marians_options_and_counts_every_parameter(on_marian, figures, marian, caplog):
    at = on_marian(PAGES[6])
    assert marian.path is not None and not (marian.path / "log.csv").exists()
    assert "cannot read" not in caplog.text  # a converted model has no training logs: a note, not a traceback
    table = at.dataframe[0].value.set_index("setting")["this model"]
    assert (table["FFN activation"], table["Positional encoding"]) == ("Swish (SiLU)", "sines, then cosines")
    bars = figures(at)["model_parameters"]["data"][0]
    assert int(np.sum(bars["x"])) == sum(p.numel() for p in marian.model.parameters())
    assert any("swish" in latex.value for latex in at.latex)


def test_the_positional_page_draws_marians_layout(on_marian, figures):
    at = on_marian(PAGES[2])
    drawn = figures(at)
    assert "first half sin" in drawn["pe_matrix"]["layout"]["xaxis"]["title"]["text"]
    names = [t["name"] for t in drawn["pe_curves"]["data"]]
    assert any(n.startswith("dim 16 (cos") for n in names)  # d_model 32: dimension 16 is the first cosine
    assert "d_{model}/2" in at.latex[0].value


@pytest.mark.parametrize("source, target, first", [("en", "de", BY_LANGUAGE["en"].sentences[0]),
                                                    ("fr", "en", BY_LANGUAGE["fr"].sentences[0])])
def test_examples_and_labels_come_from_the_checkpoints_languages(on_marian, marian, source, target, first):
    ckpt = dataclasses.replace(marian, meta={**marian.meta, "source_lang": source, "target_lang": target})
    at = on_marian(PAGES[0], ckpt=ckpt)
    assert at.button(key="example_0").label == first
    label = at.selectbox(key="model_name").format_func(NAME)
    assert {"en": "English", "fr": "French", "de": "German"}[source] in label
    assert "Uploaded" in label and "6+6 layers, 16 heads" in label


def test_a_language_without_examples_gets_none_and_a_note(on_marian, marian):
    ckpt = dataclasses.replace(marian, meta={**marian.meta, "source_lang": "ru", "target_lang": "en"})
    at = on_marian(PAGES[0], ckpt=ckpt)
    assert not [b for b in at.button if str(b.key).startswith("example_")]
    assert any("No example sentences in Russian" in c.value for c in at.caption)
    assert at.text_area(key="text").placeholder == "Type a sentence in Russian…"


def test_choosing_a_model_puts_a_stock_sentence_in_its_language_and_keeps_a_typed_one(on_marian, app_test, marian):
    french = dataclasses.replace(marian, meta={**marian.meta, "source_lang": "fr", "target_lang": "de"})
    on_marian(PAGES[2], ckpt=french)  # (puts the upload where model_label finds it)
    at = app_test(PAGES[2], model_name="reverse", uploads={NAME: french}, text="a b c d e f g h i j")
    at.selectbox(key="model_name").select(NAME).run()
    assert at.session_state["text"] == BY_LANGUAGE["fr"].sentences[0]
    at.session_state["text"] = "Mon propre texte."
    at.selectbox(key="model_name").select("reverse").run()
    at.selectbox(key="model_name").select(NAME).run()
    assert at.session_state["text"] == "Mon propre texte."


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    """An opus-mt-en-ROMANCE-like model: its vocabulary has target-language tokens."""
    folder = tmp_path_factory.mktemp("multi") / "opus-mt-en-ROMANCE"
    return load_checkpoint(marian_checkpoint(folder, n_heads=2, n_layers=2, languages=("en", "ROMANCE"),
                                             language_tokens=(">>fra<<", ">>ita<<", ">>spa<<")), torch.device("cpu"))


def test_a_multilingual_model_asks_for_the_target_language_and_writes_its_token(on_marian, multilingual):
    at = on_marian(PAGES[0], ckpt=multilingual)
    choice = at.selectbox(key="target_token")
    assert choice.options == ["French (>>fra<<)", "Italian (>>ita<<)", "Spanish (>>spa<<)"] and choice.value is None
    assert any(">>fra<<" in w.value for w in at.warning)
    at = choice.select(">>spa<<").run()
    # the language warning is gone (a model of random weights may still say it is unsure of its output)
    assert at.session_state["text"] == f">>spa<< {SENTENCE}" and all("unsure" in w.value for w in at.warning)
    at = at.selectbox(key="target_token").select(">>fra<<").run()
    assert at.session_state["text"] == f">>fra<< {SENTENCE}"
    at = at.button(key="example_1").click().run()  # an example keeps the chosen language
    assert at.session_state["text"] == f">>fra<< {BY_LANGUAGE['en'].sentences[1]}"
    at = translated(at)
    # a model of random weights is unsure of what it writes, and says so: no other warning
    assert not at.exception and not at.error and all("unsure" in w.value for w in at.warning)
    ids = multilingual.tokenizer.encode(at.session_state["text"])
    assert multilingual.tokenizer.pieces(ids)[0] == ">>fra<<"  # one piece: the first the encoder reads


def test_a_target_language_token_alone_is_no_sentence_to_translate(on_marian, multilingual):
    at = on_marian(PAGES[0], ckpt=multilingual, text=" \n ")
    at = at.selectbox(key="target_token").select(">>spa<<").run()
    assert at.session_state["text"] == ">>spa<< "
    at = translated(at)
    assert not at.exception and not at.error
    assert any("Type a sentence" in i.value for i in at.info) and not at.get("plotly_chart")


def test_a_model_with_one_target_language_offers_no_choice_and_drops_a_token(on_marian, app_test, multilingual):
    on_marian(PAGES[2], ckpt=multilingual)  # (puts the upload where model_label finds it)
    at = app_test(PAGES[0], model_name=NAME, uploads={NAME: multilingual}, text=f">>ita<< {SENTENCE}")
    assert at.selectbox(key="target_token").value == ">>ita<<" and not at.warning
    at.selectbox(key="model_name").select("en-de").run()
    assert at.session_state["text"] == SENTENCE
    assert not [s for s in at.selectbox if s.key == "target_token"]


def test_choosing_a_model_sets_beam_search_alpha_to_the_one_chosen_for_it(on_marian, app_test, marian):
    """A model whose checkpoint records the α chosen on its validation split gets it; one without gets the paper's
    0.6; a value outside the slider's range is not trusted (the slider would refuse it)."""
    tuned = dataclasses.replace(marian, meta={**marian.meta, "length_penalty": 1.3})
    on_marian(PAGES[2], ckpt=tuned)  # (puts the upload where model_label finds it)
    at = app_test(PAGES[0], model_name="reverse", uploads={NAME: tuned}, length_penalty=0.2)
    at.selectbox(key="model_name").select(NAME).run()
    assert at.session_state["length_penalty"] == 1.3 and at.slider(key="length_penalty").value == 1.3
    at.selectbox(key="model_name").select("reverse").run()
    assert at.session_state["length_penalty"] == 0.6
    wild = dataclasses.replace(marian, meta={**marian.meta, "length_penalty": 7.0})
    on_marian(PAGES[2], ckpt=wild)
    at = app_test(PAGES[0], model_name="reverse", uploads={NAME: wild})
    at.selectbox(key="model_name").select(NAME).run()
    assert at.session_state["length_penalty"] == 0.6 and not at.exception


def test_a_model_that_forces_eos_at_the_limit_ends_there_and_the_decoding_page_says_why(on_marian, marian):
    """A converted opus-mt model records forced_eos (Hugging Face's forced_eos_token_id): the tiny random model runs to
    the length limit (6), where its last piece is </s>; the Decoding page's last step says the rule chose it."""
    forcing = dataclasses.replace(marian, meta={**marian.meta, "forced_eos": True})
    at = on_marian(PAGES[1], ckpt=forcing, step=6)
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = [c.value for c in at.caption if "forced_eos_token_id" in c.value]
    assert len(said) == 1 and "length limit (6 pieces)" in said[0]
    assert any("chosen: **\\</s\\>**" in m.value for m in at.markdown)  # the piece shown as written, not as a tag
    free = on_marian(PAGES[1], step=6)  # the same model without the rule: cut at the limit, no note
    assert not [c.value for c in free.caption if "forced_eos_token_id" in c.value]
    assert not any("chosen: **\\</s\\>**" in m.value for m in free.markdown)
