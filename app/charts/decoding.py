"""Decoding figures: next-token probabilities, one attention row, and the beam-search tree.

Pure builders: plain numbers and pieces in, plotly Figure / pandas DataFrame out. The beam tree is
built from each step's candidates (row, token, piece, cumulative log-prob, status) exactly as
model.decoding.search reported them; nothing is re-scored here.
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .axes import (
    COLUMN_PX,
    GLYPH_EM,
    ROW_AXIS_PX,
    TICK_SIZE,
    mark_pieces,
    nice_step,
    piece_ticks,
    plotly_text,
    token_axes,
)
from .style import PRESENTER_TICK_FONT, styled

CHOSEN_COLOR, OTHER_COLOR = "#d62728", "#9ecae1"
ROW_COLOR = "#2171b5"


@dataclass(frozen=True)
class TreeCandidate:
    """One continuation considered at a step: extends row ``row`` with ``token`` (shown as ``piece``)."""

    row: int
    token: int
    piece: str
    log_prob: float
    status: str  # kept | finished | pruned


def topk_figure(pieces: Sequence[str], probs: np.ndarray, chosen: Sequence[bool], *, title: str) -> go.Figure:
    """Horizontal bars of the next-token distribution's top k (most probable on top); chosen tokens in red."""
    probs = np.asarray(probs, dtype=np.float64)
    colors = [CHOSEN_COLOR if c else OTHER_COLOR for c in chosen]
    fig = go.Figure(go.Bar(
        x=probs, y=np.arange(len(pieces)), orientation="h", marker_color=colors, text=[f"{p:.3f}" for p in probs],
        textposition="auto", textangle=0, cliponaxis=False,  # a long bar holds its value; a short one has it beside
        customdata=np.array([[p, "chosen" if c else ""] for p, c in zip(plotly_text(pieces), chosen, strict=True)],
                            dtype=object),
        hovertemplate="next piece <b>%{customdata[0]}</b><br>probability %{x:.4f}<br>%{customdata[1]}<extra></extra>",
        name="probability"))
    fig.update_xaxes(automargin=True, title_text="probability of the next piece", range=[0, 1.12], showgrid=True,
                     gridcolor="#eee")
    fig.update_yaxes(automargin=True, title_text="candidate next piece", tickmode="array",
                     tickvals=list(range(len(pieces))),
                     ticktext=plotly_text(pieces), autorange="reversed")
    fig.update_layout(bargap=0.25, showlegend=False)
    return styled(fig, title, max(300, 34 * len(pieces) + 120))


