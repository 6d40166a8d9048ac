"""No text that collides, is cut or is too small, in any figure of any page or slide, measured in Chromium.

Every page (the Heads page section by section) and every slide, in normal and presenter mode, at 1280x720 (the
projector presenter mode is built for) and 1920x1080. In the page, the bounding box of every text element of every
Plotly figure (tick labels, titles, subplot titles, annotations and cell numbers, legend and colour-bar text) is
taken as drawn, turned labels turned: two that intersect by more than 1 px collide; one that sticks out of its
figure, or out of the plot area that clips it (a bar's value written beyond the bar), by more than 1 px is cut. In
presenter mode every such text is at least 18 px. The browser console shows no error on the way. Streamlit's own
labels (widget labels, buttons, links, chosen options) are checked for text their box cuts off. The slides are
walked with the arrow key in one browser session, as a lecturer does; in presenter mode each slide must stand whole on
the screen, its caption row with the sentence box included, without scrolling or overlap.

No label is dropped to make room: every token axis of up to 40 pieces draws a label for each piece (an axis a
figure marks in its layout.meta "pieces", or one of integer ticks whose range spans its pieces), every end of a
head-view line is a named token, and every node of a beam tree's best path is named on its top axis. All of it runs
on the default sentence and on a 33-piece one.

For the whole list instead of the first failure: ``pytest tests/e2e/test_text_layout.py -s`` prints every view.
"""
from __future__ import annotations

import ast
import re
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from app.lecture.slides import SLIDES
from tests.e2e.test_browser import assert_no_error

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
# The Heads page's sections, read from its source (importing a page module would run the page).
SECTIONS = ast.literal_eval(re.search(r"^SECTIONS = (\(.*?\))$", (ROOT / "app" / "views" / "heads.py").read_text(),
                                      re.M).group(1))
PAGES = ["", "decoding", "positional", "masks", "mechanics", "model", "vision"]
SIZES = [(1280, 720), (1920, 1080)]
PRESENTER_MIN_PX = 18
MAX_LABELLED = 40  # app.charts.axes.MAX_LABELLED: an axis of up to this many pieces names every one
LONG_SENTENCE = "The agreement on the European Economic Area was signed in August 1992."  # 33 output pieces (beam 4)
SENTENCES = {"default": "", "33 pieces": LONG_SENTENCE}
TOLERANCE_PX = 1
WAIT_MS = 120_000
SETTLED_MS = 400  # figures count as drawn when no text was added, moved or removed for this long
# A failed request shows in the console only as "Failed to load resource": each is judged by its response instead.
# Opened at a page's own URL (/decoding), Streamlit's front end first asks /decoding/_stcore/health and
# /decoding/_stcore/host-config whether the app lives there, and on their 404 goes on at the root: its own probe.
RESOURCE_FAILED = "Failed to load resource"
BASE_URL_PROBE = re.compile(r"/[^/?]+/_stcore/(health|host-config)$")

# Resolves once the script has finished and every figure's text has stood still for SETTLED_MS (Plotly lays out
# after the script ends, and a fragment may redraw).
SETTLED = """async ([settled, limit]) => {
  const idle = () => document.querySelector('[data-testid=stApp][data-test-script-state=notRunning]');
  const state = () => Array.from(document.querySelectorAll('.js-plotly-plot text'),
    (t) => t.textContent + '@' + Math.round(t.getBoundingClientRect().x) + ','
      + Math.round(t.getBoundingClientRect().y))
    .join('|') + '#' + document.querySelectorAll('.js-plotly-plot').length;
  const end = Date.now() + limit;
  let last = null, since = Date.now();
  while (Date.now() < end) {
    const now = idle() ? state() : null;
    if (now === null || now !== last) { last = now; since = Date.now(); }
    // A view without any figure yet may still be connecting or about to rerun: it must stand still longer.
    else if (Date.now() - since >= (document.querySelector('.js-plotly-plot') ? settled : 8 * settled)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}"""

