"""Classroom load test: simulated students drive a real server over Streamlit's own WebSocket protocol.

    python benchmarks/load.py --sessions 30 --minutes 10     # the classroom target
    python benchmarks/load.py --sessions 10 --minutes 2      # a quick check

It starts its own `streamlit run streamlit_app.py` on 127.0.0.1 (a free port; never any other address), warms it
up (model load, first figures), then opens --sessions sessions exactly as a browser tab does: a WebSocket to
/_stcore/stream that sends BackMsg reruns with widget states and reads ForwardMsgs until script_finished (the
protobufs shipped in the streamlit package). Each session translates distinct English sentences from
data/en-de.tsv.gz on the Translate page (en-de model, the page's default settings) and switches the explorer's
head (a fragment rerun, as the browser sends it), with --think-min..--think-max seconds between interactions.
One more session, the "lecturer", translates a distinct 200-word paragraph every --long-every seconds.

Latency is the time from sending a rerun to its script_finished: the server's whole work for that interaction
(decoding, figures, serialisation) plus the loopback network; the browser's drawing is not included. An error is
an exception element, an st.error, a "server is busy" warning, a result that is not the one asked for (no
translation, or a heatmap of another head), a rerun without script_finished within 120 s, or a lost connection.
The server's RSS (/proc/<pid>/status) is sampled every 30 s.

Printed: p50/p95/max latency per interaction kind, errors, memory over time, whether the long requests stall
other sessions' head switches (head-switch p95 while a long request runs vs. while none does), and the verdict
against the targets: 0 errors, p95 <= 2 s for translations and head switches, memory flat after warm-up (the
RSS never more than 10% above its value at the end of warm-up). Exit status 1 when a target is missed.

The load generator runs on the same machine as the server and takes CPU from it: its own CPU time is printed.
Bounded: at most 60 sessions and 30 minutes; every interaction times out; the server is stopped by its pid.
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import gzip
import json
import os
import random
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin, Subprotocol

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"  # the only address this benchmark ever talks to
MAX_SESSIONS = 60
MAX_MINUTES = 30
STARTUP_TIMEOUT_S = 90
INTERACTION_TIMEOUT_S = 120
MEMORY_EVERY_S = 30
TARGET_P95_S = 2.0
TARGET_MEMORY_GROWTH = 0.10  # RSS after warm-up may not exceed its value at the end of warm-up by more than this
LONG_WORDS = 200
HEAD_SWITCHES_PER_TRANSLATION = 3
STALL_RATIO = 1.5  # head-switch p95 during a long request / without one, above which the long request "stalls"
WIDGET_ID = re.compile(r"^\$\$ID-[0-9a-f]+-(?P<key>.+)$")
FINISHED_OK = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}


# --- the server ----------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


def start_server(log_path: Path, script: str = "streamlit_app.py", cwd: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """`streamlit run script` in ``cwd`` (whose .streamlit/config.toml applies) on a free port of HOST."""
    port = free_port()
    url = f"http://{HOST}:{port}"
    command = [sys.executable, "-m", "streamlit", "run", script, "--server.address", HOST,
               "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # streamlit_app.py also sets OMP_NUM_THREADS=1 by default
    log = log_path.open("w")
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(process)
            sys.exit(f"the server did not start; its log:\n{log_path.read_text(errors='replace')}")
        time.sleep(0.3)
    return process, url


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def slot_limit() -> str:
    match = re.search(r"^MAX_CONCURRENT_TRANSLATIONS = (\d+)", (ROOT / "app" / "translation.py").read_text(), re.M)
    return match.group(1) if match else "unknown"


# --- what the students type --------------------------------------------------------------------------------

def corpus_sentences(seed: int) -> list[str]:
    """Distinct English sentences of 5-20 words from the project's corpus, shuffled."""
    with gzip.open(ROOT / "data" / "en-de.tsv.gz", "rt", encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t")
        sentences = sorted({r["en"].strip() for r in rows if 5 <= len(r["en"].split()) <= 20 and '"' not in r["en"]})
    random.Random(seed).shuffle(sentences)
    return sentences


class Sentences:
    """Hands out each sentence once (across all sessions), so every translation is a real decode, never a
    cache hit; paragraphs are LONG_WORDS words of consecutive sentences."""

    def __init__(self, seed: int) -> None:
        self._items: Iterator[str] = iter(corpus_sentences(seed))

    def next(self) -> str:
        return next(self._items)

    def paragraph(self) -> str:
        words: list[str] = []
        while len(words) < LONG_WORDS:
            words += self.next().split()
        return " ".join(words[:LONG_WORDS]).rstrip(".,;:!?") + "."


# --- results -----------------------------------------------------------------------------------------------

@dataclass
class Sample:
    kind: str
    start: float  # seconds since the measured run began
    latency: float
    error: str | None = None


@dataclass
class Results:
    t0: float = field(default_factory=time.monotonic)
    samples: list[Sample] = field(default_factory=list)
    memory: list[tuple[float, float]] = field(default_factory=list)  # (seconds, RSS MB)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def errors(self) -> list[Sample]:
        return [s for s in self.samples if s.error]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# --- one browser tab, over the WebSocket ------------------------------------------------------------------

class Tab:
    """A browser tab's side of the protocol: sends reruns with widget states, reads ForwardMsgs to script_finished,
    and remembers the widget ids (and fragment ids) the server drew, by their user key."""

    def __init__(self, url: str, results: Results) -> None:
        self.url = url
        self.results = results  # where timed() records this tab's interactions
        self.ws: ClientConnection | None = None
        self.widgets: dict[str, tuple[str, str]] = {}  # user key -> (widget id, fragment id)
        self.head_options: list[str] = []

    async def open(self) -> None:
        ws_url = self.url.replace("http://", "ws://") + "/_stcore/stream"
        self.ws = await connect(ws_url, subprotocols=[Subprotocol("streamlit")], origin=Origin(self.url),
                                max_size=None, ping_interval=None, open_timeout=30)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, states: dict[str, object], fragment: bool = False, query: str = "", page: str = "") -> dict:
        """One interaction: the widget states by user key (True = a button click, a list = a segmented control's
        choice, else a text), on ``page`` (a url path; "" = the page it is on) with the link's ``query`` string;
        returns what it drew (translation line, heatmap spec) and its errors."""
        msg = BackMsg()
        client = msg.rerun_script
        client.query_string = query
        client.page_name = page
        fragment_id = ""
        for key, value in states.items():
            widget_id, fragment_id = self.widgets[key]
            state = client.widget_states.widgets.add()
            state.id = widget_id
            if value is True:
                state.trigger_value = True
            elif isinstance(value, list):
                state.string_array_value.data.extend(value)
            else:
                state.string_value = str(value)
        if fragment and fragment_id:
            client.fragment_id = fragment_id
        drawn: dict = {"errors": []}
        try:
            await asyncio.wait_for(self._send_and_read(msg, drawn), INTERACTION_TIMEOUT_S)
        except TimeoutError:
            drawn["errors"].append(f"no script_finished within {INTERACTION_TIMEOUT_S} s")
        except Exception as exc:  # a lost connection is an error of this interaction
            drawn["errors"].append(f"{type(exc).__name__}: {exc}")
        return drawn

    async def _send_and_read(self, msg: BackMsg, drawn: dict) -> None:
        assert self.ws is not None
        await self.ws.send(msg.SerializeToString())
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await self.ws.recv())
            kind = forward.WhichOneof("type")
            if kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                self._read_element(forward.delta.new_element, forward.delta.fragment_id, drawn)
            elif kind == "ref_hash":
                drawn["errors"].append("a cached message reference (the benchmark sends no cache)")
            elif kind == "script_finished":
                if forward.script_finished in FINISHED_OK:
                    return
                if forward.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    drawn["errors"].append(f"script finished with status {forward.script_finished}")
                    return

    def _read_element(self, element, fragment_id: str, drawn: dict) -> None:
        element_type = element.WhichOneof("type")
        body = getattr(element, element_type)
        widget_id = getattr(body, "id", "") if element_type != "alert" else ""
        match = WIDGET_ID.match(widget_id) if isinstance(widget_id, str) else None
        if match:
            self.widgets[match.group("key")] = (widget_id, fragment_id)
        drawn["elements"] = drawn.get("elements", 0) + 1
        if element_type == "exception":
            drawn["errors"].append(f"exception on the page: {body.type or 'redacted'}")
        elif element_type == "alert":
            if body.format == Alert.ERROR:
                drawn["errors"].append(f"st.error: {body.body[:120]}")
            elif body.format == Alert.WARNING and "busy" in body.body:
                drawn["errors"].append(f"busy: {body.body[:120]}")
        elif element_type == "markdown" and "1.9rem" in body.body:
            drawn["translation"] = body.body
        elif element_type == "plotly_chart" and match and match.group("key").endswith("_heatmap"):
            drawn["heatmap"] = body.spec
        elif element_type == "button_group" and match and match.group("key") == "head":
            self.head_options = [option.content for option in body.options]


