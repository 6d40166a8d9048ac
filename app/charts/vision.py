"""Figures for the Vision page: a digit cut into patches or windows, attention laid over the image, the
learned position similarities, Swin's shifted-window masks, window attention, relative bias and receptive
fields. numpy in (float32, no per-cell strings), Plotly out; image rows run top to bottom."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.style import DIVERGING_COLORSCALE, MASKED_COLOR, WEIGHT_COLORSCALE, styled

INK_COLORSCALE = [[0.0, "#ffffff"], [1.0, "#222222"]]
OVERLAY_COLORSCALE = [[0.0, "rgba(255,255,255,0)"], [0.15, "rgba(255,200,0,0.35)"], [1.0, "rgba(215,25,28,0.9)"]]
WINDOW_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
GRID_LINE = dict(color="#2b8cbe", width=2)
CLICK_PX = 34  # invisible square markers over the cells: Plotly returns a click on a scatter point


def _image_trace(image: np.ndarray, opacity: float = 1.0, show_hover: bool = True) -> go.Heatmap:
    return go.Heatmap(z=np.asarray(image, dtype=np.float32), zmin=0, zmax=16, colorscale=INK_COLORSCALE,
                      showscale=False, opacity=opacity, name="ink",
                      hovertemplate="pixel row %{y}, col %{x}<br>ink %{z:.0f} / 16<extra></extra>"
                      if show_hover else None, hoverinfo=None if show_hover else "skip")


def _image_axes(fig: go.Figure, side: int, row: int | None = None, col: int | None = None) -> None:
    where = {} if row is None else {"row": row, "col": col}
    fig.update_xaxes(range=[-0.5, side - 0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="",
                     constrain="domain", **where)
    fig.update_yaxes(range=[side - 0.5, -0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="",
                     scaleanchor="x" if row is None else None, constrain="domain", **where)


def _grid_lines(fig: go.Figure, side: int, step: int, offset: int = 0, row: int | None = None,
                col: int | None = None, line: dict | None = None) -> None:
    """Lines every ``step`` pixels starting at ``offset`` (cell borders sit at half-integers)."""
    where = {} if row is None else {"row": row, "col": col}
    xs, ys = [], []
    for k in range(offset % step, side + 1, step):
        edge = k - 0.5
        xs += [edge, edge, None, -0.5, side - 0.5, None]
        ys += [-0.5, side - 0.5, None, edge, edge, None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=line or GRID_LINE, hoverinfo="skip",
                             showlegend=False), **where)


def _square(fig: go.Figure) -> None:
    for axis in fig.layout:
        if axis.startswith("yaxis"):
            fig.layout[axis].scaleanchor = "x" + axis[5:]


def digit_patches(image: np.ndarray, patch: int, title: str) -> go.Figure:
    """The digit with the patch grid drawn over it and each patch's number (row-major, 1-based)."""
    side = image.shape[0]
    fig = go.Figure(_image_trace(image))
    _grid_lines(fig, side, patch)
    g = side // patch
    centres = (np.arange(g) * patch + (patch - 1) / 2).astype(np.float32)
    cx, cy = np.meshgrid(centres, centres)
    fig.add_trace(go.Scatter(x=cx.ravel(), y=cy.ravel(), mode="text", text=[str(i + 1) for i in range(g * g)],
                             textfont=dict(color="#2b8cbe", size=14), hoverinfo="skip", showlegend=False))
    _image_axes(fig, side)
    return styled(fig, title, 380)


