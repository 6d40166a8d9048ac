"""The guided tour: the slides are data (app.lecture.slides.SLIDES), every slide draws its figure from the concept
pages' builders on both shipped models, presenter mode makes it projector-sized, and the page steps through the slides
with buttons, keys and ?slide=N."""
from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given
from hypothesis import strategies as hst

from app.charts.axes import plotly_text
from app.charts.style import PRESENTER_COLORSCALE, PRESENTER_TICK_FONT, WEIGHT_COLORSCALE, presented, rows_height
from app.checks.escape import md
from app.lecture.measures import restarts_line
from app.lecture.slides import SLIDES
from app.serving.scheduler import store
from app.views.slide_figures import MAKERS, Deck, build, card_limitation
from model.checkpoints.quality import is_weak, shipped_scores
from model.network.config import DecodeConfig
from model.serving.inference import translate

LECTURE = "app/views/lecture.py"
SENTENCES = {"en-de": "My brother has bought a new house in the city.", "reverse": "h e l l o w o r l d"}
SLIDE_HEIGHT = 520


@pytest.fixture(autouse=True)
def forget_translations():
    """A link decodes its sentence at once, into the cache all sessions share: empty it again afterwards, other
    tests expect a page without a result until Translate is pressed."""
    yield
    store.clear()


def test_the_tour_is_an_ordered_list_of_slide_definitions():
    assert 12 <= len(SLIDES) <= 17  # a tour of about an hour
    assert SLIDES[0].figure == "architecture" and SLIDES[-1].figure == "failure"
    for slide in SLIDES:
        assert slide.figure in MAKERS, slide.title
        assert 2 <= len(slide.lines) <= 3 and all(len(line) <= 200 for line in slide.lines), slide.title
    figures = [s.figure for s in SLIDES]
    for concept in ("embeddings", "stages", "model_view", "mask", "heatmap", "topk", "contrastive", "beam_tree",
                    "importance", "lr", "label_smoothing"):
        assert concept in figures


@pytest.fixture(scope="module")
def decks():
    """Factory: decks(shipped, name) -> the Deck of the sentence in SENTENCES on that shipped model."""
    made = {}

    def make(shipped, name):
        if name not in made:
            ckpt = shipped(name)

            def run(text, beam_size):
                return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(beam_size=beam_size))
            made[name] = Deck(model_name=name, ckpt=ckpt, translation=run(SENTENCES[name], 1), translate=run)
        return made[name]
    return make


@pytest.mark.parametrize("model_name", ["reverse", "en-de"])
@pytest.mark.parametrize("index", range(len(SLIDES)))
def test_every_slide_builds_its_figure_and_text(shipped, decks, model_name, index):
    slide = SLIDES[index]
    fig, facts = build(slide, decks(shipped, model_name))
    assert isinstance(fig, go.Figure) and (len(fig.data) > 0 or len(fig.layout.shapes) > 0)  # the diagram: shapes
    for text in (slide.title, *slide.lines, slide.notes):  # every fact a line quotes is there
        assert "{" not in text.format_map(facts)
    for line in slide.lines:  # a quoted sentence keeps its own full stop: none after it ("gekauft.*.")
        assert not re.search(r"[.!?]\*[.,;:]", line.format_map(facts)), line.format_map(facts)
    fig = presented(fig, SLIDE_HEIGHT)
    assert fig.layout.height <= SLIDE_HEIGHT
    for axis in [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]:
        assert fig.layout[axis].tickfont.size >= 16


def test_slides_show_the_models_own_numbers(shipped, decks):
    deck = decks(shipped, "reverse")
    weights = deck.translation.trace.weights("cross")[-1, 0].mean(0).numpy()  # last layer, mean over heads
    cross = next(i for i, s in enumerate(SLIDES) if s.figure == "heatmap" and s.args["kind"] == "cross")
    fig, _ = build(SLIDES[cross], deck)
    np.testing.assert_allclose(fig.data[0].z, weights, rtol=1e-6)
    fig, facts = build(next(s for s in SLIDES if s.figure == "failure"), deck)
    assert facts["limitation"].startswith("Strings longer than the 12 letters")
    for name in ("reverse", "en-de"):  # "a known failure" must still fail when a better model is shipped
        _, facts = build(next(s for s in SLIDES if s.figure == "failure"), decks(shipped, name))
        assert facts["fail_output"] != facts["fail_reference"], name


