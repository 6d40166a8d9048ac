"""Page: Lecture — a guided tour of the paper on the current sentence, one slide at a time (app.lecture.slides.SLIDES).

Next / previous with the buttons or the keys a presentation clicker sends (→ / PageDown, ← / PageUp); the slide
number is in the URL (?slide=5). Each slide is one figure, a few lines and collapsed speaker notes, made to fit
a 1280x720 projector without scrolling. A slide's figure is cached per sentence and model for every session: a
class following the lecturer's link shares one computation per slide.
"Download the lecture (HTML)" gives every slide on the sentence as one file that needs no server and no network
(app.views.lecture_file), built on the server only when clicked.
"""
from __future__ import annotations

import math
import re

import plotly.graph_objects as go
import streamlit as st

from app.browser import bind_keys, viewport
from app.charts.style import capped, plotly_config, presented
from app.lecture.measures import WINDOW_STRIDE
from app.lecture.prepared import MAX_PREPARED, MAX_PREPARED_CHARS, next_sentence, prepared_sentences
from app.lecture.slides import SLIDES, Slide
from app.page import (
    COULD_NOT_TRANSLATE,
    TRANSLATE_PAGE,
    caption_text,
    require_checkpoint,
    sentence_caption,
    show_failure,
)
from app.presenter import is_on
from app.serving.scheduler import MAX_INPUT_CHARS, Request, ServerBusy, current_request, translate_request
from app.state import sync_url
from app.views.lecture_file import download_ui
from app.views.slide_figures import Deck, SlideUnavailable, build
from model.serving.inference import InputError, Translation

# What a slide's page takes around its figure, measured in Chromium (tests/e2e/test_text_layout.py): the width
# beside the figure's column (sidebar, paddings; the text column takes 3 of 10) and the height above and below it
# (page padding, the title row, the sentence's caption row of up to CAPTION_LINES lines, the bottom padding); each
# further line of the caption takes CAPTION_LINE_PX more. In presenter mode at 1280x720 (PRESENTER_CSS): the figure
# from 107 px, a gap of 16 px, the caption row's two lines of 28 px, no bottom padding, 5 px to spare.
SIDEBAR_PX, PAGE_PAD_PX, PRESENTER_PAD_PX = 300, 160, 48
FIGURE_SHARE, COLUMN_GAP_PX = 0.7, 24
CHROME_PX = {False: 250, True: 185}  # by presenter mode
CAPTION_LINES, CAPTION_LINE_PX = 2, {False: 22, True: 29}
# The characters a caption line holds, with room to spare (its column at 1280 px holds 122 in presenter mode). Normal
# mode, with the sidebar open, keeps its measured chrome whatever the caption: it does not promise one screen.
CAPTION_CHARS = {False: 85, True: 110}
MIN_SLIDE_HEIGHT = 400
KEYS = {"ArrowRight": "lecture_next", "PageDown": "lecture_next", "ArrowLeft": "lecture_prev",
        "PageUp": "lecture_prev", "ArrowDown": "lecture_window_down", "ArrowUp": "lecture_window_up"}


# The lecturer's sentences: S the next prepared one, 1-5 that one (hidden buttons, pressed by the keys only).
SENTENCE_KEYS = {"s": "lecture_sentence_next", "S": "lecture_sentence_next",
                 **{str(n): f"lecture_sentence_{n}" for n in range(1, MAX_PREPARED + 1)}}
SENTENCE_KEYS_NOTE = "**S** next prepared sentence, **1**–**5** that one"


def _use_sentence(text: str | None) -> None:
    """Explain ``text`` from now on (the slide stays); a blank one changes nothing."""
    if text and text.strip():
        st.session_state["text"] = text.strip()
        st.session_state["sentence"] = 0  # its first sentence, if it is a paragraph


def _typed() -> None:
    _use_sentence(st.session_state.get("lecture_text", ""))


