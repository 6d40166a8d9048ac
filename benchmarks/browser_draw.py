"""Draw time of the attention explorer's figures in a real Chromium, at about 20, 200 and 500 source pieces.

    python benchmarks/browser_draw.py [--tokens 20 200 500] [--repeats 5] [--kind enc_self] [--presenter]
                                      [--url URL] [--profile DIR]

It starts its own `streamlit run streamlit_app.py` on 127.0.0.1 (or uses --url), opens Debian's Chromium
(/usr/bin/chromium, through Playwright) at a projector's 1280x720, and for each length opens the Translate page
with a link that decodes English prose of exactly that many source pieces (</s> included; consecutive sentences
of data/en-de.tsv.gz) on the shipped en-de model. The explorer shows --kind: enc_self by default, whose maps are
pieces x pieces whatever the output length (the figures of benchmarks/figures.py at the same n). After one
unmeasured pass over the three views, --repeats rounds of six timed actions: open the Head view, Model view,
Heatmap by clicking the View control, and in each one click the next head (1..8, the layer moving on when the
heads wrap, so every figure is new to the browser); then the head view with all 8 heads ("mean") once per layer.

What is timed, all on the page's clock (performance.now()), from the click event of the control to:
  * chart msg: the WebSocket message carrying the new figure arrives (server rerun of the explorer fragment,
    figure built and serialised, transfer on loopback);
  * drawn: the chart's last `plotly_afterplot` (Plotly finished drawing, auto-margin redraws included), after
    which the page stayed idle (script not running, no message, no draw) for --quiet-ms;
  * painted: the first task after the next animation frame once drawn (the browser has laid out and painted).
Printed per length and view: open s / switch s = painted - click (what a person waits), split into server (click ->
message), browser (message -> drawn: protobuf, React, Plotly) and paint, and "draws", the afterplots per action
(Streamlit 1.67 draws every new chart twice). --profile DIR saves the page's CPU profile of each length (open it
in Chromium's DevTools) to see which Plotly or Streamlit functions the browser time goes to. Hooks (an init
script): every Plotly graph div's `emit` is wrapped when Plotly's Events.init registers its passive wheel listener
(that happens before the first draw), and every
WebSocket message is logged with its size. Payload = the figure's JSON in the Streamlit message (len(spec), the
same measure as figures.py's len(fig.to_json())), read by Playwright from the WebSocket frames. A figure the
browser already holds arrives as a cached reference (Streamlit's message cache): such samples are counted but
left out of the medians.

Targets (issue 16): at 200 pieces the model view's payload <= 3 MB and its draw <= 1.5 s; at 500 every view draws
and a head switch takes <= 1 s (every view). Medians; the machine's load during each length is printed (CPU
busy from /proc/stat, load average, our server's CPU). Exit status 1 when a target is missed.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import Page, sync_playwright
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from load import cpu_seconds, start_server, stop_server

from model.tokenization.joint import Tokenizer
from model.tokenization.pieces import clean_text

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]  # as tests/e2e/conftest.py
VIEWPORT = {"width": 1280, "height": 720}
VIEWS = {"Heatmap": "translate_heatmap", "Head view": "translate_head_view", "Model view": "translate_model_view"}
ALL_HEADS = "Head view, 8 heads"  # the head view at "mean": every head's lines at once
ROUND = ("Head view", "Model view", "Heatmap")  # each is opened from the one before
MB = 1e6
DRAW_TARGET_S, DRAW_TARGET_TOKENS = 1.5, 200
PAYLOAD_TARGET_MB = 3.0
SWITCH_TARGET_S, SWITCH_TARGET_TOKENS = 1.0, 500
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"

# Runs in the page before Streamlit: logs every Plotly afterplot (with the chart's st-key, title and frame), every
# WebSocket message and every click, with performance.now().
HOOKS = """(() => {
  if (window.__drawBench) return;
  const log = window.__drawBench = {draws: [], messages: [], clicks: []};
  const now = () => performance.now();
  const keyOf = (el) => {
    const box = el.closest('[class*="st-key-"]');
    const name = box ? Array.from(box.classList).find((c) => c.startsWith('st-key-')) : null;
    return name ? name.slice(7) : '';
  };
  const signature = (gd) => {
    const layout = gd.layout || {}, title = layout.title || {};
    const frames = (layout.shapes || []).map((s) => s.xref).join(',');
    return `${typeof title === 'string' ? title : title.text || ''}|${frames}|${(gd.data || []).length}`;
  };
  const hook = (gd) => {  // Plotly's Events.init defines gd.emit, then adds a passive wheel listener
    if (typeof gd.emit !== 'function' || gd.emit.__drawBench) return;
    const emit = gd.emit;
    const wrapped = function (event) {
      if (event === 'plotly_afterplot') {
        const draw = {key: keyOf(gd), at: now(), painted: null, sig: signature(gd)};
        log.draws.push(draw);
        requestAnimationFrame(() => setTimeout(() => { draw.painted = now(); }, 0));
      }
      return emit.apply(this, arguments);
    };
    wrapped.__drawBench = true;
    gd.emit = wrapped;
  };
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, listener, options) {
    if (type === 'wheel' && this instanceof Element) hook(this);
    return add.call(this, type, listener, options);
  };
  const NativeWebSocket = window.WebSocket;
  function LoggedWebSocket(...args) {
    const ws = new NativeWebSocket(...args);
    add.call(ws, 'message', (e) => {
      const d = e.data;
      log.messages.push({at: now(), bytes: d.byteLength ?? d.size ?? d.length});
    });
    return ws;
  }
  LoggedWebSocket.prototype = NativeWebSocket.prototype;
  for (const name of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) LoggedWebSocket[name] = NativeWebSocket[name];
  window.WebSocket = LoggedWebSocket;
  add.call(window, 'click', () => log.clicks.push(now()), true);
})();"""

# True once the action that began at these log lengths is drawn and the page has settled.
SETTLED = """([d0, m0, c0, key, before, quietMs]) => {
  const log = window.__drawBench;
  if (log.clicks.length <= c0) return false;
  const draws = log.draws.slice(d0);
  const first = draws.findIndex((d) => d.key === key && d.sig !== before);
  if (first < 0) return false;
  const mine = draws.slice(first).filter((d) => d.key === key);
  if (mine[mine.length - 1].painted === null || !document.querySelector('%s')) return false;
  const message = log.messages.length > m0 ? log.messages[log.messages.length - 1].at : 0;
  const last = Math.max(draws[draws.length - 1].at, message);
  return performance.now() - last >= quietMs;
}""" % IDLE  # noqa: UP031 (JavaScript: with format() or an f-string every brace above would be doubled)


@dataclass
class Frame:
    """One WebSocket message as Playwright saw it: its size and, if it carries a chart, the chart's key and JSON."""

    bytes: int
    chart_key: str = ""
    spec_bytes: int = 0
    cached: bool = False  # a reference to a message the browser already holds