# --- the simulated people ----------------------------------------------------------------------------------

async def student(url: str, results: Results, sentences: Sentences, start_at: float, end_at: float,
                  think: tuple[float, float], rng: random.Random) -> None:
    await asyncio.sleep(max(0.0, start_at - results.now()))
    tab = Tab(url, results)
    try:
        await tab.open()
    except Exception as exc:
        results.samples.append(Sample("connect", results.now(), 0.0, f"{type(exc).__name__}: {exc}"))
        return
    try:
        await timed(tab, "page load", {})
        head = "mean"
        while results.now() < end_at:
            await asyncio.sleep(rng.uniform(*think))
            if results.now() >= end_at:
                break
            await timed(tab, "translate", {"text": sentences.next(), "translate": True}, expect_translation=True)
            for _ in range(HEAD_SWITCHES_PER_TRANSLATION):
                await asyncio.sleep(rng.uniform(*think))
                if results.now() >= end_at or "head" not in tab.widgets:
                    break
                head = rng.choice([h for h in tab.head_options if h != head] or ["mean"])
                await timed(tab, "head switch", {"head": [head]}, fragment=True, expect_head=head)
    finally:
        await tab.close()


async def lecturer(url: str, results: Results, sentences: Sentences, start_at: float, end_at: float,
                   every: float) -> None:
    """Translates a 200-word paragraph every ``every`` seconds (a distinct one each time)."""
    await asyncio.sleep(max(0.0, start_at - results.now()))
    tab = Tab(url, results)
    await tab.open()
    try:
        await timed(tab, "page load", {})
        next_at = start_at
        while results.now() < end_at:
            await asyncio.sleep(max(0.0, next_at - results.now()))
            if results.now() >= end_at:
                break
            await timed(tab, f"long paragraph ({LONG_WORDS} words)", {"text": sentences.paragraph(),
                                                                       "translate": True}, expect_translation=True)
            next_at += every
    finally:
        await tab.close()


