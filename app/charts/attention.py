"""Attention figures: one heatmap, the BertViz-like head view, the layers x heads model view, head statistics.

Pure builders: numpy arrays of weights (exactly as the model returned them, or the UI's mean over
heads) and token pieces in, plotly Figure / pandas DataFrame out. Axes are numeric with the pieces as
tick text, because categorical axes would merge repeated pieces ("▁l", "▁l") into one row.

The figures stay light for long sentences (benchmarks/figures.py measures them): no per-cell strings or
customdata, numpy arrays of the smallest exact dtype (Plotly sends them as base64 typed arrays), hover
labels read from the axes' tick text.
"""
from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .axes import (
    COLORBAR_PX,
    LABEL_PX,
    MAX_LABELLED,
    SLANT,
    SLANT_OVERHANG,
    TICK_SIZE,
    label_step,
    mark_pieces,
    piece_ticks,
    plotly_text,
    thinned,
)
from .style import (
    HEAD_COLORS,
    MASKED_COLOR,
    PRESENTER_MAX_HEIGHT,
    PRESENTER_ROW_PX,
    PRESENTER_TICK_FONT,
    WEIGHT_COLORSCALE,
    styled,
)

OPACITY_STEP = 0.05  # head view: line opacity is the weight rounded to this
MIN_LINE_WEIGHT = 0.02  # head view: lines lighter than this are not drawn (invisible anyway)
LONG_INPUT_PIECES, LONG_MIN_LINE_WEIGHT = 120, 0.1  # past 120 pieces the head view starts at 0.1: 8 heads of a
# 500-piece input draw ~20,000 lines at 0.02, 2.2 s in Chromium, and ~3,000 at 0.1 (benchmarks/browser_draw.py)


def default_min_weight(pieces: int) -> float:
    """The head view's starting threshold for a map with ``pieces`` queries or keys (the larger)."""
    return LONG_MIN_LINE_WEIGHT if pieces > LONG_INPUT_PIECES else MIN_LINE_WEIGHT
MODEL_VIEW_LEVELS = 255  # model view: a weight w is drawn as uint8 z = round(255 * w)
# model view: a map has at most this many rows and columns; past it a cell is the maximum of a block of weights.
# A map is some 90-150 px wide (8 heads in a row, Streamlit's full-screen view included), so a browser would drop
# most of 500 columns anyway, nearest-neighbour, peaks with them; at 500 pieces the figure is 0.5 MB instead of 8 MB
MODEL_VIEW_MAX_CELLS = 160
CLICK_TARGET_PX = 4000  # model view: one transparent square this wide per map (clipped to its map)
# heatmap: 1-px gaps between cells up to this many pieces on an axis. Past it a gap would take a fifth or more of a
# cell on a 1280-px screen, and Plotly draws a gapped heatmap cell by cell (1.2 s at 500 pieces in Chromium)
# instead of as one image
GAP_MAX_PIECES = 120
# heatmap: up to this many pieces every one is a tick label; past it every k-th, at most LABELS_LONG_AXIS of them
# (500 labels on a 650-px axis are an unreadable smear and take Plotly a quarter of a second to place)
LABELLED_MAX_PIECES, LABELS_LONG_AXIS = 120, 60

STAT_COLUMNS = {  # model.analysis.head_statistics key -> table column
    "entropy": "entropy (nats)",
    "mean_distance": "mean distance",
    "diagonality": "diagonality",
    "max_weight": "max weight",
    "special_share": "share on special tokens",
}


def _height(rows: int, per_row: int = 26, extra: int = 190, minimum: int = 360) -> int:
    return max(minimum, min(1400, per_row * rows + extra))


ADAPT_BELOW = 0.3  # a map whose largest weight is under this is drawn on its own scale: on 0-1 it would be blank


def weight_scale(weights: np.ndarray) -> tuple[float, str]:
    """The top of the colour scale for an attention map and the colour bar's title, which says the scale. A map
    of many keys spreads its rows thin (372 keys: most weights near 0.003), white on a fixed 0-1 scale; then the
    scale ends at the map's largest weight, rounded up."""
    top = float(np.max(weights)) if np.size(weights) else 0.0
    if top >= ADAPT_BELOW or top <= 0.0:
        return 1.0, "weight (0–1)"
    top = math.ceil(top * 100) / 100
    return top, f"weight (scale 0–{top:.2f})"


