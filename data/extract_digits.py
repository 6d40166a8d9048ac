"""Extract scikit-learn's bundled handwritten digits into data/digits.npz, once, so nothing needs scikit-learn later.

    .venv/bin/pip install scikit-learn && .venv/bin/python data/extract_digits.py

The 1,797 images (8x8, ink 0..16, 10 classes) become uint8 arrays with a fixed split, stratified by class:
test 20%, valid 10%, train the rest. Identical images are kept in one split, so no test image is also a
training image. The split uses numpy's seeded generator only, so the file is the same on every run.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

SPLITS = ("train", "valid", "test")  # the codes 0, 1, 2 of the stored ``split`` array
FRACTIONS = {"test": 0.2, "valid": 0.1}
SEED = 0


def stratified_split(images: np.ndarray, labels: np.ndarray, seed: int = SEED) -> np.ndarray:
    """One split code per image: per class, duplicate groups shuffled, then the first 20% test, next 10% valid."""
    keys = np.unique(images.reshape(len(images), -1), axis=0, return_inverse=True)[1].ravel()  # group id per image
    rng = np.random.default_rng(seed)
    split = np.zeros(len(labels), dtype=np.uint8)
    for label in np.unique(labels):
        groups = rng.permutation(np.unique(keys[labels == label]))
        n = (labels == label).sum()
        taken = {"test": 0, "valid": 0}
        for group in groups:
            members = (keys == group) & (labels == label)
            for name in ("test", "valid"):
                if taken[name] < round(FRACTIONS[name] * n):
                    split[members] = SPLITS.index(name)
                    taken[name] += int(members.sum())
                    break
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "digits.npz"))
    args = parser.parse_args()
    bunch = load_digits()
    images = bunch.images.astype(np.uint8)  # [N, 8, 8], integers 0..16 stored as float64 by scikit-learn
    if not np.array_equal(images, bunch.images):
        raise SystemExit("the digits are not whole ink counts: refusing to round them")
    labels = bunch.target.astype(np.uint8)  # [N]
    split = stratified_split(images, labels)
    np.savez_compressed(args.out, images=images, labels=labels, split=split, split_names=np.array(SPLITS))
    counts = {name: int((split == i).sum()) for i, name in enumerate(SPLITS)}
    print(f"wrote {args.out}: {len(labels)} images, {counts}")


if __name__ == "__main__":
    main()
