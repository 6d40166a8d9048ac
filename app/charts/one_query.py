"""One query of one head, worked through with its own numbers: q against every key's k, the dot products, the
division by √d_k, the softmax, and the key that wins (the lecture's "queries, keys, values" slide).

One row per key, read left to right: the key's vector k (the query's q on top, in the same colours), q·k, q·k / √d_k
and the weight, printed in every cell, the winning row outlined. A sentence whose keys do not all fit the slide's
height shows the strongest keys and says how much weight the others share in one last row: no key is left out
unnamed.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .axes import mark_pieces, plotly_text
from .style import DIVERGING_COLORSCALE, MASKED_COLOR, PRESENTER_ROW_PX, styled

WINNER_COLOR = "#d62728"
FRAME_PX = 190  # the title, the column titles and the dimension axis below
NUMBER_FONT = 14


def shown_keys(weights: np.ndarray, room_px: float) -> list[int]:
    """The keys one figure names, in sentence order: all of them where their rows (and q's) fit ``room_px`` at
    projector-size text, else the strongest ones, one row kept for the rest."""
    n = len(weights)
    rows = max(2, int(room_px // PRESENTER_ROW_PX) - 1)  # less the q row
    if n <= rows:
        return list(range(n))
    return sorted(np.argsort(-np.asarray(weights), kind="stable")[: rows - 1].tolist())


def one_query_figure(q: np.ndarray, k: np.ndarray, qk: np.ndarray, scaled: np.ndarray, weights: np.ndarray,
                     mask: np.ndarray, key_labels: Sequence[str], query_label: str, *, title: str, d_k: int,
                     height: int) -> go.Figure:
    """q [d_k] of the query, k [K, d_k] of the keys, qk [K] = q·k, scaled [K] = qk / √d_k (as the model computed
    it), weights [K] (the softmax, exactly the model's), mask [K] (True = may attend): one row per shown key."""
    mask = np.asarray(mask, dtype=bool)
    weights = np.asarray(weights, dtype=np.float64)
    keep = shown_keys(np.where(mask, weights, -1.0), height - FRAME_PX)
    rest = [j for j in range(len(key_labels)) if j not in keep]
    winner = int(np.argmax(np.where(mask, weights, -1.0)))
    names = plotly_text([key_labels[j] for j in keep])
    rows = [f"q · {plotly_text([query_label])[0]}"] + [f"k · {n}" for n in names]
    if rest:
        rows.append(f"{len(rest)} other keys")
    n_rows = len(rows)
    fig = make_subplots(rows=1, cols=4, shared_yaxes=True, horizontal_spacing=0.015,
                        column_widths=[0.43, 0.17, 0.19, 0.21],
                        subplot_titles=["q and each key's k", "q · k", f"÷ √d_k = ÷ {np.sqrt(d_k):.2g}", "softmax"])
    vectors = np.vstack([q[None, :], k[keep]] + ([np.full((1, k.shape[1]), np.nan)] if rest else []))
    bound = float(np.nanmax(np.abs(vectors))) or 1.0
    y = np.arange(n_rows)
    fig.add_trace(go.Heatmap(z=vectors, y=y, zmid=0, zmin=-bound, zmax=bound, colorscale=DIVERGING_COLORSCALE,
                             showscale=False, xgap=0.5, ygap=2, name="vectors",
                             hovertemplate="%{y}<br>dimension %{x}<br>%{z:.3f}<extra></extra>"), row=1, col=1)

    def column(values: np.ndarray, fmt: str, col: int, rest_text: str) -> None:
        shown = [values[j] if mask[j] else np.nan for j in keep]
        text = [""] + [fmt % values[j] if mask[j] else "masked" for j in keep] + ([rest_text] if rest else [])
        z = np.array([np.nan, *shown] + ([np.nan] if rest else []), dtype=np.float64)[:, None]
        scale = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
        fig.add_trace(go.Heatmap(z=z, y=y, zmid=0, zmin=-scale, zmax=scale, colorscale=DIVERGING_COLORSCALE,
                                 showscale=False, ygap=2, text=np.array(text)[:, None], texttemplate="%{text}",
                                 textfont=dict(size=NUMBER_FONT), hoverinfo="skip", name=f"column {col}"),
                      row=1, col=col)
        fig.update_xaxes(visible=False, row=1, col=col)

    column(np.asarray(qk, dtype=np.float64), "%.2f", 2, "")
    column(np.asarray(scaled, dtype=np.float64), "%.2f", 3, "")
    bars = [0.0] + [weights[j] for j in keep] + ([float(weights[rest].sum())] if rest else [])
    colors = ["white"] + [WINNER_COLOR if j == winner else "#3a78b5" if mask[j] else MASKED_COLOR for j in keep] \
        + (["#9ecae1"] if rest else [])
    fig.add_trace(go.Bar(x=bars, y=y, orientation="h", marker_color=colors, name="weights",
                         text=[""] + [f"{weights[j]:.2f}" for j in keep] + ([f"{bars[-1]:.2f} together"] if rest
                                                                              else []),
                         textposition="outside", cliponaxis=False, textfont=dict(size=NUMBER_FONT),
                         hovertemplate="%{y}: weight %{x:.4f}<extra></extra>", showlegend=False), row=1, col=4)
    fig.update_xaxes(range=[0, 2.2 * max(bars)], visible=False, row=1, col=4)  # room for "0.93 together" beside
    fig.update_xaxes(title_text=f"dimension (d_k = {d_k})", showgrid=False, zeroline=False, row=1, col=1)
    row_of_winner = 1 + keep.index(winner)
    fig.update_yaxes(tickmode="array", tickvals=list(y), ticktext=rows, range=[n_rows - 0.5, -0.5], showgrid=False,
                     zeroline=False, automargin=True)
    mark_pieces(fig, "yaxis", n_rows)
    for col in (1, 2, 3, 4):  # the winner's row outlined across every column
        fig.add_shape(type="rect", xref="x domain" if col == 1 else f"x{col} domain", x0=0, x1=1,
                      y0=row_of_winner - 0.5, y1=row_of_winner + 0.5, yref="y",
                      line=dict(color=WINNER_COLOR, width=3), fillcolor="rgba(0,0,0,0)")
    fig.add_annotation(xref="paper", yref="paper", x=1.0, y=-0.02, xanchor="right", yanchor="top", showarrow=False,
                       text=f"<b style='color:{WINNER_COLOR}'>winner: {names[keep.index(winner)]}</b> "
                            f"({weights[winner]:.2f} of the weight)", font=dict(size=15))
    fig.update_layout(bargap=0.25, showlegend=False)
    return styled(fig, title, height)