def heatmap_figure(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *, title: str,
                   query_title: str = "query", key_title: str = "key", predicts: Sequence[str] | None = None,
                   mask: np.ndarray | None = None, width_px: float | None = None,
                   height: int | None = None) -> go.Figure:
    """One attention map. weights [Q, K] in [0, 1], coloured on 0-1 or, for a faint map, on 0 to its largest weight
    (weight_scale; the colour bar says which); mask [Q, K] bool (True = may attend) greys out masked
    cells (their weight stays exactly 0 in z); predicts [Q] names what each decoder row predicts (hover).

    Light at any length (JSON: ~5.3 bytes per cell, ~6.7 with a mask): z is float32, the model's own
    precision, so its weights are exact; the hover has no per-cell data. In a hovertemplate Plotly prints
    an axis's tick text for %{x} / %{y} (the piece at that position) and the number for %{x:d} / %{y:d}.
    Decoder rows also say what they predict: then the maps sit on a second y axis (yaxis2, matched to
    yaxis, no tick labels) whose tick text is each row's hover label "piece (position i)<br>this row
    predicts: piece" (no bold: every tag costs ~16 bytes of escaped JSON per row), and an empty scatter
    keeps yaxis, the visible pieces, drawn. An axis of more than LABELLED_MAX_PIECES pieces labels every k-th
    piece only (``_label_step``); the map then sits on a second axis of that direction too (xaxis2 / yaxis2,
    every piece, no tick labels), so the hover still names every piece. The mask is a uint8 overlay on top (1 =
    masked: grey, 0 = transparent) without a hover of its own: a masked cell shows the map's hover, weight 0.000.
    """
    weights = np.asarray(weights, dtype=np.float32)
    n_q, n_k = weights.shape
    gap = 1 if max(n_q, n_k) <= GAP_MAX_PIECES else 0
    masked = None if mask is None else ~np.asarray(mask, dtype=bool)
    if masked is not None and not masked.any():
        masked = None
    step_q, step_k = _label_step(n_q), _label_step(n_k)
    if width_px is not None:  # a slide: past MAX_LABELLED pieces, every k-th where all would collide on a projector
        step_q = max(step_q, _slide_row_step(n_q)) if n_q > MAX_LABELLED else 1
        step_k = max(step_k, _slanted_step(key_labels, query_labels, width_px, numbered=step_q > 1)) \
            if n_k > MAX_LABELLED else 1
    hover_x, hover_y = step_k > 1, predicts is not None or step_q > 1  # the map on a second, unlabelled axis
    on = dict(xaxis="x2" if hover_x else "x", yaxis="y2" if hover_y else "y")
    template = (("query: <b>%{y}</b> (position %{y:d})" if predicts is None else "query: %{y}")
                + "<br>key: <b>%{x}</b> (position %{x:d})<br>weight: <b>%{z:.3f}</b>")
    if masked is not None:
        template += "<br><i>grey cells are masked (weight exactly 0)</i>"
    zmax, scale = weight_scale(weights)
    fig = go.Figure(go.Heatmap(
        z=weights, colorscale=WEIGHT_COLORSCALE, zmin=0.0, zmax=zmax, xgap=gap, ygap=gap, **on,
        colorbar=dict(title=dict(text=scale, side="right"), thickness=14),
        hovertemplate=template + "<extra></extra>", name="attention"))
    if masked is not None:
        fig.add_trace(go.Heatmap(z=masked.astype(np.uint8), zmin=0, zmax=1, xgap=gap, ygap=gap, **on,
                                 colorscale=[[0, "rgba(0,0,0,0)"], [1, MASKED_COLOR]], showscale=False,
                                 hoverinfo="skip", name="masked"))
    q_text, k_text = plotly_text(query_labels), plotly_text(key_labels)
    plain = dict(tickmode="array", showgrid=False, zeroline=False)
    slant: dict[str, Any] = dict(tickangle=-45, ticklabelstandoff=6) if width_px is not None else {}
    if width_px is not None and n_k <= MAX_LABELLED:  # every key named: turned (and smaller) as far as needed
        angle, font = piece_ticks(key_labels, _key_room(query_labels, width_px), PRESENTER_TICK_FONT)
        slant = dict(tickangle=angle, ticklabelstandoff=0 if angle == 0 else 6,
                     tickfont=dict(size=round(font * TICK_SIZE / PRESENTER_TICK_FONT)))
    fig.update_layout(
        xaxis=dict(automargin=True, title_text=key_title, side="bottom", **thinned(k_text, step_k), **slant,
                   **plain),
        yaxis=dict(automargin=True, title_text=query_title, **thinned(q_text, step_q), **plain))
    hidden = dict(showticklabels=False, ticks="", **plain)
    if hover_x:
        fig.update_layout(xaxis_range=[-0.5, n_k - 0.5], xaxis2=dict(
            overlaying="x", matches="x", side="bottom", tickvals=list(range(n_k)), ticktext=k_text, **hidden))
    if hover_y:
        rows = q_text if predicts is None else [
            f"{q} (position {i})<br>this row predicts: {p}" for i, (q, p) in enumerate(zip(q_text, plotly_text(
                predicts), strict=True))]
        fig.update_layout(yaxis_range=[n_q - 0.5, -0.5], yaxis2=dict(
            overlaying="y", matches="y", tickvals=list(range(n_q)), ticktext=rows, **hidden))
    else:
        fig.update_layout(yaxis_autorange="reversed")
    if hover_x or hover_y:
        fig.add_trace(go.Scatter(x=[], y=[], xaxis="x", yaxis="y", hoverinfo="skip", showlegend=False,
                                 name="piece axes"))  # keeps the labelled axes drawn
    mark_pieces(mark_pieces(fig, "xaxis", n_k), "yaxis", n_q)
    return styled(fig, title, height or heatmap_height(n_q))