def test_the_limitation_comes_from_the_model_card(shipped, decks):
    weak = is_weak(shipped_scores(shipped("en-de").path))  # the card leads with the warning only for a weak model
    assert card_limitation(decks(shipped, "en-de")) == ("It does not translate reliably." if weak else
                                                        "Long or unusual sentences, names and rare words "
                                                        "often come out wrong.")
    assert md("a *b* [c](d) " + "x" * 200, 140).startswith(r"a \*b\* \[c\]\(d\)")
    assert len(md("y" * 500, 140)) == 140


def test_presenter_restyles_any_figure(shipped, decks):
    fig, _ = build(next(s for s in SLIDES if s.figure == "heatmap"), decks(shipped, "reverse"))
    assert fig.data[0].colorscale == go.Heatmap(colorscale=WEIGHT_COLORSCALE).colorscale
    fig = presented(fig, 400)
    assert fig.data[0].colorscale == go.Heatmap(colorscale=PRESENTER_COLORSCALE).colorscale
    # capped at 400 px, except where its rows of pieces need more: labels are never dropped to fit
    assert fig.layout.xaxis.tickfont.size == PRESENTER_TICK_FONT >= 16
    assert fig.layout.height == max(400, rows_height(fig))
    head_view, _ = build(next(s for s in SLIDES if s.figure == "head_view"), decks(shipped, "reverse"))
    widths = [t.line.width for t in head_view.data if t.mode == "lines"]
    assert [t.line.width for t in presented(head_view).data if t.mode == "lines"] == [1.8 * w for w in widths]


# --- the page --------------------------------------------------------------------------------------------

def counter(at) -> str:
    return next(m.value for m in at.markdown if "slideCounter" in m.value)


def test_the_page_steps_through_the_tour(app_test, figures):
    at = app_test(LECTURE, text=SENTENCES["reverse"])
    assert not at.exception
    assert "Slide 1 / " in counter(at) and at.button(key="lecture_prev").disabled
    assert "lecture_figure" in figures(at)
    assert any('data-ae-keys' in h.proto.body and "ArrowRight" in h.proto.body for h in at.get("html"))
    at.button(key="lecture_next").click().run()
    assert "Slide 2 / " in counter(at) and at.query_params["slide"] == "2"
    at.button(key="lecture_prev").click().run()
    assert "Slide 1 / " in counter(at) and at.query_params["slide"] == "1"  # always named: Back can return to it


def test_the_last_slide_stops_and_every_slide_draws_on_the_page(app_test, figures):
    at = app_test(LECTURE, text=SENTENCES["reverse"])
    for number in range(2, len(SLIDES) + 1):
        at.button(key="lecture_next").click().run()
        assert not at.exception and not at.error, number
        assert f"Slide {number} / {len(SLIDES)}" in counter(at)
        assert "lecture_figure" in figures(at)
    assert at.button(key="lecture_next").disabled


def test_a_link_opens_a_slide_in_presenter_mode(app_test, figures):
    at = app_test(run=False, model_name=None)
    for name, value in {"model": "reverse", "text": SENTENCES["reverse"], "slide": "9", "presenter": "1"}.items():
        at.query_params[name] = value
    at.run()
    at.switch_page(LECTURE)
    at.run()
    assert not at.exception and f"Slide 9 / {len(SLIDES)}" in counter(at)
    fig = figures(at)["lecture_figure"]
    # the slide's free height on the 1280x720 screen assumed before the browser reports its size: what the title row
    # and the caption row leave (720 - 185 px; tests/e2e/test_text_layout.py checks that the whole slide fits)
    from app.views.lecture import slide_room

    assert slide_room((1280, 720), True)[1] == 535
    assert fig["layout"]["xaxis"]["tickfont"]["size"] >= 16 and fig["layout"]["height"] <= 535
    assert any("font-size: 2.4rem" in h.proto.body for h in at.get("html"))  # the page's presenter CSS


