"""Links that restore a view: every query parameter is parsed and checked (app.state.URL_PARAMS), anything
unknown or invalid is dropped with a notice and never raises, and the URL follows the state afterwards."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

from app.lecture.slides import SLIDES
from app.models.registry import default_length_penalty
from app.serving.scheduler import store
from app.state import DEFAULTS, URL_PARAMS, VIEWS, LinkLimits, parse_link, view_slug
from explain.heads import most_focused_head

DECODING = "app/views/decoding.py"
LECTURE = "app/views/lecture.py"
MODELS = ("en-de", "reverse", "mbart-50")  # the last: a converted multilingual model under pretrained/
LIMITS = {"en-de": LinkLimits(models=MODELS, layers={"enc_self": 3, "dec_self": 3, "cross": 3}, n_heads=8),
          "reverse": LinkLimits(models=MODELS, layers={"enc_self": 2, "dec_self": 2, "cross": 2}, n_heads=4),
          "mbart-50": LinkLimits(models=MODELS, layers={"enc_self": 2, "dec_self": 2, "cross": 2}, n_heads=4,
                                 languages=("de_DE", "en_XX", "fr_XX"))}


@pytest.fixture(autouse=True)
def forget_translations():
    """A link decodes its sentence at once, into the cache all sessions share: empty it again afterwards, other
    tests expect a page without a result until Translate is pressed."""
    yield
    store.clear()


def limits_of(model: str) -> LinkLimits:
    return LIMITS.get(model, LinkLimits(models=MODELS, layers=None, n_heads=None))


def test_a_full_link_sets_every_value():
    values, notes = parse_link({"model": "reverse", "text": "a b c", "beam": "3", "max_len": "120", "penalty": "1.2",
                                "kind": "enc_self", "layer": "2", "head": "4", "view": "head-view", "words": "1",
                                "step": "5", "slide": "7", "presenter": "true"}, limits_of)
    assert notes == []
    assert values == {"model_name": "reverse", "text": "a b c", "beam_size": 3, "max_len": 120, "length_penalty": 1.2,
                      "kind": "enc_self", "layer": 1, "head": 3, "translate_view": "Head view", "word_level": True,
                      "step": 5, "slide": 7, "presenter": True, "head_pinned": True}  # a head named: the visitor's


@pytest.mark.parametrize("params, reason", [
    ({"layer": "99"}, "out of range (layers 1–3)"),
    ({"layer": "0"}, "out of range"),
    ({"model": "reverse", "layer": "3"}, "out of range (layers 1–2)"),  # checked against the link's own model
    ({"beam": "abc"}, "not a whole number"),
    ({"beam": "9"}, "out of range"),
    ({"beam": "2.5"}, "not a whole number"),
    ({"max_len": "-4"}, "out of range"),
    ({"penalty": "nan"}, "out of range"),
    ({"penalty": "x"}, "not a number"),
    ({"kind": "foo"}, "not one of enc_self, dec_self, cross"),
    ({"head": "9"}, "out of range (heads, or mean 1–8)"),
    ({"head": "first"}, "not a whole number"),
    ({"view": "3d"}, "not one of heatmap, head-view, model-view"),
    ({"words": "maybe"}, "not 1 or 0"),
    ({"slide": "99"}, f"out of range (slides 1–{len(SLIDES)})"),
    ({"step": ""}, "not a whole number"),
    ({"model": "gpt-9"}, "no such model here"),
    ({"text": "x" * 9000}, "longer than 8000 characters"),
    ({"zzz": "1"}, "zzz: unknown"),
    ({"to": "fr_XX"}, "this model translates into one language"),  # en-de, the default model
    ({"model": "mbart-50", "to": "xx_YY"}, "not one of this model's 3 language codes"),
])
def test_an_invalid_or_unknown_parameter_is_ignored_with_a_reason(params, reason):
    values, notes = parse_link(params, limits_of)
    assert len(notes) == 1 and reason in notes[0], notes
    assert all(key == "model_name" for key in values)  # only a valid model (given alongside) is kept


def test_valid_parameters_survive_invalid_neighbours_and_old_names():
    values, notes = parse_link({"model_name": "reverse", "layer": "2", "head": "mean", "kind": "x", "zzz": ""},
                               limits_of)
    assert values == {"model_name": "reverse", "layer": 1, "head": -1, "head_pinned": True}
    assert [n.split(":")[0] for n in notes] == ["zzz", "kind=x"]


@pytest.mark.parametrize("params, pinned", [
    ({"text": "a b", "beam": "2"}, False),  # no head named: each sentence opens on its most focused head
    ({"kind": "cross"}, True), ({"layer": "1"}, True), ({"head": "mean"}, True),  # any one of the three pins
    ({"layer": "99", "head": "x"}, False),  # named, but rejected: nothing was chosen
])
def test_a_link_pins_the_head_only_where_it_names_a_valid_kind_layer_or_head(params, pinned):
    values, _ = parse_link(params, limits_of)
    assert values.get("head_pinned", False) is pinned


@settings(max_examples=300, deadline=None)
@given(st_.dictionaries(st_.sampled_from([*URL_PARAMS, "model_name", "zzz"]), st_.text(max_size=30), max_size=8))
def test_parsing_never_raises_and_keeps_values_in_range(params):
    values, notes = parse_link(params, limits_of)
    assert len(notes) + len(values) >= len(params) - 1  # every parameter is either used or reported
    assert 1 <= values.get("beam_size", 1) <= 8 and 0 <= values.get("layer", 0) <= 2
    assert -1 <= values.get("head", -1) <= 7 and values.get("translate_view", VIEWS[0]) in VIEWS


def test_every_url_param_names_a_default_and_writes_what_it_reads():
    examples = {"model": "reverse", "text": "a b", "beam": "2", "max_len": "9", "penalty": "0.3", "kind": "dec_self",
                "layer": "2", "head": "mean", "view": "model-view", "words": "1", "step": "4", "slide": "2",
                "presenter": "1", "sample": "1", "temperature": "0.7", "topk": "5", "topp": "0.85", "seed": "42",
                "sentence": "3", "to": "de_DE", "keep": "1", "prepared": "a b\nc d"}
    assert set(examples) == set(URL_PARAMS)
    for name, param in URL_PARAMS.items():
        assert param.key in DEFAULTS
        model = {"model": "mbart-50"} if name == "to" else {}  # a target language needs a multilingual model
        value = parse_link({**model, name: examples[name]}, limits_of)[0][param.key]
        assert param.show(value) == examples[name], name  # what a link says is what the URL is written as
    assert [view_slug(v) for v in VIEWS] == ["heatmap", "head-view", "model-view"]


# --- in the app ---------------------------------------------------------------------------------------

def run_link(app_test, page=None, **params):
    at = app_test(page=None, run=False, model_name=None)
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    return at


def test_a_link_restores_the_translate_view_and_draws_it(app_test, figures):
    at = run_link(app_test, model="reverse", text="a b c d", kind="enc_self", layer="2", head="3", view="heatmap",
                  words="0")
    assert not at.exception
    assert at.text_area(key="text").value == "a b c d"
    assert at.segmented_control(key="kind").value == "enc_self"
    assert (at.segmented_control(key="layer").value, at.segmented_control(key="head").value) == (1, 2)
    titles = [fig["layout"]["title"]["text"] for fig in figures(at).values()]
    assert any(t.endswith("layer 2 · head 3") for t in titles), titles  # decoded at once, no click needed
    assert "_link_notes" not in at.session_state
    assert dict(at.query_params) == {"model": "reverse", "text": "a b c d", "kind": "enc_self", "layer": "2",
                                     "head": "3"}  # defaults (view heatmap, words off) stay out of the link


def test_invalid_parameters_give_one_notice_and_the_page_still_works(app_test, figures):
    at = run_link(app_test, model="reverse", layer="99", beam="abc", kind="foo", zzz="1", head="-3")
    assert not at.exception
    notice = link_notice_text(at)
    for part in ("layer=99", "beam=abc", "kind=foo", "zzz", r"head=\-3"):
        assert part in notice
    assert (at.session_state["beam_size"], at.session_state["kind"]) == (1, "cross")
    # nothing valid was chosen, so the sentence opens on its most focused head, and the link names none
    shown = store().get(at.session_state["last_request"])
    opened = most_focused_head(shown.trace.weights("cross")[:, 0], shown.target_pieces, shown.source.pieces)
    assert (at.session_state["layer"], at.session_state["head"]) == (opened.layer, opened.head)
    assert dict(at.query_params) == {"model": "reverse"}  # the rejected ones are gone from the URL
    at.switch_page(DECODING).run()
    assert "layer=99" in link_notice_text(at)  # it stays, on every page, until dismissed
    at.button(key="dismiss_link_notes").click().run()
    assert not at.exception and not [m for m in at.markdown if "Ignored in this link" in m.value]


def link_notice_text(at) -> str:
    notices = [m.value for m in at.markdown if "Ignored in this link" in m.value]
    assert len(notices) == 1, notices
    return notices[0]


def test_a_link_whose_parameter_name_is_markdown_shows_it_as_plain_text(app_test):
    """The room's link may come from anyone: a name like [Session expired - log in again](http://...) must not
    become a clickable link (or any other Markdown) inside the app's own notice."""
    name = "[Session expired - log in again](http://127.0.0.1:9/x)"
    at = run_link(app_test, model="reverse", **{name: "1", "text": "a b", "zz": "[x](http://127.0.0.1:9/y)"})
    assert not at.exception
    notice = link_notice_text(at)
    listed = notice.split("**Ignored in this link:**")[1]
    assert not re.search(r"(?<!\\)[\[\]()*_#<>]", listed)  # every Markdown character the visitor sent is escaped
    assert r"\[Session expired \- log" in listed