# A page heatmap's title, key title and margins, and what its key pieces turned by -45° take below the map per
# character of the longest (measured in Chromium: 131 px for 13 x 14 pieces of up to 6 characters).
HEATMAP_FRAME_PX, TURNED_CHAR_PX = 99, 6


def heatmap_height(n_rows: int, room_px: int | None = None, key_labels: Sequence[str] = ()) -> int:
    """A page heatmap's height for ``n_rows`` query rows: as tall as its rows ask (34 px each), or, given
    ``room_px`` (the free height that ends it on the screen), within it where its rows keep room for their labels
    (LABEL_PX, under the longest of ``key_labels`` turned); a map that cannot fit that way is not squeezed."""
    natural = _height(n_rows, per_row=34, minimum=420)
    readable = n_rows * LABEL_PX + HEATMAP_FRAME_PX + TURNED_CHAR_PX * max(map(len, key_labels), default=6)
    return natural if room_px is None or readable > room_px else min(natural, room_px)


def _key_room(query_labels: Sequence[str], width_px: float) -> float:
    """The width a slide heatmap's key pieces have at the presenter's font: the figure less its colour bar and the
    query pieces left of the map."""
    return width_px - COLORBAR_PX - 0.6 * PRESENTER_TICK_FONT * max((len(str(p)) for p in query_labels), default=1)


SLIDE_FRAME_PX = 230  # what a slide heatmap's title, slanted key pieces and margins take of the presenter's height


def _slide_row_step(n_q: int) -> int:
    """Every how many query pieces can carry a label on a slide: rows of projector-size text in the presenter's
    capped height (the larger text: a slide is shown in both modes)."""
    return label_step(n_q, PRESENTER_MAX_HEIGHT - SLIDE_FRAME_PX, PRESENTER_ROW_PX)


def _slanted_step(key_labels: Sequence[str], query_labels: Sequence[str], width_px: float,
                  numbered: bool = False) -> int:
    """Every how many key pieces can carry a slanted label in a figure ``width_px`` wide, at the presenter's font
    (the larger one: a slide is shown in both modes), after the colour bar, the query pieces on the left
    (``numbered``: thinned rows, "12 · piece") and the first label's overhang."""
    scale = PRESENTER_TICK_FONT / (LABEL_PX - 4)
    widest = max((len(str(p)) for p in key_labels), default=1) + len(str(len(key_labels))) + 3  # "12 · piece"
    row_label = max((len(str(p)) for p in query_labels), default=1) + (len(str(len(query_labels))) + 3) * numbered
    left = 0.6 * PRESENTER_TICK_FONT * row_label
    room = width_px - COLORBAR_PX - left - SLANT_OVERHANG * PRESENTER_TICK_FONT * widest
    return label_step(len(key_labels), room, LABEL_PX * SLANT * scale)


