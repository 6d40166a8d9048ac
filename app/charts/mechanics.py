"""Figures for the Mechanics page: every stage of one attention head with real numbers, the score
functions side by side, soft vs hard attention, and the sqrt(d_k) saturation argument."""
from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.axes import (
    COLORBAR_PX,
    COLUMN_PX,
    PIECE_ROOM_PX,
    ROW_AXIS_PX,
    fits_text,
    indexed_labels,
    matrix_height,
    pair_labels,
    plot_px,
    token_axes,
)
from app.charts.masks import masked_weights
from app.charts.style import DIVERGING_COLORSCALE, HEAD_COLORS, MASKED_COLOR, mark_height, styled

HIGHLIGHT = "#e6550d"
SCALED_COLOR, UNSCALED_COLOR = "#1f77b4", "#d62728"


def highlight_row(fig: go.Figure, row: int, n_cols: int, **where: Any) -> go.Figure:
    """Outline matrix row ``row`` (the selected query) in orange."""
    fig.add_shape(type="rect", x0=-0.5, x1=n_cols - 0.5, y0=row - 0.5, y1=row + 0.5,
                  line=dict(color=HIGHLIGHT, width=3), fillcolor="rgba(0,0,0,0)", **where)
    return fig


def vector_matrix(z: np.ndarray, row_labels: list[str], title: str, row_title: str, highlight: int | None = None,
                  x_title: str = "dimension of this head (d_k)") -> go.Figure:
    """Rows of vectors [N, d] (Q, K, V or context of one head): rows = tokens, columns = dimensions."""
    z = np.asarray(z)
    bound = float(np.abs(z).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=z, zmid=0, zmin=-bound, zmax=bound, colorscale=DIVERGING_COLORSCALE, xgap=0.5, ygap=0.5,
        customdata=np.repeat(np.array(indexed_labels(row_labels), dtype=object)[:, None],
                             z.shape[1], axis=1),
        hovertemplate="%{customdata}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>"))
    height = matrix_height(len(row_labels), base=150, per_row=22, cap=600)
    token_axes(fig, None, row_labels, y_title=row_title, y_px=plot_px(height))
    fig.update_xaxes(title_text=x_title, showgrid=False)
    if highlight is not None:
        highlight_row(fig, highlight, z.shape[1])
    return styled(fig, title, height)


def score_matrix(z: np.ndarray, query_labels: list[str], key_labels: list[str], title: str,
                 highlight: int | None = None, value_name: str = "score", columns: int = 3) -> go.Figure:
    """Signed query x key values [Q, K] (QK^T or QK^T / sqrt(d_k)) on a diverging scale centred on 0, drawn in
    one of ``columns`` page columns."""
    z = np.asarray(z)
    bound = float(np.abs(z).max()) or 1.0
    height = matrix_height(len(query_labels), base=170, per_row=24, cap=600)
    text: np.ndarray | None = np.char.mod("%.1f", z)
    text = text if fits_text(z.shape[0], z.shape[1], height, columns, text=text) else None
    fig = go.Figure(go.Heatmap(
        z=z, zmid=0, zmin=-bound, zmax=bound, colorscale=DIVERGING_COLORSCALE, xgap=1, ygap=1,
        customdata=pair_labels(query_labels, key_labels), text=text,
        texttemplate="%{text}" if text is not None else None, textfont=dict(size=10),
        colorbar=dict(title=dict(text=value_name)),
        hovertemplate=f"query %{{customdata[0]}}<br>key %{{customdata[1]}}<br>{value_name} %{{z:.3f}}<extra></extra>"))
    token_axes(fig, key_labels, query_labels, "key", "query", x_px=COLUMN_PX[columns] - COLORBAR_PX,
               y_px=plot_px(height))
    if highlight is not None:
        highlight_row(fig, highlight, z.shape[1])
    return styled(fig, title, height)


