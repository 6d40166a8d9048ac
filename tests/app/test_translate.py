"""Translate page (AppTest): what a user types is decoded, and the explorer draws the model's own weights."""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
import torch

from app.charts.attention import OPACITY_STEP
from app.charts.axes import plotly_text
from app.checks.carried_numbers import added_numbers, dropped_numbers
from app.explorer import point_customdata
from app.serving.scheduler import MAX_INPUT_CHARS, store
from explain.heads import merge_to_words
from model.checkpoints.quality import is_weak, shipped_scores
from model.decoding.search import greedy_decode
from model.network.config import DecodeConfig
from model.network.positional import MAX_POSITIONS
from model.serving.inference import prepare_source, translate
from model.tokenization.pieces import word_groups, word_labels

TEXT = "h e l l o w o r l d"


def _translate(at, text):
    at.text_area(key="text").input(text)
    return at.button(key="translate").click().run()


def _shown_text(at) -> str:
    """The big translation line (an HTML div) on the page."""
    shown = [m.value for m in at.markdown if "font-size:1.9rem" in m.value]
    assert len(shown) == 1, "expected exactly one translation on the page"
    return shown[0].split("<span class='ae-text'>", 1)[1].split("</span>", 1)[0]  # without a word of doubt


def _direct(ckpt, text, beam_size=1):
    return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(beam_size=beam_size, max_len=60))


def test_page_renders_with_examples_and_no_result_yet(app_test):
    # "No result yet" holds on a fresh server: the store is shared by every session, and a test that opened another
    # page first (they translate by themselves) would have put this very request there (found by .ci/run's shuffle).
    store.clear()
    at = app_test()
    assert not at.exception
    assert at.text_area(key="text").max_chars == MAX_INPUT_CHARS
    assert any(b.label == "h e l l o w o r l d" for b in at.button)  # the reverse model's letter examples
    assert not at.get("plotly_chart")
    assert any("Press **Translate**" in i.value for i in at.info)


def test_example_button_fills_the_box(app_test):
    at = app_test()
    at.button(key="example_1").click().run()
    assert at.text_area(key="text").value == "a t t e n t i o n"


def test_translate_draws_the_models_weights_for_kind_layer_head(app_test, figures, shipped):
    at = _translate(app_test(), TEXT)
    assert not at.exception
    direct = _direct(shipped("reverse"), TEXT)
    assert _shown_text(at) == direct.text == "d l r o w o l l e h"
    for kind, layer, head in (("cross", 1, 2), ("enc_self", 0, 3), ("dec_self", 1, 0)):
        at.segmented_control(key="kind").set_value(kind)
        at.segmented_control(key="layer").set_value(layer)
        at.segmented_control(key="head").set_value(head).run()
        assert not at.exception
        fig = figures(at)["translate_heatmap"]
        expected = direct.trace.weights(kind)[layer, 0, head].double().numpy()
        np.testing.assert_array_equal(fig["data"][0]["z"], expected)
        # decoder rows are named by the piece written at that step; its keys are what the decoder read
        queries = direct.source.pieces if kind == "enc_self" else direct.target_pieces
        keys = direct.target_input_pieces if kind == "dec_self" else direct.source.pieces
        assert fig["layout"]["yaxis"]["ticktext"] == plotly_text(queries)
        assert fig["layout"]["xaxis"]["ticktext"] == plotly_text(keys)
        assert f"layer {layer + 1} · head {head + 1}" in fig["layout"]["title"]["text"]
    assert fig["layout"]["yaxis"]["ticktext"][0] != "&lt;s&gt;"
    assert "writes output piece t" in fig["layout"]["yaxis"]["title"]["text"]
    at.toggle(key="rows_input").set_value(True).run()  # the same rows named by the decoder input instead
    fig = figures(at)["translate_heatmap"]
    assert fig["layout"]["yaxis"]["ticktext"] == plotly_text(direct.target_input_pieces)
    assert fig["layout"]["yaxis"]["ticktext"][0] == "&lt;s&gt;"
    assert "reads it" in fig["layout"]["yaxis"]["title"]["text"]
    masked = fig["data"][1]["z"]  # dec_self: the causal mask is drawn grey, above the diagonal only
    n = len(masked)  # uint8 overlay: 1 = masked (grey), 0 = transparent
    assert (masked[np.tril_indices(n)] == 0).all() and (masked[np.triu_indices(n, 1)] == 1).all()


