"""Why this piece and not that one (app.views.contrastive) on the Decoding page, and scoring a given translation on
the Translate page (AppTest): what is drawn is the model's own numbers, the cost is said before the work runs."""
from __future__ import annotations

import numpy as np

from explain.integrated_gradients import BASELINE, gradient_x_input, integrated_gradients
from model.network.config import DecodeConfig
from model.serving.inference import score_translation, translate

TEXT = "a b c d e f"


def test_the_decoding_page_attributes_the_choice_against_an_alternative(app_test, figures, shipped):
    at = app_test("app/views/decoding.py", text=TEXT, beam_size=1)
    at.slider(key="step").set_value(3).run()
    assert not at.exception
    assert any("Cost before it runs" in c.value and "32 of them" in c.value for c in at.caption)
    assert "decoding_why_source" not in figures(at)  # nothing runs before the button
    at.selectbox(key="decoding_why_alt").set_value(1)
    at.button(key="decoding_why_run").click().run()
    assert not at.exception
    ckpt = shipped("reverse")
    step = translate(ckpt.model, ckpt.tokenizer, TEXT, DecodeConfig(max_len=60)).result.steps[2]
    chosen = int(step.topk_ids[0, 0])
    alternative = [int(i) for i in step.topk_ids[0].tolist() if int(i) != chosen][1]
    prefix = tuple(step.prefixes[0].tolist())
    direct = translate(ckpt.model, ckpt.tokenizer, TEXT, DecodeConfig(max_len=60))
    ig = integrated_gradients(ckpt.model, direct.source.ids, prefix, chosen, alternative, steps=32)
    gxi = gradient_x_input(ckpt.model, direct.source.ids, prefix, chosen, alternative)
    figs = figures(at)
    np.testing.assert_allclose(figs["decoding_why_source"]["data"][0]["y"], ig.source.double().numpy(), atol=1e-5)
    np.testing.assert_allclose(figs["decoding_why_source"]["data"][1]["y"], gxi.source.double().numpy(), atol=1e-5)
    np.testing.assert_allclose(figs["decoding_why_prefix"]["data"][0]["y"], ig.prefix.double().numpy(), atol=1e-5)
    said = " ".join(c.value for c in at.caption)
    assert BASELINE in said and "32 Gauss-Legendre steps" in said and f"completeness gap {ig.gap:+.3f}" in said


def test_the_translate_page_scores_a_given_translation(app_test, figures, shipped):
    at = app_test(text=TEXT)
    at.button(key="translate").click().run()
    assert not at.exception
    at.text_input(key="forced_text").input("f e d x b a").run()
    at.button(key="score_forced").click().run()
    assert not at.exception
    ckpt = shipped("reverse")
    scored = score_translation(ckpt.model, ckpt.tokenizer, TEXT, "f e d x b a", DecodeConfig(max_len=60))
    frame = next(d.value for d in at.dataframe if "rank" in d.value.columns)
    choices = [s.forced for s in scored.result.steps]
    assert list(frame["piece"]) == list(scored.target_pieces)
    np.testing.assert_allclose(frame["probability"], [np.exp(c.log_prob) for c in choices], atol=1e-5)
    assert list(frame["rank"]) == [c.rank for c in choices]
    parted = next(i for i, c in enumerate(choices) if c.rank > 1)
    assert frame[""][parted] == "← the two part ways here"
    assert any(f"{scored.result.best.log_prob:.3f}" in m.value for m in at.markdown)
    heatmap = figures(at)["translate_heatmap"]  # the one explorer shows the pass that read the given translation
    assert heatmap["layout"]["yaxis"]["ticktext"][:2] != [] and not at.exception
    at.segmented_control(key="explore_scored").set_value("the model's translation").run()
    assert not at.exception