def sampling_figure(pieces: Sequence[str], before: np.ndarray, after: np.ndarray, chosen: Sequence[bool], *,
                    title: str) -> go.Figure:
    """The sampler at one step: for the model's most probable pieces (most probable on top), their probability as
    the model gave it (grey) and after the temperature and the cut (blue; 0 = cut away); the piece drawn in red."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    rows = np.arange(len(pieces))
    labels = plotly_text(pieces)
    fig = go.Figure([
        go.Bar(x=before, y=rows, orientation="h", name="model", marker_color="#bdbdbd", customdata=labels,
               hovertemplate="<b>%{customdata}</b><br>model probability %{x:.4f}<extra></extra>"),
        go.Bar(x=after, y=rows, orientation="h", name="after temperature and cut",
               marker_color=[CHOSEN_COLOR if c else ROW_COLOR for c in chosen], customdata=labels,
               text=[f"{p:.3f}" for p in after], textposition="auto", textangle=0, cliponaxis=False,
               hovertemplate="<b>%{customdata}</b><br>probability drawn from %{x:.4f}<extra></extra>")])
    fig.update_xaxes(automargin=True, title_text="probability of the next piece", range=[0, 1.15], showgrid=True,
                     gridcolor="#eee")
    fig.update_yaxes(automargin=True, title_text="candidate next piece", tickmode="array", tickvals=list(rows),
                     ticktext=labels, autorange="reversed")
    fig.update_layout(barmode="group", bargap=0.2, legend=dict(orientation="h", y=-0.25, x=0))
    return styled(fig, title, max(320, 44 * len(pieces) + 140))


def attention_row_figure(weights: np.ndarray, key_labels: Sequence[str], *, title: str, key_title: str,
                         query_label: str, width_px: float = COLUMN_PX[1] * 0.6) -> go.Figure:
    """One query's attention over its keys as bars: weights [K]; bars at 0..K-1 labelled with the pieces, turned as
    far as a figure ``width_px`` wide needs (3 of 5 of the page by default, the Decoding page's column)."""
    weights = np.asarray(weights, dtype=np.float64)
    fig = go.Figure(go.Bar(
        x=list(range(len(key_labels))), y=weights, marker_color=ROW_COLOR, customdata=plotly_text(key_labels),
        hovertemplate=f"query <b>{plotly_text([query_label])[0]}</b><br>key <b>%{{customdata}}</b><br>"
                      "weight %{y:.3f}<extra></extra>",
        name="weight"))
    # Plotly's own turning (30°) left long pieces of a 33-piece sentence into each other at 1920x1080
    token_axes(fig, list(key_labels), None, key_title, x_px=width_px - ROW_AXIS_PX)
    fig.update_yaxes(automargin=True, title_text="attention weight", range=[0, 1.02], gridcolor="#eee")
    fig.update_layout(bargap=0.15, showlegend=False)
    return styled(fig, title, 340)


def beam_tree_nodes(steps: Sequence[Sequence[TreeCandidate]], hypotheses: Sequence[tuple[Sequence[int],
                    Sequence[int]]], root_piece: str = "<s>") -> pd.DataFrame:
    """The search tree as a table, one node per candidate plus the root.

    steps[t] are the candidates of step t (rows of step t+1 are the kept candidates of step t, in
    order); hypotheses are the n-best (tokens, path) best first. Columns: id, step (None for the
    root), x (tokens generated), y (rank in its step), parent (id), piece, log_prob, status
    (root|kept|finished|pruned), nbest (on some n-best path), best (on the best path), row (index
    of the row it extends at its step).
    """
    nodes = [dict(id=0, step=-1, x=0, y=0, parent=-1, piece=root_piece, log_prob=0.0, status="root", row=-1,
                  token=-1)]
    row_nodes = [0]  # node id of each row of the current step
    index: dict[tuple[int, int, int], int] = {}
    for t, candidates in enumerate(steps):
        next_rows = []
        for rank, c in enumerate(candidates):
            node_id = len(nodes)
            nodes.append(dict(id=node_id, step=t, x=t + 1, y=rank, parent=row_nodes[c.row], piece=c.piece,
                              log_prob=float(c.log_prob), status=c.status, row=c.row, token=c.token))
            index[(t, c.row, c.token)] = node_id
            if c.status == "kept":
                next_rows.append(node_id)
        row_nodes = next_rows
    frame = pd.DataFrame(nodes)
    frame["nbest"], frame["best"] = False, False
    frame.loc[0, ["nbest", "best"]] = True
    for rank, (tokens, path) in enumerate(hypotheses):
        ids = [index[(t, row, tok)] for t, (row, tok) in enumerate(zip(path, tokens, strict=True))
               if (t, row, tok) in index]
        frame.loc[ids, "nbest"] = True
        if rank == 0:
            frame.loc[ids, "best"] = True
    return frame


_NODE_STYLES: tuple[tuple[str, Callable[[pd.DataFrame], Any], dict[str, Any], bool], ...] = (
    # (legend name, selector, marker, text shown)
    ("best path", lambda f: f.best & (f.status != "root"), dict(color="#d62728", size=16, symbol="circle"),
     True),
    ("other n-best", lambda f: f.nbest & ~f.best, dict(color="#2171b5", size=13, symbol="circle"), True),
    ("dropped later", lambda f: (f.status == "kept") & ~f.nbest,
     dict(color="#9ecae1", size=10, symbol="circle"), True),
    ("finished (&lt;/s&gt;)", lambda f: (f.status == "finished") & ~f.nbest,
     dict(color="#fdae6b", size=12, symbol="diamond"), True),
    ("pruned", lambda f: f.status == "pruned",
     dict(color="#cccccc", size=8, symbol="x"), False),
)


TREE_TEXT_PX = 14  # the pieces written above the nodes
TREE_AXIS_PX = 110  # the rank axis's title and numbers, left of the steps
STEP_NUMBER_PX = 34  # what a two-digit step number needs at the presenter's font, with a gap
BEST_COLOR = "#d62728"  # the best path: its nodes, edges and pieces


def written_labels(nodes: pd.DataFrame, width_px: float) -> pd.Series:
    """Which nodes get their piece written above them in a figure ``width_px`` wide: along each rank, left to
    right, a piece is written where it clears the last one written (about 0.55 em a character); the others are in
    their hovers. Ranks are a marker and a label apart, so only neighbours on one rank can collide."""
    step_px = (width_px - TREE_AXIS_PX) / (nodes.x.max() + 1.4)  # the x range runs from -0.7 to the last + 0.7
    written = pd.Series(False, index=nodes.index)
    # the best path is named along the top axis (beam_tree_figure), not above its nodes
    for _, rank in nodes[(nodes.status != "pruned") & ~nodes.best].sort_values("x").groupby("y"):
        right = -math.inf
        for index, node in rank.iterrows():
            half = (0.55 * TREE_TEXT_PX * len(str(node.piece)) + 4) / 2
            centre = (node.x + 0.7) * step_px
            if centre - half >= right + 2:
                written.at[index], right = True, centre + half
    return written


def beam_tree_figure(nodes: pd.DataFrame, *, title: str, current_step: int | None = None,
                     selected: int | None = None, width_px: float = COLUMN_PX[1],
                     height: int | None = None) -> go.Figure:
    """The beam tree from beam_tree_nodes(): x = tokens generated, y = rank by cumulative log-prob.

    Edges on the best path are thick red, on other n-best paths blue, elsewhere faint. Finished
    hypotheses are diamonds (n-best ones ringed), pruned candidates grey crosses. Node markers carry
    customdata [id, step]; ``current_step`` shades that step's column, ``selected`` rings a node. Pieces are
    written where they fit in ``width_px`` (written_labels), the others only in their hovers.
    """
    fig = go.Figure()
    written = written_labels(nodes, width_px)
    nodes = nodes.assign(piece=plotly_text(nodes.piece))
    by_id = nodes.set_index("id")
    edges: tuple[tuple[str, Callable[[pd.DataFrame], Any], str, float], ...] = (
        ("edge", lambda f: ~f.nbest, "rgba(150,150,150,0.45)", 1.2),
        ("n-best edge", lambda f: f.nbest & ~f.best, "#2171b5", 2.5),
        ("best edge", lambda f: f.best, "#d62728", 4.0))
    for name, select, color, width in edges:
        xs, ys = [], []
        for _, n in nodes[select(nodes) & (nodes.parent >= 0)].iterrows():
            p = by_id.loc[n.parent]
            xs += [p.x, n.x, None]
            ys += [p.y, n.y, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width), hoverinfo="skip",
                                 showlegend=False, name=name))
    root = nodes[nodes.status == "root"]
    # Pieces are written above their nodes: those of rank 0 stand above the plot area, which would clip their tops
    # (cliponaxis=False; a node panned out of range is still hidden). The start piece is named on the top axis.
    fig.add_trace(go.Scatter(x=root.x, y=root.y, mode="markers",
                             cliponaxis=False, marker=dict(color="#444", size=14, symbol="square"),
                             name=f"start {root.piece.iloc[0]}",
                             customdata=root[["id", "step"]].to_numpy(),
                             hovertemplate=f"start: {root.piece.iloc[0]}<extra></extra>"))
    for name, select, marker, show_text in _NODE_STYLES:
        part = nodes[select(nodes)]
        line = dict(width=2, color="#111") if name in ("best path", "other n-best") else dict(width=0)
        symbols = np.where(part.status == "finished", "diamond", marker["symbol"])
        fig.add_trace(go.Scatter(
            x=part.x, y=part.y, mode="markers+text" if show_text else "markers",
            text=part.piece.where(written[part.index], "") if show_text and name != "best path" else None,
            textposition="top center",
            textfont=dict(size=TREE_TEXT_PX), cliponaxis=False,
            marker=dict(color=marker["color"], size=marker["size"], symbol=symbols, line=line), name=name,
            customdata=np.column_stack([part.id, part.step, part.piece, part.log_prob, part.status]),
            hovertemplate="piece <b>%{customdata[2]}</b><br>step %{x}<br>"
                          "cumulative log-prob %{customdata[3]:.3f}<br>%{customdata[4]}<extra></extra>"))
    if current_step is not None:
        fig.add_vrect(x0=current_step + 0.5, x1=current_step + 1.5, fillcolor="#fff3b0", opacity=0.5, layer="below",
                      line_width=0)
    if selected is not None and selected in by_id.index:
        s = by_id.loc[selected]
        fig.add_trace(go.Scatter(x=[s.x], y=[s.y], mode="markers", hoverinfo="skip", showlegend=False,
                                 name="selected", marker=dict(size=26, color="rgba(0,0,0,0)",
                                                              line=dict(color="#000", width=3))))
    n_rank = int(nodes.y.max()) + 1
    last = int(nodes.x.max())
    # Step numbers as far apart as two-digit numbers need at the presenter's font (they are counts, not pieces);
    # no vertical grid lines: they would cross the pieces written above the nodes ("<s>" read "<$>").
    step_px = (width_px - TREE_AXIS_PX) / (last + 1.4)
    fig.update_xaxes(automargin=True, title_text="step (= pieces generated so far)",
                     dtick=nice_step(STEP_NUMBER_PX * TICK_SIZE / PRESENTER_TICK_FONT / max(step_px, 1.0)),
                     range=[-0.7, last + 0.7], showgrid=False, zeroline=False)
    fig.update_yaxes(automargin=True, title_text="rank at that step (by cumulative log-prob)", dtick=1,
                     range=[n_rank - 0.4, -0.8], gridcolor="#eee", zeroline=False)
    best = nodes[nodes.best].sort_values("x")
    angle, font = piece_ticks([html.unescape(p) for p in best.piece], step_px * (best.x.max() + 1))
    # The best path's pieces along the top, one a step from the start piece on: its sentence reads left to right.
    fig.add_trace(go.Scatter(x=[], y=[], xaxis="x2", hoverinfo="skip", showlegend=False, name="best path axis"))
    fig.update_layout(xaxis2=dict(
        overlaying="x", matches="x", side="top", tickmode="array", tickvals=best.x.tolist(),
        ticktext=best.piece.tolist(), tickangle=angle,
        tickfont=dict(color=BEST_COLOR, size=font),
        ticks="", showgrid=False, zeroline=False, automargin=True, title=None))
    mark_pieces(fig, "xaxis2", len(best))
    # The legend under the tree, below the step axis's title; the best path's pieces stand above it.
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0),
                      clickmode="event+select", dragmode="pan", margin_b=80)
    if not written[(nodes.status != "pruned") & ~nodes.best].all():
        title += "<br><sup>red along the top: the best path; other pieces that would overlap: hover their node</sup>"
    else:
        title += "<br><sup>red along the top: the best path, piece by piece</sup>"
    widest = max((len(html.unescape(p)) for p in best.piece), default=1)
    above = {0: 1.4, -45: 0.75 * GLYPH_EM * widest, -90: GLYPH_EM * widest}[angle] * PRESENTER_TICK_FONT
    # the title (two lines) above the best path's pieces, whose height automargin does not add to the title's
    return styled(fig, title, height or max(460, 62 * n_rank + 300)).update_layout(
        margin_t=round(90 + above), title=dict(yref="container", y=1.0, yanchor="top", pad_t=36))


