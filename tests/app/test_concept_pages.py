"""The concept pages (positional encoding, masks, mechanics, model and training) render for both shipped
models, and the weights they draw are exactly the model's."""
from __future__ import annotations

import numpy as np
import pytest

from app.models.registry import load_model
from explain.masks import padded_batch_trace
from explain.positional import embedding_parts
from model.network.positional import sinusoidal_encoding
from model.serving.inference import translate
from training.schedule import noam_lr

PAGES = ["app/views/positional.py", "app/views/masks.py", "app/views/mechanics.py", "app/views/model_training.py"]
TEXT = "a b c d e f g"
MODEL_NAMES = ["reverse", "en-de"]  # both are shipped: a missing one is a failure, not a skip


def _clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("model_name", MODEL_NAMES)
@pytest.mark.parametrize("page", PAGES)
def test_page_renders(app_test, figures, page, model_name):
    text = TEXT if model_name == "reverse" else "The old man gave me the book yesterday."
    at = app_test(page, model_name=model_name, text=text)
    _clean(at)
    figs = figures(at)
    assert len(figs) >= 4
    for fig in figs.values():
        assert fig["layout"].get("title", {}).get("text") or fig["layout"].get("annotations"), "every figure is titled"


@pytest.mark.parametrize("page", PAGES[:3])
def test_empty_text_gives_a_hint(app_test, page):
    at = app_test(page, text="   ")
    assert not at.exception
    assert any("Type a sentence" in info.value for info in at.info)


def test_masks_page_weights_are_the_batch_trace_with_exact_zeros(app_test, figures):
    ckpt = load_model("reverse")
    at = app_test("app/views/masks.py", text=TEXT)
    other = at.text_input(key="mask_other").value
    assert len(other.split()) < len(TEXT.split())  # the default second sentence is shorter: it gets padded
    at.radio(key="mask_row").set_value(1)
    at.selectbox(key="mask_kind").select("enc_self").run()
    _clean(at)
    _, _, trace = padded_batch_trace(ckpt.model, ckpt.tokenizer, [TEXT, other])
    for kind, layer, head in (("enc_self", 0, 0), ("dec_self", 1, 2), ("cross", 1, 3)):
        if kind != "enc_self":
            at.selectbox(key="mask_kind").select(kind)
            at.selectbox(key="mask_layer").select(layer)
            at.selectbox(key="mask_head").select(head).run()
            _clean(at)
        shown = figures(at)["mask_weights"]["data"][0]["z"]
        expected = trace.weights(kind)[layer, 1, head].numpy()
        mask = trace.mask(kind)[1, 0].numpy()
        assert (~mask).any(), "the shorter sentence must have masked cells"
        np.testing.assert_array_equal(shown, expected)
        assert (shown[~mask] == 0).all()
        np.testing.assert_allclose(shown.sum(-1), 1.0, atol=1e-5)
        assert any("max weight on masked cells: **0.0**" in s.value for s in at.success)
        scores = figures(at)["mask_scores"]["data"][0]["z"]
        assert np.isnan(np.asarray(scores, dtype=float)[~mask]).all()  # finfo.min is not drawn as a number
        # before masking: every cell is a real score, and masking changed only the forbidden ones
        raw = np.asarray(figures(at)["mask_raw_scores"]["data"][0]["z"], dtype=float)
        assert np.isfinite(raw).all()
        np.testing.assert_allclose(raw[mask], trace.scores(kind)[layer, 1, head].numpy()[mask], rtol=1e-4, atol=1e-4)
        crosses = figures(at)["mask_raw_scores"]["data"][1]
        cells = zip(np.rint(np.asarray(crosses["y"])).astype(int),
                    np.rint(np.asarray(crosses["x"])).astype(int), strict=True)
        # one cross in the corner of each masked cell
        assert sorted(cells) == sorted(zip(*np.nonzero(~mask), strict=True))


def test_masks_page_longer_second_sentence_pads_the_current_one(app_test, figures):
    at = app_test("app/views/masks.py", text="a b")
    at.button(key="mask_long").click().run()
    _clean(at)
    assert len(at.text_input(key="mask_other").value.split()) > 2
    enc = figures(at)["mask_enc"]["data"][0]["z"]  # row 0 = the current sentence, now padded
    assert enc.shape[0] > 3 and not enc.astype(bool).all()


def test_mechanics_page_softmax_equals_the_trace(app_test, figures):
    ckpt = load_model("reverse")
    trace = translate(ckpt.model, ckpt.tokenizer, TEXT).trace
    at = app_test("app/views/mechanics.py", text=TEXT)
    _clean(at)
    for kind, layer, head in (("cross", 0, 0), ("dec_self", 1, 3), ("enc_self", 1, 2)):
        at.selectbox(key="mech_kind").select(kind)
        at.selectbox(key="mech_layer").select(layer)
        at.selectbox(key="mech_head").select(head).run()
        _clean(at)
        figs = figures(at)
        np.testing.assert_array_equal(figs["mech_weights"]["data"][0]["z"], trace.weights(kind)[layer, 0, head].numpy())
        query = at.selectbox(key="mech_query").value
        bars = [t for t in figs["mech_stages"]["data"] if t["type"] == "bar"]
        np.testing.assert_allclose(bars[-1]["y"], trace.weights(kind)[layer, 0, head, query].numpy(), atol=1e-7)
    assert "d_k = 16" in figs["mech_saturation"]["layout"]["title"]["text"] or any(
        "d_k = 16" in m.value for m in at.markdown)


def test_positional_page_draws_the_model_encoding(app_test, figures):
    ckpt = load_model("reverse")
    at = app_test("app/views/positional.py", text=TEXT)
    at.slider(key="pe_positions").set_value(10).run()
    _clean(at)
    figs = figures(at)
    np.testing.assert_allclose(figs["pe_matrix"]["data"][0]["z"], sinusoidal_encoding(10, ckpt.config.d_model).numpy())
    ids = translate(ckpt.model, ckpt.tokenizer, TEXT).source.ids
    parts = embedding_parts(ckpt.model, list(ids))
    sum_panel = figs["embedding_parts"]["data"][2]["z"]
    np.testing.assert_allclose(sum_panel, parts["sum"].numpy(), atol=1e-6)


def test_model_page_schedule_uses_the_checkpoint_settings(app_test, figures):
    ckpt = load_model("reverse")
    at = app_test("app/views/model_training.py", text=TEXT)
    _clean(at)
    own = figures(at)["model_lr_own"]["data"]
    meta, d = ckpt.meta, ckpt.config.d_model
    # the curve is the rate the log recorded at each step, which is the schedule with this checkpoint's settings
    np.testing.assert_allclose(own[0]["y"],
                               [noam_lr(int(s), d, meta["warmup"], meta["lr_factor"]) for s in own[0]["x"]],
                               rtol=1e-5)
    assert list(own[1]["x"]) == [meta["steps"]]  # the step these weights are from
    bars = figures(at)["model_label_smoothing"]["data"][0]["y"]
    assert float(np.sum(bars)) == pytest.approx(1.0)
    assert "model_loss" in figures(at) and "model_epochs" in figures(at)  # the shipped logs are drawn
