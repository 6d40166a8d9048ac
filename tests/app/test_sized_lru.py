"""The caches every session shares stay within their bytes, whatever is put in them; the explorer's shared heatmaps
are one of them, and a figure is counted at what it holds."""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import app.explorer as explorer
from app.charts.attention import heatmap_figure
from app.charts.figure_size import figure_nbytes
from app.serving.sized_lru import SizedLRU, shared

puts = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 1000)), max_size=60)


@given(puts, st.integers(1, 10), st.integers(1, 3000))
def test_a_sized_lru_holds_at_most_its_bytes_and_count_and_keeps_the_newest(items, capacity, max_bytes):
    cache: SizedLRU[int, int] = SizedLRU(capacity, max_bytes, size=lambda value: value)
    for key, value in items:
        cache.put(key, value)
        assert cache.get(key) == value  # the value just put stays, even alone over the budget
        held = {k: cache.get(k) for k in range(21) if cache.get(k) is not None}
        assert cache.bytes == sum(held.values()) and len(held) == len(cache) <= capacity
        assert cache.bytes <= max_bytes or len(cache) == 1


def test_the_least_recently_used_goes_first():
    cache: SizedLRU[str, int] = SizedLRU(10, 30, size=lambda value: value)
    cache.put("a", 10)
    cache.put("b", 10)
    cache.put("c", 10)
    cache.get("a")  # now the most recently used
    cache.put("d", 10)
    assert cache.get("b") is None and cache.get("a") == cache.get("c") == cache.get("d") == 10


def test_a_shared_function_is_built_once_per_key_leaving_out_underscored_arguments():
    built = []

    @shared(max_entries=8, max_bytes=100, size=len)
    def row(uid: int, *, _data: list) -> str:
        built.append(uid)
        return "x" * len(_data)

    assert row(1, _data=[0, 0]) == "xx" and row(1, _data=[]) == "xx"  # _data is not part of the key
    assert row(2, _data=[0]) == "x" and built == [1, 2]
    row.clear()
    row(1, _data=[])
    assert built == [1, 2, 1]


def test_the_explorers_shared_heatmaps_are_bounded_by_bytes():
    assert isinstance(explorer.shared_heatmap.cache, SizedLRU)
    assert explorer.shared_heatmap.cache.max_bytes == explorer.SHARED_FIGURE_BYTES == 64 * 2**20


def _heatmap(n_q: int, n_k: int, masked: bool):
    rng = np.random.default_rng(n_q + n_k)
    return heatmap_figure(rng.random((n_q, n_k), dtype=np.float32), [f"▁q{i}" for i in range(n_q)],
                          [f"▁k{i}" for i in range(n_k)], title="t", predicts=[f"▁p{i}" for i in range(n_q)],
                          mask=np.tril(np.ones((n_q, n_k), bool)) if masked else None)


@pytest.mark.parametrize(("n_q", "n_k", "masked"), [(40, 30, False), (316, 170, False), (316, 316, True),
                                                     (700, 700, True)])
def test_a_heatmap_is_counted_at_what_it_holds(n_q, n_k, masked):
    _heatmap(3, 3, masked)  # Plotly's validators, built once per process, are not the figure's
    gc.collect()
    tracemalloc.start()
    try:
        fig = _heatmap(n_q, n_k, masked)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert 0.7 <= figure_nbytes(fig) / held <= 1.4


def test_heatmaps_past_the_budget_evict_the_oldest():
    one = figure_nbytes(_heatmap(200, 200, True))
    cache: SizedLRU[int, object] = SizedLRU(512, 3 * one, size=figure_nbytes)
    for uid in range(10):
        cache.put(uid, _heatmap(200, 200, True))
    assert len(cache) == 3 and cache.bytes <= 3 * one and cache.get(9) is not None and cache.get(0) is None
