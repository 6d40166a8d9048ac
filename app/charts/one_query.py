"""One query of one head, worked through with its own numbers: q against every key's k, the dot products, the
division by √d_k, the softmax, and the key that wins (the lecture's "queries, keys, values" slide).

One row per key, read left to right: the key's vector k (the query's q on top, in the same colours), q·k, q·k / √d_k
and the weight, printed in every cell, the winning row outlined. Every key shown is named in a row of its own: a
sentence whose keys do not all fit the slide's height shows a window of them (``shown``), which the slide moves;
none is folded into a row of "other keys".
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .axes import plotly_text
from .style import DIVERGING_COLORSCALE, MASKED_COLOR, mark_height, styled

WINNER_COLOR = "#d62728"
# What the figure takes besides its rows, at the projector's text size (measured in Chromium at 1280x720): the title
# and its subtitle at the very top and the column titles under them (TOP_PX, 12 more in presenter mode), the winner's
# line below (BOTTOM_PX).
TOP_PX, BOTTOM_PX = 86, 34
FRAME_PX = TOP_PX + 12 + BOTTOM_PX + 3
NUMBER_FONT = 14


def rows_that_fit(height_px: float, row_px: float) -> int:
    """How many key rows (under the query's row) a figure ``height_px`` tall holds at ``row_px`` a row."""
    return max(1, int((height_px - FRAME_PX) // row_px) - 1)


def needed_height(n_keys: int, row_px: float) -> int:
    """The height at which ``n_keys`` key rows and the query's row each have ``row_px``."""
    return int((n_keys + 1) * row_px + FRAME_PX)


def one_query_figure(q: np.ndarray, k: np.ndarray, qk: np.ndarray, scaled: np.ndarray, weights: np.ndarray,
                     mask: np.ndarray, key_labels: Sequence[str], query_label: str, *, title: str, d_k: int,
                     height: int, shown: Sequence[int] | None = None) -> go.Figure:
    """q [d_k] of the query, k [K, d_k] of the keys, qk [K] = q·k, scaled [K] = qk / √d_k (as the model computed
    it), weights [K] (the softmax, exactly the model's), mask [K] (True = may attend): one row per key of ``shown``
    (key positions in sentence order; None: every key), each named. The winner is the heaviest key of all; its row
    is outlined where it is shown."""
    mask = np.asarray(mask, dtype=bool)
    weights = np.asarray(weights, dtype=np.float64)
    keep = list(range(len(key_labels))) if shown is None else list(shown)
    winner = int(np.argmax(np.where(mask, weights, -1.0)))
    names = plotly_text([key_labels[j] for j in keep])
    rows = [f"q · {plotly_text([query_label])[0]}"] + [f"k · {n}" for n in names]
    n_rows = len(rows)
    fig = make_subplots(rows=1, cols=4, shared_yaxes=True, horizontal_spacing=0.015,
                        column_widths=[0.43, 0.17, 0.19, 0.21],
                        subplot_titles=[f"q and each k (d_k = {d_k})", "q · k", f"÷ √d_k = ÷ {np.sqrt(d_k):.2g}",
                                        "softmax"])
    vectors = np.vstack([q[None, :], k[keep]])
    bound = float(np.nanmax(np.abs(vectors))) or 1.0
    y = np.arange(n_rows)
    fig.add_trace(go.Heatmap(z=vectors, y=y, zmid=0, zmin=-bound, zmax=bound, colorscale=DIVERGING_COLORSCALE,
                             showscale=False, xgap=0.5, ygap=2, name="vectors",
                             hovertemplate="%{y}<br>dimension %{x}<br>%{z:.3f}<extra></extra>"), row=1, col=1)

    def column(values: np.ndarray, fmt: str, col: int) -> None:
        cells = [values[j] if mask[j] else np.nan for j in keep]
        text = [""] + [fmt % values[j] if mask[j] else "masked" for j in keep]
        z = np.array([np.nan, *cells], dtype=np.float64)[:, None]
        scale = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
        fig.add_trace(go.Heatmap(z=z, y=y, zmid=0, zmin=-scale, zmax=scale, colorscale=DIVERGING_COLORSCALE,
                                 showscale=False, ygap=2, text=np.array(text)[:, None], texttemplate="%{text}",
                                 textfont=dict(size=NUMBER_FONT), hoverinfo="skip", name=f"column {col}"),
                      row=1, col=col)
        fig.update_xaxes(visible=False, row=1, col=col)

    column(np.asarray(qk, dtype=np.float64), "%.2f", 2)
    column(np.asarray(scaled, dtype=np.float64), "%.2f", 3)
    bars = [0.0] + [weights[j] for j in keep]
    colors = ["white"] + [WINNER_COLOR if j == winner else "#3a78b5" if mask[j] else MASKED_COLOR for j in keep]
    fig.add_trace(go.Bar(x=bars, y=y, orientation="h", marker_color=colors, name="weights",
                         text=[""] + [f"{weights[j]:.2f}" for j in keep],
                         textposition="outside", cliponaxis=False, textfont=dict(size=NUMBER_FONT),
                         hovertemplate="%{y}: weight %{x:.4f}<extra></extra>", showlegend=False), row=1, col=4)
    fig.update_xaxes(range=[0, 1.6 * max(weights.max(), 1e-9)], visible=False, row=1, col=4)  # room for "0.93"
    fig.update_xaxes(showgrid=False, zeroline=False, showticklabels=False, row=1, col=1)  # its title says d_k
    fig.update_yaxes(tickmode="array", tickvals=list(y), ticktext=rows, range=[n_rows - 0.5, -0.5], showgrid=False,
                     zeroline=False, automargin=True)
    if winner in keep:
        row_of_winner = 1 + keep.index(winner)
        for col in (1, 2, 3, 4):  # the winner's row outlined across every column
            fig.add_shape(type="rect", xref="x domain" if col == 1 else f"x{col} domain", x0=0, x1=1,
                          y0=row_of_winner - 0.5, y1=row_of_winner + 0.5, yref="y",
                          line=dict(color=WINNER_COLOR, width=3), fillcolor="rgba(0,0,0,0)")
    fig.add_annotation(xref="paper", yref="paper", x=1.0, y=0, yshift=-4, xanchor="right", yanchor="top",
                       showarrow=False,  # 4 px under the rows at any height, inside BOTTOM_PX
                       text=f"<b style='color:{WINNER_COLOR}'>winner: {plotly_text([key_labels[winner]])[0]}</b> "
                            f"({weights[winner]:.2f} of the weight)", font=dict(size=15))
    fig.update_layout(bargap=0.25, showlegend=False, meta={"keys_shown": keep})
    styled(fig, title, height).update_layout(title=dict(yref="container", y=1, yanchor="top", pad_t=30),
                                             margin_t=TOP_PX, margin_b=BOTTOM_PX)
    # the rows keep their room in presenter mode too (app.charts.style.rows_height): ``height`` is made for them
    return mark_height(fig, height)
