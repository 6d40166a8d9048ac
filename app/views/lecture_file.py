"""The lecture as one file: every slide of app.lecture.slides on one or more sentences, as presenter mode draws them,
in a single self-contained HTML page that needs no server and no network (a laptop without a network, a learning
platform, a handout after class).

Plotly's JavaScript (plotly.offline.get_plotlyjs(), about 4.7 MB) is inlined once in the page, and each figure's
Plotly JSON sits beside its slide, so the file opens from ``file://`` and from any static web server alike. The page
keeps the slides' interaction: → / ← and PageDown / PageUp (what a clicker sends), hover values, the sentence switch
(key s, or the numbered buttons) and the speaker notes (key n). Each slide is laid out at 1280x720 CSS px, scaled to
the window on screen; printing it (Chromium's print to PDF) gives one 16:9 page per slide and sentence (@page size).

Slide text is Markdown (app.lecture.slides), rendered by Python-Markdown. The facts a slide quotes are put in after
the Markdown is rendered, HTML-escaped: a sentence, a translation or a piece is shown exactly as typed and can
neither add markup nor Markdown of its own.
"""
from __future__ import annotations

import dataclasses
import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from string import Formatter

import markdown
import plotly.graph_objects as go
import plotly.offline
import streamlit as st

from app.charts.style import plotly_config, presented
from app.lecture.slides import SLIDES, Slide
from app.serving.scheduler import Request, translate_detached
from app.views.slide_figures import Deck, SlideUnavailable, build
from model.checkpoints.files import Checkpoint
from model.serving.inference import Translation

PAGE_W, PAGE_H = 1280, 720  # CSS px of one slide: a 1280x720 projector, and one 16:9 printed page
# A slide's figure, as the lecture page draws it at 1280x720 in presenter mode (app.views.lecture.slide_room): the
# figure column (7 of 10 beside the slide's text) and the height under the title row
FIGURE_W, FIGURE_H = 838, 530
BODY_H = 600  # what the title row and the sentence line leave of a slide's height for its figure
MAX_QUOTE = 140  # characters of a sentence quoted on every slide's bottom line
_FIELD = "AEFACT{}AEFACT"  # a fact's place in the Markdown while it is rendered (plain letters: Markdown keeps them)
_FIELD_RE = re.compile(r"AEFACT(\d+)AEFACT")
_MD_ESCAPE = re.compile(r"\\(.)", re.S)  # app.checks.escape.md's backslash before every Markdown character
_FORMATTER = Formatter()

MakeSlide = Callable[[int, Deck], tuple[go.Figure, dict]]  # (slide index, deck) -> the presented figure and its facts


def file_deck(model_name: str, ckpt: Checkpoint, translation: Translation,
              translate: Callable[[str, int], Translation]) -> Deck:
    """A Deck drawn for the file's slide: presenter mode's text in a figure column FIGURE_W px wide, every row of a
    long map at once (no window: a file has no keys to move one; the figure grows instead)."""
    return Deck(model_name=model_name, ckpt=ckpt, translation=translation, translate=translate, width_px=FIGURE_W,
                height_px=FIGURE_H, presenter=True, window=None)


def presented_slide(index: int, deck: Deck) -> tuple[go.Figure, dict]:
    """Slide ``index``'s figure restyled for the projector, as the lecture page draws it in presenter mode."""
    fig, facts = build(SLIDES[index], deck)
    return presented(fig, FIGURE_H), facts


def render(template: str, facts: dict, inline: bool = False) -> str:
    """``template`` (Markdown with str.format fields) as HTML, each field's value HTML-escaped and put in after the
    Markdown was rendered. A value app.checks.escape.md made literal for Streamlit is first turned back into the
    text it stands for, which the HTML escaping then shows as it is. ``inline`` drops the paragraph around it."""
    source, values = [], []
    for literal, field, spec, conversion in _FORMATTER.parse(template):
        source.append(literal)
        if field is not None:
            value = _FORMATTER.convert_field(_FORMATTER.get_field(field, (), facts)[0], conversion)
            text = format(value, spec or "")
            values.append(html.escape(_MD_ESCAPE.sub(r"\1", text) if isinstance(value, str) else text))
            source.append(_FIELD.format(len(values) - 1))
    rendered = markdown.markdown("".join(source))
    if inline:
        rendered = re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.S)
    return _FIELD_RE.sub(lambda m: values[int(m.group(1))], rendered)


@dataclass(frozen=True)
class SlidePage:
    """One slide of one sentence, ready for the page: its HTML parts and its figure as Plotly JSON (None when the
    model lacks what the slide needs: ``message`` says why)."""

    title: str
    lines: str
    notes: str
    figure: str | None
    height: int
    message: str = ""