# Runs in the page: per figure, the pairs of texts that intersect, the texts outside the figure and (with a minimum
# size) the texts smaller than it; then Streamlit's labels whose text is wider than their box.
MEASURE = """([tolerance, minPx]) => {
  const visible = (el) => {
    const style = getComputedStyle(el);
    return style.display !== 'none' && style.visibility !== 'hidden' && parseFloat(style.opacity || '1') > 0.05;
  };
  // A text's box as drawn: its own (unrotated) box through its transform to the screen, 4 corners. Tick labels
  // turned by 45 degrees have overlapping axis-aligned boxes while their glyphs stand apart.
  const corners = (t) => {
    const b = t.getBBox(), m = t.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  // Two convex quadrilaterals overlap by more than tolerance px unless some edge's normal separates them.
  const overlap = (p, q) => {
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
        const len = Math.hypot(x2 - x1, y2 - y1) || 1, nx = (y1 - y2) / len, ny = (x2 - x1) / len;
        const span = (r) => r.map(([x, y]) => x * nx + y * ny);
        const a = span(p), b = span(q);
        if (Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)) <= tolerance) {
          return false;
        }
      }
    }
    return true;
  };
  // The region a clip-path leaves visible around a text, on the screen: Plotly clips a trace's text (a bar's value
  // placed outside it) at the plot area, so a text can stand inside its figure and still be cut off at the axis.
  const clipRegion = (t) => {
    const holder = t.parentElement && t.parentElement.closest('[clip-path]');
    const id = holder && /url[(]["']?#([^"')]+)/.exec(holder.getAttribute('clip-path'));
    const rect = id && document.getElementById(id[1]) && document.getElementById(id[1]).querySelector('rect');
    if (!rect) return null;
    const m = holder.getScreenCTM(), at = (name) => parseFloat(rect.getAttribute(name)) || 0;
    const xs = [at('x'), at('x') + at('width')].map((x) => m.a * x + m.e);
    const ys = [at('y'), at('y') + at('height')].map((y) => m.d * y + m.f);
    return {left: Math.min(...xs), right: Math.max(...xs), top: Math.min(...ys), bottom: Math.max(...ys)};
  };
  const outside = (box, region) => {
    const xs = box.map((c) => c[0]), ys = box.map((c) => c[1]);
    return Math.min(...xs) < region.left - tolerance || Math.max(...xs) > region.right + tolerance ||
      Math.min(...ys) < region.top - tolerance || Math.max(...ys) > region.bottom + tolerance;
  };
  const figures = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, index) => {
    const frame = plot.getBoundingClientRect();
    const title = (plot.querySelector('.gtitle') || {}).textContent || `figure ${index + 1}`;
    const texts = Array.from(plot.querySelectorAll('.main-svg text, .infolayer text'))
      .filter((t) => !t.closest('.hoverlayer') && t.textContent.trim() && visible(t))
      .map((t) => ({text: t.textContent.trim().slice(0, 40), box: corners(t), clip: clipRegion(t),
                    px: parseFloat(getComputedStyle(t).fontSize)}))
      .filter((t) => t.box.some(([x, y], i) => i > 0 && (x !== t.box[0][0] || y !== t.box[0][1])));
    const overlaps = [], cut = [], small = [];
    for (let i = 0; i < texts.length; i++) {
      if (outside(texts[i].box, frame)) cut.push([texts[i].text, 'sticks out of the figure']);
      else if (texts[i].clip && outside(texts[i].box, texts[i].clip)) cut.push([texts[i].text, 'is cut at the axes']);
      if (minPx && texts[i].px < minPx - 0.01) small.push(`${texts[i].text} (${texts[i].px} px)`);
      for (let j = i + 1; j < texts.length; j++) {
        if (overlap(texts[i].box, texts[j].box)) overlaps.push([texts[i].text, texts[j].text]);
      }
    }
    figures.push({title: title.slice(0, 60), texts: texts.length, overlaps, cut, small});
  });
  const labels = [];
  const main = document.querySelector('[data-testid=stMain]') || document.body;
  // Streamlit cuts a label that does not fit with an ellipsis or by hiding what overflows one line.
  main.querySelectorAll('p, span, div, label').forEach((el) => {
    if (el.closest('.js-plotly-plot, [data-testid=stDataFrame], pre, .katex-display, .katex') || !el.offsetWidth
        || !visible(el)) return;
    const style = getComputedStyle(el);
    const cuts = style.textOverflow === 'ellipsis' || (style.overflow === 'hidden' && style.whiteSpace === 'nowrap');
    if (cuts && el.textContent.trim() && el.scrollWidth > el.clientWidth + tolerance) {
      labels.push(el.textContent.trim().slice(0, 60));
    }
  });
  // A row of buttons (segmented control, pills) too wide for its column scrolls: its first or last button is cut.
  main.querySelectorAll('[data-testid=stButtonGroup], [data-testid=stButtonGroup] *').forEach((el) => {
    const style = getComputedStyle(el);
    if (visible(el) && el.offsetWidth && style.overflowX !== 'visible' && el.scrollWidth > el.clientWidth + tolerance) {
      labels.push(`a row of buttons scrolled: ${el.textContent.trim().slice(0, 60)}`);
    }
  });
  return {figures, labels};
}"""