def test_mean_over_heads_and_word_level(app_test, figures, shipped):
    at = _translate(app_test(), TEXT)
    direct = _direct(shipped("reverse"), TEXT)
    at.segmented_control(key="kind").set_value("cross")
    at.segmented_control(key="layer").set_value(1)
    at.segmented_control(key="head").set_value(-1).run()
    z = figures(at)["translate_heatmap"]["data"][0]["z"]
    np.testing.assert_allclose(z, direct.trace.weights("cross")[1, 0].numpy().mean(axis=0), rtol=1e-6)
    at.toggle(key="word_level").set_value(True)
    at.segmented_control(key="head").set_value(1).run()
    fig = figures(at)["translate_heatmap"]
    q_groups, k_groups = word_groups(list(direct.target_input_pieces)), word_groups(list(direct.source.pieces))
    words = merge_to_words(direct.trace.weights("cross")[1, 0, 1], q_groups, k_groups)
    np.testing.assert_allclose(fig["data"][0]["z"], words.double().numpy(), rtol=1e-6)
    assert fig["layout"]["xaxis"]["ticktext"] == plotly_text(word_labels(list(direct.source.pieces), k_groups))


def test_head_view_and_model_view(app_test, figures, shipped):
    at = _translate(app_test(), TEXT)
    direct = _direct(shipped("reverse"), TEXT)
    at.segmented_control(key="kind").set_value("cross")
    at.segmented_control(key="layer").set_value(0)
    at.segmented_control(key="head").set_value(1)
    at.segmented_control(key="translate_view").set_value("Head view").run()
    assert not at.exception
    traces = [t for t in figures(at)["translate_head_view"]["data"] if t.get("mode") == "lines"]
    weights = direct.trace.weights("cross")[0, 0, 1].numpy()
    lines = [(i, j, t["opacity"]) for t in traces for i, j in t["meta"]["lines"]]
    assert {t["meta"]["head"] for t in traces} == {1}
    assert sorted((i, j) for i, j, _ in lines) == [tuple(p) for p in np.argwhere(weights >= 0.02).tolist()]
    for i, j, opacity in lines:
        assert opacity == pytest.approx(max(weights[i, j], OPACITY_STEP), abs=OPACITY_STEP / 2 + 1e-6)
    at.slider(key="translate_min_line_short").set_value(0.3).run()  # the threshold slider: only strong lines left
    traces = [t for t in figures(at)["translate_head_view"]["data"] if t.get("mode") == "lines"]
    strong = sorted(tuple(p) for t in traces for p in t["meta"]["lines"])
    assert strong == [tuple(p) for p in np.argwhere(weights >= 0.3).tolist()] and len(strong) < len(lines)
    at.segmented_control(key="translate_view").set_value("Model view").run()
    heatmaps = [t for t in figures(at)["translate_model_view"]["data"] if t["type"] == "heatmap"]
    all_weights = direct.trace.weights("cross")[:, 0].double().numpy()  # [L, H, T, S]
    assert len(heatmaps) == all_weights.shape[0] * all_weights.shape[1]
    # layer 2, head 2 (4 heads per layer); the model view draws uint8 levels round(255 * weight), so it equals the
    # model's weights within 1/255 (the heatmap a click opens draws them exactly)
    assert heatmaps[5]["z"].dtype == np.uint8
    np.testing.assert_allclose(heatmaps[5]["z"] / 255, all_weights[1, 1], rtol=0, atol=1 / 255)


def test_result_stays_when_settings_change(app_test, figures):
    at = _translate(app_test(), TEXT)
    at.slider(key="beam_size").set_value(3).run()
    assert not at.exception
    assert any("Settings changed" in i.value for i in at.info)
    assert _shown_text(at) == "d l r o w o l l e h" and "translate_heatmap" in figures(at)
    at.button(key="translate").click().run()
    assert not any("Settings changed" in i.value for i in at.info)


def test_empty_input_gives_a_hint_and_no_chart(app_test):
    at = _translate(app_test(), "   ")
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)
    assert not at.get("plotly_chart") and not at.error


def test_input_longer_than_the_model_was_built_for_runs_with_a_note(app_test):
    text = " ".join("abcdefghij"[i % 10] for i in range(400))  # 400 pieces; the reverse model was built for 64
    at = _translate(app_test(), text)
    assert not at.exception and not at.warning
    assert any("needs 401 positions, more than the 64 this model was built" in i.value for i in at.info)
    assert at.get("plotly_chart")


