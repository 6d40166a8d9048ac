"""What the user can take away: the matrix on screen as CSV, the whole translation trace as JSON."""
from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from model.serving.inference import Translation
from model.serving.serialize import translation_to_dict
from model.tokenization.joint import Tokenizer


def _unique(labels: Sequence[str]) -> list[str]:
    """Position-prefixed labels ("3 ▁l"): pieces repeat, and a spreadsheet needs distinct headers."""
    return [f"{i} {label}" for i, label in enumerate(labels)]


def matrix_frame(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> pd.DataFrame:
    """matrix [Q, K] with rows = queries and columns = keys, both labelled "<position> <piece>"."""
    return pd.DataFrame(np.asarray(matrix), index=pd.Index(_unique(row_labels), name="query \\ key"),
                        columns=_unique(col_labels))


def matrix_csv(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> bytes:
    """UTF-8 CSV (with BOM, so spreadsheet programs read "▁" and umlauts correctly)."""
    return matrix_frame(matrix, row_labels, col_labels).to_csv(float_format="%.6f").encode("utf-8-sig")


def trace_json(translation: Translation, tokenizer: Tokenizer, decode: dict) -> bytes:
    """The whole translation (pieces, steps, n-best, every attention map) as model.serving.serialize writes it."""
    data = translation_to_dict(translation, tokenizer, decode)
    return json.dumps(data, ensure_ascii=False).encode("utf-8")
