"""The Vision page renders both models, follows the chosen digit, and draws exactly the model's weights."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from explain.vision import attention_on_grid, read_swin, read_vit
from model.vision.checkpoint import load_vision
from model.vision.digits import load_digits
from model.vision.drawing import drawing_to_digit
from tests.digit_strokes import variant

PAGE = "app/views/vision.py"
PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"


@pytest.fixture(scope="module")
def vision():
    return {name: load_vision(PRETRAINED / name) for name in ("vit-digits", "swin-digits")}


@pytest.fixture(scope="module")
def test_images():
    return load_digits().part("test")


def _trace(figure: dict, name: str) -> dict:
    return next(t for t in figure["data"] if t.get("name") == name)


def test_vit_page_renders_and_draws_the_models_cls_attention(app_test, figures, vision, test_images):
    at = app_test(PAGE)
    assert not at.exception
    shown = figures(at)
    assert {"vit_patches", "vit_probabilities", "vit_sequence", "vit_overlay", "vit_rollout", "vit_all_heads",
            "vit_positions"} <= set(shown)
    reading = read_vit(vision["vit-digits"].model, test_images[0][0])
    attention = reading.attention.numpy()  # [L, H, 17, 17]
    drawn = _trace(shown["vit_overlay"], "attention")["z"]  # last layer, mean over heads, [CLS] row
    np.testing.assert_allclose(drawn, attention[-1].mean(0)[0, 1:].reshape(4, 4), atol=1e-6)
    rollout = _trace(shown["vit_rollout"], "attention")["z"]
    np.testing.assert_allclose(rollout, reading.rollout.numpy()[0, 1:].reshape(4, 4), atol=1e-6)
    small = _trace(shown["vit_all_heads"], "L2 H3")["z"]
    np.testing.assert_allclose(small, attention[1, 2, 0, 1:].reshape(4, 4), atol=1e-6)
    bars = shown["vit_probabilities"]["data"][0]["y"]
    np.testing.assert_allclose(bars, reading.probabilities.numpy(), atol=1e-6)


def test_picking_another_digit_changes_the_overlay(app_test, figures, vision, test_images):
    at = app_test(PAGE)
    before = _trace(figures(at)["vit_overlay"], "attention")["z"]
    at.slider(key="vision_index").set_value(17).run()
    assert not at.exception
    after = _trace(figures(at)["vit_overlay"], "attention")["z"]
    expected = read_vit(vision["vit-digits"].model, test_images[0][17]).attention.numpy()[-1].mean(0)[0, 1:]
    np.testing.assert_allclose(after, expected.reshape(4, 4), atol=1e-6)
    assert not np.allclose(before, after)
    image = _trace(figures(at)["vit_patches"], "ink")["z"]
    np.testing.assert_array_equal(image, test_images[0][17])


def test_query_patch_and_head_choose_the_row_drawn(app_test, figures, vision, test_images):
    at = app_test(PAGE, vision_query=6, vision_head=1, vision_layer=1)
    assert not at.exception
    drawn = _trace(figures(at)["vit_overlay"], "attention")["z"]
    attention = read_vit(vision["vit-digits"].model, test_images[0][0]).attention.numpy()
    np.testing.assert_allclose(drawn, attention[0, 1, 6, 1:].reshape(4, 4), atol=1e-6)


def test_swin_page_draws_the_mask_and_the_window_attention_of_the_model(app_test, figures, vision, test_images):
    at = app_test(PAGE, vision_model="Swin", vision_block=1, vision_swin_pixel=0)
    assert not at.exception
    shown = figures(at)
    assert {"swin_windows", "swin_mask", "swin_overlay", "swin_receptive", "swin_window_attention", "swin_bias",
            "swin_probabilities"} <= set(shown)
    blocks = read_swin(vision["swin-digits"].model, test_images[0][0]).blocks
    shifted = blocks[1]
    masks = np.stack([t["z"] for t in shown["swin_mask"]["data"]])
    np.testing.assert_array_equal(masks.astype(bool), shifted.mask.numpy())
    grid = _trace(shown["swin_overlay"], "attention")["z"]
    np.testing.assert_allclose(grid, attention_on_grid(shifted, -1, 0).numpy(), atol=1e-6)
    window3_head2 = _trace(shown["swin_window_attention"], "W3 H2")["z"]
    expected = shifted.window_weights()[0, 3, 1].numpy().copy()
    expected[~shifted.mask[3].numpy()] = np.nan
    np.testing.assert_allclose(window3_head2, expected, atol=1e-6)


def _read(at) -> str:
    found = [m.value for m in at.markdown if "data-testid='digitRead'" in m.value]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("model", ["ViT", "Swin"])
def test_a_drawn_digit_is_made_like_the_training_digits_and_read(app_test, figures, vision, model):
    """The canvas's strokes (as the browser sends them, kept in session state) become the 8x8 image of
    model.vision.drawing, and the line under the model's name says what the model reads."""
    strokes = variant(7, 0, 280.0)
    at = app_test(PAGE, vision_source="Draw your own", vision_canvas_strokes=strokes, vision_model=model)
    assert not at.exception
    expected_image = drawing_to_digit(strokes)
    ckpt = vision["vit-digits" if model == "ViT" else "swin-digits"]
    probs = ckpt.model(torch.from_numpy(expected_image)[None]).softmax(-1)[0].detach().numpy()
    assert f"The {model} reads your drawing as <b>{int(probs.argmax())}</b> ({probs.max():.0%})" in _read(at)
    if model == "ViT":
        image = _trace(figures(at)["vit_patches"], "ink")["z"]
        np.testing.assert_array_equal(image, expected_image)
        np.testing.assert_allclose(figures(at)["vit_probabilities"]["data"][0]["y"], probs, atol=1e-6)


def test_an_empty_drawing_is_classified_with_a_caveat_and_a_real_one_without(app_test):
    at = app_test(PAGE, vision_source="Draw your own")
    assert not at.exception
    assert any("Nothing is drawn" in w.value and "say nothing" in w.value for w in at.warning)
    assert not [m for m in at.markdown if "digitRead" in m.value]  # no reading of a blank square
    at = app_test(PAGE, vision_source="Draw your own", vision_canvas_strokes=variant(1, 0, 280.0))
    assert not any("drawn. A classifier" in w.value for w in at.warning)


def test_a_hand_made_drawing_beyond_the_bounds_is_one_clear_warning(app_test):
    at = app_test(PAGE, vision_source="Draw your own", vision_canvas_strokes=[[[0.0, 0.0]]] * 65)
    assert not at.exception
    assert any("This drawing cannot be read: a drawing has at most 64 strokes" in w.value for w in at.warning)
    at = app_test(PAGE, vision_source="Draw your own", vision_canvas_strokes=[[["x", None]]])
    assert not at.exception
    assert any("This drawing cannot be read" in w.value for w in at.warning)


def test_the_chosen_pixel_follows_into_stage_two(app_test, figures, vision, test_images):
    """A stage-2 token covers 2x2 pixels: pixel (1, 3) is token (0, 1) there, and its row is what is drawn."""
    at = app_test(PAGE, vision_model="Swin", vision_block=2, vision_swin_pixel=1 * 8 + 3)
    assert not at.exception
    stage2 = read_swin(vision["swin-digits"].model, test_images[0][0]).blocks[2]
    drawn = _trace(figures(at)["swin_overlay"], "attention")["z"]
    np.testing.assert_allclose(drawn, attention_on_grid(stage2, -1, 1).numpy(), atol=1e-6)
    assert drawn.shape == (4, 4) and abs(drawn.sum() - 1) < 1e-5, "one window covers the whole stage-2 grid"
