"""The bundled handwritten digits (data/digits.npz, see data/DIGITS_ATTRIBUTION.md) and their fixed split.

numpy only, so the app and the tests read the same images training used, with no scikit-learn at run time.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

DIGITS_PATH = Path(__file__).resolve().parents[2] / "data" / "digits.npz"
SPLITS = ("train", "valid", "test")
MAX_INK = 16  # each pixel counts the ink of a 4x4 block of the original 32x32 bitmap
SIDE = 8


@dataclass(frozen=True)
class Digits:
    """images uint8 [N, 8, 8] (ink 0..MAX_INK), labels uint8 [N] (0..9), split uint8 [N] (index into SPLITS)."""

    images: np.ndarray
    labels: np.ndarray
    split: np.ndarray

    def part(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(images [n, 8, 8], labels [n]) of one split, in file order."""
        chosen = self.split == SPLITS.index(name)
        return self.images[chosen], self.labels[chosen]


def load_digits(path: str | Path = DIGITS_PATH) -> Digits:
    """Read and check the file: shapes, dtypes and value ranges, so a damaged copy fails here, not in training."""
    with np.load(path, allow_pickle=False) as data:
        images, labels, split = data["images"], data["labels"], data["split"]
        names = tuple(str(s) for s in data["split_names"])
    if names != SPLITS:
        raise ValueError(f"{path}: split names {names}, expected {SPLITS}")
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (SIDE, SIDE) or images.max() > MAX_INK:
        raise ValueError(f"{path}: images must be uint8 [N, {SIDE}, {SIDE}] with ink 0..{MAX_INK}")
    if labels.shape != images.shape[:1] or split.shape != images.shape[:1] or labels.max() > 9 \
            or split.max() >= len(SPLITS):
        raise ValueError(f"{path}: labels and split must hold one valid entry per image")
    return Digits(images=images, labels=labels, split=split)
