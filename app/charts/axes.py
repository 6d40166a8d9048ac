"""Token-labelled axes, the helpers every figure with pieces on its axes shares.

Axes are numeric positions with the token pieces as tick text: categorical axes would merge repeated pieces
(two "<pad>" or two "▁the" would collapse into one row). Plotly reads every label as HTML, so pieces are escaped:
a raw "<s>" would start strike-through and break the figure's layout.
"""
from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

import numpy as np
import plotly.graph_objects as go

TICK_SIZE = 14  # token pieces must be readable from the back of a lecture hall
LABEL_PX = TICK_SIZE + 4  # the room a tick label needs across its axis
# A label turned by -45°: neighbours d px apart stand d·sin 45° apart, and that must exceed the label's height (about
# 19 px at TICK_SIZE): 1.6 x LABEL_PX. (1.4 left them 1-2 px into each other, tests/e2e/test_text_layout.py.)
SLANT = 1.6
# A label turned by -45° reaches left of its tick by about cos 45° of its width (0.6 em a character): for the first
# label that is room taken from the axis. (Without it, 13 pieces of 3-7 characters over 262 px collided.)
SLANT_OVERHANG = 0.6 * 0.71
# The width of a figure in a page of 1, 2 or 3 columns on a 1280-px screen with the sidebar open (measured in
# Chromium: the main column runs from x = 380 to 1200; columns are 16 px apart), before its colour bar and piece
# labels: how much room its axes have for labels. (950 / 440 / 270 before: labels collided,
# tests/e2e/test_text_layout.py.)
COLUMN_PX = {1: 820, 2: 400, 3: 262}
SLIDE_PX = 560  # a slide's figure column (7 of 10 beside the slide's text) at 1280 px
COLORBAR_PX = 90  # what a vertical colour bar with its title takes of a figure's width


def plotly_text(labels: Iterable[str]) -> list[str]:
    """Pieces as Plotly text: Plotly reads text as HTML, so "<s>" would start strike-through and vanish."""
    return [html.escape(str(label), quote=False) for label in labels]


def clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut: for a title in a narrow column."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def indexed_labels(labels: Sequence[str]) -> list[str]:
    """"i · piece" for hovers, escaped: tells apart repeated pieces."""
    return [f"{i} · {label}" for i, label in enumerate(plotly_text(labels))]


def label_step(n: int, axis_px: float | None, px_per_label: float = LABEL_PX) -> int:
    """Every how many pieces an axis of n pieces over ``axis_px`` pixels can carry a readable label (1: all;
    None: the room is unknown, label all)."""
    return 1 if axis_px is None else max(1, math.ceil(n * px_per_label / max(axis_px, 1.0)))


def nice_step(span: float) -> float:
    """The round tick interval (1, 2 or 5 x 10^k) nearest above ``span``, as an axis labels a count of steps."""
    if span <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(span))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= span)


def thinned(text: list[str], step: int) -> dict:
    """tickvals / ticktext of every ``step``-th piece; when some are skipped, each label says its position
    ("45 · ▁the"), so the reader can count to the others."""
    positions = range(0, len(text), step)
    return dict(tickvals=list(positions), ticktext=text if step == 1 else [f"{i} · {text[i]}" for i in positions])


def plot_px(height: int) -> int:
    """The height of a matrix figure's plot area: its height less the title above and the key labels below."""
    return max(60, height - 190)


CELL_FONT_PX = 11  # the numbers printed in matrix cells
Y_LABELS_PX = 90  # what the piece labels left of a matrix take of its width


def fits_text(n_rows: int, n_cols: int, height: int, columns: int, cell_px: float = 16.0,
              text: np.ndarray | None = None, colorbar: bool = True) -> bool:
    """Whether a matrix of n_rows x n_cols cells drawn ``height`` px tall in a page of ``columns`` columns has
    cells of at least ``cell_px`` both ways, and wide enough for the longest of ``text`` (the strings to print,
    at CELL_FONT_PX; about 0.6 em a character plus a margin): where not, the numbers would run into each other
    (the hover still gives every value). ``colorbar``: whether one takes from the cells' room."""
    width = (COLUMN_PX[columns] - COLORBAR_PX * colorbar - Y_LABELS_PX) / max(n_cols, 1)
    widest = max((len(str(t)) for t in np.ravel(text)), default=0) if text is not None else 0
    needed = max(cell_px, 0.62 * CELL_FONT_PX * widest + 6)
    return plot_px(height) / max(n_rows, 1) >= cell_px and width >= needed


MAX_LABELLED = 40  # an axis of up to this many pieces names every one of them (design.md: no k-th labels)
MIN_TICK_PX = 11  # the smallest piece label a crowded axis may shrink to (normal mode; presenter mode sets 18 px
# and has 1.5x the room with the sidebar folded, so 11 px here still leaves its larger labels apart)
GLYPH_EM = 0.62  # the width of a character, in ems of its font, with room to spare


# What a matrix's row axis takes of its width besides its piece labels (its title, the figure's margins), or a bar
# chart's value axis: measured in Chromium, 14 pieces in a 400-px column collided without it.
ROW_AXIS_PX = 50
PIECE_ROOM_PX = MIN_TICK_PX + 4  # the least room a page's piece label may have along its axis: at 11 px, turned,
# it stands clear of its neighbours, and presenter mode's 1.44x wider columns (its sidebar folded) still give its
# 18-px labels about 22 px each


