"""Heads and attribution page (AppTest): it renders for both shipped models, and every number it shows is the
explain/ call's on the same sentence (head ablation, head importance, the three attributions, two sentences)."""
from __future__ import annotations

import numpy as np
import pytest

from app.explorer import KIND_SHORT
from explain.ablation import switched_off
from explain.attribution import NORM_BASED, ROLLOUT, SALIENCY, attribute
from explain.heads import all_heads, head_importance, n_layers_of, sequence_log_probs
from model.network.config import DecodeConfig
from model.serving.inference import translate

PAGE = "app/views/heads.py"
TEXTS = {"reverse": "h e l l o w o r l d", "en-de": "The old man gave me the book yesterday."}
SECTIONS = ["Switch heads off", "Attribution", "Compare two sentences"]


def _clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _direct(shipped, name):
    ckpt = shipped(name)
    return ckpt, translate(ckpt.model, ckpt.tokenizer, TEXTS[name], DecodeConfig(max_len=60))


@pytest.mark.parametrize("model_name", ["reverse", "en-de"])
@pytest.mark.parametrize("section", SECTIONS)
def test_page_renders_every_section(app_test, figures, model_name, section):
    at = app_test(PAGE, model_name=model_name, text=TEXTS[model_name], heads_section=section)
    _clean(at)
    figs = figures(at)
    assert len(figs) >= (1 if section == SECTIONS[0] else 3)
    for fig in figs.values():
        assert fig["layout"].get("title", {}).get("text"), "every figure is titled"
        assert all(t.get("hovertemplate") or t.get("hoverinfo") == "skip" for t in fig["data"]), "hover values"
    if model_name == "reverse":
        assert any("anti-diagonal" in i.value for i in at.info)


def test_switching_a_head_off_shows_both_translations_and_the_log_prob_change(app_test, figures, shipped):
    ckpt, original = _direct(shipped, "reverse")
    at = app_test(PAGE, text=TEXTS["reverse"])
    at.button_group(key="heads_off_cross_0").set_value([1]).run()
    _clean(at)
    heads = [("cross", 0, 1)]
    before = sequence_log_probs(ckpt.model, original.source.ids, original.target_ids)[0].item()
    after = sequence_log_probs(ckpt.model, original.source.ids, original.target_ids,
                               switched_off(ckpt.model, heads))[0].item()
    ablated = translate(ckpt.model, ckpt.tokenizer, TEXTS["reverse"], DecodeConfig(max_len=60),
                        head_mask=switched_off(ckpt.model, heads))
    metrics = {m.label: m for m in at.metric}
    assert metrics["log P(original translation), every head on"].value == f"{before:.3f}"
    assert metrics["… with these heads off"].value == f"{after:.3f}"
    assert metrics["… with these heads off"].delta == f"{after - before:+.3f} nats"
    shown = " ".join(m.value for m in at.markdown)
    assert f"**Every head on** · {original.text}" in shown and f"**With the heads off** · {ablated.text}" in shown
    figs = figures(at)
    change = figs["heads_piece_log_probs"]["data"][0]["y"]
    assert np.isclose(change.sum(), after - before, atol=1e-3)
    on, off, diff = (t["z"] for t in figs["heads_maps"]["data"])  # cross, last layer, mean over heads
    assert diff.shape == (len(original.target_ids), len(original.source.ids)) and np.abs(diff).max() > 0
    np.testing.assert_allclose(diff, off - on, atol=1e-6)
    np.testing.assert_allclose(on, original.trace.weights("cross")[-1, 0].mean(0).numpy(), atol=1e-5)


def test_switching_every_cross_head_off_breaks_the_reversal(app_test, shipped):
    _, original = _direct(shipped, "reverse")
    at = app_test(PAGE, text=TEXTS["reverse"])
    at.button(key="heads_all_cross").click().run()
    _clean(at)
    assert at.button_group(key="heads_off_cross_1").value == [0, 1, 2, 3]
    shown = [m.value for m in at.markdown if m.value.startswith("**With the heads off**")]
    assert shown and original.text not in shown[0]


