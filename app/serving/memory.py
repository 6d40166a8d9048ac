"""Keep the server's memory flat: give freed memory back to the system.

A decode allocates thousands of mid-sized tensors (one attention row per layer and step) from whichever thread
serves the session. glibc gives every thread its own arena and raises its mmap threshold as large blocks are
freed, so freed memory stays in the process: measured here, the same 190 MB decode three times in a row held
520, 520, then 893 MB resident. With at most two arenas and a fixed 64 KiB mmap threshold it held 490-500 MB
each time. No effect (and no error) where the C library is not glibc.

Even so, a heavy decode leaves freed memory inside the arenas: ``give_back`` returns their free pages to the system
(``malloc_trim``) once one has finished.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8  # mallopt parameters from glibc's malloc.h


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "mallopt") else None


@functools.cache
def limit_fragmentation() -> bool:
    """Set glibc's allocator for a long-lived server (once per process: cached); whether it could."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(M_MMAP_THRESHOLD, 64 * 1024)) and bool(libc.mallopt(M_ARENA_MAX, 2))


def give_back() -> bool:
    """Return the free pages of every arena to the system (glibc's malloc_trim); whether any were returned."""
    libc = _glibc()
    return libc is not None and hasattr(libc, "malloc_trim") and bool(libc.malloc_trim(0))