STATUS_COLORS = {"kept": "#2171b5", "finished": "#fdae6b", "pruned": "#bdbdbd"}


def pruned_figure(labels: Sequence[str], log_probs: Sequence[float], statuses: Sequence[str], selected: int,
                  cut: float | None, *, title: str) -> go.Figure:
    """One beam-search step's candidates, best first (top): each a dot at its cumulative log-prob, coloured by what
    became of it (kept, finished, pruned), the ``selected`` one red and named; ``cut`` (the last kept one's log-prob)
    a dashed line: the beam keeps what is right of it."""
    values = np.asarray(log_probs, dtype=np.float64)
    rows = np.arange(len(labels))
    text = plotly_text(labels)
    colors = [CHOSEN_COLOR if i == selected else STATUS_COLORS.get(s, OTHER_COLOR) for i, s in enumerate(statuses)]
    fig = go.Figure(go.Scatter(
        x=values, y=rows, mode="markers", marker=dict(size=14, color=colors, line=dict(width=1, color="#333")),
        customdata=np.array([[t, s] for t, s in zip(text, statuses, strict=True)], dtype=object),
        hovertemplate="<b>%{customdata[0]}</b><br>cumulative log-prob %{x:.3f}<br>%{customdata[1]}<extra></extra>",
        name="candidates", showlegend=False))
    if cut is not None:
        fig.add_vline(x=cut, line=dict(color="#555", dash="dash", width=1.5))
    fig.update_xaxes(automargin=True, title_text="cumulative log-prob (right: more probable)", gridcolor="#eee")
    fig.update_yaxes(automargin=True, title_text=None, tickmode="array", tickvals=list(rows),
                     ticktext=[f"{t}  ({s})" for t, s in zip(text, statuses, strict=True)], autorange="reversed")
    return styled(fig, title, max(300, 34 * len(labels) + 140))


def nbest_frame(hypotheses: Sequence[tuple[str, int, float, float, float, bool]]) -> pd.DataFrame:
    """The n-best list, best first: (text, length, log-prob, length penalty, score, ended with </s>) per row."""
    return pd.DataFrame(hypotheses, columns=["translation", "length (pieces)", "log-prob", "length penalty lp",
                                             "score = log-prob / lp", "ended with </s>"],
                        index=pd.RangeIndex(1, len(hypotheses) + 1, name="rank"))
