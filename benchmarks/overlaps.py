"""Text that collides or is cut, in every Plotly figure of every page and slide, measured in Chromium.

    python benchmarks/overlaps.py                        # every page and slide, normal and presenter, 1280x720
    python benchmarks/overlaps.py --sizes 1280x720 1920x1080 --pages lecture

It starts its own `streamlit run` on 127.0.0.1, opens each view (the pages with the default sentence, each of the
Heads page's sections, every slide of the lecture) in Debian's Chromium, waits until it is drawn, and measures in
the page the bounding box of every text element of every figure: tick labels, titles, subplot titles,
annotations and cell numbers, legend and colour-bar text. Two texts overlap when their boxes as drawn (turned
labels turned) intersect by more than 1 px; a text is cut when its box sticks out of its figure by more than 1 px. It prints one line per
view with the counts and the first offending pairs, and exits 1 if any view has one: the list to work through
before this becomes a test (issue 30).
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import start_server, stop_server  # noqa: E402 (the sibling benchmark, run as a script)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from app.lecture import SLIDES  # noqa: E402

# The Heads page's sections, read from its source (importing a page module would run the page).
SECTIONS = ast.literal_eval(re.search(r"^SECTIONS = (\(.*?\))$", (ROOT / "app" / "views" / "heads.py").read_text(),
                                      re.M).group(1))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
PAGES = ["", "decoding", "positional", "masks", "mechanics", "model", "vision"]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"

# Runs in the page: per figure, the visible text boxes, the pairs that intersect and the ones outside the figure.
MEASURE = """(tolerance) => {
  const visible = (el) => {
    const style = getComputedStyle(el);
    return style.display !== 'none' && style.visibility !== 'hidden' && parseFloat(style.opacity || '1') > 0.05;
  };
  // A text's box as drawn: its own (unrotated) box through its transform to the screen, 4 corners. Tick labels
  // turned by 45 degrees have overlapping axis-aligned boxes while their glyphs stand apart: the turned box is
  // what matters.
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
  const results = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, index) => {
    const frame = plot.getBoundingClientRect();
    const title = (plot.querySelector('.gtitle') || {}).textContent || `figure ${index + 1}`;
    const texts = Array.from(plot.querySelectorAll('.main-svg text, .infolayer text'))
      .filter((t) => !t.closest('.hoverlayer') && t.textContent.trim() && visible(t))
      .map((t) => ({text: t.textContent.trim().slice(0, 40), box: corners(t)}))
      .filter((t) => t.box.some(([x, y], i) => i > 0 && (x !== t.box[0][0] || y !== t.box[0][1])));
    const overlaps = [], cut = [];
    for (let i = 0; i < texts.length; i++) {
      const xs = texts[i].box.map((c) => c[0]), ys = texts[i].box.map((c) => c[1]);
      if (Math.min(...xs) < frame.left - tolerance || Math.max(...xs) > frame.right + tolerance ||
          Math.min(...ys) < frame.top - tolerance || Math.max(...ys) > frame.bottom + tolerance) {
        cut.push(texts[i].text);
      }
      for (let j = i + 1; j < texts.length; j++) {
        if (overlap(texts[i].box, texts[j].box)) overlaps.push([texts[i].text, texts[j].text]);
      }
    }
    results.push({title: title.slice(0, 60), texts: texts.length, overlaps, cut});
  });
  return results;
}"""


def views(pages: list[str]) -> list[tuple[str, str, str]]:
    """(name, url path with query, Heads page section to click or "") of every view to measure."""
    found = []
    for page in pages:
        if page == "heads":
            found += [(f"heads: {section}", "heads", section) for section in SECTIONS]
        elif page == "lecture":
            found += [(f"slide {n}", f"lecture?slide={n}", "") for n in range(1, len(SLIDES) + 1)]
        else:
            found.append((page or "translate", page, ""))
    return found


def wait_drawn(page) -> None:
    page.wait_for_timeout(800)
    page.wait_for_selector(IDLE, timeout=180_000)
    page.wait_for_timeout(1500)  # Plotly lays out after the script has finished


def measure(page, url: str, section: str) -> list[dict]:
    page.goto(url, wait_until="domcontentloaded")
    wait_drawn(page)
    if section:
        page.locator("[data-testid=stButtonGroup] button", has_text=section).first.click()
        wait_drawn(page)
    return page.evaluate(MEASURE, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["1280x720"], help="viewport sizes, WIDTHxHEIGHT")
    parser.add_argument("--pages", nargs="+", default=[*PAGES, "heads", "lecture"])
    parser.add_argument("--modes", nargs="+", default=["normal", "presenter"], choices=["normal", "presenter"])
    args = parser.parse_args()
    process, url = start_server(Path(tempfile.mkdtemp(prefix="overlaps_")) / "server.log")
    bad = 0
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for size in args.sizes:
                width, height = (int(v) for v in size.split("x"))
                page = browser.new_page(viewport={"width": width, "height": height})
                for mode in args.modes:
                    for name, path, section in views(args.pages):
                        sep = "&" if "?" in path else "?"
                        query = f"{sep}presenter=1" if mode == "presenter" else ""
                        began = time.monotonic()
                        figures = measure(page, f"{url}/{path}{query}", section)
                        overlaps = sum(len(f["overlaps"]) for f in figures)
                        cut = sum(len(f["cut"]) for f in figures)
                        bad += bool(overlaps or cut)
                        print(f"{size} {mode:9s} {name:34s} figures {len(figures):2d}  overlapping pairs "
                              f"{overlaps:4d}  cut {cut:3d}  ({time.monotonic() - began:.1f} s)", flush=True)
                        for fig in figures:
                            for a, b in fig["overlaps"][:3]:
                                print(f"      {fig['title']!r}: {a!r} overlaps {b!r}")
                            for text in fig["cut"][:3]:
                                print(f"      {fig['title']!r}: {text!r} sticks out of the figure")
                page.close()
            browser.close()
    finally:
        stop_server(process)
    print(f"\n{bad} views with overlapping or cut text")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