@dataclass
class Sample:
    tokens: int
    view: str
    action: str  # "open" (the View control) or "switch" (the Head or Layer control)
    label: str
    total_s: float = float("nan")  # click -> painted
    server_s: float = float("nan")  # click -> the chart's message arrived
    browser_s: float = float("nan")  # message -> drawn (decode, React, Plotly)
    paint_s: float = float("nan")  # drawn -> painted
    spec_bytes: int = 0
    cached: bool = False
    draws: int = 0  # afterplot events of the chart for this action
    error: str | None = None


@dataclass
class Wire:
    """Every frame the server sent, in order, decoded enough to find the charts (full or by cached reference)."""

    frames: list[Frame] = field(default_factory=list)
    by_hash: dict[str, tuple[str, int]] = field(default_factory=dict)

    def received(self, payload: bytes | str) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode()
        msg = ForwardMsg()
        try:
            msg.ParseFromString(data)
        except Exception:  # not a ForwardMsg: still a message the page logs, so keep its size
            self.frames.append(Frame(len(data)))
            return
        frame = Frame(len(data))
        if msg.WhichOneof("type") == "delta" and msg.delta.new_element.WhichOneof("type") == "plotly_chart":
            chart = msg.delta.new_element.plotly_chart
            frame.chart_key, frame.spec_bytes = chart.id.rsplit("-", 1)[-1], len(chart.spec)
            self.by_hash[msg.hash] = (frame.chart_key, frame.spec_bytes)
        elif msg.WhichOneof("type") == "ref_hash" and msg.ref_hash in self.by_hash:
            frame.chart_key, frame.spec_bytes = self.by_hash[msg.ref_hash]
            frame.cached = True
        self.frames.append(frame)


