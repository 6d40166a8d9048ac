"""Attention figures: one heatmap, the BertViz-like head view, the layers x heads model view, head statistics.

Pure builders: numpy arrays of weights (exactly as the model returned them, or the UI's mean over
heads) and token pieces in, plotly Figure / pandas DataFrame out. Axes are numeric with the pieces as
tick text, because categorical axes would merge repeated pieces ("▁l", "▁l") into one row.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import HEAD_COLORS, MASKED_COLOR, WEIGHT_COLORSCALE, styled

OPACITY_STEP = 0.05  # head view: line opacity is the weight rounded to this

STAT_COLUMNS = {  # model.analysis.head_statistics key -> table column
    "entropy": "entropy (nats)",
    "mean_distance": "mean distance",
    "diagonality": "diagonality",
    "max_weight": "max weight",
    "special_share": "share on special tokens",
}


def plotly_text(labels: Sequence[str]) -> list[str]:
    """Pieces as Plotly text: Plotly reads text as HTML, so "<s>" would start strike-through and vanish."""
    return [html.escape(str(label), quote=False) for label in labels]


def _height(rows: int, per_row: int = 26, extra: int = 190, minimum: int = 360) -> int:
    return max(minimum, min(1400, per_row * rows + extra))


def heatmap_figure(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str,
                   query_title: str = "query", key_title: str = "key", predicts: Sequence[str] | None = None,
                   mask: np.ndarray | None = None) -> go.Figure:
    """One attention map. weights [Q, K] in [0, 1]; mask [Q, K] bool (True = may attend) greys out masked
    cells (their weight stays exactly 0 in z); predicts [Q] names what each decoder row predicts (hover)."""
    weights = np.asarray(weights, dtype=np.float64)
    n_q, n_k = weights.shape
    q_lab = np.asarray([f"<b>{q}</b> (position {i})" for i, q in enumerate(plotly_text(query_labels))], dtype=object)
    k_lab = np.asarray([f"<b>{k}</b> (position {j})" for j, k in enumerate(plotly_text(key_labels))], dtype=object)
    hover = [np.broadcast_to(q_lab[:, None], (n_q, n_k)), np.broadcast_to(k_lab[None, :], (n_q, n_k))]
    template = "query: %{customdata[0]}<br>key: %{customdata[1]}"
    if predicts is not None:
        hover.append(np.broadcast_to(np.asarray(plotly_text(predicts), dtype=object)[:, None], (n_q, n_k)))
        template += "<br>this row predicts: <b>%{customdata[2]}</b>"
    fig = go.Figure(go.Heatmap(
        z=weights, x=list(range(n_k)), y=list(range(n_q)), customdata=np.stack(hover, axis=-1),
        colorscale=WEIGHT_COLORSCALE, zmin=0.0, zmax=1.0, xgap=1, ygap=1,
        colorbar=dict(title=dict(text="weight", side="right"), thickness=14),
        hovertemplate=template + "<br>weight: <b>%{z:.3f}</b><extra></extra>", name="attention"))
    if mask is not None and not np.asarray(mask).all():
        masked = np.where(np.asarray(mask, dtype=bool), np.nan, 1.0)
        fig.add_trace(go.Heatmap(z=masked, x=np.arange(n_k), y=np.arange(n_q), xgap=1, ygap=1,
                                 colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], showscale=False,
                                 hovertemplate="masked: this query may not see this key (weight 0)<extra></extra>",
                                 name="masked"))
    fig.update_xaxes(automargin=True, title_text=key_title, tickmode="array", tickvals=list(range(n_k)),
                     ticktext=plotly_text(key_labels), side="bottom", showgrid=False,
                     zeroline=False)
    fig.update_yaxes(automargin=True, title_text=query_title, tickmode="array", tickvals=list(range(n_q)),
                     ticktext=plotly_text(query_labels), autorange="reversed", showgrid=False, zeroline=False)
    return styled(fig, title, _height(n_q, per_row=34, minimum=420))


def head_view_figure(weights: np.ndarray, heads: Sequence[int], query_labels: Sequence[str],
                     key_labels: Sequence[str], *, title: str, min_weight: float = 0.02,
                     focus: tuple[str, int] | None = None, query_title: str = "query",
                     key_title: str = "key") -> go.Figure:
    """BertViz-style lines from each query (left) to each key (right); opacity = weight, colour = head.

    weights [len(heads), Q, K] for the head numbers ``heads`` (0-based, used for colours and the
    legend). Lines lighter than ``min_weight`` are not drawn (invisible anyway). Opacity is the
    weight rounded to OPACITY_STEP: lines of one head and opacity share a trace (meta: head and the
    [query, key] pairs), so a long sentence with 8 heads is ~100 traces, not thousands; the exact
    weights are in the hover of each token and in the heatmap. ``focus`` = ("query", i) or
    ("key", j) draws only the lines of that token. Token markers carry customdata [side, index] so
    a click can pick the focus.
    """
    weights = np.asarray(weights, dtype=np.float64)
    _, n_q, n_k = weights.shape
    query_labels, key_labels = plotly_text(query_labels), plotly_text(key_labels)
    fig = go.Figure()
    levels = np.clip(np.round(weights / OPACITY_STEP), 1, round(1 / OPACITY_STEP)).astype(int)
    drawn = weights >= min_weight
    if focus is not None:
        keep = np.zeros_like(drawn)
        if focus[0] == "query":
            keep[:, focus[1], :] = True
        else:
            keep[:, :, focus[1]] = True
        drawn &= keep
    for n, h in enumerate(heads):
        color = HEAD_COLORS[h % len(HEAD_COLORS)]
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=color, width=4), hoverinfo="skip",
                                 legendgroup=f"head{h}", name=f"Head {h + 1}", meta={"head": int(h), "lines": []}))
        for level in sorted(set(levels[n][drawn[n]].tolist()), reverse=True):
            pairs = np.argwhere(drawn[n] & (levels[n] == level))  # [lines, 2] (query, key)
            xs = np.tile([0.0, 1.0, np.nan], len(pairs))
            ys = np.column_stack([pairs[:, 0], pairs[:, 1], np.full(len(pairs), np.nan)]).ravel()
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", opacity=round(level * OPACITY_STEP, 4), line=dict(color=color, width=3),
                hoverinfo="skip", legendgroup=f"head{h}", name=f"Head {h + 1}", showlegend=False,
                meta={"head": int(h), "lines": pairs.tolist()}))
    strongest = np.argsort(-weights.mean(axis=0), axis=1)[:, :3]  # display only: top keys of each query
    q_hover = [f"query <b>{query_labels[i]}</b> (row {i})<br>strongest keys: "
               + ", ".join(f"{key_labels[j]} {weights.mean(axis=0)[i, j]:.2f}" for j in strongest[i])
               for i in range(n_q)]
    for side, x, labels, pos, hover in (("query", 0.0, query_labels, "middle left", q_hover),
                                        ("key", 1.0, key_labels, "middle right", None)):
        fig.add_trace(go.Scatter(
            x=[x] * len(labels), y=list(range(len(labels))), mode="markers+text", text=list(labels),
            textposition=pos, textfont=dict(size=16), marker=dict(size=11, color="#444", symbol="square"),
            customdata=[[side, i] for i in range(len(labels))], showlegend=False, name=f"{side} tokens",
            hovertext=hover or [f"key <b>{k}</b> (col {j})" for j, k in enumerate(labels)],
            hovertemplate="%{hovertext}<extra></extra>"))
    for x, text in ((0.0, query_title), (1.0, key_title)):
        fig.add_annotation(x=x, y=-1.2, text=f"<b>{text}</b>", showarrow=False, xanchor="center",
                           font=dict(size=15))
    fig.update_xaxes(visible=False, range=[-0.6, 1.6])
    fig.update_yaxes(visible=False, autorange="reversed")
    fig.update_layout(legend=dict(orientation="h", y=-0.02, yanchor="top", x=0), clickmode="event+select")
    return styled(fig, title, _height(max(n_q, n_k), per_row=36, extra=170, minimum=440))


def model_view_figure(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *,
                      title: str, selected: tuple[int, int] | None = None) -> go.Figure:
    """Every head of every layer as a small heatmap: weights [L, H, Q, K]. Subplot (l, h) is trace l*H+h.

    Each subplot also has a transparent marker on every cell (trace L*H + l*H+h, customdata
    [layer, head, weight]) that carries the hover and makes a click return a point (Plotly returns
    none for a click on a heatmap). ``selected`` (layer, head) gets a frame.
    """
    weights = np.asarray(weights, dtype=np.float64)
    n_layers, n_heads, n_q, n_k = weights.shape
    fig = make_subplots(rows=n_layers, cols=n_heads, horizontal_spacing=0.012, vertical_spacing=0.03,
                        column_titles=[f"Head {h + 1}" for h in range(n_heads)],
                        row_titles=[f"Layer {l + 1}" for l in range(n_layers)])
    x = [f"{j}: {k}" for j, k in enumerate(plotly_text(key_labels))]  # unique categories: repeats stay apart
    y = [f"{i}: {q}" for i, q in enumerate(plotly_text(query_labels))]
    cell_x, cell_y = [x[j] for _ in range(n_q) for j in range(n_k)], [y[i] for i in range(n_q) for _ in range(n_k)]
    for l in range(n_layers):
        for h in range(n_heads):
            fig.add_trace(go.Heatmap(z=weights[l, h], x=x, y=y, coloraxis="coloraxis", name=f"L{l + 1} H{h + 1}",
                                     hoverinfo="skip"), row=l + 1, col=h + 1)
    for l in range(n_layers):
        for h in range(n_heads):
            custom = np.column_stack([np.full(n_q * n_k, l), np.full(n_q * n_k, h), weights[l, h].ravel()])
            fig.add_trace(go.Scatter(
                x=cell_x, y=cell_y, mode="markers", showlegend=False, customdata=custom,
                marker=dict(size=12, symbol="square", color="rgba(0,0,0,0)"), name=f"select L{l + 1} H{h + 1}",
                unselected=dict(marker=dict(opacity=0)), selected=dict(marker=dict(opacity=0)),
                hovertemplate=f"layer {l + 1} · head {h + 1} (click to open)<br>query %{{y}}<br>key %{{x}}<br>"
                              "weight %{customdata[2]:.3f}<extra></extra>"), row=l + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, autorange="reversed")
    fig.update_layout(coloraxis=dict(colorscale=WEIGHT_COLORSCALE, cmin=0.0, cmax=1.0,
                                     colorbar=dict(title=dict(text="weight"), thickness=14)),
                      clickmode="event+select", dragmode=False)
    if selected is not None:
        l, h = selected
        n = l * n_heads + h + 1
        suffix = "" if n == 1 else str(n)
        fig.add_shape(type="rect", xref=f"x{suffix} domain", yref=f"y{suffix} domain", x0=-0.04, x1=1.04,
                      y0=-0.04, y1=1.04, line=dict(color="#d62728", width=3))
    return styled(fig, title, max(320, min(1300, 150 * n_layers + 90)))


def head_stats_frame(stats: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per head: layer and head numbered from 1, then the statistics (arrays [L, H]) in STAT_COLUMNS order."""
    first = np.asarray(stats["entropy"])
    n_layers, n_heads = first.shape
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    data = {"layer": layer.ravel() + 1, "head": head.ravel() + 1}
    for key, column in STAT_COLUMNS.items():
        data[column] = np.asarray(stats[key], dtype=np.float64).ravel()
    return pd.DataFrame(data)