@pytest.mark.parametrize("model_name", ["reverse", "en-de"])
def test_importance_table_values_are_head_importance(app_test, shipped, model_name):
    ckpt, original = _direct(shipped, model_name)
    at = app_test(PAGE, model_name=model_name, text=TEXTS[model_name])
    _clean(at)
    table = at.dataframe[0].value
    expected = head_importance(ckpt.model, original.source.ids, original.target_ids)
    heads = all_heads(n_layers_of(ckpt.model), ckpt.config.n_heads)
    assert len(table) == len(heads)
    kinds = {label: kind for kind, label in KIND_SHORT.items()}
    rows = [(kinds[k], layer - 1, head - 1) for k, layer, head in zip(table["attention"], table["layer"], table["head"],
                                                                      strict=True)]
    assert sorted(rows) == sorted(heads)  # every head once
    values = np.array([expected[k][l, h].item() for k, l, h in rows])
    shown = table["drop, this sentence (nats)"].to_numpy()
    np.testing.assert_allclose(shown, values, atol=1e-4)
    assert (np.diff(shown) <= 0).all()  # the most important head first
    assert any(c.startswith("drop, summed over") for c in table.columns)


def test_attribution_figures_are_the_explain_maps(app_test, figures, shipped):
    ckpt, original = _direct(shipped, "reverse")
    at = app_test(PAGE, text=TEXTS["reverse"], heads_section="Attribution")
    _clean(at)
    expected = attribute(ckpt.model, original.source.ids, original.target_ids)
    figs = figures(at)
    shown = {t["name"]: t["z"] for t in figs["heads_attr_maps"]["data"]}
    for name in (ROLLOUT, NORM_BASED, SALIENCY):
        np.testing.assert_allclose(shown[name], expected.maps[name].numpy(), atol=1e-4, err_msg=name)
    np.testing.assert_allclose(figs["heads_rollout"]["data"][0]["z"], expected.source_rollout.numpy(), atol=1e-5)
    # the reversal's known answer: norm-based cross-attention finds the anti-diagonal for every letter
    n = len(original.source.ids) - 1
    assert [int(np.argmax(row)) for row in shown[NORM_BASED][:n]] == list(range(n))[::-1]


def test_comparing_two_sentences_draws_their_difference_where_they_line_up(app_test, figures, shipped):
    ckpt = shipped("reverse")
    at = app_test(PAGE, text=TEXTS["reverse"], heads_section="Compare two sentences")
    _clean(at)
    a, b = (translate(ckpt.model, ckpt.tokenizer, t, DecodeConfig(max_len=60)) for t in ("s t r e e t", "s t r e a m"))
    diff = figures(at)["heads_cmp_diff"]["data"][0]["z"]
    expected = (b.trace.weights("enc_self")[-1, 0] - a.trace.weights("enc_self")[-1, 0]).mean(0).numpy()
    np.testing.assert_allclose(diff, expected, atol=1e-5)
    at.text_input(key="heads_cmp_b").input("s t r e a m s").run()
    _clean(at)
    assert "heads_cmp_diff" not in figures(at) and any("do not line up" in i.value for i in at.info)


def test_empty_text_gives_a_hint_and_heads_of_another_model_are_forgotten(app_test):
    at = app_test(PAGE, text="   ")
    assert not at.exception and any("Type a sentence" in i.value for i in at.info)
    # heads remembered from the en-de model (8 heads, 3 layers) that the reversal model (4 heads, 2 layers) lacks
    at = app_test(PAGE, text=TEXTS["reverse"], heads_off_cross_0=[7], heads_off_cross_2=[1])
    _clean(at)
    assert at.button_group(key="heads_off_cross_0").value == []
    assert any("Tick one or more heads" in i.value for i in at.info)
