"""The server gives freed memory back to the system (app.serving.memory): after a heavy decode, the pages its freed
blocks left inside glibc's arenas are returned."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# 6,000 blocks of 32 kB (under the 64 kB mmap threshold: inside the arena, as a decode's attention rows are), all
# freed but the last, which keeps the arena's top in use so glibc cannot shrink it on its own.
FREED = """
import numpy as np
from app.serving.memory import give_back, limit_fragmentation

def resident_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

assert limit_fragmentation()
blocks = [np.ones(4096) for _ in range(6000)]  # 6,000 x 32 kB = 188 MB
last = blocks[-1]
del blocks
freed = resident_mb()
assert give_back()
print(freed, resident_mb())
"""


def test_give_back_returns_the_pages_freed_inside_the_arenas():
    out = subprocess.run([sys.executable, "-c", FREED], cwd=ROOT, capture_output=True, text=True, check=True)
    freed_mb, after_mb = map(float, out.stdout.split())
    assert freed_mb - after_mb > 150  # of the 188 MB freed, held until given back
