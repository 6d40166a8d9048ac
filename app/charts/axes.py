"""Token-labelled axes, the helpers every figure with pieces on its axes shares.

Axes are numeric positions with the token pieces as tick text: categorical axes would merge repeated pieces
(two "<pad>" or two "▁the" would collapse into one row). Plotly reads every label as HTML, so pieces are escaped:
a raw "<s>" would start strike-through and break the figure's layout.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

TICK_SIZE = 14  # token pieces must be readable from the back of a lecture hall


def plotly_text(labels: Sequence[str]) -> list[str]:
    """Pieces as Plotly text: Plotly reads text as HTML, so "<s>" would start strike-through and vanish."""
    return [html.escape(str(label), quote=False) for label in labels]


def indexed_labels(labels: Sequence[str]) -> list[str]:
    """"i · piece" for hovers, escaped: tells apart repeated pieces."""
    return [f"{i} · {label}" for i, label in enumerate(plotly_text(labels))]


def token_axes(fig: go.Figure, x_labels: list[str] | None, y_labels: list[str] | None,
               x_title: str | None = None, y_title: str | None = None, row: int | None = None,
               col: int | None = None) -> go.Figure:
    """Tick every position with its piece; first query on top (like a matrix)."""
    where = {} if row is None else {"row": row, "col": col}
    if x_labels is not None:
        short = max((len(str(p)) for p in x_labels), default=0) <= 3 and len(x_labels) <= 30
        # upright only when short: in a narrow column even six pieces collide (and Plotly's own turning drops some)
        fig.update_xaxes(tickmode="array", tickvals=list(range(len(x_labels))), ticktext=plotly_text(x_labels),
                         tickangle=0 if short else -45, tickfont=dict(size=TICK_SIZE),
                         title_text=x_title, showgrid=False, zeroline=False, automargin=True,
                         range=[-0.5, len(x_labels) - 0.5], **where)
    if y_labels is not None:
        fig.update_yaxes(tickmode="array", tickvals=list(range(len(y_labels))), ticktext=plotly_text(y_labels),
                         tickfont=dict(size=TICK_SIZE), range=[len(y_labels) - 0.5, -0.5], title_text=y_title,
                         showgrid=False, zeroline=False, automargin=True, **where)
    return fig


def pair_labels(query_labels: list[str], key_labels: list[str]) -> np.ndarray:
    """customdata [Q, K, 2]: "i · piece" of the query and of the key for each cell's hover."""
    q, k = indexed_labels(query_labels), indexed_labels(key_labels)
    return np.array([[[qi, kj] for kj in k] for qi in q], dtype=object)


def matrix_height(n_rows: int, base: int = 170, per_row: int = 26, cap: int = 900) -> int:
    return int(min(cap, base + per_row * n_rows))