def patch_sequence(image: np.ndarray, patch: int) -> go.Figure:
    """The patches laid out in a row, as the Transformer reads them: [CLS], then patch 1, 2, ... (row-major)."""
    side = image.shape[0]
    g = side // patch
    strip = np.full((patch, (g * g + 1) * (patch + 1)), np.nan, dtype=np.float32)
    for i in range(g * g):
        r, c = divmod(i, g)
        start = (i + 1) * (patch + 1)
        strip[:, start:start + patch] = image[r * patch:(r + 1) * patch, c * patch:(c + 1) * patch]
    fig = go.Figure(go.Heatmap(z=strip, zmin=0, zmax=16, colorscale=INK_COLORSCALE, showscale=False,
                               hovertemplate="ink %{z:.0f} / 16<extra></extra>", xgap=1, ygap=1))
    labels = ["[CLS]"] + [str(i + 1) for i in range(g * g)]
    ticks = [i * (patch + 1) + (patch - 1) / 2 for i in range(g * g + 1)]
    fig.add_trace(go.Scatter(x=[ticks[0]], y=[(patch - 1) / 2], mode="markers", showlegend=False,
                             marker=dict(symbol="square", size=22, color="#2b8cbe"), hoverinfo="skip"))
    fig.update_xaxes(tickmode="array", tickvals=ticks, ticktext=labels, showgrid=False, zeroline=False,
                     title_text="token position (the sequence the encoder reads)")
    fig.update_yaxes(range=[patch - 0.5, -0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="")
    return styled(fig, "The same digit as a sequence of patch tokens", 200)


def attention_overlay(image: np.ndarray, weights: np.ndarray, patch: int, title: str,
                      selected: int | None = None, clickable: bool = False, height: int = 460,
                      cell_ids: np.ndarray | None = None) -> go.Figure:
    """``weights`` [g, g] (one per patch) laid over the digit; ``selected`` (0-based patch) is outlined.
    With ``clickable`` an invisible square marker sits on every patch for clicks, its customdata the patch's
    index (or its entry of ``cell_ids`` [g*g])."""
    side = image.shape[0]
    g = side // patch
    fig = go.Figure(_image_trace(image, opacity=0.55, show_hover=False))
    fig.add_trace(go.Heatmap(
        z=np.asarray(weights, dtype=np.float32), x0=(patch - 1) / 2, dx=patch, y0=(patch - 1) / 2, dy=patch,
        zmin=0, zmax=max(float(np.max(weights)), 1e-6), colorscale=OVERLAY_COLORSCALE, name="attention",
        colorbar=dict(title=dict(text="weight"), thickness=14),
        hovertemplate="patch row %{y}, col %{x}<br>weight %{z:.3f}<extra></extra>" if patch == 1 else
        f"patch at pixel row %{{y:.1f}}, col %{{x:.1f}} ({patch}x{patch})<br>weight %{{z:.3f}}<extra></extra>"))
    _grid_lines(fig, side, patch, line=dict(color="rgba(43,140,190,0.35)", width=1))
    if selected is not None:
        r, c = divmod(selected, g)
        fig.add_shape(type="rect", x0=c * patch - 0.5, x1=(c + 1) * patch - 0.5, y0=r * patch - 0.5,
                      y1=(r + 1) * patch - 0.5, line=dict(color="#1a9641", width=4))
    if clickable:
        centres = (np.arange(g) * patch + (patch - 1) / 2).astype(np.float32)
        cx, cy = np.meshgrid(centres, centres)
        fig.add_trace(go.Scatter(
            x=cx.ravel(), y=cy.ravel(), mode="markers", showlegend=False,
            customdata=(np.arange(g * g) if cell_ids is None else np.asarray(cell_ids))[:, None],
            marker=dict(symbol="square", size=CLICK_PX, color="rgba(0,0,0,0)"), name="patches",
            selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
            hovertemplate="click to see what this token attends to<extra></extra>"))
        fig.update_layout(clickmode="event+select", dragmode=False)
    _image_axes(fig, side)
    return styled(fig, title, height)


def overlay_grid(image: np.ndarray, maps: np.ndarray, patch: int, title: str) -> go.Figure:
    """maps [L, H, g, g] as small overlays: layers down, heads across, one colour scale."""
    n_layers, n_heads = maps.shape[:2]
    side = image.shape[0]
    fig = make_subplots(rows=n_layers, cols=n_heads, horizontal_spacing=0.01, vertical_spacing=0.02,
                        row_titles=[f"layer {i + 1}" for i in range(n_layers)],
                        column_titles=[f"head {h + 1}" for h in range(n_heads)])
    top = max(float(np.max(maps)), 1e-6)
    for layer in range(n_layers):
        for head in range(n_heads):
            fig.add_trace(_image_trace(image, opacity=0.6, show_hover=False), row=layer + 1, col=head + 1)
            fig.add_trace(go.Heatmap(
                z=maps[layer, head], x0=(patch - 1) / 2, dx=patch, y0=(patch - 1) / 2, dy=patch, zmin=0, zmax=top,
                colorscale=OVERLAY_COLORSCALE, coloraxis=None, showscale=layer == 0 and head == 0,
                colorbar=dict(title=dict(text="weight"), thickness=14), name=f"L{layer + 1} H{head + 1}",
                hovertemplate=f"layer {layer + 1} · head {head + 1}<br>weight %{{z:.3f}}<extra></extra>"),
                row=layer + 1, col=head + 1)
            _image_axes(fig, side, row=layer + 1, col=head + 1)
    _square(fig)
    return styled(fig, title, 150 + 150 * n_layers)


def probabilities(probs: np.ndarray, label: int | None) -> go.Figure:
    """The ten class probabilities; the true label (when known) in green."""
    probs = np.asarray(probs, dtype=np.float32)
    colors = ["#1a9641" if d == label else "#3a78b5" for d in range(len(probs))]
    fig = go.Figure(go.Bar(x=np.arange(len(probs)), y=probs, marker_color=colors,
                           hovertemplate="digit %{x}<br>probability %{y:.3f}<extra></extra>"))
    fig.update_xaxes(tickmode="linear", title_text="digit")
    fig.update_yaxes(range=[0, 1], title_text="probability")
    best = int(np.argmax(probs))
    return styled(fig, f"Prediction: {best} ({probs[best]:.1%})", 300)


def position_similarity(learned: np.ndarray, sinusoid: np.ndarray, grid: int) -> go.Figure:
    """For every patch (a tile placed where the patch is), the cosine similarity of its position vector with
    every other patch's: learned ViT embeddings (left) against the text model's sinusoids (right)."""
    tile = grid + 1
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.06, subplot_titles=[
        "Learned ViT position embeddings", "Sinusoidal encoding (patches read row by row)"])
    for c, sim in enumerate((learned, sinusoid), 1):
        big = np.full((grid * tile - 1, grid * tile - 1), np.nan, dtype=np.float32)
        for i in range(grid * grid):
            r, q = divmod(i, grid)
            big[r * tile:r * tile + grid, q * tile:q * tile + grid] = np.asarray(sim[i]).reshape(grid, grid)
        fig.add_trace(go.Heatmap(z=big, zmin=-1, zmax=1, colorscale=DIVERGING_COLORSCALE, showscale=c == 2,
                                 colorbar=dict(title=dict(text="cosine"), thickness=14),
                                 hovertemplate="cosine %{z:.2f}<extra></extra>"), row=1, col=c)
        fig.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, row=1, col=c)
        fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed",
                         row=1, col=c)
    _square(fig)
    return styled(fig, "Which positions look alike: one tile per patch, showing its similarity to every patch", 470)