def columns_for(most: int, keys: Sequence[str], rows: Sequence[str] = (), colorbar: bool = True) -> int:
    """How many of a page's columns (up to ``most``) a matrix may stand in side by side, its ``keys`` along the
    bottom (``rows`` on the left, a colour bar or none) still each named in a label of its own (PIECE_ROOM_PX):
    fewer columns, not fewer labels, for a long sentence."""
    widest = max((len(str(p)) for p in rows), default=0)
    for columns in sorted((c for c in COLUMN_PX if c <= most), reverse=True):
        room = COLUMN_PX[columns] - COLORBAR_PX * colorbar - 0.6 * TICK_SIZE * widest - ROW_AXIS_PX
        if room / max(len(keys), 1) >= PIECE_ROOM_PX:
            return columns
    return 1


def piece_ticks(labels: Sequence[str], axis_px: float | None, font: int = TICK_SIZE) -> tuple[int, int]:
    """(angle, font size) at which ``labels`` along an axis ``axis_px`` long stand apart: upright where the words
    fit side by side, else turned by -45°, else by -90° (one line of text each), shrinking the font down to
    MIN_TICK_PX only where even that is too close. None: the room is unknown, turned by -45°."""
    n = max(len(labels), 1)
    widest = max((len(str(p)) for p in labels), default=1)
    if axis_px is None:
        return (0 if widest <= 3 and n <= 30 else -45), font
    if GLYPH_EM * font * widest + 8 <= axis_px / n:
        return 0, font
    if (font + 4) * SLANT <= (axis_px - SLANT_OVERHANG * font * widest) / n:
        return -45, font
    return -90, max(MIN_TICK_PX, min(font, int(axis_px / n) - 4))


def mark_pieces(fig: go.Figure, axis: str, n: int) -> go.Figure:
    """Record that layout axis ``axis`` ("xaxis", "yaxis2", ...) names ``n`` pieces: presenter mode makes the
    figure tall enough for them (app.charts.style.presented) and the layout test counts their drawn labels."""
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    meta["pieces"] = {**meta.get("pieces", {}), axis: n}
    return fig.update_layout(meta=meta)


def _axis_name(fig: go.Figure, letter: str, row: int | None, col: int | None) -> str:
    """The layout name ("xaxis3") of the ``letter`` axis of subplot (row, col), or of the plain figure."""
    if row is None:
        return f"{letter}axis"
    return str(getattr(fig.get_subplot(row, col), f"{letter}axis").plotly_name)


def token_axes(fig: go.Figure, x_labels: list[str] | None, y_labels: list[str] | None,
               x_title: str | None = None, y_title: str | None = None, row: int | None = None,
               col: int | None = None, x_px: float | None = None, y_px: float | None = None) -> go.Figure:
    """Tick positions with their pieces; first query on top (like a matrix). An axis of up to MAX_LABELLED
    pieces names every piece: turned and, only where needed, smaller (piece_ticks) in the room it has (``x_px`` /
    ``y_px``, e.g. COLUMN_PX and plot_px). A longer axis labels every k-th piece (label_step); the hovers name
    every piece from their own data."""
    where = {} if row is None else {"row": row, "col": col}
    y_step = 1 if y_labels is None or len(y_labels) <= MAX_LABELLED else label_step(len(y_labels), y_px)
    if x_labels is not None:
        if x_px is not None and y_labels:  # the query labels on the left, and the axis's title, take their width
            widest = max(len(str(p)) + (len(str(i)) + 3 if y_step > 1 else 0) for i, p in enumerate(y_labels))
            x_px = x_px - 0.6 * TICK_SIZE * widest - ROW_AXIS_PX
        if len(x_labels) <= MAX_LABELLED:
            step, (angle, font) = 1, piece_ticks(x_labels, x_px)
        else:
            step = label_step(len(x_labels), x_px, LABEL_PX * SLANT)
            angle, font = -45, TICK_SIZE
        fig.update_xaxes(tickmode="array", **thinned(plotly_text(x_labels), step),
                         tickangle=angle, tickfont=dict(size=font),
                         # turned pieces start a little lower, clear of the value axis's "0" in the corner
                         ticklabelstandoff=0 if angle == 0 else 6,
                         title_text=x_title, showgrid=False, zeroline=False, automargin=True,
                         range=[-0.5, len(x_labels) - 0.5], **where)
        mark_pieces(fig, _axis_name(fig, "x", row, col), len(x_labels))
    if y_labels is not None:
        rows_px = None if y_px is None or y_step > 1 else y_px / max(len(y_labels), 1)
        font = TICK_SIZE if rows_px is None else max(MIN_TICK_PX, min(TICK_SIZE, int(rows_px) - 4))
        fig.update_yaxes(tickmode="array", **thinned(plotly_text(y_labels), y_step),
                         tickfont=dict(size=font), range=[len(y_labels) - 0.5, -0.5], title_text=y_title,
                         showgrid=False, zeroline=False, automargin=True, **where)
        mark_pieces(fig, _axis_name(fig, "y", row, col), len(y_labels))
    return fig


def pair_labels(query_labels: list[str], key_labels: list[str]) -> np.ndarray:
    """customdata [Q, K, 2]: "i · piece" of the query and of the key for each cell's hover."""
    q, k = indexed_labels(query_labels), indexed_labels(key_labels)
    return np.array([[[qi, kj] for kj in k] for qi in q], dtype=object)


def matrix_height(n_rows: int, base: int = 170, per_row: int = 26, cap: int = 900) -> int:
    return int(min(cap, base + per_row * n_rows))


