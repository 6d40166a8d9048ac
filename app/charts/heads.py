"""Figures for the Heads and attribution page: head importance per kind, token-by-token matrices (attention,
its difference, norm-based weights, attributions), the change of each output piece's log-probability, and
bars comparing attributions or vector norms.

Pure builders: numpy in (float32, per-axis piece labels, no per-cell strings), plotly Figure out. Axes are
numeric positions with the pieces as tick text, so %{x} / %{y} in a hover print the piece and %{x:d} /
%{y:d} its position.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.axes import (
    COLORBAR_PX,
    COLUMN_PX,
    PIECE_ROOM_PX,
    ROW_AXIS_PX,
    TICK_SIZE,
    matrix_height,
    plot_px,
    plotly_text,
    token_axes,
)
from app.charts.style import (
    DIVERGING_COLORSCALE,
    HEAD_COLORS,
    PRESENTER_TICK_FONT,
    WEIGHT_COLORSCALE,
    mark_height,
    styled,
)

OFF_COLOR = "#d62728"  # a switched-off head, a changed piece
ROW_COLOR = "#e6550d"  # the selected output piece's row


def _bound(z: np.ndarray) -> float:
    finite = np.abs(z[np.isfinite(z)]) if z.size else np.zeros(0)
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def importance_figure(importance: Mapping[str, np.ndarray], kind_labels: dict[str, str], *, title: str,
                      off: Sequence[tuple[str, int, int]] = (), unit: str = "nats") -> go.Figure:
    """One small heatmap per attention kind: importance [L, H] (layers down, heads across) on one diverging
    scale centred on 0 (positive = the output's log-probability drops without the head). ``off`` heads
    (kind, layer, head), 0-based, get a cross."""
    kinds = list(importance)
    fig = make_subplots(rows=1, cols=len(kinds), subplot_titles=[kind_labels.get(k, k) for k in kinds],
                        horizontal_spacing=0.06)
    bound = max(_bound(np.asarray(v, dtype=np.float32)) for v in importance.values())
    for c, kind in enumerate(kinds, 1):
        z = np.asarray(importance[kind], dtype=np.float32)
        n_layers, n_heads = z.shape
        fig.add_trace(go.Heatmap(
            z=z, x=np.arange(1, n_heads + 1, dtype=np.int16), y=np.arange(1, n_layers + 1, dtype=np.int16),
            coloraxis="coloraxis", xgap=2, ygap=2, name=kind,
            hovertemplate=f"{kind_labels.get(kind, kind)}<br>layer %{{y}} · head %{{x}}<br>"
                          f"drop: <b>%{{z:.3f}}</b> {unit}<extra></extra>"), row=1, col=c)
        marked = np.array([(h + 1, l + 1) for k, l, h in off if k == kind], dtype=np.int16).reshape(-1, 2)
        if len(marked):
            fig.add_trace(go.Scatter(x=marked[:, 0], y=marked[:, 1], mode="markers", showlegend=False,
                                     marker=dict(symbol="x-thin", size=18, line=dict(width=3, color=OFF_COLOR)),
                                     hoverinfo="skip", name="switched off"), row=1, col=c)
        fig.update_xaxes(title_text="head", tickmode="linear", dtick=1, showgrid=False, zeroline=False, row=1, col=c)
        fig.update_yaxes(title_text="layer" if c == 1 else None, tickmode="linear", dtick=1, autorange="reversed",
                         showgrid=False, zeroline=False, row=1, col=c)
    fig.update_layout(coloraxis=dict(colorscale=DIVERGING_COLORSCALE, cmid=0, cmin=-bound, cmax=bound,
                                     colorbar=dict(title=dict(text=f"drop ({unit})"), thickness=14)))
    height = 150 + 34 * max(np.asarray(v).shape[0] for v in importance.values())
    return styled(fig, title, max(300, height))


def matrix_figure(z: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str,
                  value_name: str, row_title: str, col_title: str, signed: bool = False, zmax: float | None = None,
                  highlight_row: int | None = None, columns: int = 1) -> go.Figure:
    """A [rows, cols] matrix of one sentence: attention weights, their norm-based or attributed version
    (``signed`` False: white at 0, Blues up to ``zmax`` or the largest value) or a signed quantity such as a
    difference or a saliency (diverging, centred on 0). ``highlight_row`` outlines the selected output piece;
    ``columns``: how many page columns share the row it is drawn in (its key labels are thinned to fit)."""
    z = np.asarray(z, dtype=np.float32)
    n_rows, n_cols = z.shape
    bound = zmax if zmax is not None else _bound(z)
    scale = dict(zmid=0.0, zmin=-bound, zmax=bound, colorscale=DIVERGING_COLORSCALE) if signed else \
        dict(zmin=0.0, zmax=bound, colorscale=WEIGHT_COLORSCALE)
    fig = go.Figure(go.Heatmap(
        z=z, xgap=1, ygap=1, name=value_name, colorbar=dict(title=dict(text=value_name, side="right"), thickness=14),
        hovertemplate=f"{row_title}: <b>%{{y}}</b> (position %{{y:d}})<br>{col_title}: <b>%{{x}}</b> "
                      f"(position %{{x:d}})<br>{value_name}: <b>%{{z:.4f}}</b><extra></extra>", **scale))
    token_axes(fig, list(col_labels), list(row_labels), col_title, row_title, x_px=COLUMN_PX[columns] - COLORBAR_PX,
               y_px=plot_px(matrix_height(n_rows, base=200, per_row=26, cap=900)))
    if highlight_row is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=n_cols - 0.5, y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                      line=dict(color=ROW_COLOR, width=3), fillcolor="rgba(0,0,0,0)")
    return styled(fig, title, matrix_height(n_rows, base=200, per_row=26, cap=900))


PANEL_ROW_GAP_PX = 190  # between two rows of panels: the upper row's turned pieces and key title, then the titles


def per_row(n: int, col_labels: Sequence[str], row_labels: Sequence[str], panel_px: Callable[[int], float]) -> int:
    """How many of ``n`` panels stand side by side, each panel ``panel_px(k)`` wide when k do, with every column
    piece named in a label of its own (the first panel also holds the row pieces): all for a short sentence, fewer
    to a row for a long one, rather than fewer labels."""
    rows_px = 0.6 * TICK_SIZE * max(map(len, map(str, row_labels)), default=0)
    return next((k for k in range(n, 1, -1)
                 if (panel_px(k) - rows_px) / max(len(col_labels), 1) >= PIECE_ROOM_PX), 1)


def _grid(n: int, k: int, one_row_px: int, names: list[str], gap: float) -> tuple[go.Figure, int]:
    """Subplots for ``n`` panels, ``k`` to a row (each row sharing its y axis), and the figure's height: rows of
    ``one_row_px`` apart by PANEL_ROW_GAP_PX."""
    rows = -(-n // k)
    height = one_row_px * rows + PANEL_ROW_GAP_PX * (rows - 1)
    fig = make_subplots(rows=rows, cols=k, shared_yaxes=True, horizontal_spacing=gap, subplot_titles=names,
                        vertical_spacing=PANEL_ROW_GAP_PX / height if rows > 1 else 0.0)
    for spare in range(n, rows * k):  # the last row's empty cells: no axes of their own
        fig.update_xaxes(visible=False, row=rows, col=spare % k + 1)
        fig.update_yaxes(visible=False, row=rows, col=spare % k + 1)
    return (mark_height(fig, height) if rows > 1 else fig), height


def panels_figure(panels: Sequence[tuple[str, np.ndarray, bool, float | None]], row_labels: Sequence[str],
                  col_labels: Sequence[str], *, title: str, row_title: str, col_title: str,
                  highlight_row: int | None = None) -> go.Figure:
    """Matrices of one sentence side by side on shared axes (the row pieces printed once a row): ``panels`` are
    (name, z [rows, cols], signed, zmax) as in matrix_figure, each with its own colour bar right of it and the
    panel's name as the value in its hover. A long sentence puts fewer panels to a row (per_row)."""
    n = len(panels)
    gap = 0.09
    k = per_row(n, col_labels, row_labels, lambda k: COLUMN_PX[1] * (1.0 - gap * (k - 1)) / k - COLORBAR_PX / 2)
    fig, height = _grid(n, k, matrix_height(len(row_labels), base=230, per_row=24, cap=900),
                        [name for name, *_ in panels], gap)
    width = (1.0 - gap * (k - 1)) / k
    for i, (name, z, signed, zmax) in enumerate(panels):
        c, where = i + 1, dict(row=i // k + 1, col=i % k + 1)
        z = np.asarray(z, dtype=np.float32)
        bound = zmax if zmax is not None else _bound(z)
        scale = dict(cmid=0.0, cmin=-bound, cmax=bound, colorscale=DIVERGING_COLORSCALE) if signed else \
            dict(cmin=0.0, cmax=bound, colorscale=WEIGHT_COLORSCALE)
        axis = "coloraxis" if c == 1 else f"coloraxis{c}"
        right = (where["col"] - 1) * (width + gap) + width
        low, high = fig.get_subplot(**where).yaxis.domain
        fig.update_layout({axis: dict(colorbar=dict(x=right + 0.005, xanchor="left", thickness=10,
                                                    y=(low + high) / 2, yanchor="middle", len=0.9 * (high - low),
                                                    tickfont=dict(size=11)), **scale)})
        fig.add_trace(go.Heatmap(
            z=z, coloraxis=axis, xgap=1, ygap=1, name=name,
            hovertemplate=f"{row_title}: <b>%{{y}}</b> (position %{{y:d}})<br>{col_title}: <b>%{{x}}</b> "
                          f"(position %{{x:d}})<br>{name}: <b>%{{z:.4f}}</b><extra></extra>"), **where)
        first = where["col"] == 1
        token_axes(fig, list(col_labels), list(row_labels) if first else None, col_title,
                   row_title if first else None, **where, x_px=COLUMN_PX[1] * width - COLORBAR_PX / 2)
        if highlight_row is not None:
            fig.add_shape(type="rect", x0=-0.5, x1=len(col_labels) - 0.5, y0=highlight_row - 0.5,
                          y1=highlight_row + 0.5, line=dict(color=ROW_COLOR, width=3), fillcolor="rgba(0,0,0,0)",
                          **where)
    fig.update_yaxes(range=[len(row_labels) - 0.5, -0.5], showgrid=False, zeroline=False)
    for c in range(2, k + 1):
        fig.update_yaxes(ticks="", showticklabels=False, col=c)
    return styled(fig, title, height)


def checkpoints_figure(maps: Sequence[tuple[str, np.ndarray]], row_labels: Sequence[str],
                       col_labels: Sequence[str], *, title: str, row_title: str, col_title: str,
                       width_px: float = COLUMN_PX[1], wrap: bool = True) -> go.Figure:
    """One map per checkpoint [rows, cols] side by side on shared axes and ONE weight scale (0 to 1), so that a
    flat early map and a sharp late one are compared by eye: ``maps`` are (checkpoint name, weights); the pieces
    are turned or made smaller for panels of a figure ``width_px`` wide, and with ``wrap`` a long sentence puts
    fewer maps to a row (per_row; a slide instead shows a window of them, app.views.slide_figures)."""
    n = len(maps)
    gap = 0.03
    k = per_row(n, col_labels, row_labels, lambda k: (width_px - COLORBAR_PX) * (1.0 - gap * (k - 1)) / k) \
        if wrap else n
    panel_px = (width_px - COLORBAR_PX) * (1.0 - gap * (k - 1)) / k
    chars = max(1, int(panel_px / (0.6 * PRESENTER_TICK_FONT)))  # what a line of a panel's title holds
    # A name wider than its panel breaks before its remark ("epoch 43<br>(this model)"); a column title wider than
    # a panel is said once, under the figure's title, instead of under every panel into its neighbours.
    names = [name.replace(" (", "<br>(", 1) if len(name) > chars else name for name, _ in maps]
    once = len(col_title) > chars
    if once:
        title = (title.replace("</sup>", f" · columns: {col_title}s</sup>") if "</sup>" in title
                 else f"{title}<br><sup>columns: {col_title}s</sup>")
    fig, height = _grid(n, k, matrix_height(len(row_labels), base=230, per_row=24, cap=900), names, gap)
    for i, (name, z) in enumerate(maps):
        where = dict(row=i // k + 1, col=i % k + 1)
        first = where["col"] == 1
        fig.add_trace(go.Heatmap(
            z=np.asarray(z, dtype=np.float32), coloraxis="coloraxis", xgap=1, ygap=1, name=name,
            hovertemplate=f"{plotly_text([name])[0]}<br>{row_title}: <b>%{{y}}</b> (position %{{y:d}})<br>{col_title}: "
                          f"<b>%{{x}}</b> (position %{{x:d}})<br>weight: <b>%{{z:.4f}}</b><extra></extra>"),
            **where)
        # Every panel laid out as the first, whose query labels take part of its width: one look across the strip.
        token_axes(fig, list(col_labels), list(row_labels) if first else None, None if once else col_title,
                   row_title if first else None, **where,
                   x_px=panel_px if first else panel_px - 0.6 * TICK_SIZE * max(map(len, map(str, row_labels))))
    fig.update_layout(coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=WEIGHT_COLORSCALE,
                                     colorbar=dict(title=dict(text="weight"), thickness=12)))
    fig.update_yaxes(range=[len(row_labels) - 0.5, -0.5], showgrid=False, zeroline=False)
    for c in range(2, k + 1):
        fig.update_yaxes(ticks="", showticklabels=False, col=c)
    styled(fig, title, height)
    if any("<br>" in name for name in names):  # a panel title of two lines reaches up into the figure's title
        fig.update_layout(margin_t=(fig.layout.margin.t or 50) + 24)
    return fig


def spread_figure(steps: Sequence[int], names: Sequence[str], spread: np.ndarray, uniform: float, *, title: str,
                  kind_label: str) -> go.Figure:
    """How flat one kind's heads are at each checkpoint: spread [C, L] (mean row entropy in nats, one line per
    layer) over training steps, with the entropy of a uniform row as a dotted line to compare with."""
    spread = np.asarray(spread, dtype=np.float32)
    fig = go.Figure()
    x = np.asarray(steps, dtype=np.int32)
    for layer in range(spread.shape[1]):
        fig.add_trace(go.Scatter(
            x=x, y=spread[:, layer], mode="lines+markers", name=f"layer {layer + 1}", customdata=plotly_text(names),
            line=dict(color=HEAD_COLORS[layer % len(HEAD_COLORS)], width=3), marker=dict(size=9),
            hovertemplate=f"%{{customdata}} (step %{{x}})<br>{kind_label}, layer {layer + 1}<br>"
                          "mean row entropy: <b>%{y:.3f}</b> nats<extra></extra>"))
    fig.add_hline(y=uniform, line=dict(dash="dot", color="#888"), annotation_text="uniform (no focus)",
                  annotation_position="top right")
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="mean row entropy (nats)", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=-0.25, yanchor="top", x=0))
    return styled(fig, title, 380)