def _label_step(n: int) -> int:
    """Every how many pieces an axis of n pieces has a tick label: 1 up to LABELLED_MAX_PIECES."""
    return 1 if n <= LABELLED_MAX_PIECES else -(-n // LABELS_LONG_AXIS)


SHOWN_HEADS = 2  # heads the head view draws at first when all are asked for: 8 overlaid are a tangle


def strongest_heads(weights: np.ndarray, n: int = SHOWN_HEADS) -> list[int]:
    """Indices of the ``n`` most focused heads of weights [H, Q, K]: the largest mean over queries of the top
    weight, the heads whose lines stand out instead of a wash of faint ones."""
    focus = np.asarray(weights, dtype=np.float32).max(axis=-1).mean(axis=-1)  # [H]
    return sorted(np.argsort(-focus, kind="stable")[:n].tolist())


def head_view_figure(weights: np.ndarray, heads: Sequence[int], query_labels: Sequence[str],
                     key_labels: Sequence[str], *, title: str, min_weight: float = MIN_LINE_WEIGHT,
                     focus: tuple[str, int] | None = None, query_title: str = "query",
                     key_title: str = "key", shown: Sequence[int] | None = None) -> go.Figure:
    """BertViz-style lines from each query (left) to each key (right); opacity = weight, colour = head.

    weights [len(heads), Q, K] for the head numbers ``heads`` (0-based, used for colours and the
    legend). Lines lighter than ``min_weight`` are not drawn (invisible anyway). Opacity is the
    weight rounded to OPACITY_STEP: lines of one head and opacity share a trace (meta: head and the
    [query, key] pairs, a uint16 array [lines, 2]), so a long sentence with 8 heads is ~100 traces, not
    thousands; the exact weights are in the hover of each token and in the heatmap. Line i of a trace is
    points 3i..3i+2: x = 0, 1, 0 (uint8) and y = query, key, NaN (float32; the NaN breaks the line), with
    the pair about 26 bytes of JSON per line. ``focus`` = ("query", i) or ("key", j) draws only the lines
    of that token. Token markers carry customdata [side, index] so a click can pick the focus. ``shown``: the
    heads drawn at first (default all); the others wait in the legend, a click away.
    """
    weights = np.asarray(weights, dtype=np.float32)
    _, n_q, n_k = weights.shape
    query_labels, key_labels = plotly_text(query_labels), plotly_text(key_labels)
    # plain dicts, validated once by go.Figure (adding ~100 traces one by one copies each twice)
    traces: list[dict[str, Any]] = []
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
        visible = True if shown is None or h in shown else "legendonly"
        traces.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color=color, width=4),
                           hoverinfo="skip", legendgroup=f"head{h}", name=f"Head {h + 1}", visible=visible,
                           meta={"head": int(h), "lines": []}))
        for level in sorted(set(levels[n][drawn[n]].tolist()), reverse=True):
            pairs = np.argwhere(drawn[n] & (levels[n] == level))  # [lines, 2] (query, key)
            xs = np.tile(np.array([0, 1, 0], dtype=np.uint8), len(pairs))
            ys = np.column_stack([pairs, np.full(len(pairs), np.nan)]).astype(np.float32).ravel()
            traces.append(dict(
                type="scatter", x=xs, y=ys, mode="lines", opacity=round(level * OPACITY_STEP, 4),
                line=dict(color=color, width=3), hoverinfo="skip", legendgroup=f"head{h}", name=f"Head {h + 1}",
                showlegend=False, visible=visible, meta={"head": int(h), "lines": pairs.astype(np.uint16)}))
    mean = weights.mean(axis=0)  # display only: the strongest keys of each query, over the heads shown
    strongest = np.argsort(-mean, axis=1)[:, :3]
    q_hover = [f"query <b>{query_labels[i]}</b> (row {i})<br>strongest keys: "
               + ", ".join(f"{key_labels[j]} {mean[i, j]:.2f}" for j in strongest[i])
               for i in range(n_q)]
    for side, x, labels, pos, hover in (("query", 0.0, query_labels, "middle left", q_hover),
                                        ("key", 1.0, key_labels, "middle right", None)):
        traces.append(dict(
            type="scatter", x=[x] * len(labels), y=list(range(len(labels))), mode="markers+text", text=list(labels),
            textposition=pos, textfont=dict(size=16), marker=dict(size=11, color="#444", symbol="square"),
            customdata=[[side, i] for i in range(len(labels))], showlegend=False, name=f"{side} tokens",
            hovertext=hover or [f"key <b>{k}</b> (col {j})" for j, k in enumerate(labels)],
            hovertemplate="%{hovertext}<extra></extra>"))
    fig = go.Figure(data=traces)
    for x, text in ((0.0, query_title), (1.0, key_title)):
        fig.add_annotation(x=x, y=-1.2, text=f"<b>{text}</b>", showarrow=False, xanchor="center",
                           font=dict(size=15))
    fig.update_xaxes(visible=False, range=[-0.6, 1.6])
    fig.update_yaxes(visible=False, autorange="reversed")
    fig.update_layout(legend=dict(orientation="h", y=-0.02, yanchor="top", x=0), clickmode="event+select")
    return styled(fig, title, _height(max(n_q, n_k), per_row=36, extra=170, minimum=440))


