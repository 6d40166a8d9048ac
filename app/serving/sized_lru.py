"""Caches every session shares, bounded by the memory their values hold and not only by how many there are.

Streamlit's ``st.cache_resource(max_entries=...)`` bounds a cache by its count alone, yet what it holds varies a
hundredfold: an explorer heatmap holds about 0.2 MB for a sentence and 4.6 MB for 1,024 pieces (``figure_nbytes``), a
translation under 1 MB for a sentence and ~160 MB for a hostile link. A ``SizedLRU`` counts each value's bytes when
it is stored and lets the least recently used go once the count or the bytes are over their limits, so the server's
memory stays where docs/serving.md says however long a class keeps asking.
"""
from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, ParamSpec, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
P = ParamSpec("P")


class SizedLRU(Generic[K, V]):
    """Thread-safe LRU of at most ``capacity`` values and ``max_bytes`` bytes (``size(value)``, taken once when it is
    put). The least recently used go first; the value just put always stays, even alone over the budget."""

    def __init__(self, capacity: int, max_bytes: int, size: Callable[[V], int]) -> None:
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size
        self.capacity, self.max_bytes, self.bytes = capacity, max_bytes, 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V) -> None:
        size = self._size(value)
        with self._lock:
            if key in self._items:
                self.bytes -= self._items.pop(key)[1]
            self._items[key] = (value, size)
            self.bytes += size
            while len(self._items) > 1 and (len(self._items) > self.capacity or self.bytes > self.max_bytes):
                self.bytes -= self._items.popitem(last=False)[1][1]  # the least recently used goes first

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


class Shared(Generic[P, V]):
    """A function whose results every session shares through a SizedLRU, keyed like ``st.cache_resource``: by its
    arguments, leaving out those whose name starts with ``_`` (the unhashable inputs the key already stands for).
    Concurrent calls for one key build it once."""

    def __init__(self, func: Callable[P, V], cache: SizedLRU[tuple, V]) -> None:
        self._func, self.cache = func, cache
        self._signature = inspect.signature(func)
        self._building: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> V:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple((name, value) for name, value in bound.arguments.items() if not name.startswith("_"))
        found = self.cache.get(key)
        if found is not None:
            return found
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        try:
            with building:
                found = self.cache.get(key)
                if found is None:
                    found = self._func(*args, **kwargs)
                    self.cache.put(key, found)
        finally:  # a build that raised leaves no lock behind either
            with self._lock:
                self._building.pop(key, None)
        return found

    def clear(self) -> None:
        self.cache.clear()


def shared(max_entries: int, max_bytes: int, size: Callable[[V], int]) -> Callable[[Callable[P, V]], Shared[P, V]]:
    """``@shared(512, 64 * 2**20, figure_nbytes)``: like ``@st.cache_resource(max_entries=512)``, also bounded by the
    bytes of what it holds (``Shared``)."""
    def wrap(func: Callable[P, V]) -> Shared[P, V]:
        return Shared(func, SizedLRU(max_entries, max_bytes, size))
    return wrap
