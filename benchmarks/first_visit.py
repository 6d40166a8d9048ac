"""Where a first visit's time goes: from opening the URL to the Translate page's first chart drawn, on a warm server
and a warm browser cache, beside a baseline page served the same way.

    python benchmarks/first_visit.py [--repeats 7]

It starts two `streamlit run` servers on 127.0.0.1 with the project's .streamlit/config.toml: the app, and a baseline
(benchmarks/one_chart_page.py: an empty page with one 2x2 st.plotly_chart), so that what Streamlit and Plotly cost
on this machine is told apart from what our page adds. One Chromium context at 1280x720 (Debian's, as in
tests/e2e) opens each page twice unmeasured (the server's shared store, the browser's cache and code cache), then the
two pages in turn, --repeats times each, so that the machine's load falls on both alike. Times are medians on the
page's clock, in ms from navigation start (the moment the URL is opened):

  dom            DOMContentLoaded: index.html and Streamlit's main bundle parsed
  ws open        the WebSocket to the server open
  first msg      its first message (the server starts the script run)
  chart msg      the message that carries the first st.plotly_chart
  script done    the script_finished message (the server's whole run, loopback included)
  plotly asked   the front end asks for its PlotlyChart chunk (4.7 MB; from the cache) ...
  plotly loaded  ... and has it
  drawn          the first chart's .main-svg is in the page (what tests/e2e/test_first_visit.py waits for)

and the renderer's main-thread busy time until drawn (CDP Performance.getMetrics' TaskDuration, ScriptDuration,
Layout + RecalcStyle), the elements and bytes sent before the first chart, the chart's own message and the front-end
JavaScript chunks loaded. "ours" = app - baseline. Run it on a quiet machine: on 2 shared cores every number moves
with the other jobs' load (printed).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import BrowserContext, sync_playwright
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_draw import CHROMIUM, CHROMIUM_ARGS, VIEWPORT  # sibling benchmarks, run as scripts
from load import start_server, stop_server

CHART = "[data-testid=stPlotlyChart] .js-plotly-plot .main-svg"
# Runs in the page before Streamlit: the WebSocket's open and every message, and the first chart drawn, on the page's
# clock.
HOOK = """(() => {
  const log = window.__firstVisit = {open: null, messages: [], drawn: null};
  const NativeWebSocket = window.WebSocket;
  function LoggedWebSocket(...args) {
    const ws = new NativeWebSocket(...args);
    ws.addEventListener('open', () => { log.open = performance.now(); });
    ws.addEventListener('message', () => log.messages.push(performance.now()));
    return ws;
  }
  LoggedWebSocket.prototype = NativeWebSocket.prototype;
  for (const name of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) LoggedWebSocket[name] = NativeWebSocket[name];
  window.WebSocket = LoggedWebSocket;
  new MutationObserver((_, observer) => {
    if (document.querySelector('CHART')) { log.drawn = performance.now(); observer.disconnect(); }
  }).observe(document, {subtree: true, childList: true});
})();""".replace("CHART", CHART)
READ = """() => ({log: window.__firstVisit,
  dom: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
  chunks: performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.js'))
    .map((e) => [e.name, e.startTime, e.responseEnd])})"""
ROWS = ("dom", "ws open", "first msg", "chart msg", "script done", "plotly asked", "plotly loaded", "drawn",
        "main thread busy", "  of it script", "  of it layout+style", "elements before chart", "bytes before chart",
        "chart message bytes", "JS chunks")


def sent(frame: bytes) -> tuple[str, str | None]:
    """A ForwardMsg's type and, for a new element, its kind (plotly_chart, markdown, ...)."""
    message = ForwardMsg()
    message.ParseFromString(frame)
    kind = message.WhichOneof("type")
    if kind == "delta" and message.delta.WhichOneof("type") == "new_element":
        return kind, message.delta.new_element.WhichOneof("type")
    return kind, None


def visit(context: BrowserContext, url: str) -> dict[str, float]:
    """Open ``url`` in a new tab of ``context``, wait for the first chart, and return the rows of ROWS."""
    page = context.new_page()
    page.set_default_timeout(60_000)
    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda p: frames.append(p) if isinstance(p, bytes) else 0))
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(url, wait_until="domcontentloaded")
    page.locator(CHART).first.wait_for()
    busy = {m["name"]: m["value"] * 1000 for m in cdp.send("Performance.getMetrics")["metrics"]}
    page.wait_for_function("() => window.__firstVisit.messages.length > 0 && "
                           "document.querySelector('[data-testid=stApp][data-test-script-state=notRunning]')")
    seen = page.evaluate(READ)
    page.close()
    log, kinds = seen["log"], [sent(f) for f in frames]
    chart = next(i for i, (_, element) in enumerate(kinds) if element == "plotly_chart")
    done = next(i for i, (kind, _) in enumerate(kinds) if kind == "script_finished")
    plotly = next(c for c in seen["chunks"] if "/PlotlyChart." in c[0])
    return {"dom": seen["dom"], "ws open": log["open"], "first msg": log["messages"][0],
            "chart msg": log["messages"][chart], "script done": log["messages"][done], "plotly asked": plotly[1],
            "plotly loaded": plotly[2], "drawn": log["drawn"], "main thread busy": busy["TaskDuration"],
            "  of it script": busy["ScriptDuration"],
            "  of it layout+style": busy["LayoutDuration"] + busy["RecalcStyleDuration"],
            "elements before chart": sum(1 for _, element in kinds[:chart] if element),
            "bytes before chart": sum(len(f) for f in frames[:chart]), "chart message bytes": len(frames[chart]),
            "JS chunks": len(seen["chunks"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        servers = {"app": start_server(logs / "app.log"),
                   "baseline": start_server(logs / "baseline.log", "benchmarks/one_chart_page.py")}
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                context = browser.new_context(viewport=VIEWPORT)
                context.add_init_script(HOOK)
                for _, url in servers.values():
                    visit(context, url)
                    visit(context, url)
                loads = []
                for _ in range(args.repeats):
                    for name, (_, url) in servers.items():
                        samples[name].append(visit(context, url))
                    loads.append(os.getloadavg()[0])
                browser.close()
        finally:
            for process, _ in servers.values():
                stop_server(process)
    medians = {name: {row: statistics.median(s[row] for s in runs) for row in ROWS} for name, runs in samples.items()}
    print(f"medians of {args.repeats} warm visits each, ms from opening the URL (load average "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs)")
    print(f"{'':24s}{'app':>10s}{'baseline':>10s}{'ours':>10s}")
    for row in ROWS:
        app, base = medians["app"][row], medians["baseline"][row]
        print(f"{row:24s}{app:10.0f}{base:10.0f}{app - base:10.0f}")


if __name__ == "__main__":
    main()
