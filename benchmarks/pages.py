"""Server-side draw time and figure bytes of every page on one checkpoint, run in the app (Streamlit's AppTest).

    python benchmarks/pages.py pretrained/NAME [--pieces 20] [--repeats 3] [--text "..."]

The checkpoint's folder is listed as the server lists converted models (its parent as ATTENTION_EXPLORER_PRETRAINED).
The Translate page translates --text (greedy, at most --pieces output pieces: a random stand-in runs to the limit),
then every page, the Translate page in each of the explorer's views, runs once to warm up and --repeats times more:
the median seconds of a run (the translation cached, as a visitor meets a page after Translate) and the JSON bytes of
the Plotly figures it sends. What a browser does with them is benchmarks/browser_draw.py's.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("translate", "decoding", "positional", "masks", "mechanics", "heads", "model_training")
VIEWS = ("Heatmap", "Head view", "Model view")  # app.state.VIEWS, not imported: the app reads its env at import
MB = 1e6


def figure_bytes(at) -> int:
    """JSON characters of every Plotly figure the run sent."""
    return sum(len(chart.proto.spec) for chart in at.get("plotly_chart"))


def timed_runs(at, repeats: int) -> float:
    """Median seconds of ``repeats`` runs of the page ``at`` is on, after a warm-up run; fails on an error drawn."""
    seconds = []
    for _ in range(1 + repeats):
        start = time.perf_counter()
        at.run()
        seconds.append(time.perf_counter() - start)
        if at.exception or at.error:
            raise SystemExit(f"the page failed: {[e.value for e in (*at.exception, *at.error)]}")
    return statistics.median(seconds[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, help="a checkpoint folder (python -m model convert's --out)")
    parser.add_argument("--pieces", type=int, default=20, help="max output length")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text", default="I would like to drink a cup of tea at the station before the train leaves.")
    args = parser.parse_args()
    os.environ["ATTENTION_EXPLORER_PRETRAINED"] = str(args.checkpoint.resolve().parent)
    from streamlit.testing.v1 import AppTest

    logging.disable(logging.WARNING)  # AppTest's bare mode warns of a missing ScriptRunContext again and again

    def page(name: str, **state) -> AppTest:
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=600)
        for key, value in {"model_name": args.checkpoint.resolve().name, "text": args.text, "max_len": args.pieces,
                           "beam_size": 1, **state}.items():
            at.session_state[key] = value
        at.run()  # st.navigation registers the pages before a switch can find one
        return at.switch_page(f"app/views/{name}.py")

    print(f"machine: {platform.machine()} {os.cpu_count()} cpus; {args.checkpoint.name}, {args.pieces} output pieces "
          f"at most, median of {args.repeats} runs after a warm-up")
    start = time.perf_counter()
    at = page("translate").run()
    print(f"Translate, opened (loads the model): {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    at.button(key="translate").click().run()
    print(f"Translate, the click (translates and draws): {time.perf_counter() - start:.2f} s")
    print(f"{'page':24s} {'s':>6s} {'figures':>7s} {'JSON MB':>8s}")

    def report(name: str, at: AppTest) -> None:
        seconds = timed_runs(at, args.repeats)
        print(f"{name:24s} {seconds:6.2f} {len(at.get('plotly_chart')):7d} {figure_bytes(at) / MB:8.3f}", flush=True)

    for view in VIEWS:
        at.session_state["translate_view"] = view
        report(f"translate, {view}", at)
    for name in PAGES[1:]:
        report(name, page(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