def test_the_url_follows_the_explorer_and_the_keyboard_buttons(app_test):
    at = run_link(app_test, model="reverse", text="a b c")  # 2 layers x 4 heads
    opened = (at.session_state["layer"], at.session_state["head"])  # the most focused head: not in the link
    assert opened[1] >= 0 and not {"kind", "layer", "head"} & set(at.query_params)
    at.button(key="translate_next_head").click().run()  # key h: the next head (after head 4, the mean)
    at.button(key="translate_next_layer").click().run()  # key l: the next layer (after layer 2, layer 1)
    head, layer = opened[1] + 1 if opened[1] < 3 else -1, 1 - opened[0]
    assert (at.session_state["head"], at.session_state["layer"]) == (head, layer)
    # the keys chose: the link names the kind, layer and head from now on
    assert at.query_params["head"] == ("mean" if head < 0 else str(head + 1))
    assert at.query_params["layer"] == str(layer + 1) and at.query_params["kind"] == "cross"
    at.segmented_control(key="head").set_value(0).run()
    at.button(key="translate_prev_head").click().run()  # key H: from head 1 back to the mean
    at.button(key="translate_next_layer").click().run()  # wraps around
    assert (at.session_state["head"], at.session_state["layer"]) == (-1, 1 - layer)
    # the mean is the default head, but chosen: the link still names it, as it names any choice
    assert (at.query_params["layer"], at.query_params["head"]) == (str(2 - layer), "mean") and not at.exception


