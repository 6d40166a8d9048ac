"""A digit drawn with a mouse or a finger, made into the kind of image the models were trained on.

The bundled digits (UCI "optdigits", via scikit-learn; data/extract_digits.py) were made by NIST's programs: each
handwritten digit was scaled by its bounding box to fill a 32x32 bitmap (the longer side fills it, the aspect kept,
centred), and the bitmap cut into 4x4 blocks whose inked pixels were counted, 0..16. Every bundled digit's ink
spans all 8 rows; most span 5 to 7 columns. A drawing is treated the same way: its strokes (polylines in any
coordinates, y down) are scaled by their bounding box into the 32x32 frame, drawn there with a pen of fixed width in
that frame (so a small and a large drawing of the same digit give the same image), and counted per 4x4 block.
numpy only.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from model.vision.digits import MAX_INK, SIDE

BITMAP = 32  # the NIST bitmap's side, in pixels
BLOCK = BITMAP // SIDE  # 4: each image pixel counts a BLOCK x BLOCK square of the bitmap
PEN_RADIUS = 2.0  # bitmap pixels: a pen 4 px wide, as thick as the strokes of the bundled digits look
MAX_STROKES = 64  # what a visitor's drawing may hold, checked before any work
MAX_POINTS = 4000

Stroke = Sequence[Sequence[float]]  # [(x, y), ...]


class DrawingError(ValueError):
    """A drawing that cannot be read: too large, or not numbers."""


def check_strokes(strokes: Sequence[Stroke]) -> list[np.ndarray]:
    """The strokes as float arrays [P, 2], each with one point or more; DrawingError for anything a browser would
    not send (too many strokes or points, non-finite or non-numeric coordinates)."""
    if len(strokes) > MAX_STROKES:
        raise DrawingError(f"a drawing has at most {MAX_STROKES} strokes, this one {len(strokes)}")
    if sum(len(s) for s in strokes) > MAX_POINTS:
        raise DrawingError(f"a drawing has at most {MAX_POINTS} points")
    arrays = []
    for stroke in strokes:
        try:
            points = np.asarray(stroke, dtype=np.float64).reshape(-1, 2)  # [P, 2]
        except (TypeError, ValueError):
            raise DrawingError("a stroke's points must be pairs of numbers") from None
        if not np.isfinite(points).all():
            raise DrawingError("a stroke's points must be finite numbers")
        if len(points):
            arrays.append(points)
    return arrays


def _segment_distances(pixels: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Distance of each pixel centre [N, 2] to the nearest of the segments starts[S, 2] -> ends[S, 2]: [N]."""
    direction = ends - starts  # [S, 2]
    length2 = np.maximum((direction ** 2).sum(-1), 1e-12)  # [S]
    t = ((pixels[:, None, :] - starts[None]) * direction[None]).sum(-1) / length2  # [N, S]
    nearest = starts[None] + np.clip(t, 0.0, 1.0)[..., None] * direction[None]  # [N, S, 2]
    return np.sqrt(((pixels[:, None, :] - nearest) ** 2).sum(-1)).min(axis=1)  # [N]


def bitmap(strokes: Sequence[Stroke], pen_radius: float = PEN_RADIUS) -> np.ndarray:
    """The 32x32 bitmap (bool) of a drawing, its bounding box scaled to fill the frame (the longer side, centred,
    a pen's radius from the edges); all False for a drawing without points."""
    arrays = check_strokes(strokes)
    frame = np.zeros((BITMAP, BITMAP), dtype=bool)
    if not arrays:
        return frame
    every = np.concatenate(arrays)  # [P, 2]
    low, high = every.min(0), every.max(0)
    size = float((high - low).max())
    usable = BITMAP - 2 * pen_radius
    scale = usable / size if size > 0 else 0.0
    centre = (low + high) / 2
    placed = [(a - centre) * scale + BITMAP / 2 for a in arrays]  # in bitmap pixels, centred
    starts = np.concatenate([p[:-1] if len(p) > 1 else p for p in placed])  # [S, 2]; a dot is a zero-length segment
    ends = np.concatenate([p[1:] if len(p) > 1 else p for p in placed])
    grid = np.stack(np.meshgrid(np.arange(BITMAP) + 0.5, np.arange(BITMAP) + 0.5), -1).reshape(-1, 2)  # [1024, 2] x, y
    return (_segment_distances(grid, starts, ends) <= pen_radius).reshape(BITMAP, BITMAP)


def drawing_to_digit(strokes: Sequence[Stroke], pen_radius: float = PEN_RADIUS) -> np.ndarray:
    """A drawing as a bundled digit: uint8 [8, 8], each pixel the inked pixels of its 4x4 block (0..16)."""
    bits = bitmap(strokes, pen_radius)
    counts = bits.reshape(SIDE, BLOCK, SIDE, BLOCK).sum(axis=(1, 3))  # [8, 8]
    assert counts.max() <= MAX_INK
    return counts.astype(np.uint8)


def stroke_length(strokes: Sequence[Stroke]) -> float:
    """Total length of the strokes in their own units (0 for dots): how much was drawn."""
    return float(sum(math.fsum(np.sqrt((np.diff(a, axis=0) ** 2).sum(-1))) for a in check_strokes(strokes)))