def piece_log_prob_figure(before: np.ndarray, after: np.ndarray, pieces: Sequence[str], *, title: str) -> go.Figure:
    """The change of each output piece's log-probability under teacher forcing, heads off minus on (nats):
    bars below 0 are pieces the switched-off heads were helping to predict."""
    before, after = np.asarray(before, dtype=np.float32), np.asarray(after, dtype=np.float32)
    change = after - before
    fig = go.Figure(go.Bar(
        x=np.arange(len(pieces), dtype=np.int16), y=change, customdata=np.stack([before, after], axis=1),
        marker_color=np.where(change < 0, OFF_COLOR, HEAD_COLORS[0]).tolist(), name="change",
        hovertemplate="output piece <b>%{x}</b> (position %{x:d})<br>log P with every head: %{customdata[0]:.3f}"
                      "<br>log P with the heads off: %{customdata[1]:.3f}<br>change: <b>%{y:.3f}</b> nats"
                      "<extra></extra>"))
    token_axes(fig, list(pieces), None, "output piece (teacher-forced: the original translation)")
    fig.update_yaxes(title_text="Δ log P (nats)", zeroline=True, zerolinecolor="#888")
    return styled(fig, title, 360)


def share_bars(shares: dict[str, np.ndarray], labels: Sequence[str], *, title: str,
               value_name: str = "share") -> go.Figure:
    """Grouped bars, one group per source piece and one colour per method: each method's values [S]."""
    fig = go.Figure()
    x = np.arange(len(labels), dtype=np.int16)
    for i, (name, values) in enumerate(shares.items()):
        fig.add_trace(go.Bar(x=x, y=np.asarray(values, dtype=np.float32), name=name,
                             marker_color=HEAD_COLORS[i % len(HEAD_COLORS)],
                             hovertemplate=f"{name}<br>source piece <b>%{{x}}</b> (position %{{x:d}})<br>"
                                           f"{value_name}: <b>%{{y:.3f}}</b><extra></extra>"))
    token_axes(fig, list(labels), None, "source piece")
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.32, yanchor="top", x=0))
    fig.update_yaxes(title_text=value_name, rangemode="tozero")
    return styled(fig, title, 420)