# --- Swin ---------------------------------------------------------------------------------------------------

def window_partitions(image: np.ndarray, window_ids: Sequence[np.ndarray], titles: Sequence[str],
                      shifted_image: np.ndarray | None = None, shift: int = 0, window: int = 4) -> go.Figure:
    """The digit coloured by window, once per partition (``window_ids`` [R, R] each, pixel = token); then,
    if given, the cyclically shifted digit with its regular windows (what the block actually cuts)."""
    side = image.shape[0]
    panels = list(titles) + (["After the cyclic shift (torch.roll)"] if shifted_image is not None else [])
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=panels, horizontal_spacing=0.04)
    for c, ids in enumerate(window_ids, 1):
        fig.add_trace(_image_trace(image), row=1, col=c)
        n = int(ids.max()) + 1
        scale = [[k / max(n - 1, 1), WINDOW_COLORS[k % len(WINDOW_COLORS)]] for k in range(n)]
        fig.add_trace(go.Heatmap(z=ids.astype(np.float32), zmin=0, zmax=max(n - 1, 1), colorscale=scale,
                                 opacity=0.35, showscale=False, name="window",
                                 hovertemplate="row %{y}, col %{x}<br>window %{z:.0f}<extra></extra>"), row=1, col=c)
        _image_axes(fig, side, row=1, col=c)
    if shifted_image is not None:
        c = len(panels)
        fig.add_trace(_image_trace(shifted_image), row=1, col=c)
        _grid_lines(fig, side, window, row=1, col=c)
        _grid_lines(fig, side, side, offset=side - shift, row=1, col=c,
                    line=dict(color="#d7191c", width=2, dash="dot"))
        _image_axes(fig, side, row=1, col=c)
    _square(fig)
    return styled(fig, "Windows on the 8x8 grid (each pixel is a token here)", 400)


def window_masks(masks: np.ndarray, window: int) -> go.Figure:
    """The shifted-window mask [nW, M*M, M*M] (True = may attend), one matrix per window."""
    masks = np.asarray(masks)
    n = len(masks)
    fig = make_subplots(rows=1, cols=n, subplot_titles=[f"window {w}" for w in range(n)], horizontal_spacing=0.02)
    for w in range(n):
        fig.add_trace(go.Heatmap(
            z=masks[w].astype(np.float32), zmin=0, zmax=1, showscale=False, xgap=1, ygap=1,
            colorscale=[[0.0, MASKED_COLOR], [1.0, "#3a78b5"]], name=f"window {w}",
            hovertemplate="query %{y} · key %{x}<br>may attend %{z:.0f} (1 yes, 0 blocked)<extra></extra>"),
            row=1, col=w + 1)
        fig.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, title_text="key", row=1,
                         col=w + 1)
        fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed",
                         title_text="query" if w == 0 else None, row=1, col=w + 1)
    _square(fig)
    return styled(fig, f"Shifted-window mask: query × key inside each {window}x{window} window "
                       "(blue = may attend, grey = blocked)", 360)


