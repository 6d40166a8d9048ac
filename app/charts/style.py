"""One look for every figure: a small template (projector-readable fonts, no default-template bloat),
one colour scale for attention weights, and presenter mode's restyling for a lecture hall's projector."""
from __future__ import annotations

from typing import Any

import plotly.colors as pc
import plotly.graph_objects as go

WEIGHT_COLORSCALE = "Blues"  # every attention-weight map uses this, 0 = white
DIVERGING_COLORSCALE = "RdBu_r"  # signed values (scores, encodings, Q/K/V), centred on 0
HEAD_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]
MASKED_COLOR = "#d9d9d9"  # cells a mask removed

TEMPLATE = go.layout.Template(layout=go.Layout(
    font=dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=15, color="#1a1a1a"),
    title=dict(font=dict(size=18), x=0.0, xanchor="left"),
    paper_bgcolor="white", plot_bgcolor="white",
    margin=dict(l=10, r=10, t=50, b=10),
    hoverlabel=dict(font_size=15),
    colorway=HEAD_COLORS,
    # long piece labels are never clipped; "allow": Plotly's default for numeric axes ("hide past div") measures
    # every tick label again after placing each one, quadratic in the labels (3 s for 200 pieces in Chromium)
    xaxis=dict(automargin=True, ticklabeloverflow="allow"), yaxis=dict(automargin=True, ticklabeloverflow="allow"),
))

# Modebar: PNG by default; SVG is offered through a second button config (see plotly_config()).
def plotly_config(filename: str, fmt: str = "png") -> dict:
    """Config for st.plotly_chart: a download button saving ``filename`` as png or svg at 2x scale."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": fmt, "filename": filename, "scale": 2},
            "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def styled(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the project template (and a title/height) to a figure. A colour bar's title stands to its right:
    on top (Plotly's default) it collided with the bar's top tick label ("1" over "weight")."""
    fig.update_layout(template=TEMPLATE)
    fig.update_traces(colorbar_title_side="right", selector=lambda t: "colorbar" in t and t.showscale is not False
                      and t.colorbar.title.text)
    for key in [k for k in fig.layout.to_plotly_json() if k.startswith("coloraxis")]:  # shared scales
        fig.layout[key].colorbar.title.side = "right"
    if title is not None:
        fig.update_layout(title_text=title)
        top = 80 if "<br>" in title else 50  # a subtitle line needs room above the plot
        if any(a.yref == "paper" and a.yanchor == "bottom" and (a.y or 0) >= 0.99 for a in fig.layout.annotations):
            top += 30  # and subplot titles sit between the title and the plots
        if top > 50:
            fig.update_layout(margin_t=top)
    if height is not None:
        fig.update_layout(height=height)
    return fig


# Presenter mode: the same figures, readable from the back of a lecture hall on a 1280x720 projector.
PRESENTER_FONT = 20  # text in general, legends, hover labels
PRESENTER_TICK_FONT = 18  # tick labels (pieces, numbers) and axis titles: at least 16 px on screen
PRESENTER_TITLE_FONT = 26
PRESENTER_TEXT_SCALE = 1.3  # annotations, subplot titles, token labels, numbers in cells
PRESENTER_MIN_TEXT = 18  # px: no chart text smaller, read from the back of the hall
PRESENTER_LINE_SCALE = 1.8  # head-view lines, curves
PRESENTER_MAX_HEIGHT = 560  # px: a figure fits under the page header of a 720-px-high screen
PRESENTER_COLORSCALE = "Hot_r"  # white -> yellow -> red -> black: weights survive a washed-out projector
_WEIGHT_SCALE = tuple((float(p), c) for p, c in pc.get_colorscale(WEIGHT_COLORSCALE))


def _is_weight_scale(scale: Any) -> bool:
    return scale is not None and tuple((float(p), c) for p, c in scale) == _WEIGHT_SCALE