def head_titles(n_heads: int) -> list[str]:
    """Model-view column titles short enough not to overlap on a laptop screen: "Head h" up to 8 heads, "Hh" up to 16
    (16 "Head h" ran into each other), beyond that the number of every few heads (each map's hover names its head)."""
    if n_heads <= 8:
        return [f"Head {h + 1}" for h in range(n_heads)]
    if n_heads <= 16:
        return [f"H{h + 1}" for h in range(n_heads)]
    step = math.ceil(n_heads / 16)
    return [str(h + 1) if h % step == 0 else "" for h in range(n_heads)]


@functools.lru_cache(maxsize=16)
def _grid_layout(n_layers: int, n_heads: int) -> dict:
    """The layers x heads subplot grid as a plain layout dict: make_subplots validates every axis and takes most
    of a model view's build time, and the grid depends on the model's shape only."""
    return make_subplots(rows=n_layers, cols=n_heads, horizontal_spacing=0.012, vertical_spacing=0.03,
                         column_titles=head_titles(n_heads),
                         row_titles=[f"Layer {l + 1}" for l in range(n_layers)]).layout.to_plotly_json()


def model_view_figure(weights: np.ndarray, query_labels: Sequence[str], key_labels: Sequence[str], *,
                      title: str, selected: tuple[int, int] | None = None) -> go.Figure:
    """Every head of every layer as a small heatmap: weights [L, H, Q, K]. Subplot (l, h) is trace l*H+h.

    A map's z is uint8, round(255 * weight), on a colour scale spanning 0..255 (colour bar labelled 0..1):
    one byte per weight keeps all L*H maps light (the exact float32 weights are in the heatmap the click
    opens). Trace L*H + l*H+h is that subplot's click target: ONE transparent square marker at the map's
    centre (customdata [[layer, head]]), CLICK_TARGET_PX wide and clipped to the map, so hovering or
    clicking anywhere on the map hits it (Plotly returns no point for a click on a heatmap); its hover
    names the head. The maps draw no tick labels (too small): the labels only have to match the weights'
    query and key lengths. ``selected`` (layer, head) gets a frame. Past MODEL_VIEW_MAX_CELLS queries or
    keys a map shows block maxima (``_block_max``): a cell spans f queries or keys (dy / dx = f), so the axes
    and the click targets stay in piece positions.
    """
    weights = np.asarray(weights)
    n_layers, n_heads, n_q, n_k = weights.shape
    if (len(query_labels), len(key_labels)) != (n_q, n_k):
        raise ValueError(f"{len(query_labels)} query and {len(key_labels)} key labels for weights [.., {n_q}, {n_k}]")
    levels, f_q, f_k = _block_max(np.rint(np.clip(weights, 0.0, 1.0) * MODEL_VIEW_LEVELS).astype(np.uint8),
                                  MODEL_VIEW_MAX_CELLS)
    cells = {} if f_q == f_k == 1 else dict(x0=(f_k - 1) / 2, dx=f_k, y0=(f_q - 1) / 2, dy=f_q)
    layout = copy.deepcopy(_grid_layout(n_layers, n_heads))
    heads = [(l, h) for l in range(n_layers) for h in range(n_heads)]
    suffixes = ["" if n == 0 else str(n + 1) for n in range(len(heads))]  # subplot n: axes x{n+1}, y{n+1}
    maps, clicks = [], []  # plain dicts, validated once by go.Figure (much faster than add_trace per subplot)
    # set ranges: autorange would pad the axes for the huge marker; fixedrange: no axis drag handles, whose
    # 20 px corners would overlap the neighbouring maps (tight spacing) and swallow their hover and clicks
    hidden = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False, fixedrange=True)
    for (l, h), a in zip(heads, suffixes, strict=True):
        maps.append(dict(type="heatmap", z=levels[l, h], coloraxis="coloraxis", name=f"L{l + 1} H{h + 1}",
                         hoverinfo="skip", xaxis=f"x{a}", yaxis=f"y{a}", **cells))
        clicks.append(dict(
            type="scatter", x=[(n_k - 1) / 2], y=[(n_q - 1) / 2], mode="markers", showlegend=False,
            customdata=[[l, h]], marker=dict(size=CLICK_TARGET_PX, symbol="square", color="rgba(0,0,0,0)"),
            name=f"select L{l + 1} H{h + 1}", unselected=dict(marker=dict(opacity=0)),
            selected=dict(marker=dict(opacity=0)), cliponaxis=True, xaxis=f"x{a}", yaxis=f"y{a}",
            hovertemplate=f"layer {l + 1} · head {h + 1}<br>click to open this head<extra></extra>"))
        layout[f"xaxis{a}"].update(range=[-0.5, n_k - 0.5], **hidden)
        layout[f"yaxis{a}"].update(range=[n_q - 0.5, -0.5], **hidden)
    fig = go.Figure(data=maps + clicks, layout=layout)
    ticks = np.linspace(0.0, 1.0, 6)
    fig.update_layout(coloraxis=dict(colorscale=WEIGHT_COLORSCALE, cmin=0, cmax=MODEL_VIEW_LEVELS,
                                     colorbar=dict(title=dict(text="weight"), thickness=14,
                                                   tickvals=(ticks * MODEL_VIEW_LEVELS).tolist(),
                                                   ticktext=[f"{t:g}" for t in ticks])),
                      clickmode="event+select", dragmode=False)
    if selected is not None:
        l, h = selected
        n = l * n_heads + h + 1
        suffix = "" if n == 1 else str(n)
        fig.add_shape(type="rect", xref=f"x{suffix} domain", yref=f"y{suffix} domain", x0=-0.04, x1=1.04,
                      y0=-0.04, y1=1.04, line=dict(color="#d62728", width=3))
    return styled(fig, title, max(320, min(1300, 150 * n_layers + 90)))