async def timed(tab: Tab, kind: str, states: dict, fragment: bool = False, expect_translation: bool = False,
                expect_head: str | None = None) -> None:
    start = tab.results.now()
    began = time.monotonic()
    drawn = await tab.rerun(states, fragment=fragment)
    latency = time.monotonic() - began
    errors = drawn["errors"]
    if not errors and expect_translation and ("translation" not in drawn or "heatmap" not in drawn):
        errors.append("no translation or heatmap drawn")
    if not errors and expect_head is not None:
        wanted = "mean over heads" if expect_head == "mean" else f"head {expect_head}"
        if wanted not in drawn.get("heatmap", ""):
            errors.append(f"the heatmap does not show {wanted}")
    tab.results.samples.append(Sample(kind, start, latency, "; ".join(errors) or None))


async def sample_memory(pid: int, results: Results, end_at: float) -> None:
    while True:
        now = results.now()
        rss = rss_mb(pid)
        results.memory.append((now, rss))
        recent = [s for s in results.samples if s.start >= now - MEMORY_EVERY_S]
        print(f"  t={now:5.0f} s  server RSS {rss:7.1f} MB  interactions {len(results.samples):5d}  "
              f"errors {len(results.errors()):3d}  p95 of the last {MEMORY_EVERY_S} s "
              f"{percentile([s.latency for s in recent], 95):.2f} s", flush=True)
        if now >= end_at:
            return
        await asyncio.sleep(min(MEMORY_EVERY_S, max(0.0, end_at - now) + 0.01))