def window_attention(weights: np.ndarray, mask: np.ndarray | None, title: str) -> go.Figure:
    """weights [nW, H, M*M, M*M]: windows across and heads down (one window: heads across); blocked cells grey."""
    weights = np.asarray(weights, dtype=np.float32)
    n_windows, n_heads = weights.shape[:2]
    across = n_windows > 1
    top = max(float(np.max(weights)), 1e-6)  # one scale for all; the weights of 16 keys rarely approach 1
    rows, cols = (n_heads, n_windows) if across else (1, n_heads)
    fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.02, vertical_spacing=0.04,
                        row_titles=[f"head {h + 1}" for h in range(n_heads)] if across else None,
                        column_titles=[f"window {w}" for w in range(n_windows)] if across else
                        [f"head {h + 1}" for h in range(n_heads)])
    for w in range(n_windows):
        for h in range(n_heads):
            z = weights[w, h].copy()
            if mask is not None:
                z[~np.asarray(mask[w])] = np.nan
            where = dict(row=h + 1, col=w + 1) if across else dict(row=1, col=h + 1)
            fig.add_trace(go.Heatmap(z=z, zmin=0, zmax=top, colorscale=WEIGHT_COLORSCALE, showscale=w == 0 and h == 0,
                                     colorbar=dict(title=dict(text="weight"), thickness=14), name=f"W{w} H{h + 1}",
                                     hovertemplate=f"window {w} · head {h + 1}<br>query %{{y}} · key %{{x}}"
                                                   "<br>weight %{z:.3f}<extra></extra>"), **where)
            fig.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, constrain="domain",
                             **where)
            fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed",
                             constrain="domain", **where)
    fig.update_layout(plot_bgcolor=MASKED_COLOR)
    _square(fig)
    return styled(fig, title, 120 + 250 * rows)


def bias_tables(tables: np.ndarray, title: str) -> go.Figure:
    """tables [H, 2M-1, 2M-1]: the learned bias per relative offset (dy down, dx across; centre = same token)."""
    tables = np.asarray(tables, dtype=np.float32)
    n_heads, side = tables.shape[:2]
    half = side // 2
    bound = max(float(np.abs(tables).max()), 1e-6)
    fig = make_subplots(rows=1, cols=n_heads, subplot_titles=[f"head {h + 1}" for h in range(n_heads)],
                        horizontal_spacing=0.03)
    for h in range(n_heads):
        fig.add_trace(go.Heatmap(z=tables[h], x0=-half, y0=-half, zmin=-bound, zmax=bound, zmid=0,
                                 colorscale=DIVERGING_COLORSCALE, showscale=h == n_heads - 1,
                                 colorbar=dict(title=dict(text="bias"), thickness=14), name=f"head {h + 1}",
                                 hovertemplate="key dy %{y:+d}, dx %{x:+d} from the query<br>bias %{z:.3f}"
                                               "<extra></extra>"), row=1, col=h + 1)
        fig.update_xaxes(title_text="dx", dtick=1, showgrid=False, zeroline=False, row=1, col=h + 1)
        fig.update_yaxes(title_text="dy" if h == 0 else None, dtick=1, autorange="reversed", showgrid=False,
                         zeroline=False, row=1, col=h + 1)
    _square(fig)
    return styled(fig, title, 360)


def receptive_fields(image: np.ndarray, maps: np.ndarray, titles: Sequence[str], pixel: tuple[int, int]) -> go.Figure:
    """maps [n, S, S] (1 = that input pixel can have reached the token over ``pixel``), one panel per block."""
    maps = np.asarray(maps, dtype=np.float32)
    side = image.shape[0]
    fig = make_subplots(rows=1, cols=len(maps), subplot_titles=list(titles), horizontal_spacing=0.02)
    for c, reach in enumerate(maps, 1):
        fig.add_trace(_image_trace(image, show_hover=False), row=1, col=c)
        fig.add_trace(go.Heatmap(z=reach, zmin=0, zmax=1, showscale=False, name="reached",
                                 colorscale=[[0.0, "rgba(255,255,255,0)"], [1.0, "rgba(26,150,65,0.45)"]],
                                 hovertemplate="pixel row %{y}, col %{x}<br>reached %{z:.0f}<extra></extra>"),
                      row=1, col=c)
        fig.add_shape(type="rect", x0=pixel[1] - 0.5, x1=pixel[1] + 0.5, y0=pixel[0] - 0.5, y1=pixel[0] + 0.5,
                      line=dict(color="#d7191c", width=3), row=1, col=c)
        _image_axes(fig, side, row=1, col=c)
    _square(fig)
    return styled(fig, "Receptive field: which pixels the token over the red pixel can have read", 340)
