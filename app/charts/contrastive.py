"""Why this piece and not that one: per source piece and per prefix piece, integrated gradients and gradient x input
of log p(chosen) - log p(alternative), side by side, in the units of that difference (explain.integrated_gradients)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .axes import mark_pieces, plotly_text
from .style import styled

IG_COLOR, GXI_COLOR = "#c0392b", "#7f8c8d"
AGAINST_COLOR, ATTENTION_COLOR = "#2166ac", "#2171b5"


def contrastive_figure(pieces: Sequence[str], integrated: np.ndarray, gradient_input: np.ndarray, *, title: str,
                       axis_title: str) -> go.Figure:
    """Two bars per piece: integrated gradients and gradient x input [K] (signed: above 0 pushes towards the chosen
    piece, below 0 towards the alternative); bars at 0..K-1 labelled with the pieces."""
    x = list(range(len(pieces)))
    labels = plotly_text(pieces)
    fig = go.Figure()
    for name, values, color in (("integrated gradients", integrated, IG_COLOR),
                                ("gradient × input", gradient_input, GXI_COLOR)):
        fig.add_trace(go.Bar(x=x, y=np.asarray(values, dtype=np.float64), name=name, marker_color=color,
                             customdata=labels, hovertemplate=f"<b>%{{customdata}}</b><br>{name} %{{y:+.3f}}"
                                                              "<extra></extra>"))
    fig.update_xaxes(automargin=True, title_text=axis_title, tickmode="array", tickvals=x, ticktext=labels)
    fig.update_yaxes(automargin=True, title_text="contribution (log-prob units)", gridcolor="#eee",
                     zeroline=True, zerolinecolor="#888")
    fig.update_layout(barmode="group", bargap=0.2, legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1,
                                                               xanchor="right"))
    return styled(fig, title, 340)


def attention_beside_attribution(pieces: Sequence[str], attention: np.ndarray, attribution: np.ndarray, *,
                                 title: str, tick_angle: int, tick_size: int, height: int) -> go.Figure:
    """One step over the source pieces [K], two panels on one axis of pieces: above, the step's cross-attention row
    (0..1); below, the attribution of the contrast (signed: red pushes towards the chosen piece, blue towards the
    alternative). The pieces are named once, under the lower panel, at ``tick_angle`` and ``tick_size``."""
    x = list(range(len(pieces)))
    labels = plotly_text(pieces)
    attribution = np.asarray(attribution, dtype=np.float64)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    fig.add_trace(go.Bar(x=x, y=np.asarray(attention, dtype=np.float64), marker_color=ATTENTION_COLOR,
                         customdata=labels, name="cross-attention",
                         hovertemplate="<b>%{customdata}</b><br>attention %{y:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=x, y=attribution, marker_color=np.where(attribution >= 0, IG_COLOR, AGAINST_COLOR),
                         customdata=labels, name="integrated gradients",
                         hovertemplate="<b>%{customdata}</b><br>integrated gradients %{y:+.3f}<extra></extra>"),
                  row=2, col=1)
    fig.update_yaxes(title_text="attention", range=[0, 1.02], gridcolor="#eee", automargin=True, row=1, col=1)
    fig.update_yaxes(title_text="attribution", gridcolor="#eee", zeroline=True, zerolinecolor="#888",
                     automargin=True, row=2, col=1)
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=labels, range=[-0.5, len(x) - 0.5], automargin=True,
                     showgrid=False)
    fig.update_xaxes(tickangle=tick_angle, tickfont=dict(size=tick_size), title_text="source piece", row=2, col=1)
    fig.update_layout(showlegend=False, bargap=0.2)
    mark_pieces(fig, "xaxis2", len(x))
    return styled(fig, title, height)


SAME = "the same"  # the model's first choice where it is the piece given


def forced_frame(pieces: Sequence[str], probs: Sequence[float], ranks: Sequence[int], firsts: Sequence[str],
                 first_probs: Sequence[float]) -> pd.DataFrame:
    """A scored translation as a table, one row per piece: its probability, its rank in the model's distribution,
    the model's own first choice ("the same" where it is the given piece) and that choice's probability; the first
    row where they differ marked. No empty cells: a table a class reads has a word or a number in each."""
    parted = next((i for i, rank in enumerate(ranks) if rank > 1), None)
    return pd.DataFrame({
        "step": range(1, len(pieces) + 1), "piece": list(pieces), "probability": list(probs), "rank": list(ranks),
        "model's first choice": [(SAME if rank == 1 else first) for first, rank in zip(firsts, ranks, strict=True)],
        "its probability": list(first_probs),
        "": ["← the two part ways here" if i == parted else "" for i in range(len(pieces))],
    })