# Runs in the page: per figure, the pieces it draws without a label. A token axis (one the figure marks in
# layout.meta.pieces, or an axis of integer array ticks whose range spans -0.5 to n - 0.5) of up to maxLabelled
# pieces must draw n non-empty tick labels; a head view's line must end at named tokens; a beam tree's best path
# must be named, node by node, on its top axis.
DROPPED = r"""(maxLabelled) => {
  const found = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, index) => {
    const title = ((plot.querySelector('.gtitle') || {}).textContent || `figure ${index + 1}`).slice(0, 60);
    const layout = plot._fullLayout || {};
    const marked = (plot.layout && plot.layout.meta && plot.layout.meta.pieces) || {};
    const axes = {...marked};
    for (const name of Object.keys(layout).filter((k) => /^[xy]axis\d*$/.test(k))) {
      const axis = layout[name];
      if (name in axes || axis.tickmode !== 'array' || !axis.showticklabels || !axis.visible) continue;
      const [a, b] = (axis.range || []).map(Number);
      const vals = Array.from(axis.tickvals || []);
      const n = Math.round(Math.abs(b - a));
      if (vals.length && vals.every((v) => Number.isInteger(Number(v))) && Math.abs(Math.min(a, b) + 0.5) < 1e-6
          && vals.length < n) axes[name] = n;
    }
    for (const [name, n] of Object.entries(axes)) {
      if (n > maxLabelled || !layout[name] || layout[name].showticklabels === false) continue;
      const id = name.replace('axis', '');
      const drawn = Array.from(plot.querySelectorAll(`g.${id}tick text, text.${id}tick`))
        .filter((t) => t.textContent.trim()).length;
      if (drawn < n) found.push(`${title}: ${name} names ${drawn} of its ${n} pieces`);
    }
    const data = plot.data || [];
    const tokens = Object.fromEntries(data.filter((t) => /^(query|key) tokens$/.test(t.name))
      .map((t) => [t.name.split(' ')[0], Array.from(t.text || [])]));
    if (tokens.query && tokens.key) {
      const unnamed = new Set();
      data.filter((t) => t.mode === 'lines' && t.visible === true && t.y && t.y.length > 1).forEach((t) => {
        const y = Array.from(t.y);
        for (let i = 0; i + 1 < y.length; i += 3) {
          if (!String(tokens.query[y[i]] ?? '').trim()) unnamed.add(`query ${y[i]}`);
          if (!String(tokens.key[y[i + 1]] ?? '').trim()) unnamed.add(`key ${y[i + 1]}`);
        }
      });
      if (unnamed.size) found.push(`${title}: head-view lines end at unnamed tokens: ${[...unnamed].join(', ')}`);
    }
    const best = data.find((t) => t.name === 'best path');
    if (best) {
      const top = layout.xaxis2 || {};
      const named = new Set(Array.from(top.tickvals || []).filter((v, i) =>
        String((top.ticktext || [])[i] ?? '').trim()).map(Number));
      const missing = Array.from(best.x || []).map(Number).filter((x) => !named.has(x));
      if (!named.has(0)) missing.unshift(0);
      if (missing.length) found.push(`${title}: best-path nodes at steps ${missing.join(', ')} are unnamed`);
    }
  });
  return found;
}"""


# Runs in the page (a slide): whether the slide stands whole on the screen, as a projector shows it without scrolling:
# the page does not scroll, nothing drawn (title row, figure, lines, the lecturer's fold, the caption row with the
# sentence box) ends below the window, and the caption row starts under the figure and the lines.
SLIDE_FITS = """(tolerance) => {
  const main = document.querySelector('[data-testid=stMain]');
  const height = window.innerHeight;
  // a closed fold keeps its content laid out but not drawn (Chromium's details): it is not on the screen
  const drawn = (el) => el.offsetWidth > 0 && el.offsetHeight > 0 && !el.closest('details:not([open])')
    && (!el.checkVisibility || el.checkVisibility({visibilityProperty: true}));
  const past = [];
  main.querySelectorAll('[data-testid=stElementContainer], [data-testid=stExpander], [data-testid=stHorizontalBlock]')
    .forEach((el) => {
      const box = el.getBoundingClientRect();
      if (drawn(el) && box.bottom > height + tolerance) {
        const what = (el.innerText || el.getAttribute('data-testid')).trim().slice(0, 50);
        past.push(`${what} ends at ${Math.round(box.bottom)}`);
      }
    });
  const caption = Array.from(main.querySelectorAll('[data-testid=stCaptionContainer]'))
    .find((c) => c.textContent.startsWith('Current sentence:'));
  const captionRow = caption && caption.closest('[data-testid=stHorizontalBlock]');
  const figure = main.querySelector('.st-key-lecture_figure');
  const slideRow = figure && figure.closest('[data-testid=stHorizontalBlock]');
  const overlap = captionRow && slideRow && captionRow.getBoundingClientRect().top
    < slideRow.getBoundingClientRect().bottom - tolerance;
  return {scrolls: main.scrollHeight > main.clientHeight + tolerance, past, caption: Boolean(captionRow),
          overlap: Boolean(overlap)};
}"""