def test_input_past_the_server_cap_is_cut_with_a_warning(app_test, shipped):
    text = " ".join("abcdefghij"[i % 10] for i in range(MAX_POSITIONS + 100))
    at = _translate(app_test(), text)
    assert not at.exception
    dropped = prepare_source(shipped("reverse").tokenizer, text).dropped
    assert dropped == MAX_POSITIONS + 100 - (MAX_POSITIONS - 1)
    assert any(f"the last {dropped} pieces were dropped" in w.value for w in at.warning)
    assert at.get("plotly_chart")


@pytest.mark.parametrize("model_name", ["reverse", "en-de"])
def test_odd_unicode_translates(app_test, figures, shipped, model_name):
    ckpt = shipped(model_name)
    text = "naïve 🙂 日本語 \u200b"
    at = _translate(app_test(model_name=model_name), text)
    assert not at.exception and not at.error
    assert _shown_text(at) == html.escape(_direct(ckpt, text).text)
    assert "translate_heatmap" in figures(at)


def test_beam_size_one_is_greedy(app_test, shipped):
    ckpt = shipped("reverse")
    text = "a b c d e f g"
    at = app_test()
    at.slider(key="beam_size").set_value(3)
    at = _translate(at, text)
    at.slider(key="beam_size").set_value(1)
    at = at.button(key="translate").click().run()
    src = prepare_source(ckpt.tokenizer, text, ckpt.config.max_len)
    greedy = greedy_decode(ckpt.model, torch.tensor(src.ids), DecodeConfig(max_len=60))
    assert _shown_text(at) == ckpt.tokenizer.decode(greedy.best.tokens) == "g f e d c b a"


def test_a_weak_model_says_so_from_its_own_test_scores(app_test, shipped):
    at = app_test(model_name="en-de")
    report = json.loads((shipped("en-de").path / "test_scores.json").read_text())
    notes = [c.value for c in at.caption if "translates poorly" in c.value]
    assert is_weak(shipped_scores(shipped("en-de").path)) == bool(notes)
    if notes:  # the note quotes the shipped numbers
        assert f"beam4 BLEU {report['beam4']['overall']['bleu']:.1f} / chrF {report['beam4']['overall']['chrf']:.1f}" \
            in notes[0]
    at = app_test()  # the reverse model
    assert not [c.value for c in at.caption if "translates poorly" in c.value]  # it ships no such scores


@pytest.mark.parametrize("sent, expected", [
    ({"customdata": {"0": 1, "1": 2, "10": 7, "2": 0.5}}, [1, 2, 0.5, 7]),  # a typed array, as the browser sends it
    ({"customdata": [1, 2]}, [1, 2]),
    ({"x": 3}, None),
])
def test_a_clicked_points_customdata_reads_in_order(sent, expected):
    """The model-view click opened the wrong head when a typed array's keys were read as its values."""

    assert point_customdata(sent) == expected


def test_input_the_model_cannot_read_is_flagged_as_untrustworthy(app_test):
    """Chinese and emoji are raw bytes for the en-de model (byte fallback) and <unk> for the reversal model: the
    output then says nothing about the input, and the warning says which of the two the model read."""
    at = app_test(model_name="en-de", text="你好，世界 🙂🙂 今天天气很好")
    at.button(key="translate").click().run()
    assert not at.exception
    untrusted = [w.value for w in at.warning if "cannot be trusted" in w.value]
    assert len(untrusted) == 1 and "raw bytes" in untrusted[0] and "<unk>" not in untrusted[0], untrusted
    reverse = app_test(text="你好 世界 a b")
    reverse.button(key="translate").click().run()
    untrusted = [w.value for w in reverse.warning if "cannot be trusted" in w.value]
    assert len(untrusted) == 1 and "read as <unk>" in untrusted[0] and "bytes" not in untrusted[0], untrusted
    at.text_area(key="text").input("The house is small.")
    at.button(key="translate").click().run()
    assert not any("cannot be trusted" in w.value for w in at.warning)