def _prepared(number: int | None) -> None:
    """Switch to prepared sentence ``number`` (from 1), or with None to the one after the current sentence."""
    sentences = prepared_sentences(str(st.session_state.get("prepared", "")))
    if number is None:
        _use_sentence(next_sentence(sentences, str(st.session_state.get("text", ""))))
    elif number <= len(sentences):
        _use_sentence(sentences[number - 1])


def sentence_box() -> None:
    """The sentence the tour explains, typed here (Enter shows it), and the hidden buttons of the sentence keys."""
    st.session_state["lecture_text"] = st.session_state.get("text", "")
    st.text_input("Sentence", key="lecture_text", max_chars=MAX_INPUT_CHARS, on_change=_typed,
                  label_visibility="collapsed", placeholder="Type a sentence, press Enter",
                  help="The sentence every slide explains. Enter translates it; the slide stays.")
    with st.container(key="lecture_sentence_keys"):  # pressed by the keys S and 1-5 only
        st.button("Next prepared sentence", key="lecture_sentence_next", on_click=_prepared, args=(None,))
        for number in range(1, MAX_PREPARED + 1):
            st.button(f"Prepared sentence {number}", key=f"lecture_sentence_{number}", on_click=_prepared,
                      args=(number,))
    bind_keys(SENTENCE_KEYS, hide=("lecture_sentence_keys",))


def prepared_ui(folded: bool = True) -> None:
    """The prepared sentences, one per line, in a folded box of their own (or, ``folded`` False, in the box they
    stand in); they travel in the lecture's link."""
    sentences = prepared_sentences(str(st.session_state.get("prepared", "")))
    label = f"Prepared sentences ({len(sentences)} of {MAX_PREPARED})"
    with st.expander(label) if folded else st.container():
        st.text_area("One sentence per line" if folded else f"{label}, one per line", key="prepared",
                     max_chars=MAX_PREPARED_CHARS, height=130,
                     help=f"Up to {MAX_PREPARED}: during the tour, S switches to the next one and 1–5 to that one. "
                          "They are part of this page's link: prepare them once, open the link in the hall.")
        lines = [line for line in str(st.session_state.get("prepared", "")).splitlines() if line.strip()]
        if len(lines) > MAX_PREPARED:
            st.caption(f"Only the first {MAX_PREPARED} lines are used.")


def _go(delta: int) -> None:
    st.session_state["slide"] = min(max(int(st.session_state.get("slide", 1)) + delta, 1), len(SLIDES))


def window_start(index: int) -> int:
    """The first row of slide ``index``'s window: where the lecturer moved it on this slide, 0 on any other (a
    slide reached by any way, keys, buttons, the browser's Back, shows its map from the top)."""
    held = st.session_state.get("slide_window")
    return held[1] if isinstance(held, tuple) and len(held) == 2 and held[0] == index else 0


def _move_window(index: int, delta: int) -> None:
    """Move the window over a map too long for the slide by ``delta`` rows (the maker keeps it inside the map)."""
    st.session_state["slide_window"] = (index, max(0, window_start(index) + delta))


def caption_lines(caption: str, presenter: bool) -> int:
    """How many lines the sentence's caption (Markdown, app.page.caption_text) takes under a slide, at most."""
    shown = re.sub(r":orange\[|[*\\\]]", "", caption)  # what Markdown does not print
    return max(1, math.ceil(len(shown) / CAPTION_CHARS[presenter]))


def slide_room(viewport: tuple[int, int], presenter: bool, lines: int = CAPTION_LINES) -> tuple[int, int]:
    """(width, height) in px of a slide's figure in a browser window of ``viewport``: the figure column and the
    free height between the slide's title row and its caption of ``lines`` lines, so that a larger screen gets a
    larger figure with more labels."""
    width, height = viewport
    main = width - (PRESENTER_PAD_PX if presenter else SIDEBAR_PX + PAGE_PAD_PX)
    below = max(0, lines - CAPTION_LINES) * CAPTION_LINE_PX[presenter] if presenter else 0  # the projector's promise
    return int(main * FIGURE_SHARE - COLUMN_GAP_PX), max(MIN_SLIDE_HEIGHT, height - CHROME_PX[presenter] - below)