def test_a_slide_that_does_not_exist_is_ignored(app_test):
    at = app_test(run=False, model_name=None)
    at.query_params["slide"] = "99"
    at.query_params["model"] = "reverse"
    at.run()
    notices = [m.value for m in at.markdown if "Ignored in this link" in m.value]
    assert "slide=99" in notices[0] and at.session_state["slide"] == 1 and not at.exception


@pytest.mark.parametrize("rows", [6, 14, 40])
def test_presenter_names_every_piece_of_the_head_view(rows):
    """At projector size no piece loses its text to make room (design.md): the figure grows to rows of 18-px text
    instead, and every row keeps its marker and hover."""
    from app.charts.attention import head_view_figure
    from app.charts.style import PRESENTER_ROW_PX

    pieces = [f"▁w{i}" for i in range(rows)]
    fig = presented(head_view_figure(np.full((1, rows, rows), 1.0 / rows), [0], pieces, pieces, title="t"), 520)
    assert fig.layout.height >= rows * PRESENTER_ROW_PX
    for column in (t for t in fig.data if t.name in ("query tokens", "key tokens")):
        assert all(column.text) and len(column.text) == len(column.y) == rows
        assert [h for h in column.hovertext if "▁w1<" in h or "▁w1 " in h]  # the hover still names every piece


def test_a_run_resumed_a_few_times_names_the_step_of_each_restart():
    meta = {"lr_factor": 0.5, "steps": 300, "epochs": 3,
            "continued_from": {"lr_factor": 0.7, "step": 200, "epoch": 2,
                               "earlier": {"lr_factor": 1.0, "step": 100, "epoch": 1}}}
    assert restarts_line(meta) == ("The jumps are where training was resumed, Adam restarted each time, at these "
                                   "factors on the same formula: ×1 to step 100, ×0.7 to step 200, then ×0.5.")
    assert restarts_line({"lr_factor": 1.0, "steps": 300}) == ""


def test_the_schedule_slide_explains_a_continued_runs_jumps_and_says_nothing_for_one_run(shipped, decks):
    """The shipped en-de was resumed nine times, Adam restarted each time: its curve jumps, and the slide says where and
    why from the checkpoint's own continued_from chain, within a slide's line; the reversal model trained in one go
    gets no such line."""
    slide = next(s for s in SLIDES if s.figure == "lr")
    _, facts = build(slide, decks(shipped, "en-de"))
    assert facts["restarts"].startswith("The jumps are where training was resumed")
    assert "9 times" in facts["restarts"]  # too many to name each step: the factors in order, and the last restart
    assert "×1 → ×0.7 → ×0.5 → ×1 → ×0.7 → ×1 → ×0.5 → ×0.5 → ×0.5 → ×0.5, the last from step 22,670." in \
        facts["restarts"]
    assert all(len(line.format_map(facts)) <= 220 for line in slide.lines)
    # the curve's two falls to 0 are the cool-downs, which the speaker notes name with their epochs and steps
    notes = slide.notes.format_map(facts)
    assert "over epochs 130-132" in notes and "up to step 22,670." in notes and "over epochs 133-134" in notes
    _, facts = build(slide, decks(shipped, "reverse"))
    assert facts["restarts"] == "" and facts["cooldowns"] == ""


