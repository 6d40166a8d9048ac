"""Decoding page (AppTest): each step shows that step's probabilities and attention rows; beam search shows its tree."""
from __future__ import annotations

import numpy as np

from app.charts.axes import plotly_text
from model.network.config import DecodeConfig
from model.serving.inference import translate

PAGE = "app/views/decoding.py"
TEXT = "a b c d e f"


def _direct(ckpt, text, beam_size):
    return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(beam_size=beam_size, max_len=60))


def test_step_slider_shows_that_steps_rows(app_test, figures, shipped):
    at = app_test(PAGE, text=TEXT, beam_size=1)
    assert not at.exception
    direct = _direct(shipped("reverse"), TEXT, 1)
    at.slider(key="step").set_value(4)  # steps are numbered from 1 on screen: the fourth step, index 3
    at.segmented_control(key="layer").set_value(1)
    at.segmented_control(key="head").set_value(2).run()
    assert not at.exception
    step = direct.result.steps[3]
    figs = figures(at)
    np.testing.assert_array_equal(figs["decoding_topk"]["data"][0]["x"], step.topk_probs[0].double().numpy())
    assert figs["decoding_topk"]["layout"]["yaxis"]["ticktext"] == plotly_text(shipped("reverse").tokenizer.pieces(
        step.topk_ids[0].tolist()))
    np.testing.assert_array_equal(figs["decoding_dec_self"]["data"][0]["y"], step.dec_self[1, 0, 2].double().numpy())
    np.testing.assert_array_equal(figs["decoding_cross"]["data"][0]["y"], step.cross[1, 0, 2].double().numpy())
    assert figs["decoding_dec_self"]["layout"]["xaxis"]["ticktext"] == ["&lt;s&gt;", "▁f", "▁e", "▁d"]
    assert figs["decoding_cross"]["layout"]["xaxis"]["ticktext"] == plotly_text(direct.source.pieces)
    # the chosen piece (greedy: the argmax, "▁c") is the highlighted bar
    colors = figs["decoding_topk"]["data"][0]["marker"]["color"]
    assert colors[0] != colors[1] and direct.target_pieces[3] == "▁c"
    assert "beam_tree" not in figs and any("beam size above 1" in i.value for i in at.info)


def test_previous_next_move_and_stop_at_the_ends(app_test, shipped):
    n_steps = len(_direct(shipped("reverse"), TEXT, 1).result.steps)
    at = app_test(PAGE, text=TEXT, beam_size=1)
    assert at.slider(key="step").value == 1 and at.button(key="prev_step").disabled
    at.button(key="next_step").click().run()
    at.button(key="next_step").click().run()
    assert at.slider(key="step").value == 3
    at.button(key="prev_step").click().run()
    assert at.slider(key="step").value == 2
    at.slider(key="step").set_value(n_steps).run()
    assert at.button(key="next_step").disabled and not at.button(key="prev_step").disabled and not at.exception


def test_beam_search_shows_tree_and_nbest(app_test, figures, shipped):
    at = app_test(PAGE, text=TEXT, beam_size=3)
    assert not at.exception
    direct = _direct(shipped("reverse"), TEXT, 3)
    figs = figures(at)
    nodes = [row for t in figs["beam_tree"]["data"] if t.get("customdata") is not None for row in t["customdata"]]
    assert len(nodes) == 1 + sum(len(s.candidates) for s in direct.result.steps)
    statuses = sorted(row[4] for row in nodes if len(row) > 2)
    assert statuses == sorted(c.status for s in direct.result.steps for c in s.candidates)
    table = at.dataframe[-1].value  # the n-best list (the only table on this page)
    assert len(table) == len(direct.result.hypotheses)
    np.testing.assert_allclose(table["log-prob"], [h.log_prob for h in direct.result.hypotheses], rtol=1e-6)
    np.testing.assert_allclose(table["score = log-prob / lp"], [h.score for h in direct.result.hypotheses], rtol=1e-6)
    assert table["translation"].iloc[0] == direct.text


def test_selecting_a_beam_node_shows_its_parent_row(app_test, figures, shipped):
    direct = _direct(shipped("reverse"), TEXT, 3)
    step = direct.result.steps[2]
    other = next(i for i, c in enumerate(step.candidates) if c.row != step.candidates[0].row)
    at = app_test(PAGE, text=TEXT, beam_size=3)
    at.slider(key="step").set_value(3).run()  # index 2
    at.segmented_control(key="layer").set_value(0)
    at.segmented_control(key="head").set_value(1)
    at.selectbox(key="beam_node").set_value(other).run()
    assert not at.exception
    row = step.candidates[other].row
    figs = figures(at)
    np.testing.assert_array_equal(figs["decoding_topk"]["data"][0]["x"], step.topk_probs[row].double().numpy())
    np.testing.assert_array_equal(figs["decoding_cross"]["data"][0]["y"], step.cross[0, row, 1].double().numpy())
    np.testing.assert_array_equal(figs["decoding_dec_self"]["data"][0]["y"], step.dec_self[0, row, 1].double().numpy())


def test_no_sentence_links_to_translate(app_test):
    at = app_test(PAGE, text="")
    assert not at.exception and not at.get("plotly_chart")
    assert any("type one on the Translate page" in i.value for i in at.info)


def test_text_typed_on_translate_survives_the_page_switch(app_test):
    at = app_test()
    at.text_area(key="text").input("a b c")
    at.button(key="translate").click().run()
    at.switch_page(PAGE).run()
    at.button(key="next_step").click().run()  # a second run on this page: the Translate widgets are gone
    assert not at.exception
    assert any("a b c" in m.value and "c b a" in m.value for m in at.markdown)


def test_sampling_shows_the_distribution_before_and_after_and_the_piece_drawn(app_test, figures, shipped):
    """A seeded sample, as the Translate page's sampling settings ask for it: the Decoding page shows, per step, the
    model's probabilities and the ones drawn from (the drawn piece marked), and the same seed draws the same pieces."""
    settings = dict(sample=True, temperature=1.5, sample_top_k=3, top_p=0.9, seed=7)
    at = app_test(PAGE, text=TEXT, **settings)
    assert not at.exception
    from model.network.config import Sampling

    config = DecodeConfig(max_len=60, sampling=Sampling(temperature=1.5, top_k=3, top_p=0.9, seed=7))
    direct = translate(shipped("reverse").model, shipped("reverse").tokenizer, TEXT, config)
    at.slider(key="step").set_value(2).run()
    step = direct.result.steps[1]
    fig = figures(at)["decoding_sample"]
    np.testing.assert_array_equal(fig["data"][0]["x"], step.sample.before.double().numpy())
    np.testing.assert_array_equal(fig["data"][1]["x"], step.sample.after.double().numpy())
    assert sum(1 for a in fig["data"][1]["x"] if a > 0) <= 3  # top-k 3 cut the rest
    assert "decoding_topk" not in figures(at) and any("Sampling: one hypothesis" in i.value for i in at.info)
    again = app_test(PAGE, text=TEXT, **settings)
    assert [m.value for m in again.markdown if "Source:" in m.value] == [m.value for m in at.markdown
                                                                          if "Source:" in m.value]


def test_temperature_zero_samples_the_greedy_translation(app_test, shipped):
    greedy = _direct(shipped("reverse"), "q w e r t y", 1)
    at = app_test(PAGE, text="q w e r t y", sample=True, temperature=0.0, seed=3)
    assert not at.exception
    assert any(greedy.text in m.value for m in at.markdown if "Source:" in m.value)