def slide_fit_problems(page, view: str) -> list[str]:
    """One line per way the slide on screen does not stand whole in the window (presenter mode's promise)."""
    found = page.evaluate(SLIDE_FITS, TOLERANCE_PX)
    lines = [f"{view}: {what} runs past the bottom of the screen" for what in found["past"]]
    if found["scrolls"]:
        lines.append(f"{view}: the slide scrolls")
    if not found["caption"]:
        lines.append(f"{view}: no caption row names the sentence")
    if found["overlap"]:
        lines.append(f"{view}: the caption row overlaps the slide above it")
    return lines


def settle(page) -> None:
    assert page.evaluate(SETTLED, [SETTLED_MS, WAIT_MS]), "the page did not finish drawing"


def problems_of(page, view: str, min_px: int) -> list[str]:
    """One line per text that collides, is cut or is too small in the current view (empty if none)."""
    found = page.evaluate(MEASURE, [TOLERANCE_PX, min_px])
    lines = []
    for fig in found["figures"]:
        lines += [f"{view}: {fig['title']!r}: {a!r} overlaps {b!r}" for a, b in fig["overlaps"]]
        lines += [f"{view}: {fig['title']!r}: {text!r} {how}" for text, how in fig["cut"]]
        lines += [f"{view}: {fig['title']!r}: {text} is under {min_px} px" for text in fig["small"]]
    lines += [f"{view}: the label {text!r} is cut by its box" for text in found["labels"]]
    lines += [f"{view}: {text}" for text in page.evaluate(DROPPED, MAX_LABELLED)]
    figures = len(found["figures"])
    print(f"{view:40s} figures {figures:2d}  problems {len(lines):3d}", flush=True)
    return lines


def page_views() -> list[tuple[str, str, str]]:
    """(name, URL path, Heads section to pick or "") of every page view."""
    return [(page or "translate", page, "") for page in PAGES] + [(f"heads: {s}", "heads", s) for s in SECTIONS]


def wait_for_slide(page, number: int) -> None:
    page.wait_for_function("(n) => /Slide (\\d+) \\//.exec(document.body.innerText)?.[1] === String(n)", arg=number,
                           timeout=WAIT_MS)
    settle(page)


@pytest.mark.parametrize("sentence", list(SENTENCES))
@pytest.mark.parametrize("mode", ["normal", "presenter"])
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_no_text_collides_is_cut_or_too_small_on_any_page_or_slide(browser, streamlit_server, size, mode, sentence):
    width, height = size
    query = "&".join(part for part in ("presenter=1" if mode == "presenter" else "",
                                       urlencode({"text": SENTENCES[sentence]}) if SENTENCES[sentence] else "")
                     if part)
    min_px = PRESENTER_MIN_PX if mode == "presenter" else 0
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(WAIT_MS)
    problems, began = [], time.monotonic()
    errors: list[str] = []  # the browser console's errors, on any page (an icon fetched from the internet was one)
    page.on("console", lambda message: errors.append(message.text[:200])
            if message.type == "error" and not message.text.startswith(RESOURCE_FAILED) else None)
    page.on("pageerror", lambda error: errors.append(str(error)[:200]))
    page.on("response", lambda response: errors.append(f"{response.status} {response.url}")
            if response.status >= 400 and not BASE_URL_PROBE.search(response.url) else None)
    try:
        for name, path, section in page_views():
            page.goto(f"{streamlit_server.url}/{path}{'?' + query if query else ''}", wait_until="domcontentloaded")
            settle(page)
            if section:
                page.locator("[data-testid=stButtonGroup] button", has_text=section).first.click()
                settle(page)
            assert_no_error(page, name)
            problems += problems_of(page, f"{width}x{height} {mode} {name}", min_px)
        page.goto(f"{streamlit_server.url}/lecture?slide=1{'&' + query if query else ''}",
                  wait_until="domcontentloaded")
        for number in range(1, len(SLIDES) + 1):
            if number > 1:
                page.keyboard.press("ArrowRight")  # one session for the whole lecture, as a clicker walks it
            wait_for_slide(page, number)
            assert_no_error(page, f"slide {number}")
            problems += problems_of(page, f"{width}x{height} {mode} slide {number}", min_px)
            if mode == "presenter":  # on a projector the whole slide, caption row and sentence box too, fits
                problems += slide_fit_problems(page, f"{width}x{height} {mode} slide {number}")
    finally:
        page.close()
    print(f"{width}x{height} {mode}: {len(problems)} problems in {time.monotonic() - began:.0f} s")
    assert not problems, "\n".join(problems)
    assert not errors, "errors in the browser console:\n" + "\n".join(errors)