def stage_bars(stages: list[tuple[str, np.ndarray]], key_labels: list[str], mask_row: np.ndarray,
               title: str, masked_from: int = 2) -> go.Figure:
    """The selected query's row through the stages, one panel each (the last panel = softmax weights).

    From panel ``masked_from`` on, masked keys show "−∞" instead of a bar (and exactly 0 in the weights).
    """
    mask_row = np.asarray(mask_row, dtype=bool)
    per_row = _stages_per_row(len(stages), len(key_labels))
    n_rows = -(-len(stages) // per_row)
    fig = make_subplots(rows=n_rows, cols=per_row, subplot_titles=[name for name, _ in stages],
                        horizontal_spacing=0.05, vertical_spacing=min(0.3, 0.6 / n_rows) if n_rows > 1 else 0.0)
    x = np.arange(len(key_labels))
    for i, (name, values) in enumerate(stages):
        c, where = i + 1, dict(row=i // per_row + 1, col=i % per_row + 1)
        values = np.asarray(values, dtype=np.float64)
        is_weight, masked = c == len(stages), c - 1 >= masked_from
        y = values if is_weight or not masked else np.where(mask_row, values, np.nan)
        colors = np.where(mask_row | (not masked), HIGHLIGHT if is_weight else HEAD_COLORS[0], MASKED_COLOR)
        fig.add_trace(go.Bar(
            x=x, y=y, name=name, showlegend=False, marker_color=colors.tolist(),
            customdata=indexed_labels(key_labels),
            hovertemplate=f"{name}<br>key %{{customdata}}<br>%{{y:.4f}}<extra></extra>"), **where)
        if masked and not is_weight and not mask_row.all():
            fig.add_trace(go.Scatter(x=x[~mask_row], y=np.zeros((~mask_row).sum()), mode="text", text="−∞",
                                     textfont=dict(color="#777", size=14), showlegend=False, hoverinfo="skip"),
                          **where)
        token_axes(fig, key_labels, None, "key", row=where["row"], col=where["col"], x_px=_stage_px(per_row))
    for row in range(1, n_rows + 1):
        fig.update_yaxes(title_text="value", row=row, col=1)
    for spare in range(len(stages), n_rows * per_row):  # the last row's empty cells: no axes of their own
        fig.update_xaxes(visible=False, row=n_rows, col=spare % per_row + 1)
        fig.update_yaxes(visible=False, row=n_rows, col=spare % per_row + 1)
    last = len(stages) - 1
    fig.update_yaxes(range=[0, 1.05], row=last // per_row + 1, col=last % per_row + 1)
    fig.update_yaxes(ticklabelstandoff=6)  # the value axis's "0" clear of the first key's turned label below it
    height = 400 + 330 * (n_rows - 1)
    return styled(mark_height(fig, height) if n_rows > 1 else fig, title, height)


def _stage_px(per_row: int) -> float:
    """The width of one of ``per_row`` stage panels side by side across the page, less its value axis."""
    return COLUMN_PX[1] * (1 - 0.05 * (per_row - 1)) / per_row - ROW_AXIS_PX


def _stages_per_row(n_stages: int, n_keys: int) -> int:
    """How many stage panels stand side by side with every key named in a label of its own (PIECE_ROOM_PX): all
    in a row for a short sentence, fewer to a row (in more rows) for a long one."""
    return next((k for k in range(n_stages, 1, -1) if _stage_px(k) / max(n_keys, 1) >= PIECE_ROOM_PX), 1)


def concat_heads(context: np.ndarray, query_labels: list[str], head: int, highlight: int | None = None
                 ) -> go.Figure:
    """Concat(head_1..head_h): the heads' outputs [H, Q, d_k] side by side -> [Q, H*d_k], head borders marked."""
    context = np.asarray(context)
    n_heads, _, d_k = context.shape
    z = np.concatenate(list(context), axis=1)  # [Q, H*d_k]
    fig = vector_matrix(z, query_labels, f"Concat(heads): {n_heads} × {d_k} = {z.shape[1]} columns",
                        "query", highlight, x_title="concatenated dimension (head by head)")
    for h in range(1, n_heads):
        fig.add_vline(x=h * d_k - 0.5, line=dict(color="#333", width=1.5))
    fig.add_shape(type="rect", x0=head * d_k - 0.5, x1=(head + 1) * d_k - 0.5, y0=-0.5, y1=len(query_labels) - 0.5,
                  line=dict(color=HEAD_COLORS[2], width=3, dash="dot"))
    fig.update_xaxes(tickmode="array", tickvals=[h * d_k + d_k / 2 - 0.5 for h in range(n_heads)],
                     ticktext=[f"head {h + 1}" for h in range(n_heads)])
    return fig


def soft_hard(soft: np.ndarray, hard: np.ndarray, soft_out: np.ndarray, hard_out: np.ndarray,
              key_labels: list[str]) -> go.Figure:
    """Soft (all keys, weighted) vs hard (one key) attention: the weights and the resulting outputs."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["Weights over the keys", "Resulting weighted sum of V (per dimension)"])
    x = np.arange(len(key_labels))
    for name, w, out, color in (("soft (softmax)", soft, soft_out, HEAD_COLORS[0]),
                                ("hard (one-hot argmax)", hard, hard_out, HIGHLIGHT)):
        fig.add_trace(go.Bar(x=x, y=np.asarray(w), name=name, marker_color=color, legendgroup=name,
                             hovertemplate=f"{name}<br>key %{{x}}<br>weight %{{y:.3f}}<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(x=np.arange(len(out)), y=np.asarray(out), mode="lines+markers", name=name,
                                 line=dict(color=color), legendgroup=name, showlegend=False,
                                 hovertemplate=f"{name}<br>dimension %{{x}}<br>%{{y:.3f}}<extra></extra>"),
                      row=1, col=2)
    token_axes(fig, key_labels, None, "key", row=1, col=1, x_px=COLUMN_PX[2])
    fig.update_xaxes(title_text="dimension", row=1, col=2)
    fig.update_yaxes(title_text="weight", range=[0, 1.05], row=1, col=1)
    # Above the panels: below them it would meet the key axis's slanted pieces and its title.
    fig.update_layout(barmode="group", legend=dict(orientation="h", x=0, y=1.12, yanchor="bottom"))
    return styled(fig, "Soft vs hard attention on the same query", 400).update_layout(margin_t=120)


def weight_bars(weights: np.ndarray, key_labels: list[str], title: str, color: str = HEAD_COLORS[0],
                columns: int = 3) -> go.Figure:
    """One distribution over the keys (a score function's softmax weights), in one of ``columns`` page columns."""
    fig = go.Figure(go.Bar(x=np.arange(len(key_labels)), y=np.asarray(weights), marker_color=color,
                           customdata=indexed_labels(key_labels),
                           hovertemplate="key %{customdata}<br>weight %{y:.3f}<extra></extra>"))
    token_axes(fig, key_labels, None, "key", x_px=COLUMN_PX[columns] - ROW_AXIS_PX)  # less the value axis
    fig.update_yaxes(title_text="weight", range=[0, 1.05])
    return styled(fig, title, 300)


def saturation(d_ks: list[int], stats: dict[str, np.ndarray]) -> go.Figure:
    """Entropy, max weight and softmax-gradient size against d_k, with and without the 1/sqrt(d_k) scale."""
    panels = [("entropy", "Entropy of the weights (nats)"), ("max_weight", "Largest weight"),
              ("grad_norm", "Softmax gradient size ‖J‖")]
    panels = [(k, t) for k, t in panels if f"{k}_scaled" in stats]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[t for _, t in panels], horizontal_spacing=0.07)
    for c, (key, _) in enumerate(panels, 1):
        for variant, color, label in (("scaled", SCALED_COLOR, "softmax(q·k / √d_k)"),
                                      ("unscaled", UNSCALED_COLOR, "softmax(q·k)")):
            fig.add_trace(go.Scatter(x=list(d_ks), y=np.asarray(stats[f"{key}_{variant}"]), mode="lines+markers",
                                     name=label, legendgroup=variant, showlegend=c == 1, line=dict(color=color),
                                     hovertemplate=f"{label}<br>d_k %{{x}}<br>%{{y:.3f}}<extra></extra>"),
                          row=1, col=c)
        fig.update_xaxes(type="log", title_text="d_k (log scale)",
                         tickvals=[d for d in d_ks if d in (1, 4, 16, 64, 256, 1024)],
                         tickangle=0, row=1, col=c)
    fig.update_annotations(yshift=8)  # subplot titles clear of the plots
    fig.update_layout(legend=dict(orientation="h", y=-0.3))
    return styled(fig, "Without ÷√d_k, wider heads saturate the softmax", 440)


def sample_softmax(scaled: np.ndarray, unscaled: np.ndarray, d_k: int) -> go.Figure:
    """One random query against 10 keys at width d_k: softmax with and without scaling."""
    x = np.arange(len(scaled))
    fig = go.Figure([
        go.Bar(x=x, y=np.asarray(scaled), name="with / √d_k", marker_color=SCALED_COLOR),
        go.Bar(x=x, y=np.asarray(unscaled), name="without scaling", marker_color=UNSCALED_COLOR)])
    fig.update_xaxes(title_text="key", tickmode="array", tickvals=list(x), ticktext=[f"k{i}" for i in x])
    fig.update_yaxes(title_text="weight", range=[0, 1.05])
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.25))
    return styled(fig, f"One sample, d_k = {d_k}", 360)


def output_matrix(output: np.ndarray, query_labels: list[str], d_model: int, highlight: int | None = None
                  ) -> go.Figure:
    """MultiHead output [Q, D] = Concat(heads) W^O."""
    return vector_matrix(output, query_labels,
                         f"Output = Concat(heads) · W<sup>O</sup>   (W<sup>O</sup> is {d_model} × {d_model})",
                         "query", highlight, x_title="model dimension (d_model)")


def weights_matrix(weights: np.ndarray, mask: np.ndarray, query_labels: list[str], key_labels: list[str],
                   title: str, highlight: int | None = None, columns: int = 2) -> go.Figure:
    """Post-softmax weights of one head [Q, K] (exactly the model's), masked cells grey-crossed; in one of
    ``columns`` page columns (half a page by default)."""
    fig = masked_weights(weights, mask, query_labels, key_labels, title, columns=columns)
    if highlight is not None:
        highlight_row(fig, highlight, np.asarray(weights).shape[1])
    return fig