# --- the input --------------------------------------------------------------------------------------------

def prose(pieces: int, tokenizer: Tokenizer) -> str:
    """English text of exactly ``pieces`` source pieces (</s> included) where the words allow: consecutive corpus
    sentences of 5-20 words, cut after the last word that fits, then " the" / "." to fill a gap of one or two."""
    with gzip.open(ROOT / "data" / "en-de.tsv.gz", "rt", encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t")
        sentences = [r["en"].strip() for r in rows if 5 <= len(r["en"].split()) <= 20 and '"' not in r["en"]]
    words: list[str] = []
    for sentence in sentences[:: max(1, len(sentences) // 2000)]:  # spread over the corpus, deterministic
        words += sentence.split()
        if n_pieces(" ".join(words), tokenizer) > pieces:
            break
    low, high = 1, len(words)  # the most words that fit
    while low < high:
        mid = (low + high + 1) // 2
        if n_pieces(" ".join(words[:mid]), tokenizer) <= pieces:
            low = mid
        else:
            high = mid - 1
    text = " ".join(words[:low])
    for filler in (" the", ".", " the", "."):
        if n_pieces(text, tokenizer) < pieces and n_pieces(text + filler, tokenizer) <= pieces:
            text += filler
    return text


def n_pieces(text: str, tokenizer: Tokenizer) -> int:
    return len(tokenizer.encode(clean_text(text))) + 1


# --- the machine ------------------------------------------------------------------------------------------

def cpu_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class Load:
    """The machine's load over a stretch of the run: cores busy (of os.cpu_count()), our server's share."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.start = cpu_busy()
        self.server_start = cpu_seconds(server_pid) if server_pid else 0.0
        self.wall = time.monotonic()

    def report(self) -> str:
        busy, total = cpu_busy()
        cores = os.cpu_count() or 1
        share = (busy - self.start[0]) / max(1, total - self.start[1]) * cores
        wall = time.monotonic() - self.wall
        server = (cpu_seconds(self.server_pid) - self.server_start) / wall if self.server_pid else float("nan")
        load1 = Path("/proc/loadavg").read_text().split()[0]
        return (f"{share:.2f} of {cores} cores busy over {wall:.0f} s (all processes), our server {server:.2f} cores, "
                f"load average {load1}")


# --- driving the page -------------------------------------------------------------------------------------

def log_lengths(page: Page) -> tuple[int, int, int]:
    return tuple(page.evaluate("() => [__drawBench.draws.length, __drawBench.messages.length, "
                               "__drawBench.clicks.length]"))


def current_signature(page: Page, key: str) -> str | None:
    """The signature of the chart's last draw (None if it has none yet): a switch waits for a different one."""
    return page.evaluate("(key) => { const d = __drawBench.draws.filter((d) => d.key === key); "
                         "return d.length ? d[d.length - 1].sig : null; }", key)


def control(page: Page, widget_key: str, text: str):
    """The option ``text`` of the segmented control with session key ``widget_key``."""
    return page.locator(f".st-key-{widget_key}").get_by_role("radio", name=text, exact=True)


def act(page: Page, wire: Wire, sample: Sample, button, chart_key: str, args: argparse.Namespace) -> Sample:
    """Click ``button`` and time the chart ``chart_key`` until it is drawn with a new figure and the page settled."""
    before = current_signature(page, chart_key) if sample.action == "switch" else None
    d0, m0, c0 = log_lengths(page)
    f0 = len(wire.frames)
    button.click()
    try:
        page.wait_for_function(SETTLED, arg=[d0, m0, c0, chart_key, before, args.quiet_ms],
                               timeout=args.timeout * 1000, polling=50)
    except Exception:
        sample.error = f"not drawn within {args.timeout:.0f} s"
        return sample
    if page.locator("[data-testid=stException]").count():
        sample.error = "an exception on the page"
    log = page.evaluate("([d0, m0, c0]) => ({draws: __drawBench.draws.slice(d0), "
                        "messages: __drawBench.messages.slice(m0), click: __drawBench.clicks[c0]})", [d0, m0, c0])
    draws = log["draws"]
    first = next(i for i, d in enumerate(draws) if d["key"] == chart_key and d["sig"] != before)
    mine = [d for d in draws[first:] if d["key"] == chart_key]
    sample.draws = len(mine)
    sample.total_s = (mine[-1]["painted"] - log["click"]) / 1000
    sample.paint_s = (mine[-1]["painted"] - mine[-1]["at"]) / 1000
    arrived = chart_message_time(log["messages"], wire.frames[f0:], chart_key)
    if arrived is not None:
        at, frame = arrived
        sample.server_s = (at - log["click"]) / 1000
        sample.browser_s = (mine[-1]["at"] - at) / 1000
        sample.spec_bytes, sample.cached = frame.spec_bytes, frame.cached
    return sample


def chart_message_time(messages: list[dict], frames: list[Frame], chart_key: str) -> tuple[float, Frame] | None:
    """When the page received the (last) message carrying chart_key, matching the page's log of message sizes to
    the frames Playwright decoded (the same stream, in order; a heartbeat may fall between the two snapshots)."""
    page_sizes = [m["bytes"] for m in messages]
    for shift in (0, 1, -1, 2, -2):
        pairs = [(messages[i], frames[i + shift]) for i in range(len(messages)) if 0 <= i + shift < len(frames)]
        if pairs and all(m["bytes"] == f.bytes for m, f in pairs):
            found = [(m["at"], f) for m, f in pairs if f.chart_key == chart_key]
            return found[-1] if found else None
    print(f"    (could not match the page's messages {page_sizes[:8]} to the frames)", flush=True)
    return None


def open_translation(page: Page, url: str, text: str, args: argparse.Namespace) -> float:
    """Open the Translate page by a link that decodes ``text`` at once; seconds until its heatmap is painted."""
    params = {"text": text, "kind": args.kind, "head": "1"}
    if args.presenter:
        params["presenter"] = "1"
    page.goto(f"{url}/?{urlencode(params)}", wait_until="domcontentloaded")
    page.wait_for_function("() => __drawBench.draws.some((d) => d.key === 'translate_heatmap' && d.painted)",
                           timeout=args.timeout * 1000, polling=100)
    page.wait_for_selector(IDLE, timeout=args.timeout * 1000)
    return page.evaluate("() => __drawBench.draws.find((d) => d.key === 'translate_heatmap').painted") / 1000


def measure_length(page: Page, wire: Wire, url: str, tokens: int, text: str, args: argparse.Namespace,
                   n_layers: int, n_heads: int) -> tuple[list[Sample], float]:
    """Every timed action at one input length (see the module docstring for the order)."""
    first_s = open_translation(page, url, text, args)
    samples: list[Sample] = []
    view, layer, head = "Heatmap", 1, 1

    def click(sample: Sample, widget: str, option: str, timed: bool = True) -> None:
        """Click ``option`` of ``widget`` and wait for the current view's chart; keep the sample if timed."""
        act(page, wire, sample, control(page, widget, option), VIEWS["Head view" if sample.view == ALL_HEADS
                                                                     else sample.view], args)
        if sample.error:
            print(f"    {tokens} pieces, {sample.view}, {sample.label}: {sample.error}", flush=True)
        if timed or sample.error:
            samples.append(sample)

    def next_head(timed: bool) -> None:
        nonlocal layer, head
        if head == n_heads:  # wrap to the next layer, so that the coming figures are new to the browser
            layer = layer % n_layers + 1
            click(Sample(tokens, view, "switch", f"L{layer}"), "layer", str(layer), timed=False)
        head = head % n_heads + 1
        click(Sample(tokens, view, "switch", f"L{layer} H{head}"), "head", str(head), timed)

    for name in ROUND:  # unmeasured: every view drawn once (Plotly's first trace of each type)
        view = name
        click(Sample(tokens, name, "open", "warm-up"), "translate_view", name, timed=False)
    next_head(timed=False)
    for _ in range(args.repeats):
        for name in ROUND:
            view = name
            click(Sample(tokens, name, "open", f"L{layer} H{head}"), "translate_view", name)
            next_head(timed=True)
    view = "Head view"
    click(Sample(tokens, view, "open", f"L{layer} H{head}"), "translate_view", view, timed=False)
    click(Sample(tokens, ALL_HEADS, "switch", f"L{layer} mean"), "head", "mean")
    for other in [n for n in range(1, n_layers + 1) if n != layer]:
        click(Sample(tokens, ALL_HEADS, "switch", f"L{other} mean"), "layer", str(other))
    return samples, first_s


# --- the report -------------------------------------------------------------------------------------------

def median(values: list[float]) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def fresh(samples: list[Sample], view: str, action: str) -> list[Sample]:
    return [s for s in samples if s.view == view and s.action == action and not s.error and not s.cached]


def report(samples: list[Sample], lengths: dict[int, int]) -> int:
    """Print the table and the verdicts; the number of missed targets."""
    print(f"\n{'pieces':>6s} {'view':18s} {'payload MB':>10s} {'open s':>7s} {'server':>7s} {'browser':>7s} "
          f"{'paint':>6s} {'switch s':>8s} {'server':>7s} {'browser':>7s} {'n':>5s} {'draws':>5s} {'failed':>6s}")
    for tokens in lengths:
        at = [s for s in samples if s.tokens == tokens]
        for view in (*VIEWS, ALL_HEADS):
            opened, switched = fresh(at, view, "open"), fresh(at, view, "switch")
            payload = median([s.spec_bytes for s in opened + switched if s.spec_bytes]) / MB
            failed = sum(1 for s in at if s.view == view and s.error)
            cached = sum(1 for s in at if s.view == view and s.cached)
            print(f"{lengths[tokens]:6d} {view:18s} {payload:10.3f} {median([s.total_s for s in opened]):7.2f} "
                  f"{median([s.server_s for s in opened]):7.2f} {median([s.browser_s for s in opened]):7.2f} "
                  f"{median([s.paint_s for s in opened]):6.2f} {median([s.total_s for s in switched]):8.2f} "
                  f"{median([s.server_s for s in switched]):7.2f} {median([s.browser_s for s in switched]):7.2f} "
                  f"{f'{len(opened)}+{len(switched)}':>5s} {max((s.draws for s in opened + switched), default=0):5d} "
                  f"{failed:6d}" + (f"  ({cached} cached, not in the medians)" if cached else ""))
    print("\nopen s / switch s: click -> painted (median); server: click -> the figure's message arrived; browser: "
          "message -> Plotly drawn; paint: drawn -> painted; n: fresh samples open+switch; draws: most afterplots "
          "of the chart per action")
    return verdicts(samples, lengths)


def verdicts(samples: list[Sample], lengths: dict[int, int]) -> int:
    missed = 0

    def say(text: str, measured: str, ok: bool) -> None:
        nonlocal missed
        missed += not ok
        print(f"  {text:62s} {measured:>12s}  {'PASS' if ok else 'MISS'}")

    print("\ntargets (issue 16)")
    if DRAW_TARGET_TOKENS in lengths:
        at = [s for s in samples if s.tokens == DRAW_TARGET_TOKENS]
        opened = fresh(at, "Model view", "open")
        payload = max((s.spec_bytes for s in opened), default=0) / MB
        say(f"{lengths[DRAW_TARGET_TOKENS]} pieces: model view payload <= {PAYLOAD_TARGET_MB:g} MB",
            f"{payload:.2f} MB", 0 < payload <= PAYLOAD_TARGET_MB)
        drawn = median([s.total_s for s in opened])
        say(f"{lengths[DRAW_TARGET_TOKENS]} pieces: model view drawn <= {DRAW_TARGET_S:g} s (median open)",
            f"{drawn:.2f} s", drawn <= DRAW_TARGET_S)
    if SWITCH_TARGET_TOKENS in lengths:
        at = [s for s in samples if s.tokens == SWITCH_TARGET_TOKENS]
        failed = [s for s in at if s.error]
        say(f"{lengths[SWITCH_TARGET_TOKENS]} pieces: every view draws", f"{len(failed)} failed", not failed and all(
            fresh(at, view, "open") or fresh(at, view, "switch") for view in (*VIEWS, ALL_HEADS)))
        for view in (*VIEWS, ALL_HEADS):
            switched = median([s.total_s for s in fresh(at, view, "switch")])
            what = "to mean, then layers" if view == ALL_HEADS else "head switch"
            say(f"{lengths[SWITCH_TARGET_TOKENS]} pieces: {view}, {what} <= {SWITCH_TARGET_S:g} s",
                f"{switched:.2f} s", switched <= SWITCH_TARGET_S)
    print(f"{missed} target(s) missed" if missed else "every target met")
    return missed


def measure_all(url: str, texts: dict[int, str], lengths: dict[int, int], args: argparse.Namespace,
                server_pid: int | None) -> list[Sample]:
    """Every length in a fresh browser context (a new session, an empty message cache), one after the other."""
    config = json.loads((ROOT / "pretrained" / "en-de" / "config.json").read_text())["model"]
    n_layers = config["n_encoder_layers"] if args.kind == "enc_self" else config["n_decoder_layers"]
    samples: list[Sample] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for n, text in texts.items():
                context = browser.new_context(viewport=VIEWPORT)
                context.add_init_script(HOOKS)
                page = context.new_page()
                wire = Wire()
                page.on("websocket", lambda ws, wire=wire: ws.on("framereceived", wire.received))
                cdp = None
                if args.profile:
                    cdp = context.new_cdp_session(page)
                    cdp.send("Profiler.enable")
                    cdp.send("Profiler.start")
                load = Load(server_pid)
                done, first_s = measure_length(page, wire, url, n, text, args, n_layers, config["n_heads"])
                samples += done
                print(f"{lengths[n]} pieces: opened by a link and translated, heatmap painted {first_s:.1f} s after "
                      f"navigation; {len(done)} timed actions; load: {load.report()}", flush=True)
                if cdp is not None:
                    path = args.profile / f"browser_draw_{lengths[n]}.cpuprofile"
                    path.write_text(json.dumps(cdp.send("Profiler.stop")["profile"]))
                    print(f"  the page's CPU profile: {path} (open it in Chromium's DevTools, Performance)")
                context.close()
        finally:
            browser.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[20, 200, 500], help="source pieces, </s> included")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of timed actions per length")
    parser.add_argument("--kind", default="enc_self", choices=["enc_self", "dec_self", "cross"])
    parser.add_argument("--presenter", action="store_true", help="measure in presenter mode")
    parser.add_argument("--url", help="an app already running (default: start one on a free port of 127.0.0.1)")
    parser.add_argument("--quiet-ms", type=int, default=800, help="the page idle this long ends an action")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds an action may take")
    parser.add_argument("--profile", type=Path, help="a folder for the page's CPU profile of each length")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing: apt-get install chromium (never `playwright install`: it downloads)")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.load(ROOT / "pretrained" / "en-de" / "tokenizer.model")
    texts = {n: prose(n, tokenizer) for n in args.tokens}
    lengths = {n: n_pieces(text, tokenizer) for n, text in texts.items()}
    print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}, streamlit {metadata.version('streamlit')}, plotly "
          f"{metadata.version('plotly')}, playwright {metadata.version('playwright')}, {CHROMIUM} (headless); the "
          f"server with OMP_WAIT_POLICY=PASSIVE; viewport 1280x720; en-de model, kind {args.kind}"
          f"{', presenter mode' if args.presenter else ''}; {args.repeats} rounds; load average at start "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    process = None
    if args.url:
        url = args.url.rstrip("/")
    else:
        process, url = start_server(Path(tempfile.mkdtemp(prefix="browser_draw_")) / "server.log")
        print(f"server: {url}", flush=True)
    try:
        samples = measure_all(url, texts, lengths, args, process.pid if process else None)
    finally:
        if process is not None:
            stop_server(process)
    return 1 if report(samples, lengths) else 0


if __name__ == "__main__":
    raise SystemExit(main())
