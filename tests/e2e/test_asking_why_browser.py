"""Asking the model why (docs/asking-why.md) in a real browser, on the shipped en-de model, as a class would, in one
page load: score a German translation of one's own and explore that pass's attention; on the Decoding page ask why a
step's piece and not another of its top-k; click a pruned hypothesis (a grey × of the beam tree) and see where and
why it fell out; map every head, click one and open it in the explorer. AppTest covers the numbers; this covers what
only a browser does (Plotly clicks and hovers, the data grid, the page switch) and that nothing breaks on the way.
Full-page screenshots stay behind ($E2E_SCREENSHOTS)."""
from __future__ import annotations

import html
import math
import re

import pytest

from app.explorer import KIND_SHORT
from explain.head_map import BEHAVIOURS
from explain.integrated_gradients import BASELINE
from tests.e2e.test_browser import PLOT_AREA, assert_no_error, screenshot_on_failure, screenshot_whole_page, wait_idle
from tests.e2e.test_converted_browser import watch_console
from tests.e2e.waits import expect, hover_armed, rerun

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000  # en-de, beam 3, on a busy CI core
BEAM = 3
GIVEN = "Mein Bruder hat ein neues Haus in der Stadt erworben."  # the model writes "gekauft": they part at "erworben"
NUMBER = r"-?\d+\.\d+"

# A chart's traces as drawn: name, x and y (Plotly keeps typed arrays in _fullData), and its title.
TRACES = """(key) => { const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    return {title: gd.layout.title.text, yticks: gd.layout.yaxis.ticktext || null,
            traces: gd._fullData.map(t => ({name: t.name, x: t.x ? Array.from(t.x) : [], y: t.y ? Array.from(t.y) : [],
                                           customdata: t.customdata ? Array.from(t.customdata) : [],
                                           hovertext: t.hovertext ? Array.from(t.hovertext) : []}))}; }"""
# Where point ``index`` of the trace named ``name`` lies on the screen.
POINT = """([key, name, index]) => { const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const trace = gd._fullData.findIndex(t => t.name === name), point = gd.calcdata[trace][index];
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
    return [box.x + xa._offset + xa.l2p(point.x), box.y + ya._offset + ya.l2p(point.y)]; }"""


def drawn(page, key: str) -> dict:
    """The chart drawn with ``key`` (Streamlit's st-key-<key> class), once Plotly has drawn it."""
    page.locator(f".st-key-{key} .js-plotly-plot .main-svg").first.wait_for(timeout=WAIT_MS)
    return page.evaluate(TRACES, key)


def caption_with(page, text: str) -> str:
    """The one caption that contains ``text``."""
    captions = [c for c in page.locator("[data-testid=stCaptionContainer]").all_text_contents() if text in c]
    assert len(captions) == 1, f"captions with {text!r}: {captions}"
    return captions[0]


def pick_option(page, key: str, index: int) -> str:
    """Open the selectbox ``key`` and choose its option ``index``; returns the option's text. A run that ends as the
    list opens closes it again: then it is opened once more."""
    wait_idle(page)
    for _ in range(3):
        page.locator(f".st-key-{key} input").first.click()
        try:
            page.get_by_role("listbox").first.wait_for(timeout=5_000)
            break
        except Exception:  # closed by a rerun: open it again
            wait_idle(page)
    option = page.get_by_role("option").nth(index)
    text = option.text_content() or ""
    with rerun(page):
        option.click()
    return text


def grid_rows(grid) -> list[list[str]]:
    """The rows of the data grid ``grid`` (a locator) as its accessibility table holds them (Glide draws the cells on
    a canvas and writes that table into it while it has the focus): [column texts] per row shown."""
    canvas = grid.locator("canvas[data-testid=data-grid-canvas]").first
    canvas.focus()
    rows = canvas.locator("table[role=grid] tbody tr")
    rows.first.wait_for(state="attached", timeout=WAIT_MS)
    return [row.locator("td").all_text_contents() for row in rows.all()]


