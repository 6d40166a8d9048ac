"""One look for every figure: a small template (projector-readable fonts, no default-template bloat)
and one colour scale for attention weights."""
from __future__ import annotations

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
    xaxis=dict(automargin=True), yaxis=dict(automargin=True),  # long piece labels are never clipped
))

# Modebar: PNG by default; SVG is offered through a second button config (see plotly_config()).
def plotly_config(filename: str, fmt: str = "png") -> dict:
    """Config for st.plotly_chart: a download button saving ``filename`` as png or svg at 2x scale."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": fmt, "filename": filename, "scale": 2},
            "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def styled(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the project template (and a title/height) to a figure."""
    fig.update_layout(template=TEMPLATE)
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
