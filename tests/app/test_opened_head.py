"""The first view shows attention at work (app.opening): the Translate page opens each translation on its most
focused cross-attention head and says which and why, until the visitor or a link chooses a kind, layer or head;
that choice then stays for every sentence, until "Open the most focused head"."""
from __future__ import annotations

import numpy as np
import pytest

from app.serving.scheduler import store
from model.network.config import DecodeConfig
from model.serving.inference import translate

SENTENCES = ["h e l l o w o r l d", "a t t e n t i o n", "a b c", "x y z z y"]
SPECIAL = ("<s>", "</s>", "<pad>", "<unk>")


@pytest.fixture(autouse=True)
def forget_translations():
    """Links decode at once into the cache every session shares: empty it again for the tests after these."""
    yield
    store.clear()


def focus_of_every_head(translation) -> np.ndarray:
    """[L, H]: the mean over the output rows (not the one writing </s>) of each row's largest weight on a source
    piece (not </s>), computed here by hand from the model's weights."""
    w = translation.trace.weights("cross")[:, 0].double().numpy()  # [L, H, T, S]
    rows = [i for i, p in enumerate(translation.target_pieces) if p not in SPECIAL]
    keys = [j for j, p in enumerate(translation.source.pieces) if p not in SPECIAL]
    return w[:, :, rows][..., keys].max(axis=-1).mean(axis=-1)


def captions(at) -> list[str]:
    return [c.value for c in at.caption]


def translated(at, text):
    at.text_area(key="text").input(text)
    return at.button(key="translate").click().run()


@pytest.mark.parametrize("text", SENTENCES)
def test_each_sentence_opens_on_its_most_focused_cross_attention_head_and_says_why(app_test, figures, shipped,
                                                                                   text):
    at = translated(app_test(), text)
    assert not at.exception
    direct = translate(shipped("reverse").model, shipped("reverse").tokenizer, text, DecodeConfig(max_len=60))
    focus = focus_of_every_head(direct)
    layer, head = at.session_state["layer"], at.session_state["head"]
    assert at.session_state["kind"] == "cross" and head >= 0
    assert focus[layer, head] == pytest.approx(focus.max())  # no head is more focused
    assert (layer, head) == np.unravel_index(np.argmax(focus), focus.shape)  # and among equals the first
    fig = figures(at)["translate_heatmap"]
    assert fig["layout"]["title"]["text"].endswith(f"layer {layer + 1} · head {head + 1}")
    np.testing.assert_array_equal(fig["data"][0]["z"], direct.trace.weights("cross")[layer, 0, head].numpy())
    line = [c for c in captions(at) if c.startswith("Opened on")]
    assert line == [f"Opened on cross-attention, layer {layer + 1}, head {head + 1}: the most focused head for this "
                    f"sentence (each output piece puts on average {focus[layer, head]:.0%} of its weight on one "
                    "source piece)."]
    assert not {"kind", "layer", "head"} & set(at.query_params)  # nothing chosen: the link names no head


def test_a_new_sentence_reopens_on_its_own_most_focused_head(app_test, shipped):
    at = app_test()
    for text in SENTENCES:
        translated(at, text)
        direct = translate(shipped("reverse").model, shipped("reverse").tokenizer, text, DecodeConfig(max_len=60))
        focus = focus_of_every_head(direct)
        assert (at.session_state["layer"], at.session_state["head"]) == np.unravel_index(np.argmax(focus),
                                                                                        focus.shape), text


def test_a_link_that_names_a_head_wins_and_keeps_it_for_the_next_sentence(app_test, figures):
    at = app_test(run=False, model_name=None)
    for name, value in {"model": "reverse", "text": "a b c", "layer": "1", "head": "2"}.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception
    assert (at.session_state["kind"], at.session_state["layer"], at.session_state["head"]) == ("cross", 0, 1)
    assert figures(at)["translate_heatmap"]["layout"]["title"]["text"].endswith("layer 1 · head 2")
    assert not [c for c in captions(at) if c.startswith("Opened on")]
    assert any("Your choice of kind, layer and head stays" in c for c in captions(at))
    assert (at.query_params["kind"], at.query_params["layer"], at.query_params["head"]) == ("cross", "1", "2")
    translated(at, "x y z z y")
    assert (at.session_state["layer"], at.session_state["head"]) == (0, 1)


def test_a_head_picked_stays_for_every_sentence_until_the_visitor_asks_for_the_most_focused(app_test, shipped):
    at = translated(app_test(), SENTENCES[0])
    opened = (at.session_state["layer"], at.session_state["head"])
    picked = (1 - opened[0], -1)  # another layer, the mean: not a head the rule opens on
    at.segmented_control(key="layer").set_value(picked[0])
    at.segmented_control(key="head").set_value(picked[1]).run()
    for text in SENTENCES[1:]:
        translated(at, text)
        assert (at.session_state["layer"], at.session_state["head"]) == picked, text
    assert at.query_params["layer"] == str(picked[0] + 1) and at.query_params["head"] == "mean"
    at.button(key="open_focused").click().run()
    direct = translate(shipped("reverse").model, shipped("reverse").tokenizer, SENTENCES[-1], DecodeConfig(max_len=60))
    focus = focus_of_every_head(direct)
    assert (at.session_state["layer"], at.session_state["head"]) == np.unravel_index(np.argmax(focus), focus.shape)
    assert any(c.startswith("Opened on") for c in captions(at))
    assert not {"kind", "layer", "head"} & set(at.query_params) and not at.exception


def test_another_kind_picked_is_a_choice_too(app_test):
    at = translated(app_test(), SENTENCES[0])
    at.segmented_control(key="kind").set_value("enc_self").run()
    layer, head = at.session_state["layer"], at.session_state["head"]
    translated(at, SENTENCES[1])
    assert (at.session_state["kind"], at.session_state["layer"], at.session_state["head"]) == ("enc_self", layer, head)


def test_the_decoding_page_opens_on_the_same_head(app_test):
    at = translated(app_test(), SENTENCES[0])
    opened = (at.session_state["layer"], at.session_state["head"])
    at.switch_page("app/views/decoding.py").run()
    assert not at.exception
    assert (at.segmented_control(key="layer").value, at.segmented_control(key="head").value) == opened


def test_back_to_a_url_without_a_head_returns_to_the_rule_and_forward_to_the_choice(app_test):
    """Back and Forward bring URLs the app did not write: one that names no head opens the most focused again, one
    that names a head pins it (app.state.follow_history)."""
    at = translated(app_test(), SENTENCES[0])
    opened = (at.session_state["layer"], at.session_state["head"])
    at.segmented_control(key="head").set_value(-1).run()  # the mean: chosen
    chosen = dict(at.query_params)
    assert chosen["head"] == "mean" and at.session_state["head_pinned"]
    at.query_params.clear()  # Back: the entry before the choice, the sentence and no head
    at.query_params["model"], at.query_params["text"] = "reverse", SENTENCES[0]
    at.run()
    assert not at.session_state["head_pinned"] and not at.exception
    assert (at.session_state["layer"], at.session_state["head"]) == opened
    assert any(c.startswith("Opened on") for c in captions(at))
    at.query_params.clear()  # Forward: the choice again
    for name, value in chosen.items():
        at.query_params[name] = value
    at.run()
    assert at.session_state["head_pinned"] and at.session_state["head"] == -1