def score_my_translation(page) -> None:
    """(i) Translate page: type a translation, score it, read it piece by piece, explore that pass's attention."""
    box = page.locator(".st-key-forced_text input")
    box.fill(GIVEN)
    with rerun(page):
        box.press("Enter")
    with rerun(page):
        page.locator(".st-key-score_forced button").click()
    parted = page.get_by_text("Where the two part ways:").first
    parted.wait_for(timeout=WAIT_MS)
    said = re.search(rf"at step (\d+) you wrote (\S+) \(p = ({NUMBER}), rank (\d+)\); the model prefers (\S+) "
                     rf"\(p = ({NUMBER})\)", parted.locator("xpath=..").inner_text())
    assert said, parted.locator("xpath=..").inner_text()
    step, wrote, p_wrote, rank, prefers = int(said[1]), said[2], float(said[3]), int(said[4]), said[5]
    assert rank > 1 and wrote != prefers and prefers == "▁gek"
    expect(page.get_by_text(re.compile(r"^Log-probability of Mein Bruder hat ein neues Haus in der Stadt erworben\.: "
                                       rf"{NUMBER} over \d+ pieces")).first).to_be_visible()
    heatmap = drawn(page, "translate_heatmap")  # the explorer shows the pass that read the given text
    pieces = [html.unescape(t) for t in heatmap["yticks"]]
    assert wrote in pieces and "▁gek" not in pieces, pieces
    table = page.locator("xpath=//*[@data-testid='stMarkdownContainer'][starts-with(normalize-space(.), "
                         "'Log-probability of')]/following::*[@data-testid='stDataFrame'][1]")
    rows = grid_rows(table)  # step, piece, probability, rank, first choice, its probability, mark
    assert len(rows) >= step and [r[1] for r in rows] == pieces[:len(rows)], rows
    for number, row in enumerate(rows, start=1):
        assert int(row[0]) == number and 0 < float(row[2]) <= 1 and int(row[3]) >= 1, row
        assert (row[4] == "the same") == (int(row[3]) == 1), row  # the model's first choice is named where it differs
        assert float(row[2]) - 6e-5 <= float(row[5]) <= 1, row  # the first choice is at least as likely
    row = rows[step - 1]
    assert (row[1], int(row[3]), row[4], row[6]) == (wrote, rank, prefers, "← the two part ways here"), row
    assert math.isclose(float(row[2]), p_wrote, abs_tol=6e-5), row
    assert all(int(r[3]) == 1 and r[4] == "the same" and r[5] == r[2] for r in rows[:step - 1]), rows
    assert_no_error(page, "Translate: score my own translation")
    with rerun(page):
        page.locator(".st-key-explore_scored button", has_text="the model's translation").first.click()
    own = [html.unescape(t) for t in drawn(page, "translate_heatmap")["yticks"]]
    assert "▁gek" in own and wrote not in own, own


def why_this_piece(page) -> None:
    """(ii) Decoding page, step 1: why its piece and not the second alternative of its top-k."""
    alternative = pick_option(page, "decoding_why_alt", 1)
    assert "32 of them" in caption_with(page, "Cost before it runs")
    assert page.locator(".st-key-decoding_why_source").count() == 0  # nothing runs before the button
    with rerun(page):
        page.locator(".st-key-decoding_why_run button").click()
    source, prefix, cross = drawn(page, "decoding_why_source"), drawn(page, "decoding_why_prefix"), \
        drawn(page, "decoding_cross")
    other = alternative.split("  (p =")[0]
    assert source["title"] == f"Why “▁Mein” and not “{other}”: the source pieces", source["title"]
    assert cross["title"].startswith("Cross-attention of “&lt;s&gt;” over the source"), cross["title"]
    n_source = len(cross["traces"][0]["x"])
    for figure, n in ((source, n_source), (prefix, 1)):  # IG and G x I, a bar per piece
        assert [t["name"] for t in figure["traces"]] == ["integrated gradients", "gradient × input"]
        assert all(len(t["y"]) == n and all(map(math.isfinite, t["y"])) for t in figure["traces"]), figure
    said = re.search(rf"baseline = {re.escape(BASELINE)} \(f = {NUMBER} there\), 32 Gauss-Legendre steps; its "
                     rf"attributions sum to ({NUMBER}) against f\(x\) − f\(baseline\) = ({NUMBER}): completeness gap "
                     rf"([+-]\d+\.\d+)", caption_with(page, "Gauss-Legendre"))
    assert said, caption_with(page, "Gauss-Legendre")
    total, delta, gap = float(said[1]), float(said[2]), float(said[3])
    drawn_total = sum(source["traces"][0]["y"]) + sum(prefix["traces"][0]["y"])
    assert math.isclose(drawn_total, total, abs_tol=2e-3) and math.isclose(total - delta, gap, abs_tol=2e-3)
    assert_no_error(page, "Decoding: why this piece")