@st.cache_data(max_entries=256, show_spinner="Drawing the slide…")
def slide_content(model_name: str, text: str, max_len: int, length_penalty: float, index: int, presenter: bool,
                  room: tuple[int, int], window: int, _deck: Deck) -> tuple[go.Figure, dict]:
    """The figure (sized for a slide of ``room`` px, restyled in presenter mode) and the facts of slide ``index``;
    the other arguments say which sentence, model, settings and window (its first row) ``_deck`` holds."""
    fig, facts = build(SLIDES[index], _deck)
    return (presented(fig, room[1]) if presenter else capped(fig, room[1])), facts


def deck_for(request: Request, translation: Translation, room: tuple[int, int], presenter: bool,
             window: int = 0) -> Deck:
    """The current sentence's deck; the extra sentences a slide needs go through the shared translation cache."""
    def translate(text: str, beam_size: int) -> Translation:
        return translate_request(Request(model_name=request.model_name, text=text, beam_size=beam_size,
                                         max_len=request.max_len, length_penalty=request.length_penalty))
    ckpt = require_checkpoint()
    assert ckpt is not None  # main() returned early otherwise
    return Deck(model_name=request.model_name, ckpt=ckpt, translation=translation, translate=translate,
                width_px=room[0], height_px=room[1], presenter=presenter, window=window)


def controls_ui(index: int, title: str, facts: dict | None = None) -> None:
    """Previous / next buttons around the slide's number and title; the clicker keys press them. ↓ / ↑ move a
    map's window where the slide's ``facts`` say it shows one (else the keys scroll the page as usual)."""
    window = bool((facts or {}).get("window_keys"))
    c_prev, c_title, c_next = st.columns([1.3, 8, 1.3], vertical_alignment="center")
    c_prev.button("◀ Previous", key="lecture_prev", on_click=_go, args=(-1,), disabled=index == 0, width="stretch")
    c_next.button("Next ▶", key="lecture_next", on_click=_go, args=(1,), disabled=index == len(SLIDES) - 1,
                  width="stretch")
    c_title.markdown(f"<div style='display:flex;align-items:baseline;gap:0.8rem'>"
                     f"<span data-testid='slideCounter' style='color:#666;white-space:nowrap'>"
                     f"Slide {index + 1} / {len(SLIDES)}</span>"
                     f"<span style='font-size:1.6em;font-weight:600;line-height:1.2'>{title}</span></div>",
                     unsafe_allow_html=True)
    with st.container(key="lecture_window_keys"):  # pressed by ↓ / ↑ only: a slide's map too long for the screen
        st.button("Window down", key="lecture_window_down", on_click=_move_window,
                  args=(index, WINDOW_STRIDE), disabled=not window)
        st.button("Window up", key="lecture_window_up", on_click=_move_window,
                  args=(index, -WINDOW_STRIDE), disabled=not window or window_start(index) == 0)
    bind_keys(KEYS, hide=("lecture_window_keys",))


# In presenter mode the slide takes the whole screen: the header's bar (only the sidebar's and the menu's buttons, at
# the sides) lets the slide's title row come up under it, nothing pads the bottom, and a caption's last paragraph
# keeps no margin below it (Streamlit's caption box let it hang 16 px out of the page, which then scrolled).
PRESENTER_CSS = """<style>
[data-testid=stHeader] {background: transparent}
.stMainBlockContainer {padding-top: 3rem !important; padding-bottom: 0 !important}
.stMainBlockContainer [data-testid=stCaptionContainer] {margin-bottom: 0}
.stMainBlockContainer [data-testid=stCaptionContainer] p:last-child {margin-bottom: 0}
</style>"""
KEYS_NOTE = ("Keys: **→** / **←** (a clicker's PageDown / PageUp) next / previous slide; "
             f"{SENTENCE_KEYS_NOTE}.")


