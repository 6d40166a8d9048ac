"""A drawn digit becomes the kind of image the vision models were trained on (model.vision.drawing)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explain.vision import read_vit
from model.vision.checkpoint import load_vision
from model.vision.digits import MAX_INK, load_digits
from model.vision.drawing import MAX_STROKES, DrawingError, bitmap, drawing_to_digit
from tests.app.conftest import ROOT
from tests.digit_strokes import TEMPLATES, variant


@settings(max_examples=40, deadline=None)
@given(digit=st.integers(0, 9), scale=st.floats(0.05, 50.0), dx=st.floats(-1e3, 1e3), dy=st.floats(-1e3, 1e3))
def test_size_and_place_do_not_change_the_image(digit, scale, dx, dy):
    """Scaled by the bounding box, as NIST scaled the digits: a drawing moved or resized gives the same image."""
    strokes = [[(x * 100, y * 100) for x, y in stroke] for stroke in TEMPLATES[digit]]
    moved = [[(x * scale + dx, y * scale + dy) for x, y in stroke] for stroke in strokes]
    a, b = drawing_to_digit(strokes).astype(int), drawing_to_digit(moved).astype(int)
    assert np.abs(a - b).max() <= 1  # float rounding may move a pixel on the pen's edge


@pytest.mark.parametrize("digit", range(10))
def test_a_drawing_fills_the_frame_as_the_bundled_digits_do(digit):
    image = drawing_to_digit(TEMPLATES[digit])
    assert image.dtype == np.uint8 and image.shape == (8, 8) and image.max() <= MAX_INK
    rows, cols = np.flatnonzero(image.sum(1)), np.flatnonzero(image.sum(0))
    if digit != 1:  # the longer side (the height, for every template) spans the whole frame, as every bundled digit
        assert rows[0] == 0 and rows[-1] == 7
    assert abs((cols[0] + cols[-1]) / 2 - 3.5) <= 0.5  # centred
    bundled = load_digits().images
    assert (bundled.sum(2) > 0).all()  # every bundled digit's ink spans all 8 rows


def test_a_dot_a_line_and_nothing():
    assert not drawing_to_digit([]).any() and not drawing_to_digit([[]]).any()
    dot = bitmap([[(5.0, 5.0)]])
    assert dot.any() and dot[15:17, 15:17].all()  # a dot is drawn in the middle
    line = drawing_to_digit([[(0.0, 0.0), (0.0, 10.0)]])  # vertical: full height, centred columns
    assert line[:, 3:5].all() and not line[:, :2].any() and not line[:, 6:].any()


@pytest.mark.parametrize("strokes, message", [
    ([[(0.0, 0.0)]] * (MAX_STROKES + 1), "at most"),
    ([[(0.0, float("nan"))]], "finite"),
    ([[("a", "b")]], "pairs of numbers"),
    ([[(0.0, 1.0, 2.0)]], "pairs of numbers"),
    ([[(1e308, 0.0), (-1e308, 0.0), (float("inf"), 1.0)]], "finite"),
])
def test_what_no_canvas_sends_is_refused_with_a_reason(strokes, message):
    with pytest.raises(DrawingError, match=message):
        drawing_to_digit(strokes)


def test_drawn_templates_are_read_right_by_the_vit():
    """The same 100 drawings the browser test draws (10 per class, varied in size, place, slant and tremor), read
    here without a browser: the preprocessing alone must keep the ViT at 90% or more."""
    vit = load_vision(ROOT / "pretrained" / "vit-digits")
    right = sum(int(read_vit(vit.model, drawing_to_digit(variant(d, i, 280.0))).probabilities.argmax()) == d
                for d in range(10) for i in range(10))
    assert right >= 90