def why_pruned(page) -> None:
    """(iii) Click the first grey × of the beam tree (a hypothesis pruned at step 1): the step it fell out, its score
    against the ones kept, and why the piece kept after the same prefix and not it."""
    tree = drawn(page, "beam_tree")
    pruned = next(t for t in tree["traces"] if t["name"] == "pruned")
    step, piece, log_prob = pruned["customdata"][0][1], pruned["customdata"][0][2], pruned["customdata"][0][3]
    chart = page.locator(".st-key-beam_tree .js-plotly-plot").first
    chart.scroll_into_view_if_needed()
    x, y = page.evaluate(POINT, ["beam_tree", "pruned", 0])
    x, y = hover_armed(page, chart, x, y, trace="pruned")
    with rerun(page):
        page.mouse.click(x, y)
    expect(page.locator(".st-key-pruned_pick input").first).to_have_value(
        re.compile(rf"^step {step + 1}: .* → {re.escape(piece)}  \(log-prob {log_prob:.2f}\)$"), timeout=WAIT_MS)
    candidates = drawn(page, "pruned_step")
    assert candidates["title"].startswith(f"Step {step + 1}: the {2 * BEAM} continuations looked at")
    fell = re.search(rf"fell out at step {step + 1}: it ranked (\d+) of the {2 * BEAM} continuations looked at, with "
                     rf"cumulative log-prob ({NUMBER})\. The beam keeps the best {BEAM} that do not end; the last one "
                     rf"kept had ({NUMBER}), ({NUMBER}) more than this one\.", caption_with(page, "fell out at step"))
    assert fell, caption_with(page, "fell out at step")
    assert int(fell[1]) > BEAM and math.isclose(float(fell[2]), log_prob, abs_tol=1e-3)
    assert math.isclose(float(fell[3]) - float(fell[2]), float(fell[4]), abs_tol=2e-3) and float(fell[4]) > 0
    why = page.get_by_text(re.compile(rf"^Why \S+ and not {re.escape(piece)}\?")).first.locator("xpath=..")
    gap = re.search(rf"= ({NUMBER}) at this step", why.inner_text())
    assert gap, why.inner_text()
    with rerun(page):
        page.locator(".st-key-decoding_pruned_run button").click()
    drawn(page, "decoding_pruned_source")
    drawn(page, "decoding_pruned_prefix")
    f = re.search(rf"^f = log p\(\S+\) − log p\({re.escape(piece)}\) = ({NUMBER}) at this step",
                  caption_with(page, f"− log p({piece}) ="))
    assert f and math.isclose(float(f[1]), float(gap[1]), abs_tol=2e-3), (f, gap[1])  # f is exactly the tree's gap
    assert_no_error(page, "Decoding: why pruned")