def test_a_link_opens_the_decoding_page_at_its_step(app_test):
    at = run_link(app_test, DECODING, model="reverse", text="a b c d e f", step="4")
    assert not at.exception
    assert at.slider(key="step").value == 4
    at.button(key="next_step").click().run()
    assert at.query_params["step"] == "5"
    assert "kind" not in at.query_params  # only what this page shows


def test_the_link_box_carries_the_apps_own_address(app_test):
    at = app_test(run=False, model_name=None)
    at.context["url"] = "http://lecture-hall.example:8501"
    at.query_params["model"] = "reverse"
    at.query_params["beam"] = "2"
    at.run()
    boxes = [h.proto.body for h in at.get("html") if "data-ae-link" in h.proto.body]
    assert len(boxes) == 1
    assert 'value="http://lecture-hall.example:8501/?model=reverse&amp;beam=2"' in boxes[0]


def test_a_text_with_url_characters_round_trips(app_test):
    text = "Tom & Jerry say: 50% off? <b>yes</b> #1"
    at = run_link(app_test, text=text, model="en-de")
    assert at.text_area(key="text").value == text and not at.exception
    assert at.query_params["text"] == text


def test_a_linked_model_gets_its_own_alpha_and_the_link_names_only_a_changed_one(app_test):
    """Each model's α (chosen on its validation split) is its default: a link without "penalty" opens with it and
    a view on it writes none; another α is written and read back."""
    own = {name: default_length_penalty(name) for name in ("en-de", "reverse")}
    assert own["en-de"] != own["reverse"] == 0.6  # the shipped en-de records its own (pretrained/en-de/config.json)
    for name, alpha in own.items():
        at = run_link(app_test, model=name)
        assert at.session_state["length_penalty"] == alpha and "penalty" not in at.query_params
    at = run_link(app_test, model="reverse", penalty="1.3")
    assert at.session_state["length_penalty"] == 1.3 and at.query_params["penalty"] == "1.3"


def test_a_link_carries_the_sampling_settings(app_test):
    at = run_link(app_test, model="reverse", text="a b c", sample="1", temperature="0.7", topk="5", topp="0.9",
                  seed="42")
    assert not at.exception and "_link_notes" not in at.session_state
    assert (at.session_state["sample"], at.session_state["temperature"], at.session_state["sample_top_k"],
            at.session_state["top_p"], at.session_state["seed"]) == (True, 0.7, 5, 0.9, 42)
    assert {k: at.query_params[k] for k in ("sample", "temperature", "topk", "topp", "seed")} == \
        {"sample": "1", "temperature": "0.7", "topk": "5", "topp": "0.9", "seed": "42"}
    bad = run_link(app_test, model="reverse", temperature="nan", topp="0", seed="-1")
    assert all(part in re.sub(r"\\(.)", r"\1", link_notice_text(bad)) for part in ("temperature=nan", "topp=0",
                                                                                    "seed=-1"))


def test_a_link_restores_the_sentence_of_a_paragraph_it_was_copied_from(app_test):
    at = run_link(app_test, text="First one here. Second one here. Third one here.", sentence="2")
    assert not at.exception
    assert at.session_state["sentence"] == 1 and at.selectbox(key="sentence").value == 1
    at = run_link(app_test, text="Only one sentence.", sentence="99")  # out of the link's range: ignored, said
    assert not at.exception and at.session_state["sentence"] == 0
