"""Lecture-hall load test: a room of 100-300 students on one server, most of them on the lecturer's link.

    python benchmarks/lecture_hall.py --sessions 100 --minutes 10          # starts its own server
    python benchmarks/lecture_hall.py --sessions 300 --minutes 10
    python benchmarks/lecture_hall.py --sessions 100 --url http://127.0.0.1:8080 --pids 123,456   # through a proxy

Every session is a browser tab on Streamlit's own WebSocket protocol (benchmarks/load.py's Tab). The room:
- 80% open the lecturer's link (the same sentence, beam 4, on the Translate page, which decodes a link at once),
  then switch heads now and then, and a third of them open the Decoding page too;
- 15% type their own sentences (distinct corpus sentences: real decodes, never cache hits), switch heads and
  pages;
- 5% open hostile links and close them after 2-5 s: the Decoding page at beam 8 and length 1023 on 168
  characters the model never ends, or a 4,000-character paste. Their interactions are not timed (they leave).

Measured: latency from a rerun to its script_finished per kind (the shared link's "page ready", own sentences,
head switches, page switches), errors (an exception, st.error, a busy warning, a missing translation or heatmap, a
lost connection), the server's RSS every 10 s (all --pids summed behind a proxy) and, after the last tab closed,
how long until the server's CPU is idle (under 10% of a core over 1 s). Targets: 0 errors; shared link p95 <= 2 s;
own sentences p95 <= 5 s (at 100 sessions; reported at 300); memory never above 3 GB; idle within 5 s.
Exit status 1 when a target is missed. Bounded: at most 300 sessions and 30 minutes, 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (  # the sibling benchmark, run as a script (hence after the sys.path line)
    HOST,
    Results,
    Sample,
    Sentences,
    Tab,
    cpu_seconds,
    latency_table,
    percentile,
    rss_mb,
    start_server,
    stop_server,
)

MAX_SESSIONS, MAX_MINUTES = 300, 30
SHARED_TEXT = "My brother has bought a new house in the city."  # the app's default sentence
SHARED_LINK = urllib.parse.urlencode({"text": SHARED_TEXT, "beam": 4})
HOSTILE_LINKS = [("decoding", urllib.parse.urlencode({"beam": 8, "max_len": 1023, "text": "!?.,;:" * 28})),
                 ("", urllib.parse.urlencode({"text": ("The weather is nice today and " * 140)[:4000]}))]
ROLES = (("link", 0.80), ("own", 0.15), ("hostile", 0.05))
TARGETS = {"shared link": 2.0, "own sentence": 5.0}
TARGET_MEMORY_MB, TARGET_IDLE_S, IDLE_SHARE = 3072, 5.0, 0.10
MEMORY_EVERY_S = 10
LOST = "ConnectionClosed"  # how benchmarks/load.py's Tab reports a WebSocket the server side closed


def roles(n: int) -> list[str]:
    """n sessions split by ROLES (at least one of each kind once n >= 20), interleaved so they arrive mixed."""
    counts = {name: round(n * share) for name, share in ROLES}
    counts["link"] = n - counts["own"] - counts["hostile"]
    order = [name for name, count in counts.items() for _ in range(count)]
    random.Random(0).shuffle(order)
    return order


async def timed(tab: Tab, results: Results, kind: str, states: dict, *, fragment: bool = False, query: str = "",
                page: str = "", expect: tuple[str, ...] = (), home: str = "") -> None:
    """One timed interaction. A connection lost to a replica that went away is what a browser survives: it
    reconnects (through the proxy, to a replica that is up), reruns its page from its link (``home``), and the
    interaction is retried once; only a failure after that counts as an error."""
    start, began = results.now(), time.monotonic()
    drawn = await tab.rerun(states, fragment=fragment, query=query, page=page)
    if any(LOST in e for e in drawn["errors"]):
        try:
            await tab.open()
            tab.widgets.clear()  # a new session on another replica: its widgets are drawn anew
            await tab.rerun({}, query=home or query, page=page)
            results.samples.append(Sample("reconnected", results.now(), 0.0))
            drawn = await tab.rerun(states, fragment=fragment, query=query, page=page)
        except Exception as exc:
            drawn["errors"].append(f"reconnect failed: {type(exc).__name__}: {exc}")
    errors = drawn["errors"]
    if not errors and [e for e in expect if e not in drawn]:
        errors.append(f"nothing drawn of {', '.join(e for e in expect if e not in drawn)}")
    results.samples.append(Sample(kind, start, time.monotonic() - began, "; ".join(errors) or None))


async def switch_heads(tab: Tab, results: Results, rng: random.Random, times: int, think: tuple[float, float],
                       end_at: float, home: str = "") -> None:
    for _ in range(times):
        await asyncio.sleep(rng.uniform(*think))
        if results.now() >= end_at or "head" not in tab.widgets or not tab.head_options:
            return
        await timed(tab, results, "head switch", {"head": [rng.choice(tab.head_options)]}, fragment=True,
                    expect=("heatmap",), home=home)


async def link_student(url: str, results: Results, rng: random.Random, end_at: float, think) -> None:
    tab = Tab(url, results)
    await tab.open()
    try:
        await timed(tab, results, "shared link", {}, query=SHARED_LINK, expect=("translation", "heatmap"))
        while results.now() < end_at:
            await switch_heads(tab, results, rng, 2, think, end_at, SHARED_LINK)
            if rng.random() < 0.33 and results.now() < end_at:
                await asyncio.sleep(rng.uniform(*think))
                await timed(tab, results, "page switch", {}, page="decoding", query=SHARED_LINK)
                await timed(tab, results, "page switch", {}, page="", query=SHARED_LINK, expect=("translation",))
    finally:
        await tab.close()


async def own_student(url: str, results: Results, rng: random.Random, end_at: float, think,
                      sentences: Sentences) -> None:
    tab = Tab(url, results)
    await tab.open()
    try:
        await timed(tab, results, "page load", {})
        while results.now() < end_at:
            await asyncio.sleep(rng.uniform(*think))
            text = sentences.next()
            await timed(tab, results, "own sentence", {"text": text, "translate": True},
                        expect=("translation", "heatmap"))
            await switch_heads(tab, results, rng, 1, think, end_at, urllib.parse.urlencode({"text": text}))
            if rng.random() < 0.5 and results.now() < end_at:
                await timed(tab, results, "page switch", {}, page="decoding")
                await timed(tab, results, "page switch", {}, page="")
    finally:
        await tab.close()


async def hostile_student(url: str, results: Results, rng: random.Random, end_at: float) -> None:
    """Opens a hostile link, leaves after 2-5 s without waiting for it, and comes back a while later."""
    while results.now() < end_at:
        page, query = rng.choice(HOSTILE_LINKS)
        tab = Tab(url, results)
        try:
            await tab.open()
            await asyncio.wait_for(tab.rerun({}, query=query, page=page), rng.uniform(2, 5))
        except TimeoutError:
            pass  # the visitor closed the tab mid-decode: what the server must survive
        except Exception as exc:
            results.samples.append(Sample("hostile link", results.now(), 0.0, f"{type(exc).__name__}: {exc}"))
        finally:
            await tab.close()
        results.samples.append(Sample("hostile link (left early)", results.now(), 0.0))
        await asyncio.sleep(rng.uniform(20, 40))


async def sample_memory(pids: list[int], results: Results, end_at: float) -> None:
    while results.now() < end_at:
        results.memory.append((results.now(), total_rss(pids)))
        await asyncio.sleep(MEMORY_EVERY_S)


def total_rss(pids: list[int]) -> float:
    """RSS of the servers still running, MB."""
    return sum(rss_mb(pid) for pid in pids if Path(f"/proc/{pid}").exists())


def kill_replica(pids: list[int], results: Results) -> None:
    """Kill the first replica outright (SIGKILL, as a crash), and stop measuring it."""
    victim = pids.pop(0)
    os.kill(victim, signal.SIGKILL)
    print(f"  t={results.now():.0f} s: killed replica pid {victim}; {len(pids)} left", flush=True)


def seconds_to_idle(pids: list[int], limit_s: float = 60.0) -> float:
    """Seconds from now until the servers use under IDLE_SHARE of a core over 1 s (limit_s if never)."""
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        before, t0 = sum(cpu_seconds(pid) for pid in pids), time.monotonic()
        time.sleep(1.0)
        if (sum(cpu_seconds(pid) for pid in pids) - before) / (time.monotonic() - t0) < IDLE_SHARE:
            return time.monotonic() - began - 1.0
    return limit_s


async def run(args: argparse.Namespace, url: str, pids: list[int]) -> tuple[Results, float]:
    results, sentences, rng = Results(), Sentences(args.seed), random.Random(args.seed)
    warm = Tab(url, results)  # the lecturer opens the link first: model loaded, the shared result cached
    await warm.open()
    await warm.rerun({}, query=SHARED_LINK)
    await warm.close()
    results = Results()
    end_at, ramp = args.minutes * 60, min(60.0, args.minutes * 10)
    think = (args.think_min, args.think_max)

    async def session(i: int, role: str) -> None:
        await asyncio.sleep(ramp * i / args.sessions)
        own_rng = random.Random(rng.random())
        try:
            if role == "link":
                await link_student(url, results, own_rng, end_at, think)
            elif role == "own":
                await own_student(url, results, own_rng, end_at, think, sentences)
            else:
                await hostile_student(url, results, own_rng, end_at)
        except Exception as exc:  # a refused or lost connection
            results.samples.append(Sample(role, results.now(), 0.0, f"{type(exc).__name__}: {exc}"))

    memory = asyncio.create_task(sample_memory(pids, results, end_at + 60))
    if args.kill_at:
        asyncio.get_running_loop().call_later(args.kill_at, kill_replica, pids, results)
    await asyncio.gather(*(session(i, role) for i, role in enumerate(roles(args.sessions))))
    ended = results.now()
    idle = await asyncio.to_thread(seconds_to_idle, pids)
    memory.cancel()
    results.memory.append((results.now(), total_rss(pids)))
    print(f"the last tab closed at t={ended:.0f} s; the server was idle {idle:.1f} s later", flush=True)
    return results, idle


def report(results: Results, args: argparse.Namespace, idle_s: float, cpu_s: float, wall_s: float) -> bool:
    latency_table(results, sorted({s.kind for s in results.samples}))
    errors = results.errors()
    for message in sorted({s.error for s in errors})[:10]:
        print(f"  error: {message[:160]}")
    peak = max(mb for _, mb in results.memory)
    print(f"\nserver memory: highest {peak:.0f} MB; server CPU {cpu_s:.0f} s in {wall_s:.0f} s "
          f"({cpu_s / wall_s:.2f} cores); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    checks = [("errors", not errors, f"{len(errors)} (target 0)"),
              ("memory", peak <= TARGET_MEMORY_MB, f"{peak:.0f} MB (target <= {TARGET_MEMORY_MB} MB)"),
              ("idle after the last visitor", idle_s <= TARGET_IDLE_S, f"{idle_s:.1f} s (target <= 5 s)")]
    for kind, target in TARGETS.items():
        p95 = percentile([s.latency for s in results.samples if s.kind == kind and not s.error], 95)
        checks.append((f"p95 {kind}", p95 <= target, f"{p95:.2f} s (target <= {target:g} s)"))
    print(f"\nverdict ({args.sessions} sessions, {args.minutes:g} min, think {args.think_min:g}-{args.think_max:g} s):")
    for name, ok, detail in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {detail}")
    return all(ok for _, ok, _ in checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100, help=f"students (20-{MAX_SESSIONS})")
    parser.add_argument("--minutes", type=float, default=10, help=f"duration (at most {MAX_MINUTES})")
    parser.add_argument("--think-min", type=float, default=10.0, help="seconds between a student's interactions")
    parser.add_argument("--think-max", type=float, default=30.0)
    parser.add_argument("--url", help=f"an app already running on {HOST} (e.g. behind the proxy); default: start one")
    parser.add_argument("--pids", default="", help="with --url: the server processes to measure, comma-separated")
    parser.add_argument("--kill-at", type=float, default=0, help="with --url: kill the first of --pids this many "
                        "seconds into the run (a replica crash; its sessions must reconnect to another)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 20 <= args.sessions <= MAX_SESSIONS or not 0 < args.minutes <= MAX_MINUTES:
        parser.error(f"need 20 <= --sessions <= {MAX_SESSIONS} and 0 < --minutes <= {MAX_MINUTES}")
    if args.url and (urllib.parse.urlsplit(args.url).hostname != HOST or not args.pids):
        parser.error(f"--url must be on {HOST} and come with --pids")
    if args.kill_at and (not args.url or len(args.pids.split(",")) < 2):
        parser.error("--kill-at needs --url and at least two --pids (one replica must stay up)")
    process = None
    if args.url:
        url, pids = args.url.rstrip("/"), [int(p) for p in args.pids.split(",")]
    else:
        log_path = Path(tempfile.mkdtemp(prefix="hall_")) / "server.log"
        process, url = start_server(log_path)
        pids = [process.pid]
    print(f"{args.sessions} sessions for {args.minutes:g} min against {url} (pids {pids})", flush=True)
    try:
        cpu_before, began = sum(cpu_seconds(p) for p in pids), time.monotonic()
        results, idle = asyncio.run(run(args, url, pids))
        cpu = sum(cpu_seconds(p) for p in pids) - cpu_before
        return 0 if report(results, args, idle, cpu, time.monotonic() - began) else 1
    finally:
        if process is not None:
            stop_server(process)


if __name__ == "__main__":
    sys.exit(main())
