"""Handwritten-like digits as mouse strokes, written by the tests: one shape per class (unit box, y down), drawn in
varied sizes, positions, widths and slants with a little tremor, as people draw them on a canvas."""
from __future__ import annotations

import itertools
import math

import numpy as np

# One template per digit: strokes of (x, y) points in the unit box, y down.
TEMPLATES: dict[int, list[list[tuple[float, float]]]] = {
    0: [[(0.5 + 0.32 * math.sin(2 * math.pi * k / 24), 0.5 - 0.46 * math.cos(2 * math.pi * k / 24))
         for k in range(25)]],
    1: [[(0.3, 0.25), (0.55, 0.03), (0.55, 0.97)]],
    2: [[(0.2, 0.25), (0.3, 0.08), (0.5, 0.03), (0.7, 0.08), (0.78, 0.28), (0.68, 0.48), (0.2, 0.95),
         (0.85, 0.95)]],
    3: [[(0.2, 0.1), (0.5, 0.03), (0.75, 0.12), (0.78, 0.3), (0.6, 0.45), (0.4, 0.48), (0.62, 0.52), (0.8, 0.68),
         (0.76, 0.88), (0.52, 0.97), (0.2, 0.9)]],
    4: [[(0.45, 0.02), (0.15, 0.6), (0.85, 0.6)], [(0.62, 0.25), (0.6, 0.98)]],
    5: [[(0.8, 0.04), (0.27, 0.04), (0.22, 0.45), (0.5, 0.38), (0.75, 0.5), (0.8, 0.72), (0.66, 0.92),
         (0.42, 0.97), (0.18, 0.88)]],
    6: [[(0.62, 0.02), (0.42, 0.2), (0.28, 0.45), (0.24, 0.7), (0.34, 0.92), (0.55, 0.98), (0.76, 0.86),
         (0.78, 0.66), (0.6, 0.52), (0.4, 0.52), (0.26, 0.64)]],
    7: [[(0.15, 0.05), (0.85, 0.05), (0.52, 0.52), (0.38, 0.97)], [(0.32, 0.5), (0.75, 0.5)]],
    8: [[(0.5, 0.5), (0.26, 0.3), (0.3, 0.08), (0.5, 0.03), (0.7, 0.08), (0.74, 0.3), (0.5, 0.5), (0.22, 0.72),
         (0.3, 0.93), (0.5, 0.98), (0.7, 0.93), (0.78, 0.72), (0.5, 0.5)]],
    9: [[(0.76, 0.3), (0.55, 0.46), (0.3, 0.4), (0.24, 0.2), (0.45, 0.03), (0.7, 0.08), (0.76, 0.3), (0.72, 0.6),
         (0.62, 0.97)]],
}


def densified(stroke: list[tuple[float, float]], step: float = 0.03) -> list[tuple[float, float]]:
    """The polyline with points every ``step`` or closer, as a mouse reports a moving pen."""
    points = [stroke[0]]
    for (x0, y0), (x1, y1) in itertools.pairwise(stroke):
        n = max(1, math.ceil(math.hypot(x1 - x0, y1 - y0) / step))
        points += [(x0 + (x1 - x0) * k / n, y0 + (y1 - y0) * k / n) for k in range(1, n + 1)]
    return points


def variant(digit: int, index: int, side: float) -> list[list[tuple[float, float]]]:
    """Drawing ``index`` of ``digit`` on a square canvas of ``side`` px: its own height (35-90% of the canvas),
    width (80-115%), slant, place and tremor, the same every run (seeded)."""
    rng = np.random.default_rng(1000 * digit + index)
    height = side * rng.uniform(0.35, 0.9)
    width = height * rng.uniform(0.8, 1.15) * 0.75
    slant = rng.uniform(-0.15, 0.15)
    left = rng.uniform(0.02 * side, side - width - 0.02 * side - abs(slant) * height)
    top = rng.uniform(0.02 * side, 0.98 * side - height)
    left += max(0.0, -slant) * height
    strokes = []
    for stroke in TEMPLATES[digit]:
        points = []
        for x, y in densified(stroke):
            jx, jy = rng.normal(0, 0.008, 2)
            px = left + (x + jx) * width + slant * (1 - y) * height
            py = top + (y + jy) * height
            points.append((float(np.clip(px, 1, side - 1)), float(np.clip(py, 1, side - 1))))
        strokes.append(points)
    return strokes