async def warm_up(url: str, results: Results, sentences: Sentences) -> None:
    """Load the model and draw the first figures once, unmeasured (the first run imports everything)."""
    tab = Tab(url, results)
    await tab.open()
    try:
        await tab.rerun({})
        drawn = await tab.rerun({"text": sentences.next(), "translate": True})
        if drawn["errors"] or "translation" not in drawn:
            sys.exit(f"the warm-up translation failed: {drawn['errors'] or 'nothing drawn'}")
    finally:
        await tab.close()


async def run(args: argparse.Namespace, pid: int, url: str) -> Results:
    sentences = Sentences(args.seed)
    await warm_up(url, Results(), sentences)
    results = Results()
    duration = args.minutes * 60
    ramp = min(30.0, duration / 5)
    rng = random.Random(args.seed)
    tasks = [asyncio.create_task(student(url, results, sentences, ramp * i / args.sessions, duration,
                                         (args.think_min, args.think_max), random.Random(rng.random())))
             for i in range(args.sessions)]
    if args.long_every > 0:
        tasks.append(asyncio.create_task(lecturer(url, results, sentences, ramp, duration, args.long_every)))
    memory = asyncio.create_task(sample_memory(pid, results, duration))
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), duration + INTERACTION_TIMEOUT_S + 30)
    except TimeoutError:
        results.samples.append(Sample("run", results.now(), 0.0, "the sessions did not stop in time"))
    memory.cancel()
    results.memory.append((results.now(), rss_mb(pid)))
    return results


# --- the report --------------------------------------------------------------------------------------------

def overlaps(sample: Sample, intervals: list[tuple[float, float]]) -> bool:
    end = sample.start + sample.latency
    return any(sample.start < b and a < end for a, b in intervals)


def latency_table(results: Results, kinds: list[str]) -> None:
    """n, p50, p95, max and errors per interaction kind (latencies of the interactions without an error)."""
    print(f"\n{'interaction':30s} {'n':>6s} {'p50 s':>7s} {'p95 s':>7s} {'max s':>7s} {'errors':>6s}")
    for kind in kinds:
        values = [s.latency for s in results.samples if s.kind == kind and not s.error]
        n_err = sum(1 for s in results.samples if s.kind == kind and s.error)
        print(f"{kind:30s} {len(values):6d} {percentile(values, 50):7.2f} {percentile(values, 95):7.2f} "
              f"{max(values, default=float('nan')):7.2f} {n_err:6d}")