def map_of_heads(page, url: str, screenshot_dir) -> None:
    """(iv) Heads page, Map of all heads: every head drawn and named by behaviour, hover and click one, its queries
    and keys, then open it in the explorer."""
    page.locator(".st-key-heads_section button").first.wait_for(timeout=WAIT_MS)
    wait_idle(page)
    with rerun(page):
        page.locator(".st-key-heads_section button", has_text="Map of all heads").first.click()
    if page.locator(".st-key-head_map_run").count():  # priced above the seconds it runs without asking
        with rerun(page):
            page.locator(".st-key-head_map_run button").click()
    heads = drawn(page, "head_map")
    assert heads["title"].startswith("All 72 heads, placed by how alike they attend"), heads["title"]
    markers = {t["name"]: t for t in heads["traces"] if t["name"] != "selected"}
    assert sorted(markers) == ["cross-attention", "decoder self-attention", "encoder self-attention"]
    assert sum(len(t["x"]) for t in markers.values()) == 72
    names = "|".join(re.escape(n) for n in BEHAVIOURS)
    counts = re.search(r"Here: (.*)\.$", caption_with(page, "Here: "))
    assert counts and sum(int(c) for c in re.findall(rf"(\d+) (?:{names})(?:,|$)", counts[1])) == 72, counts
    kinds = "|".join(KIND_SHORT.values())
    picker = page.locator(".st-key-head_map_pick input").first
    expect(picker).to_have_value(re.compile(rf"^({kinds}) · layer \d · head \d: ({names}) \(\d\.\d\d\)$"))
    drawn(page, "head_map_qk")
    chart = page.locator(".st-key-head_map .js-plotly-plot").first
    chart.scroll_into_view_if_needed()
    target = markers["encoder self-attention"]
    title = re.match(r"<b>(.*?)</b>", target["hovertext"][0])[1]  # e.g. "Encoder self · layer 1 · head 1"
    x, y = hover_armed(page, chart, *page.evaluate(POINT, ["head_map", "encoder self-attention", 0]))
    tooltip = page.locator(".hoverlayer .hovertext").first.text_content() or ""
    assert tooltip.startswith(title) and re.search(rf"({names}): \d\.\d\d \(", tooltip), tooltip
    with rerun(page):
        page.mouse.click(x, y)
    expect(picker).to_have_value(re.compile(rf"^{re.escape(title)}: ({names}) "), timeout=WAIT_MS)
    layer, head = (int(n) for n in re.findall(r"\d+", title))
    expect(page.locator(".st-key-head_map_qk .gtitle").first).to_contain_text(
        f"encoder self-attention · layer {layer} · head {head}", timeout=WAIT_MS)
    assert_no_error(page, "Heads: map of all heads")
    screenshot_whole_page(page, screenshot_dir / "why_4_head_map.png")
    with rerun(page):
        page.locator(".st-key-head_map_open button").click()
    page.wait_for_url(re.compile(rf"^{re.escape(url)}/\?(.*&)?kind=enc_self&layer={layer}&head={head}(&|$)"),
                      timeout=WAIT_MS)
    expect(page.locator(".st-key-translate_heatmap .gtitle").first).to_have_text(
        f"Encoder self-attention · layer {layer} · head {head}", timeout=WAIT_MS)


def test_score_a_translation_ask_why_and_map_every_head(browser, streamlit_server, screenshot_dir):
    url = streamlit_server.url
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    watch_console(page, errors)
    with screenshot_on_failure(page, screenshot_dir / "why_failure.png", streamlit_server):
        with rerun(page):  # the default en-de sentence, decoded at once, with beam search for the tree
            page.goto(f"{url}/?beam={BEAM}", wait_until="domcontentloaded")
        page.wait_for_selector(PLOT_AREA, timeout=WAIT_MS)
        score_my_translation(page)
        screenshot_whole_page(page, screenshot_dir / "why_1_scored.png")

        with rerun(page):
            page.locator("[data-testid=stSidebarNav] a", has_text="Decoding").first.click()
        page.locator(".st-key-decoding_why_alt input").first.wait_for(timeout=WAIT_MS)
        why_this_piece(page)
        screenshot_whole_page(page, screenshot_dir / "why_2_this_piece.png")
        why_pruned(page)
        screenshot_whole_page(page, screenshot_dir / "why_3_pruned.png")

        with rerun(page):
            page.locator("[data-testid=stSidebarNav] a", has_text="Heads and attribution").first.click()
        map_of_heads(page, url, screenshot_dir)
        assert_no_error(page, "Translate: the head opened from the map")
        assert not errors, "the browser's console says:\n" + "\n".join(errors)