def slide_page(index: int, deck: Deck, make: MakeSlide = presented_slide) -> SlidePage:
    slide: Slide = SLIDES[index]
    try:
        fig, facts = make(index, deck)
    except SlideUnavailable as exc:
        return SlidePage(title=html.escape(slide.title.split(":")[0]), lines="", notes="", figure=None, height=0,
                         message=html.escape(str(exc)))
    lines = [line for line in slide.lines if line.format_map(facts).strip()]  # an empty fact drops its line
    return SlidePage(title=render(slide.title, facts, inline=True),
                     lines=render("\n".join(f"- {line}" for line in lines), facts),
                     notes=render(slide.notes, facts) if slide.notes else "",
                     figure=fig.to_json(), height=int(fig.layout.height or FIGURE_H))


def script_json(text: str) -> str:
    """JSON safe inside a <script> element: no "</script>" or "<!--" can end or bend it."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def quote(text: str, limit: int = MAX_QUOTE) -> str:
    text = " ".join(text.split())
    return html.escape(text if len(text) <= limit else text[: limit - 1] + "…")


def caption(deck: Deck, number: int, total: int) -> str:
    t = deck.translation
    which = f"Sentence {number} of {total}: " if total > 1 else ""
    return (f"{which}<b>{quote(t.source.text)}</b> → <b>{quote(t.text) or '(nothing)'}</b> "
            f"({len(t.source.ids)} source pieces, {len(t.target_ids)} output pieces, model "
            f"<i>{html.escape(deck.model_name)}</i>)")


def section(sentence: int, index: int, page: SlidePage, caption_html: str) -> str:
    slide_id = f"{sentence}-{index}"
    counter = f"Slide {index + 1} / {len(SLIDES)}"
    if page.figure is None:
        body = f"<div class='message'>{page.message}</div>"
    else:
        fit = min(1.0, BODY_H / max(page.height, 1))  # a taller figure scrolls on screen and shrinks to its page
        body = (f"<div class='figure-column'><div class='figure' id='figure-{slide_id}' "
                f"style='width:{FIGURE_W}px;height:{page.height}px;--fit:{fit:.4f}'></div></div>"
                f"<div class='text-column'><div class='lines'>{page.lines}</div>"
                + (f"<div class='notes'><div class='notes-title'>Speaker notes</div>{page.notes}</div>"
                   if page.notes else "") + "</div>"
                f"<script type='application/json' class='figure-data' data-for='figure-{slide_id}'>"
                f"{script_json(page.figure)}</script>")
    return (f"<section class='slide' id='slide-{slide_id}' data-sentence='{sentence}' data-slide='{index}'>"
            f"<header><span class='counter'>{counter}</span><h1>{page.title}</h1></header>"
            f"<div class='body'>{body}</div><footer>{caption_html}</footer></section>")


def lecture_html(decks: Sequence[Deck], pages: Sequence[Sequence[SlidePage]]) -> str:
    """The whole page: ``pages[s][i]`` is slide i of the sentence of ``decks[s]``."""
    sections = "\n".join(section(s, i, page, caption(deck, s + 1, len(decks)))
                         for s, (deck, row) in enumerate(zip(decks, pages, strict=True)) for i, page in enumerate(row))
    buttons = "".join(f"<button type='button' class='sentence-button' data-sentence='{s}' "
                      f"title='{quote(deck.translation.source.text)}'>{s + 1}</button>"
                      for s, deck in enumerate(decks))
    sentences = ("<span class='sentences'>Sentence (s): " + buttons + "</span>") if len(decks) > 1 else ""
    title = f"Attention Explorer lecture: {quote(decks[0].translation.source.text, 80)}"
    config = json.dumps({**plotly_config("slide", "png"), "responsive": False})
    return (_PAGE.replace("@@TITLE@@", title).replace("@@CSS@@", _CSS).replace("@@SENTENCES@@", sentences)
            .replace("@@N_SLIDES@@", str(len(SLIDES))).replace("@@N_SENTENCES@@", str(len(decks)))
            .replace("@@CONFIG@@", script_json(config)).replace("@@SCRIPT@@", _SCRIPT)
            .replace("@@PLOTLYJS@@", plotly.offline.get_plotlyjs()).replace("@@SECTIONS@@", sections))


def lecture_file(decks: Sequence[Deck], make: MakeSlide = presented_slide) -> str:
    """Every slide on every deck's sentence, as one self-contained HTML page (see the module docstring). Builds
    len(SLIDES) figures per sentence: a few seconds each sentence (head importance, the beam search and the
    training snapshots take the longest)."""
    if not decks:
        raise ValueError("a lecture needs at least one sentence")
    return lecture_html(decks, [[slide_page(i, deck, make) for i in range(len(SLIDES))] for deck in decks])


DOWNLOAD_HELP = ("Every slide on this sentence in one HTML file that opens without a server or a network (Plotly "
                 "inside, about 5 MB): → / ← or a clicker turn the slides, n shows the speaker notes, printing gives "
                 "one page per slide. Built when you click: {n} figures, 5-15 s on the server (head importance, the "
                 "beam search and the training snapshots take the longest); shared with everyone who asks for the "
                 "same sentence.")


@st.cache_resource(max_entries=4, show_spinner=False)
def shared_lecture_file(model_name: str, text: str, max_len: int, length_penalty: float, uid: int, *,
                        _request: Request, _ckpt: Checkpoint, _translation: Translation) -> bytes:
    """The lecture file of one translation (Translation.uid), built once per server for every session that asks
    (a class downloading the lecturer's sentence): bytes are never changed after they are built."""
    def translate(text: str, beam_size: int) -> Translation:
        return translate_detached(_ckpt, dataclasses.replace(_request, text=text, beam_size=beam_size))
    return lecture_file([file_deck(model_name, _ckpt, _translation, translate)]).encode("utf-8")


def download_ui(request: Request, ckpt: Checkpoint, translation: Translation) -> None:
    """The lecture page's button that gives this sentence's lecture file, built on demand on the server's own
    thread when clicked (Streamlit's deferred download: nothing is built for a visitor who does not click)."""
    st.download_button(
        "Download the lecture (HTML)", key="lecture_download", file_name="lecture.html", mime="text/html",
        on_click="ignore", icon=":material/download:", help=DOWNLOAD_HELP.format(n=len(SLIDES)),
        data=lambda: shared_lecture_file(request.model_name, request.text, request.max_len, request.length_penalty,
                                         translation.uid, _request=request, _ckpt=ckpt, _translation=translation))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>@@CSS@@</style>
<script>@@PLOTLYJS@@</script>
</head>
<body data-slides="@@N_SLIDES@@" data-sentences="@@N_SENTENCES@@">
<div class="stage">
@@SECTIONS@@
<nav class="controls">
<button type="button" class="prev" title="Previous slide (← or PageUp)">◀</button>
<button type="button" class="next" title="Next slide (→ or PageDown)">▶</button>
@@SENTENCES@@
<button type="button" class="notes-button" title="Speaker notes (n)">Notes (n)</button>
</nav>
</div>
<script type="application/json" id="plotly-config">@@CONFIG@@</script>
<script>@@SCRIPT@@</script>
</body></html>
"""

_CSS = """
html, body {margin: 0; padding: 0; background: #2b2b2b; overflow: hidden; height: 100%;
  font-family: Inter, "Segoe UI", Helvetica, Arial, sans-serif; color: #1a1a1a}
.stage {position: absolute; left: 0; top: 0; width: 1280px; height: 720px; background: white;
  transform-origin: 0 0}
section.slide {position: absolute; left: 0; top: 0; width: 1280px; height: 720px; box-sizing: border-box;
  padding: 14px 24px 8px 24px; display: flex; flex-direction: column; visibility: hidden; background: white}
section.slide.current {visibility: visible}
header {display: flex; align-items: baseline; gap: 16px; min-height: 52px; padding-right: 300px}
header .counter {color: #666; font-size: 20px; flex: none}
header h1 {font-size: 30px; font-weight: 600; line-height: 1.2; margin: 0}
.body {flex: 1; display: flex; gap: 24px; min-height: 0; overflow-y: auto}
.figure-column {flex: none; width: 840px}
.text-column {flex: 1; font-size: 20px; line-height: 1.4; min-width: 0}
.text-column ul {margin: 4px 0 0 0; padding-left: 22px}
.text-column li {margin-bottom: 10px}
.text-column code {font-size: 0.9em; background: #f1f1f1; padding: 0 3px; border-radius: 3px}
.notes {display: none; margin-top: 8px; padding: 8px 12px; background: #fff6d9; border-left: 4px solid #e0b000;
  font-size: 18px; line-height: 1.35}
.notes p {margin: 4px 0}
.notes-title {font-weight: 600}
body.show-notes .notes {display: block}
.message {font-size: 22px; color: #444; padding: 40px; max-width: 900px}
footer {font-size: 18px; color: #444; padding-top: 6px; border-top: 1px solid #e5e5e5; line-height: 1.3;
  padding-right: 40px}
.controls {position: absolute; right: 20px; top: 14px; display: flex; gap: 6px; align-items: center;
  font-size: 18px; color: #555}
.controls button {font: inherit; font-size: 18px; padding: 2px 10px; border: 1px solid #bbb; border-radius: 6px;
  background: #fafafa; cursor: pointer}
.controls button:disabled {opacity: 0.35; cursor: default}
.controls button.chosen, body.show-notes .notes-button {background: #1f77b4; color: white; border-color: #1f77b4}
.sentences {display: flex; gap: 4px; align-items: center; margin: 0 6px}
@page {size: 1280px 720px; margin: 0}
@media print {
  html, body {background: white; overflow: visible; height: auto; -webkit-print-color-adjust: exact;
    print-color-adjust: exact}
  .stage {position: static; transform: none !important; height: auto}
  section.slide {position: relative; visibility: visible; break-after: page; overflow: hidden}
  section.slide:last-of-type {break-after: auto}
  .controls, .notes {display: none !important}
  .body {overflow: hidden}
  header {padding-right: 0}
  .figure {transform: scale(var(--fit)); transform-origin: 0 0}
}
"""

_SCRIPT = """
(() => {
  const slides = Array.from(document.querySelectorAll('section.slide'));
  const nSlides = +document.body.dataset.slides, nSentences = +document.body.dataset.sentences;
  const config = JSON.parse(document.getElementById('plotly-config').textContent);
  let sentence = 0, index = 0;
  const at = (s, i) => slides[s * nSlides + i];
  // A figure is drawn once; the shown one first, then the others one by one while the page is idle, so that
  // printing finds them all drawn (document.body.dataset.drawn says "all" then).
  const draw = (slide) => {
    if (slide.dataset.drawn) return;
    slide.dataset.drawn = '1';
    const data = slide.querySelector('script.figure-data');
    if (!data) return;
    const fig = JSON.parse(data.textContent);
    Plotly.newPlot(document.getElementById(data.dataset.for), fig.data, fig.layout,
                   {...config, toImageButtonOptions: {...config.toImageButtonOptions,
                    filename: 'slide_' + (+slide.dataset.slide + 1)}});
  };
  const drawRest = () => {
    const next = slides.find((s) => !s.dataset.drawn);
    if (!next) { document.body.dataset.drawn = 'all'; return; }
    draw(next);
    setTimeout(drawRest, 0);
  };
  const scale = () => {
    const stage = document.querySelector('.stage');
    const k = Math.min(window.innerWidth / 1280, window.innerHeight / 720);
    stage.style.transform = `scale(${k})`;
    stage.style.left = `${Math.max(0, (window.innerWidth - 1280 * k) / 2)}px`;
    stage.style.top = `${Math.max(0, (window.innerHeight - 720 * k) / 2)}px`;
  };
  const show = (s, i) => {
    sentence = Math.min(Math.max(s, 0), nSentences - 1);
    index = Math.min(Math.max(i, 0), nSlides - 1);
    slides.forEach((slide) => slide.classList.remove('current'));
    const current = at(sentence, index);
    current.classList.add('current');
    draw(current);
    document.querySelector('.controls .prev').disabled = index === 0;
    document.querySelector('.controls .next').disabled = index === nSlides - 1;
    document.querySelectorAll('.sentence-button').forEach((b) =>
      b.classList.toggle('chosen', +b.dataset.sentence === sentence));
    try { history.replaceState(null, '', `#sentence=${sentence + 1}&slide=${index + 1}`); } catch (e) { /* opaque */ }
  };
  const fromHash = () => {
    const m = /sentence=(\\d+)&slide=(\\d+)/.exec(location.hash);
    return m ? [+m[1] - 1, +m[2] - 1] : [0, 0];
  };
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    const keys = {ArrowRight: [0, 1], PageDown: [0, 1], ArrowLeft: [0, -1], PageUp: [0, -1],
                  s: [1, 0], S: [-1, 0]};
    if (event.key === 'n' || event.key === 'N') {
      document.body.classList.toggle('show-notes');
    } else if (event.key === 'Home' || event.key === 'End') {
      show(sentence, event.key === 'Home' ? 0 : nSlides - 1);
    } else if (keys[event.key]) {
      const [ds, di] = keys[event.key];
      show((sentence + ds + nSentences) % nSentences, index + di);
    } else {
      return;
    }
    event.preventDefault();
  });
  document.querySelector('.controls .prev').addEventListener('click', () => show(sentence, index - 1));
  document.querySelector('.controls .next').addEventListener('click', () => show(sentence, index + 1));
  document.querySelector('.controls .notes-button').addEventListener('click',
    () => document.body.classList.toggle('show-notes'));
  document.querySelectorAll('.sentence-button').forEach((b) =>
    b.addEventListener('click', () => show(+b.dataset.sentence, index)));
  window.addEventListener('resize', scale);
  window.addEventListener('beforeprint', () => slides.forEach(draw));
  scale();
  show(...fromHash());
  setTimeout(drawRest, 0);
})();
"""