def presented(fig: go.Figure, max_height: int = PRESENTER_MAX_HEIGHT) -> go.Figure:
    """Restyle a finished figure for a projector, in place: large fonts (titles, ticks, hover, legends,
    annotations), thicker lines, the high-contrast scale for attention weights, height capped at
    ``max_height``. Done after building, so every builder stays as it is and works in both modes."""
    fig.update_layout(font_size=PRESENTER_FONT, title_font_size=PRESENTER_TITLE_FONT,
                      hoverlabel_font_size=PRESENTER_FONT, legend_font_size=PRESENTER_FONT)
    for update in (fig.update_xaxes, fig.update_yaxes):
        update(tickfont_size=PRESENTER_TICK_FONT, title_font_size=PRESENTER_TICK_FONT)
    for annotation in fig.layout.annotations:  # subplot titles, a diagram's labels: none under PRESENTER_MIN_TEXT
        annotation.font.size = max(PRESENTER_MIN_TEXT, round((annotation.font.size or 15) * PRESENTER_TEXT_SCALE))
    for trace in fig.data:
        line = getattr(trace, "line", None)
        if line is not None and line.width:
            line.width = line.width * PRESENTER_LINE_SCALE
        textfont = getattr(trace, "textfont", None)
        if textfont is not None and textfont.size:
            textfont.size = max(PRESENTER_MIN_TEXT, round(textfont.size * PRESENTER_TEXT_SCALE))
        if _is_weight_scale(getattr(trace, "colorscale", None)):
            trace.colorscale = PRESENTER_COLORSCALE
        colorbar = getattr(trace, "colorbar", None)
        if colorbar is not None:
            colorbar.tickfont.size = PRESENTER_TICK_FONT
    for name in [key for key in fig.layout.to_plotly_json() if key.startswith("coloraxis")]:
        axis = fig.layout[name]
        if _is_weight_scale(axis.colorscale):
            axis.colorscale = PRESENTER_COLORSCALE
        axis.colorbar.tickfont.size = PRESENTER_TICK_FONT
    legend = fig.layout.legend
    if legend.orientation == "h" and legend.y is not None and legend.y <= -0.1:
        legend.y = legend.y - 0.12  # below the plot: clear of the now larger tick labels and axis title
    fig.update_layout(margin_t=(fig.layout.margin.t or 50) + 12)
    capped(fig, max_height)
    return fig.update_layout(height=max(fig.layout.height, rows_height(fig)))


PIECE_COLUMNS = ("query tokens", "key tokens")  # the head view's two columns of pieces, one row each
PRESENTER_ROW_PX = PRESENTER_MIN_TEXT + 6  # a row of projector-size text with room above and below
HEAD_VIEW_FRAME_PX = 200  # what the head view's title, legend and column titles take of its height
MATRIX_FRAME_PX = 170  # what a matrix's title and key pieces below take of its height at the least


def rows_height(fig: go.Figure) -> int:
    """The height at which every piece row of ``fig`` (a head view's columns, a token axis marked by
    app.charts.axes.mark_pieces) has room for projector-size text: labels are never dropped to fit a screen."""
    need = 0
    for trace in fig.data:
        if trace.name in PIECE_COLUMNS and trace.text is not None:
            need = max(need, len(trace.text) * PRESENTER_ROW_PX + HEAD_VIEW_FRAME_PX)
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    need = max(need, int(meta.get("min_height", 0)))  # rows of panels, each of which needs its height (mark_height)
    pieces = meta.get("pieces", {})
    for name, n in pieces.items():
        if name.startswith("yaxis") and fig.layout[name].showticklabels is not False:
            low, high = fig.layout[name].domain or (0.0, 1.0)
            need = max(need, round(n * PRESENTER_ROW_PX / max(high - low, 0.1)) + MATRIX_FRAME_PX)
    return need


def mark_height(fig: go.Figure, height: int) -> go.Figure:
    """Record that ``fig`` needs ``height`` px even in presenter mode (rows_height), like rows of panels stacked
    because a long sentence's pieces did not fit side by side: capped to the screen, their labels would collide."""
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    return fig.update_layout(meta={**meta, "min_height": height})


def capped(fig: go.Figure, max_height: int) -> go.Figure:
    """``fig`` (in place) no taller than ``max_height`` px, so that it fits on one screen."""
    return fig.update_layout(height=min(fig.layout.height or 450, max_height))