def side_ui(slide: Slide, facts: dict, request: Request, translation: Translation) -> None:
    """Beside the figure: the slide's lines, then what the lecturer needs (speaker notes, the keys, the prepared
    sentences, the download). In presenter mode the lecturer's part is one fold: the slide and its caption row fit
    the projector's 720 px (tests/e2e/test_text_layout.py), and the hall reads only the slide."""
    st.markdown("\n".join(f"- {text}" for line in slide.lines if (text := line.format_map(facts).strip())))
    if not is_on():
        if slide.notes:
            with st.expander("Speaker notes"):
                st.markdown(slide.notes.format_map(facts))
        st.caption(KEYS_NOTE + (f" {facts['window']}" if facts.get("window") else ""))
        prepared_ui()
        if (ckpt := require_checkpoint()) is not None:
            download_ui(request, ckpt, translation)  # the whole lecture as one offline file (app.views.lecture_file)
        return
    if facts.get("window"):
        st.caption(facts["window"])  # how to move over the map: the hall sees it move
    with st.expander("Speaker notes, keys, sentences", key="lecturer_tools"):
        if slide.notes:
            st.markdown(slide.notes.format_map(facts))
        st.caption(KEYS_NOTE)
        prepared_ui(folded=False)
        if (ckpt := require_checkpoint()) is not None:
            download_ui(request, ckpt, translation)


def slide_ui(index: int, request: Request, translation: Translation) -> None:
    slide = SLIDES[index]
    room = slide_room(viewport(), is_on(), caption_lines(caption_text(translation, sizes=not is_on()), is_on()))
    window = window_start(index)
    try:
        fig, facts = slide_content(request.model_name, request.text, request.max_len, request.length_penalty, index,
                                   is_on(), room, window, deck_for(request, translation, room, is_on(), window))
    except Exception as exc:  # a failing slide must not end the lecture: the next one may work
        controls_ui(index, slide.title.split(":")[0])
        if isinstance(exc, SlideUnavailable):
            st.info(str(exc), icon=":material/info:")
        else:
            show_failure(exc, f"lecture slide {index + 1} for {request!r}",
                         "This slide could not be drawn (the details are in the server log). Go on to the next one.")
        return
    st.session_state["slide_window"] = (index, int(facts.get("window_start", 0)))  # inside the map: ↑ acts at once
    controls_ui(index, slide.title.format_map(facts), facts)
    c_fig, c_text = st.columns([7, 3], gap="medium")
    c_fig.plotly_chart(fig, key="lecture_figure", width="stretch", theme=None,
                       config=plotly_config(f"slide_{index + 1}", st.session_state["image_format"]))
    with c_text:
        side_ui(slide, facts, request, translation)
    sentence_caption(translation, change=sentence_box, sizes=not is_on())


def main() -> None:
    if is_on():
        st.html(PRESENTER_CSS)
    st.session_state["slide"] = min(max(int(st.session_state.get("slide", 1)), 1), len(SLIDES))
    index = st.session_state["slide"] - 1
    if require_checkpoint() is None:
        return
    current = current_request()
    request = Request(model_name=current.model_name, text=current.text, beam_size=1, max_len=current.max_len,
                      length_penalty=current.length_penalty)  # the tour explains greedy decoding first
    sync_url()  # the link carries the sentence before it is translated: a reload meanwhile brings it back
    try:
        translation = translate_request(request)
    except InputError as exc:
        controls_ui(index, "The tour needs a sentence")
        st.info(f"{exc} Type one here (Enter shows it), or on the Translate page.", icon=":material/edit:")
        sentence_box()
        prepared_ui()
        st.page_link(TRANSLATE_PAGE, label="Go to the Translate page", icon=":material/translate:")
        return
    except Exception as exc:
        if isinstance(exc, ServerBusy):
            controls_ui(index, "Waiting for the model")
        show_failure(exc, f"lecture: translating {request!r}", COULD_NOT_TRANSLATE)
        return
    slide_ui(index, request, translation)


main()