def _block_max(levels: np.ndarray, cells: int) -> tuple[np.ndarray, int, int]:
    """[.., Q, K] -> (the maxima of f_q x f_k blocks, f_q, f_k), f = ceil(n / cells): at most ``cells`` rows and
    columns. Maxima, not means: a head's sharp weight stays as dark as it is (a mean would fade it f_q * f_k times).
    The last blocks are padded with zeros."""
    *lead, n_q, n_k = levels.shape
    f_q, f_k = -(-n_q // cells), -(-n_k // cells)
    if f_q == f_k == 1:
        return levels, 1, 1
    rows, cols = -(-n_q // f_q), -(-n_k // f_k)
    padded = np.zeros((*lead, rows * f_q, cols * f_k), dtype=levels.dtype)
    padded[..., :n_q, :n_k] = levels
    return padded.reshape(*lead, rows, f_q, cols, f_k).max(axis=(-3, -1)), f_q, f_k


def head_stats_frame(stats: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per head: layer and head numbered from 1, then the statistics (arrays [L, H]) in STAT_COLUMNS order."""
    first = np.asarray(stats["entropy"])
    n_layers, n_heads = first.shape
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    data: dict[str, np.ndarray] = {"layer": layer.ravel() + 1, "head": head.ravel() + 1}
    for key, column in STAT_COLUMNS.items():
        data[column] = np.asarray(stats[key], dtype=np.float64).ravel()
    return pd.DataFrame(data)