def test_the_contrastive_slide_sets_the_models_attribution_beneath_its_attention(shipped, decks):
    """At the greedy step where the model was least sure: integrated gradients of log p(chosen) - log p(runner-up)
    over the source (the Decoding page's, 32 steps), beneath that step's cross-attention row (last layer, mean over
    heads), both the model's own numbers; its facts quote the two pieces and the step."""
    from app.charts.axes import plotly_text
    from explain.integrated_gradients import integrated_gradients

    deck = decks(shipped, "en-de")
    slide = next(s for s in SLIDES if s.figure == "contrastive")
    fig, facts = build(slide, deck)
    steps = deck.translation.result.steps
    t = int(np.argmin([float(s.topk_probs[0, 0]) for s in steps]))
    chosen = deck.translation.result.best.tokens[t]
    runner = next(int(i) for i in steps[t].topk_ids[0].tolist() if int(i) != chosen)
    ig = integrated_gradients(deck.ckpt.model, deck.translation.source.ids, tuple(steps[t].prefixes[0].tolist()),
                              chosen, runner, steps=32)
    np.testing.assert_allclose(fig.data[1].y, ig.source.double().numpy(), atol=1e-5)
    np.testing.assert_allclose(fig.data[0].y, steps[t].cross[-1, 0].mean(0).numpy(), atol=1e-6)
    tokenizer = deck.ckpt.tokenizer
    assert facts["step"] == t + 1 and facts["chosen"] == md(tokenizer.id_to_piece(chosen), 40)
    assert facts["runner_up"] == md(tokenizer.id_to_piece(runner), 40)
    assert facts["ig_gap"] == pytest.approx(ig.gap, abs=1e-4)
    assert list(fig.layout.xaxis2.ticktext) == plotly_text(deck.translation.source.pieces)  # every piece named


# --- a window over a long sentence --------------------------------------------------------------------------------

LONG_SENTENCE = "The agreement on the European Economic Area was signed in August 1992."  # 33 output pieces


@given(n=hst.integers(1, 200), room=hst.integers(0, 200), start=hst.integers(-50, 400))
def test_a_window_shows_every_row_that_fits_and_stays_inside_the_map(n, room, start):
    from app.lecture.measures import MIN_WINDOW, window_of

    first, end = window_of(n, room, start)
    assert 0 <= first < end <= n
    assert end - first == (n if n <= room else min(n, max(room, MIN_WINDOW)))
    assert first == (0 if n <= room else min(max(start, 0), n - (end - first)))


def test_a_map_too_long_for_the_slide_shows_a_window_the_lecturer_moves(shipped):
    """Slide 8 of a 33-piece sentence at 1280x720 in presenter mode: even its 14 words do not fit 530 px, so it shows
    a window of rows, each one named, and says which; moving the window shows later rows, never past the end."""
    from app.views.lecture import slide_room

    ckpt = shipped("en-de")

    def run(text, beam_size):
        return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(beam_size=beam_size))
    width, height = slide_room((1280, 720), True)
    deck = Deck(model_name="en-de", ckpt=ckpt, translation=run(LONG_SENTENCE, 1), translate=run, width_px=width,
                height_px=height, presenter=True)
    slide = next(s for s in SLIDES if s.figure == "heatmap" and s.args["kind"] == "dec_self")
    shown = []
    for window in (0, 4, 999):
        fig, facts = build(slide, Deck(**{**deck.__dict__, "window": window}))
        top, bottom = sorted(fig.layout.yaxis.range)
        rows = [t for v, t in zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext, strict=True)
                if top < v < bottom]
        n = len(fig.layout.yaxis.tickvals)
        assert rows and len(rows) == fig.layout.meta["pieces"]["yaxis"] < n and all(r.strip() for r in rows)
        assert f"rows {facts['window_start'] + 1}–{facts['window_start'] + len(rows)} of {n}" in fig.layout.title.text
        assert "↓" in facts["window"] and (len(rows) + 6) * 18 <= presented(fig, height).layout.height
        shown.append(facts["window_start"])
    assert shown[0] == 0 < shown[1] == 4 < shown[2] == n - len(rows)  # the last window ends at the last row
    # the lecture file has no keys to move a window: every row at once, the figure as tall as they need
    fig, facts = build(slide, Deck(**{**deck.__dict__, "window": None}))
    assert fig.layout.meta["pieces"]["yaxis"] == n and not facts["window"] and not facts["window_keys"]
    assert presented(fig, height).layout.height >= n * 24


