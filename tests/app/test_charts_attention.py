"""The attention figure builders draw exactly the weights and pieces they are given."""
from __future__ import annotations

import numpy as np
import pytest

from app.charts.attention import (
    OPACITY_STEP,
    STAT_COLUMNS,
    head_stats_frame,
    head_view_figure,
    heatmap_figure,
    model_view_figure,
    plotly_text,
)
from app.downloads import matrix_frame

PIECES_Q = ["<s>", "▁l", "▁l", "▁o"]  # repeated pieces must stay separate rows
PIECES_K = ["▁o", "▁l", "▁l", "▁e", "</s>"]


def _weights(shape, seed=0):
    w = np.random.default_rng(seed).random(shape)
    return w / w.sum(-1, keepdims=True)


def test_heatmap_z_and_tick_labels_are_the_input():
    w = _weights((4, 5))
    fig = heatmap_figure(w, PIECES_Q, PIECES_K, title="t", predicts=["▁l", "▁l", "▁o", "</s>"])
    heat = fig.data[0]
    np.testing.assert_array_equal(np.asarray(heat.z), w)
    assert list(fig.layout.yaxis.ticktext) == plotly_text(PIECES_Q) and list(fig.layout.xaxis.ticktext) == plotly_text(
        PIECES_K)
    assert fig.layout.yaxis.ticktext[0] == "&lt;s&gt;"  # Plotly reads text as HTML: a raw "<s>" would vanish
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3]  # numeric axis: the two "▁l" rows stay apart
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    custom = np.asarray(heat.customdata)
    # hover: query piece, key piece (with positions: pieces repeat), predicted piece
    assert custom[2, 3].tolist() == ["<b>▁l</b> (position 2)", "<b>▁e</b> (position 3)", "▁o"]
    assert "weight" in heat.hovertemplate and fig.layout.title.text == "t"


def test_heatmap_masked_cells_are_grey_and_weights_untouched():
    w = np.tril(_weights((4, 4)))
    mask = np.tril(np.ones((4, 4), dtype=bool))
    fig = heatmap_figure(w, PIECES_Q, PIECES_Q, title="causal", mask=mask)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), w)
    overlay = np.asarray(fig.data[1].z, dtype=float)
    assert np.isnan(overlay[mask]).all() and (overlay[~mask] == 1).all()
    assert len(heatmap_figure(w, PIECES_Q, PIECES_Q, title="x", mask=np.ones((4, 4), bool)).data) == 1


def _lines(fig):
    """(head, query, key, opacity) of every line drawn in a head view."""
    return sorted((t.meta["head"], i, j, t.opacity) for t in fig.data if t.mode == "lines" for i, j in t.meta["lines"])


def test_head_view_line_opacities_equal_the_weights():
    w = _weights((2, 4, 5), seed=1)
    fig = head_view_figure(w, [0, 3], PIECES_Q, PIECES_K, title="hv", min_weight=0.0)
    lines = _lines(fig)
    assert [(h, i, j) for h, i, j, _ in lines] == [(h, i, j) for h in (0, 3) for i in range(4) for j in range(5)]
    for h, i, j, opacity in lines:
        assert opacity == pytest.approx(max(w[[0, 3].index(h), i, j], OPACITY_STEP), abs=OPACITY_STEP / 2 + 1e-9)
    for trace in (t for t in fig.data if t.mode == "lines" and t.meta["lines"]):  # segment: query i -> key j
        segments = np.asarray(trace.y, dtype=float).reshape(-1, 3)[:, :2]
        assert segments.tolist() == [[float(i), float(j)] for i, j in trace.meta["lines"]]
        assert trace.line.color == ("#d62728" if trace.meta["head"] == 3 else "#1f77b4")  # colour = head
    tokens = [t for t in fig.data if t.mode == "markers+text"]
    assert [list(t.text) for t in tokens] == [plotly_text(PIECES_Q), plotly_text(PIECES_K)]


def test_head_view_threshold_and_focus():
    w = np.zeros((1, 4, 5))
    w[0, :, 1] = 0.7
    w[0, :, 3] = 0.3
    w[0, 2] = [0.0, 0.01, 0.0, 0.99, 0.0]
    fig = head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv", min_weight=0.02)
    assert len(_lines(fig)) == 3 * 2 + 1  # the 0.01 line of query 2 is not drawn
    assert _lines(head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv", focus=("query", 2))) == [(0, 2, 3, 1.0)]
    by_key = _lines(head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv", focus=("key", 1)))
    assert [(i, j, o) for _, i, j, o in by_key] == [(0, 1, 0.7), (1, 1, 0.7), (3, 1, 0.7)]


def test_model_view_has_every_head_in_order():
    w = _weights((2, 3, 4, 5), seed=2)
    fig = model_view_figure(w, PIECES_Q, PIECES_K, title="mv", selected=(1, 2))
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 6
    for n, trace in enumerate(heatmaps):
        np.testing.assert_array_equal(np.asarray(trace.z), w[n // 3, n % 3])
    clicks = [t for t in fig.data if t.type == "scatter"]
    assert [tuple(t.customdata[0][:2]) for t in clicks] == [(l, h) for l in range(2) for h in range(3)]
    np.testing.assert_array_equal(np.asarray(clicks[4].customdata)[:, 2], w[1, 1].ravel())  # hover weight per cell
    assert len(clicks[4].x) == 4 * 5  # a click target on every cell
    assert fig.layout.shapes[0].xref == "x6 domain"  # the selected head (layer 2, head 3) is framed


def test_head_stats_frame_rows_follow_layer_and_head():
    stats = {key: np.arange(6, dtype=float).reshape(2, 3) + i for i, key in enumerate(STAT_COLUMNS)}
    frame = head_stats_frame(stats)
    assert list(frame.columns) == ["layer", "head", *STAT_COLUMNS.values()]
    row = frame[(frame["layer"] == 2) & (frame["head"] == 1)].iloc[0]
    assert row["entropy (nats)"] == 3.0 and row["share on special tokens"] == 7.0


def test_matrix_csv_frame_keeps_values_and_labels():
    w = _weights((4, 5))
    frame = matrix_frame(w, PIECES_Q, PIECES_K)
    np.testing.assert_array_equal(frame.to_numpy(), w)
    assert list(frame.index) == ["0 <s>", "1 ▁l", "2 ▁l", "3 ▁o"] and frame.columns[4] == "4 </s>"
