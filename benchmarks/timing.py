"""Timing that survives a shared, noisy machine: every case warmed up, then the cases interleaved round by round so
that a burst of load hits them alike, and medians compared as ratios within one run."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def medians(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each case over ``repeats`` interleaved rounds, after one warm-up call each."""
    for fn in cases.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    return {name: statistics.median(values) for name, values in times.items()}