def test_the_arrow_keys_move_the_window_of_a_long_map(app_test, figures):
    at = app_test(LECTURE, model_name="en-de", text=LONG_SENTENCE, slide=8, presenter=True)
    assert not at.exception and "Slide 8 / " in counter(at)
    assert any("ArrowDown" in h.proto.body and "lecture_window_down" in h.proto.body for h in at.get("html"))
    before = figures(at)["lecture_figure"]["layout"]["yaxis"]["range"]
    at.button(key="lecture_window_down").click().run()
    after = figures(at)["lecture_figure"]["layout"]["yaxis"]["range"]
    assert min(after) == min(before) + 4 and not at.exception
    assert any("move the window" in c.value for c in at.caption)
    at.button(key="lecture_next").click().run()  # the next slide starts at its top
    assert at.button(key="lecture_window_down").disabled or "rows 1–" in str(figures(at)["lecture_figure"])


STAGES = next(s for s in SLIDES if s.figure == "stages")  # "Queries, keys, values: one head with real numbers"


def named_keys(fig: go.Figure) -> list[str]:
    """The key rows the one-query figure names (its first row is the query's), "k · " taken off."""
    rows = list(fig.layout.yaxis.ticktext)
    assert rows[0].startswith("q · ")
    assert all(row.startswith("k · ") for row in rows[1:]), rows  # no row of "other keys" together
    return [row.removeprefix("k · ") for row in rows[1:]]


@pytest.mark.parametrize("size, presenter", [((1280, 720), True), ((1280, 720), False), ((1920, 1080), True)])
@pytest.mark.parametrize("n_keys", [2, 14, 27, 40])
def test_the_queries_keys_slide_names_every_key_in_a_row_of_its_own(shipped, n_keys, size, presenter):
    """Up to 40 pieces (the axes' MAX_LABELLED), every key of the sentence has a named row of its own on the slide:
    at once where they fit, else in the window the lecturer moves with ↓ / ↑, each row at projector size; the lecture
    file (no keys to move a window) shows them all at once."""
    from app.charts.style import PRESENTER_ROW_PX
    from app.lecture.measures import WINDOW_STRIDE
    from app.views.lecture import slide_room

    ckpt = shipped("reverse")

    def run(text, beam_size):
        return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(beam_size=beam_size))
    translation = run(" ".join("abcdefghij"[i % 10] for i in range(n_keys - 1)), 1)  # letters and </s>
    keys = plotly_text(translation.source.pieces)
    assert len(keys) == n_keys
    width, height = slide_room(size, presenter)
    deck = Deck(model_name="reverse", ckpt=ckpt, translation=translation, translate=run, width_px=width,
                height_px=height, presenter=presenter)
    named: dict[int, str] = {}
    for start in range(0, n_keys, WINDOW_STRIDE):
        fig, facts = build(STAGES, Deck(**{**deck.__dict__, "window": start}))
        rows = named_keys(fig)
        shown = fig.layout.meta["keys_shown"]
        assert rows == [keys[j] for j in shown] and shown == list(range(shown[0], shown[0] + len(shown)))
        named.update(zip(shown, rows, strict=True))
        if len(shown) < n_keys:  # a window: the slide says which keys, and the keys move it
            assert facts["window_keys"] and f"keys {shown[0] + 1}–{shown[-1] + 1} of {n_keys}" in fig.layout.title.text
        drawn = presented(fig, height) if presenter else fig
        assert drawn.layout.height <= height and (len(shown) + 1) * PRESENTER_ROW_PX <= drawn.layout.height
    assert named == dict(enumerate(keys))  # every key named, in its place
    fig, facts = build(STAGES, Deck(**{**deck.__dict__, "window": None}))
    assert named_keys(fig) == keys and not facts.get("window_keys")


def test_the_default_sentence_shows_all_its_keys_at_once_on_a_projector(shipped, decks):
    """The slide that showed "2 other keys … together" for the default sentence at 1280x720 in presenter mode."""
    from app.views.lecture import slide_room

    deck = decks(shipped, "en-de")
    width, height = slide_room((1280, 720), True)
    fig, facts = build(STAGES, Deck(**{**deck.__dict__, "width_px": width, "height_px": height, "presenter": True}))
    assert named_keys(fig) == plotly_text(deck.translation.source.pieces) and not facts.get("window_keys")
    assert presented(fig, height).layout.height <= height
