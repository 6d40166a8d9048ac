"""Figures for the Masks page: the padded batch, the masks as grids, scores before and after masking, weights."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.attention import heatmap_figure
from app.charts.axes import COLORBAR_PX, COLUMN_PX, fits_text, matrix_height, pair_labels, plot_px, token_axes
from app.charts.style import MASKED_COLOR, WEIGHT_COLORSCALE, styled

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

ALLOWED_COLOR = "#3a78b5"




def _matrix_axes(fig: go.Figure, key_labels: list[str], query_labels: list[str], title: str, columns: int,
                 x_title: str = "key", y_title: str = "query", colorbar: bool = True) -> go.Figure:
    """Piece axes and height of a query x key matrix drawn in one of ``columns`` page columns (its colour bar,
    if any, takes from the keys' room)."""
    height = matrix_height(len(query_labels))
    token_axes(fig, key_labels, query_labels, x_title, y_title, x_px=COLUMN_PX[columns] - COLORBAR_PX * colorbar,
               y_px=plot_px(height))
    return styled(fig, title, height)


def mask_grid(mask: np.ndarray, query_labels: list[str], key_labels: list[str], title: str,
              x_title: str = "key", y_title: str = "query", columns: int = 3) -> go.Figure:
    """A bool mask [Q, K] as coloured cells: True (may attend) blue (with ✓ where cells have room), False
    (masked) grey; drawn in one of ``columns`` page columns."""
    mask = np.asarray(mask, dtype=bool)
    allowed = np.where(mask, "may attend", "masked")
    custom = np.concatenate([pair_labels(query_labels, key_labels), allowed[..., None]], axis=-1)
    ticks = fits_text(mask.shape[0], mask.shape[1], matrix_height(len(query_labels)), columns, cell_px=14,
                      colorbar=False)
    fig = go.Figure(go.Heatmap(
        z=mask.astype(np.int8), zmin=0, zmax=1, colorscale=[[0, MASKED_COLOR], [1, ALLOWED_COLOR]], showscale=False,
        xgap=1, ygap=1, customdata=custom, text=np.where(mask, "✓", "") if ticks else None,
        texttemplate="%{text}" if ticks else None, textfont=dict(color="white", size=13),
        hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>%{customdata[2]}<extra></extra>"))
    return _matrix_axes(fig, key_labels, query_labels, title, columns, x_title, y_title, colorbar=False)


def unmasked_scores(scores: np.ndarray, mask: np.ndarray, query_labels: list[str], key_labels: list[str],
                    title: str, columns: int = 2) -> go.Figure:
    """QK^T / sqrt(d_k) [Q, K] as computed, before the mask: every cell has a real value; the cells the mask
    will overwrite carry a small cross in their corner."""
    mask = np.asarray(mask, dtype=bool)
    z = np.asarray(scores, dtype=np.float64)
    bound = float(np.abs(z).max()) if z.size else 1.0
    text: np.ndarray | None = np.char.mod("%.1f", z)
    text = text if fits_text(z.shape[0], z.shape[1], matrix_height(len(query_labels)), columns, text=text) else None
    status = np.where(mask, "kept", "will be masked")
    custom = np.concatenate([pair_labels(query_labels, key_labels), status[..., None]], axis=-1)
    fig = go.Figure(go.Heatmap(
        z=z, zmid=0, zmin=-bound, zmax=bound, colorscale="RdBu_r", xgap=1, ygap=1, customdata=custom,
        text=text, texttemplate="%{text}" if text is not None else None, textfont=dict(size=11),
        colorbar=dict(title=dict(text="score")),
        hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>score %{z:.3f} (%{customdata[2]})"
                      "<extra></extra>"))
    rows, cols = np.nonzero(~mask)
    if rows.size:
        fig.add_trace(go.Scatter(x=cols + 0.3, y=rows - 0.28, mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="x-thin", size=9,
                                             line=dict(width=1.5, color="rgba(60,60,60,0.8)"))))
    return _matrix_axes(fig, key_labels, query_labels, title, columns)


def masked_scores(scores: np.ndarray, mask: np.ndarray, query_labels: list[str], key_labels: list[str],
                  title: str, columns: int = 2) -> go.Figure:
    """Softmax inputs [Q, K]: allowed cells coloured by value, masked cells grey and labelled −∞.

    The model fills masked scores with float32's most negative number; drawing that would wash out
    the colour scale, so those cells are left empty (NaN) on a grey background instead.
    """
    mask = np.asarray(mask, dtype=bool)
    z = np.where(mask, np.asarray(scores, dtype=np.float64), np.nan)
    finite = np.abs(z[mask]).max() if mask.any() else 1.0
    text: np.ndarray | None = np.where(mask, np.char.mod("%.1f", np.nan_to_num(z)), "−∞")
    text = text if fits_text(z.shape[0], z.shape[1], matrix_height(len(query_labels)), columns, text=text) else None
    value = np.where(mask, np.char.mod("%.3f", np.nan_to_num(z)), "masked (−∞)")
    custom = np.concatenate([pair_labels(query_labels, key_labels), value[..., None]], axis=-1)
    fig = go.Figure(go.Heatmap(
        z=z, zmid=0, zmin=-finite, zmax=finite, colorscale="RdBu_r", xgap=1, ygap=1, customdata=custom,
        text=text, texttemplate="%{text}" if text is not None else None, textfont=dict(size=11),
        colorbar=dict(title=dict(text="score")), hoverongaps=True,
        hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>score %{customdata[2]}<extra></extra>"))
    fig.update_layout(plot_bgcolor=MASKED_COLOR)
    return _matrix_axes(fig, key_labels, query_labels, title, columns)


TEXT_MAX_CELLS = 900  # up to 30 x 30 each cell prints its weight; larger maps are the explorer's light heatmap


def masked_weights(weights: np.ndarray, mask: np.ndarray, query_labels: list[str], key_labels: list[str],
                   title: str, columns: int = 2) -> go.Figure:
    """Post-softmax weights [Q, K] exactly as the model produced them; masked cells (exactly 0) read "0" and are
    grey. Past TEXT_MAX_CELLS cells there is no room for numbers: the explorer's heatmap with the mask overlay
    (hover from the axes, not a label pair per cell: 1.7 MB at 500 x 500 pieces instead of 27 MB)."""
    mask = np.asarray(mask, dtype=bool)
    weights = np.asarray(weights)
    if weights.size > TEXT_MAX_CELLS:
        return heatmap_figure(weights, query_labels, key_labels, title=title, mask=mask)
    text = np.where(mask, np.char.mod("%.2f", weights), "0")
    shown = fits_text(weights.shape[0], weights.shape[1], matrix_height(len(query_labels)), columns, text=text)
    fig = go.Figure(go.Heatmap(
        z=weights, zmin=0, zmax=1, colorscale=WEIGHT_COLORSCALE, xgap=1, ygap=1,
        customdata=pair_labels(query_labels, key_labels), text=text if shown else None,
        texttemplate="%{text}" if shown else None, textfont=dict(size=11),
        colorbar=dict(title=dict(text="weight")),
        hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.4f}<extra></extra>"))
    if not mask.all():  # masked cells in grey on top, so "exactly 0 because masked" differs from "small weight"
        fig.add_trace(go.Heatmap(
            z=np.where(mask, np.nan, 1.0), zmin=0, zmax=1, colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
            showscale=False, xgap=1, ygap=1, text=np.where(mask, "", "0") if shown else None,
            texttemplate="%{text}" if shown else None,
            textfont=dict(size=11, color="#666"), customdata=pair_labels(query_labels, key_labels), hoverongaps=False,
            hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>masked: weight exactly 0<extra></extra>"))
    return _matrix_axes(fig, key_labels, query_labels, title, columns)


def batch_table(rows: dict[str, list[str]]) -> pd.DataFrame:
    """Token pieces per row label, one column per position (rows are already padded to equal length)."""
    width = max(len(v) for v in rows.values())
    return pd.DataFrame([v + [""] * (width - len(v)) for v in rows.values()], index=list(rows),
                        columns=[str(i) for i in range(width)])


def highlight_pads(table: pd.DataFrame, padded: Sequence[Sequence[bool]], bold: Sequence[str] = ("<s>", "</s>")
                   ) -> Styler:
    """Styler: padded cells in the masked grey, the ``bold`` pieces (start and end) in bold, so padding stands out
    on a projector. ``padded`` holds one flag per piece of each row (True = padding), taken from the masks, not
    from the piece: Marian's decoder starts with a <pad> that is no padding."""
    if len(padded) != len(table) or any(len(flags) > table.shape[1] for flags in padded):
        raise ValueError(f"padding flags for {len(padded)} rows do not fit a table of shape {table.shape}")
    grid = np.array([list(flags) + [False] * (table.shape[1] - len(flags)) for flags in padded], dtype=bool)
    grey, strong = f"background-color: {MASKED_COLOR}; color: #555", "font-weight: bold"
    css = np.where(grid, grey, np.where(table.isin(list(bold)).to_numpy(), strong, ""))
    return table.style.apply(lambda _: pd.DataFrame(css, index=table.index, columns=table.columns), axis=None)