def test_a_paragraph_is_translated_sentence_by_sentence_with_a_picker(app_test, shipped):
    paragraph = "H e l l o ok. W o r l d ok! A t t e n t i o n ok."  # "o." alone would read as an initial
    at = _translate(app_test(), paragraph)
    assert not at.exception
    picker = at.selectbox(key="sentence")
    assert picker.options == ["1. H e l l o ok.", "2. W o r l d ok!", "3. A t t e n t i o n ok."]
    ckpt = shipped("reverse")
    assert html.unescape(_shown_text(at)) == _direct(ckpt, "H e l l o ok.").text  # the first sentence, on its own
    picker.set_value(2).run()  # picking a sentence translates it at once, no second click
    assert not at.exception
    assert html.unescape(_shown_text(at)) == _direct(ckpt, "A t t e n t i o n ok.").text
    at.text_area(key="text").input("N e w ok. T e x t ok.").run()  # a new text starts at its first sentence
    assert at.session_state["sentence"] == 0


def _numbers_notes(at) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("**Check the numbers.**")]


def test_a_number_the_translation_lost_or_made_is_named_and_kept_ones_are_not(app_test, shipped):
    """The shipped model writes "Tram 11" as "Tram 1" greedily (the model card lists it): the page names the number a
    reader would otherwise have to compare digit by digit, and the one the translation has instead; a sentence whose
    numbers all came through, and no others, gets no note."""
    lost = "Tram 11 goes from the station to the zoo in 15 minutes."
    output = _direct(shipped("en-de"), lost).text
    assert (dropped_numbers(lost, output), added_numbers(lost, output)) == (["11"], ["1"]), \
        "the model now keeps 11: pick a sentence it changes a number of, from its card's misses"
    at = _translate(app_test(model_name="en-de"), lost)
    assert not at.exception
    notes = _numbers_notes(at)
    assert len(notes) == 1 and "Not in the translation: `11`. Not in your sentence: `1`." in notes[0], notes
    kept = "The museum opens at 10:30 and closes at 18:00."
    output = _direct(shipped("en-de"), kept).text
    assert dropped_numbers(kept, output) == added_numbers(kept, output) == []
    at = _translate(at, kept)
    assert not at.exception and not _numbers_notes(at)


def test_the_numbers_note_names_the_first_few_of_many(app_test, shipped):
    text = "1 2 3 4 5 6 7 8 9 10 11"
    assert dropped_numbers(text, _direct(shipped("reverse"), text).text) == text.split()  # it writes letters only
    at = _translate(app_test(), text)
    assert not at.exception
    notes = _numbers_notes(at)
    assert len(notes) == 1 and "Not in the translation: `1`, `2`, `3`, `4`, `5`, `6`, `7`, `8` and 3 more. A model" \
        in notes[0], notes


def test_keeping_names_and_numbers_writes_what_beam_search_garbles(app_test, shipped):
    """Beam 4 turns "Aisha Rahman" into "Ein Fischfang Rahman" (the model card lists it); with the toggle on, the page's
    translation writes the name and the numbers as they are, says so, and the Decoding page explains its banks. The
    toggle is off limits to greedy decoding."""
    text = "Aisha Rahman will present her results at 11:45 in lecture hall 23."
    plain = _direct(shipped("en-de"), text, beam_size=4).text
    assert "Aisha Rahman" not in plain, "beam search now keeps the name: pick another miss from the model card"
    at = app_test(model_name="en-de")
    assert at.toggle(key="keep_names").disabled  # greedy
    at.slider(key="beam_size").set_value(4).run()
    assert not at.toggle(key="keep_names").disabled
    at.toggle(key="keep_names").set_value(True).run()
    at.slider(key="beam_size").set_value(1).run()  # on but greedy: the page says it does nothing now
    assert any("On, but used only by beam search" in c.value for c in at.caption)
    at.slider(key="beam_size").set_value(4).run()
    assert not any("On, but used only by beam search" in c.value for c in at.caption)
    at = _translate(at, text)
    assert not at.exception
    shown = html.unescape(_shown_text(at))
    assert all(s in shown for s in ("Aisha Rahman", "11:45", "23")), shown
    assert any("It had to keep" in c.value and "and does" in c.value for c in at.caption)
    at.switch_page("app/views/decoding.py").run()
    assert not at.exception
    assert any("Hypotheses are grouped into banks" in c.value for c in at.caption)
    last = at.slider(key="step").max  # the last step: the best output's end holds every kept piece
    at.slider(key="step").set_value(last).run()
    notes = [c.value for c in at.caption if c.value.startswith("Bank ")]
    assert len(notes) == 1 and re.match(r"Bank (\d+) of \1:", notes[0]), notes  # every kept piece held
    assert "written whole: “Aisha Rahman”, “11:45”, “23”." in notes[0]
