"""Page: Lecture — a guided tour of the paper on the current sentence, one slide at a time (app.lecture.slides.SLIDES).

Next / previous with the buttons or the keys a presentation clicker sends (→ / PageDown, ← / PageUp); the slide
number is in the URL (?slide=5). Each slide is one figure, a few lines and collapsed speaker notes, made to fit
a 1280x720 projector without scrolling. A slide's figure is cached per sentence and model for every session: a
class following the lecturer's link shares one computation per slide.
"""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app.browser import bind_keys
from app.charts.style import capped, plotly_config, presented
from app.lecture.slides import SLIDES
from app.page import COULD_NOT_TRANSLATE, TRANSLATE_PAGE, require_checkpoint, sentence_caption, show_failure
from app.presenter import is_on
from app.serving.scheduler import Request, ServerBusy, current_request, translate_request
from app.views.slide_figures import Deck, SlideUnavailable, build
from model.serving.inference import InputError, Translation

SLIDE_HEIGHT = 520  # px: with the slide's title row, fits a 720-px-high screen
KEYS = {"ArrowRight": "lecture_next", "PageDown": "lecture_next", "ArrowLeft": "lecture_prev",
        "PageUp": "lecture_prev"}


def _go(delta: int) -> None:
    st.session_state["slide"] = min(max(int(st.session_state.get("slide", 1)) + delta, 1), len(SLIDES))


@st.cache_data(max_entries=256, show_spinner="Drawing the slide…")
def slide_content(model_name: str, text: str, max_len: int, length_penalty: float, index: int, presenter: bool,
                  _deck: Deck) -> tuple[go.Figure, dict]:
    """The figure (sized for a slide, restyled in presenter mode) and the facts of slide ``index``; the other
    arguments say which sentence, model and settings ``_deck`` holds."""
    fig, facts = build(SLIDES[index], _deck)
    return (presented(fig, SLIDE_HEIGHT) if presenter else capped(fig, SLIDE_HEIGHT)), facts


def deck_for(request: Request, translation: Translation) -> Deck:
    """The current sentence's deck; the extra sentences a slide needs go through the shared translation cache."""
    def translate(text: str, beam_size: int) -> Translation:
        return translate_request(Request(model_name=request.model_name, text=text, beam_size=beam_size,
                                         max_len=request.max_len, length_penalty=request.length_penalty))
    return Deck(model_name=request.model_name, ckpt=require_checkpoint(), translation=translation,
                translate=translate)


def controls_ui(index: int, title: str) -> None:
    """Previous / next buttons around the slide's number and title; the clicker keys press them."""
    c_prev, c_title, c_next = st.columns([1.3, 8, 1.3], vertical_alignment="center")
    c_prev.button("◀ Previous", key="lecture_prev", on_click=_go, args=(-1,), disabled=index == 0, width="stretch")
    c_next.button("Next ▶", key="lecture_next", on_click=_go, args=(1,), disabled=index == len(SLIDES) - 1,
                  width="stretch")
    c_title.markdown(f"<div style='display:flex;align-items:baseline;gap:0.8rem'>"
                     f"<span data-testid='slideCounter' style='color:#666;white-space:nowrap'>"
                     f"Slide {index + 1} / {len(SLIDES)}</span>"
                     f"<span style='font-size:1.6em;font-weight:600;line-height:1.2'>{title}</span></div>",
                     unsafe_allow_html=True)
    bind_keys(KEYS)


def slide_ui(index: int, request: Request, translation: Translation) -> None:
    slide = SLIDES[index]
    try:
        fig, facts = slide_content(request.model_name, request.text, request.max_len, request.length_penalty, index,
                                   is_on(), deck_for(request, translation))
    except Exception as exc:  # a failing slide must not end the lecture: the next one may work
        controls_ui(index, slide.title.split(":")[0])
        if isinstance(exc, SlideUnavailable):
            st.info(str(exc), icon=":material/info:")
        else:
            show_failure(exc, f"lecture slide {index + 1} for {request!r}",
                         "This slide could not be drawn (the details are in the server log). Go on to the next one.")
        return
    controls_ui(index, slide.title.format_map(facts))
    c_fig, c_text = st.columns([7, 3], gap="medium")
    c_fig.plotly_chart(fig, key="lecture_figure", width="stretch", theme=None,
                       config=plotly_config(f"slide_{index + 1}", st.session_state["image_format"]))
    with c_text:
        st.markdown("\n".join(f"- {text}" for line in slide.lines if (text := line.format_map(facts).strip())))
        if slide.notes:
            with st.expander("Speaker notes"):
                st.markdown(slide.notes.format_map(facts))
        st.caption("Keys: **→** / **←** (a clicker's PageDown / PageUp) next / previous slide.")
    sentence_caption(translation)


def main() -> None:
    st.session_state["slide"] = min(max(int(st.session_state.get("slide", 1)), 1), len(SLIDES))
    index = st.session_state["slide"] - 1
    if require_checkpoint() is None:
        return
    current = current_request()
    request = Request(model_name=current.model_name, text=current.text, beam_size=1, max_len=current.max_len,
                      length_penalty=current.length_penalty)  # the tour explains greedy decoding first
    try:
        translation = translate_request(request)
    except InputError as exc:
        controls_ui(index, "The tour needs a sentence")
        st.info(f"{exc} The tour explains the sentence you type on the Translate page.", icon=":material/edit:")
        st.page_link(TRANSLATE_PAGE, label="Go to the Translate page", icon=":material/translate:")
        return
    except Exception as exc:
        if isinstance(exc, ServerBusy):
            controls_ui(index, "Waiting for the model")
        show_failure(exc, f"lecture: translating {request!r}", COULD_NOT_TRANSLATE)
        return
    slide_ui(index, request, translation)


main()
