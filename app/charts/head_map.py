"""The map of all heads (explain.head_map): every head a marker placed by classical MDS of the Jensen-Shannon distance
between the heads' attention profiles, its symbol and hue its kind, its shade its layer (darker = higher); and one
head's queries and keys in the plane of their two principal axes."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from .style import styled

KIND_STYLE = {  # (legend name, colour scale its layers are shaded from, marker symbol)
    "enc_self": ("encoder self-attention", "Blues", "circle"),
    "dec_self": ("decoder self-attention", "Greens", "square"),
    "cross": ("cross-attention", "Oranges", "diamond"),
}
QUERY_COLOR, KEY_COLOR = "#2171b5", "#d94801"


def layer_colors(scale: str, layer: Sequence[int], n_layers: int) -> list[str]:
    """A shade of ``scale`` per layer, light (layer 1) to dark (the last layer), never white."""
    span = [0.45 + 0.5 * (ell / max(n_layers - 1, 1)) for ell in layer]
    return sample_colorscale(scale, span)


def head_map_figure(coords: np.ndarray, kinds: Sequence[str], layers: Sequence[int], hovers: Sequence[str], *,
                    title: str, selected: int | None = None, height: int = 520) -> go.Figure:
    """coords [N, 2] of N heads (kind, layer of each; ``hovers`` their hover text, HTML); markers carry customdata
    [index]; ``selected`` rings one head. The axes have no unit: only distances on the map mean something, so both
    axes keep the same scale."""
    coords = np.asarray(coords, dtype=np.float64)
    fig = go.Figure()
    for kind, (name, scale, symbol) in KIND_STYLE.items():
        index = np.array([i for i, k in enumerate(kinds) if k == kind], dtype=int)
        if not len(index):
            continue
        n_layers = max(layers[i] for i in index) + 1
        fig.add_trace(go.Scatter(
            x=coords[index, 0], y=coords[index, 1], mode="markers", name=name,
            marker=dict(size=13, symbol=symbol, color=layer_colors(scale, [layers[i] for i in index], n_layers),
                        line=dict(width=1, color="#333")),
            customdata=index[:, None], hovertext=[hovers[i] for i in index],
            hovertemplate="%{hovertext}<extra></extra>"))
    if selected is not None and 0 <= selected < len(coords):
        fig.add_trace(go.Scatter(x=[coords[selected, 0]], y=[coords[selected, 1]], mode="markers", hoverinfo="skip",
                                 showlegend=False, name="selected",
                                 marker=dict(size=26, color="rgba(0,0,0,0)", line=dict(color="#000", width=3))))
    fig.update_xaxes(title_text="MDS axis 1", zeroline=False, showticklabels=False, gridcolor="#eee")
    fig.update_yaxes(title_text="MDS axis 2", zeroline=False, showticklabels=False, gridcolor="#eee",
                     scaleanchor="x", scaleratio=1)
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0),
                      clickmode="event+select", margin_b=70)
    return styled(fig, title, height)


def query_key_figure(queries: np.ndarray, keys: np.ndarray, query_hovers: Sequence[str], key_hovers: Sequence[str],
                     *, title: str, axis_titles: tuple[str, str], height: int = 480) -> go.Figure:
    """queries [n, 2] (circles) and keys [m, 2] (triangles) of one head in one plane, each named in its hover."""
    queries, keys = np.asarray(queries, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    fig = go.Figure([
        go.Scatter(x=keys[:, 0], y=keys[:, 1], mode="markers", name="keys",
                   marker=dict(size=10, symbol="triangle-up", color=KEY_COLOR, opacity=0.8),
                   hovertext=list(key_hovers), hovertemplate="%{hovertext}<extra></extra>"),
        go.Scatter(x=queries[:, 0], y=queries[:, 1], mode="markers", name="queries",
                   marker=dict(size=10, symbol="circle", color=QUERY_COLOR, opacity=0.8),
                   hovertext=list(query_hovers), hovertemplate="%{hovertext}<extra></extra>")])
    fig.update_xaxes(title_text=axis_titles[0], zeroline=False, showticklabels=False, gridcolor="#eee")
    fig.update_yaxes(title_text=axis_titles[1], zeroline=False, showticklabels=False, gridcolor="#eee",
                     scaleanchor="x", scaleratio=1)
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0), margin_b=70)
    return styled(fig, title, height)
