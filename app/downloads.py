"""What the user can take away: the matrix on screen as CSV or JSON, the figure on screen as a standalone HTML file,
the whole translation trace as JSON."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.models.registry import ROOT
from model.serving.inference import Translation
from model.serving.serialize import translation_to_dict
from model.tokenization.kinds import TextTokenizer


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


def matrix_json(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], about: dict) -> bytes:
    """The matrix on screen as JSON: ``about`` (what it is: kind, layer, head, model, sentence), the query and key
    pieces in order, and ``weights`` [Q][K] as the figure draws them (float32 values, written exactly)."""
    values = np.asarray(matrix, dtype=np.float32)
    data = {**about, "queries": list(row_labels), "keys": list(col_labels), "rows": "queries", "columns": "keys",
            "weights": values.tolist()}
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def figure_html(fig: go.Figure) -> bytes:
    """A figure as a standalone HTML file for a paper's supplement or a handout: it needs no network (Plotly's
    JavaScript, about 4.7 MB, is inside) and keeps hover and zoom."""
    return fig.to_html(include_plotlyjs=True, full_html=True, config={"displaylogo": False}).encode("utf-8")


def checkpoint_name(model_name: str, path: Path | None) -> str:
    """What the trace's ``checkpoint`` field says: the directory as the CLI's --checkpoint takes it, relative to the
    project (pretrained/en-de), never the server's own file system; an upload by its name in the app."""
    if path is not None and path.resolve().is_relative_to(ROOT):
        return path.resolve().relative_to(ROOT).as_posix()
    return model_name


def trace_json(translation: Translation, tokenizer: TextTokenizer, checkpoint: str) -> bytes:
    """The whole translation (pieces, steps, n-best, every attention map) as model.serving.serialize writes it for
    the CLI's --json: the same schema, field for field. ``checkpoint``: the model's name as a CLI user would give it."""
    data = translation_to_dict(translation, tokenizer, checkpoint=checkpoint)
    return json.dumps(data, ensure_ascii=False).encode("utf-8")