def report(results: Results, args: argparse.Namespace, server_cpu_s: float, wall_s: float, log_path: Path) -> bool:
    latency_table(results, sorted({s.kind for s in results.samples}, key=lambda k: (k.startswith("long"), k)))

    errors = results.errors()
    tracebacks = log_path.read_text(errors="replace").count("Traceback")
    print(f"\nerrors: {len(errors)}; tracebacks in the server log: {tracebacks}")
    for message, count in sorted(_count(s.error for s in errors).items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {count:4d} x {message}")

    long_intervals = [(s.start, s.start + s.latency) for s in results.samples if s.kind.startswith("long")]
    heads = [s for s in results.samples if s.kind == "head switch" and not s.error]
    during = [s.latency for s in heads if overlaps(s, long_intervals)]
    apart = [s.latency for s in heads if not overlaps(s, long_intervals)]
    print(f"\nhead switches while a {LONG_WORDS}-word paragraph was being translated: n={len(during)}, "
          f"p50 {percentile(during, 50):.2f} s, p95 {percentile(during, 95):.2f} s")
    print(f"head switches with no long request running:                n={len(apart)}, "
          f"p50 {percentile(apart, 50):.2f} s, p95 {percentile(apart, 95):.2f} s")
    if during and apart:
        stall = percentile(during, 95) / percentile(apart, 95)
        print(f"  -> a long request {'stalls' if stall > STALL_RATIO else 'does not stall'} other sessions' head "
              f"switches (p95 ratio {stall:.2f}x; 'stalls' means > {STALL_RATIO}x)")
    else:
        print("  -> not measured: no head switch overlapped a long request (run longer, or lower --long-every)")

    print("\nserver memory (RSS):")
    for t, mb in results.memory:
        print(f"  t={t:5.0f} s  {mb:7.1f} MB")
    warm = max(60.0, 0.25 * args.minutes * 60)
    slack = MEMORY_EVERY_S / 2  # the reading due at the end of warm-up comes a little after it
    before = [mb for t, mb in results.memory if t <= warm + slack]
    after = [mb for t, mb in results.memory if t > warm + slack]
    baseline = before[-1] if before else results.memory[0][1]
    growth = (max(after) / baseline - 1) if after else float("nan")
    print(f"  warm-up: the first {warm:.0f} s; RSS then {baseline:.1f} MB, highest after it "
          f"{max(after, default=float('nan')):.1f} MB ({growth:+.1%})")
    print(f"server CPU: {server_cpu_s:.0f} s in {wall_s:.0f} s ({server_cpu_s / wall_s:.2f} cores on average); "
          f"this load generator: {_own_cpu():.0f} s; {os.cpu_count()} cores; load average now "
          f"{os.getloadavg()[0]:.2f}")

    checks = [("errors", len(errors) == 0 and tracebacks == 0,
               f"{len(errors)} failed interactions, {tracebacks} tracebacks in the server log (target 0)")]
    for kind in ("translate", "head switch"):
        values = [s.latency for s in results.samples if s.kind == kind and not s.error]
        checks.append((f"p95 latency, {kind}", percentile(values, 95) <= TARGET_P95_S if values else None,
                       f"{percentile(values, 95):.2f} s (target <= {TARGET_P95_S:.0f} s)"))
    checks.append(("memory flat after warm-up", growth <= TARGET_MEMORY_GROWTH if after else None,
                   f"{growth:+.1%} (target <= +{TARGET_MEMORY_GROWTH:.0%})" if after else
                   "not measured: no reading after the warm-up (run at least 2 minutes)"))
    print(f"\nverdict ({args.sessions} sessions, {args.minutes:g} min):")
    for name, ok, detail in checks:
        print(f"  {'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}  {name}: {detail}")
    return all(ok is not False for _, ok, _ in checks)


def _count(items) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help=f"simulated students (1-{MAX_SESSIONS})")
    parser.add_argument("--minutes", type=float, default=10, help=f"measured duration (at most {MAX_MINUTES})")
    parser.add_argument("--think-min", type=float, default=2.0, help="seconds between a student's interactions")
    parser.add_argument("--think-max", type=float, default=5.0)
    parser.add_argument("--long-every", type=float, default=30.0,
                        help=f"seconds between the lecturer's {LONG_WORDS}-word paragraphs (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write every sample and memory reading to this file")
    args = parser.parse_args()
    if not 1 <= args.sessions <= MAX_SESSIONS:
        parser.error(f"--sessions must be 1..{MAX_SESSIONS}")
    if not 0 < args.minutes <= MAX_MINUTES:
        parser.error(f"--minutes must be in (0, {MAX_MINUTES}]")
    if not 0 <= args.think_min <= args.think_max <= 60:
        parser.error("need 0 <= --think-min <= --think-max <= 60")

    log_path = Path(tempfile.mkdtemp(prefix="load_")) / "server.log"
    print(f"starting the server on {HOST} (log: {log_path}); OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')}"
          f", OMP_WAIT_POLICY=PASSIVE, MAX_CONCURRENT_TRANSLATIONS={slot_limit()}", flush=True)
    process, url = start_server(log_path)
    try:
        print(f"server at {url} (pid {process.pid}); warming up, then {args.sessions} sessions + "
              f"{'1 lecturer' if args.long_every > 0 else 'no lecturer'} for {args.minutes:g} min, think time "
              f"{args.think_min:g}-{args.think_max:g} s", flush=True)
        cpu_before, began = cpu_seconds(process.pid), time.monotonic()
        results = asyncio.run(run(args, process.pid, url))
        server_cpu, wall = cpu_seconds(process.pid) - cpu_before, time.monotonic() - began
        ok = report(results, args, server_cpu, wall, log_path)
        if args.json:
            args.json.write_text(json.dumps({"samples": [s.__dict__ for s in results.samples],
                                             "memory": results.memory, "args": vars(args) | {"json": str(args.json)}},
                                            indent=1))
        return 0 if ok else 1
    finally:
        stop_server(process)


if __name__ == "__main__":
    sys.exit(main())