def norm_bars(norms: np.ndarray, labels: Sequence[str], *, title: str, key_title: str,
              width_px: float = COLUMN_PX[1] * 0.6) -> go.Figure:
    """||f(x_j)|| per key [K]: the length of the vector each attention weight multiplies, in a figure ``width_px``
    wide (3 of 5 of the page by default), every key named."""
    fig = go.Figure(go.Bar(
        x=np.arange(len(labels), dtype=np.int16), y=np.asarray(norms, dtype=np.float32), name="norm",
        marker_color=HEAD_COLORS[2],
        hovertemplate=f"{key_title} <b>%{{x}}</b> (position %{{x:d}})<br>||f(x)||: <b>%{{y:.3f}}</b><extra></extra>"))
    token_axes(fig, list(labels), None, key_title, x_px=width_px - ROW_AXIS_PX)  # less the value axis
    fig.update_yaxes(title_text="||f(x_j)||", rangemode="tozero")
    return styled(fig, title, 340)


def chips_html(pieces: Sequence[str], changed: Sequence[bool]) -> str:
    """Output pieces as chips, the changed ones (not shared with the other output) in red."""
    chips = []
    for piece, is_changed in zip(pieces, changed, strict=True):
        colour, background = (OFF_COLOR, "#fde0dd") if is_changed else ("#1f4e79", "#e8f1fa")
        chips.append(f"<span style='display:inline-block;margin:2px 3px;padding:1px 7px;border-radius:6px;"
                     f"border:1px solid {colour};color:{colour};background:{background};font-family:monospace;"
                     f"font-size:1.05rem'>{plotly_text([piece])[0]}</span>")
    return "<div style='line-height:2.0'>" + "".join(chips) + "</div>"
