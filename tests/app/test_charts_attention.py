"""The attention figure builders draw exactly the weights and pieces they are given."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.charts.attention import (
    ADAPT_BELOW,
    CLICK_TARGET_PX,
    GAP_MAX_PIECES,
    LABELLED_MAX_PIECES,
    LABELS_LONG_AXIS,
    LONG_INPUT_PIECES,
    LONG_MIN_LINE_WEIGHT,
    MIN_LINE_WEIGHT,
    MODEL_VIEW_MAX_CELLS,
    OPACITY_STEP,
    SHOWN_HEADS,
    STAT_COLUMNS,
    default_min_weight,
    head_stats_frame,
    head_view_figure,
    heatmap_figure,
    model_view_figure,
    plotly_text,
    strongest_heads,
)
from app.charts.style import MASKED_COLOR
from app.downloads import matrix_frame

PIECES_Q = ["<s>", "▁l", "▁l", "▁o"]  # repeated pieces must stay separate rows
PIECES_K = ["▁o", "▁l", "▁l", "▁e", "</s>"]


def _weights(shape, seed=0):
    """Rows that sum to 1, in float32 like the model's weights."""
    w = np.random.default_rng(seed).random(shape)
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def test_heatmap_z_and_tick_labels_are_the_input():
    w = _weights((4, 5))
    fig = heatmap_figure(w, PIECES_Q, PIECES_K, title="t", predicts=["▁l", "▁l", "▁o", "</s>"])
    heat = fig.data[0]
    assert np.asarray(heat.z).dtype == np.float32  # the model's own precision: exact, half the bytes of float64
    np.testing.assert_array_equal(np.asarray(heat.z), w)
    assert list(fig.layout.yaxis.ticktext) == plotly_text(PIECES_Q) and list(fig.layout.xaxis.ticktext) == plotly_text(
        PIECES_K)
    assert fig.layout.yaxis.ticktext[0] == "&lt;s&gt;"  # Plotly reads text as HTML: a raw "<s>" would vanish
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3]  # numeric axis: the two "▁l" rows stay apart
    assert (heat.zmin, heat.zmax) == (0.0, 1.0) and heat.colorbar.title.text == "weight (0–1)"
    # hover: query piece, key piece (with positions: pieces repeat), predicted piece, read from the axes
    # (%{x} / %{y} print an axis's tick text), not from per-cell data
    assert heat.customdata is None and heat.text is None and heat.hovertext is None
    assert heat.hovertemplate.startswith("query: %{y}<br>key: <b>%{x}</b> (position %{x:d})<br>weight: <b>%{z:.3f}")
    assert heat.yaxis == "y2" and fig.layout.yaxis2.matches == "y" and fig.layout.yaxis2.overlaying == "y"
    assert list(fig.layout.yaxis2.tickvals) == [0, 1, 2, 3] and not fig.layout.yaxis2.showticklabels
    assert fig.layout.yaxis2.ticktext[2] == "▁l (position 2)<br>this row predicts: ▁o"
    assert fig.layout.yaxis2.ticktext[0] == "&lt;s&gt; (position 0)<br>this row predicts: ▁l"
    assert [t.yaxis for t in fig.data[1:]] == ["y"]  # an empty trace keeps the visible axis (the pieces) drawn
    assert tuple(fig.layout.yaxis.range) == (3.5, -0.5)  # first query on top
    assert "weight" in heat.hovertemplate and fig.layout.title.text == "t"


def test_heatmap_without_predictions_hovers_the_pieces_of_its_own_axes():
    fig = heatmap_figure(_weights((4, 5)), PIECES_Q, PIECES_K, title="enc")
    heat = fig.data[0]
    assert len(fig.data) == 1 and heat.yaxis in (None, "y") and heat.customdata is None
    assert heat.hovertemplate.startswith("query: <b>%{y}</b> (position %{y:d})<br>key: <b>%{x}</b> (position %{x:d})")
    assert fig.layout.yaxis.autorange == "reversed"


def test_heatmap_masked_cells_are_grey_and_weights_untouched():
    w = np.tril(_weights((4, 4)))
    mask = np.tril(np.ones((4, 4), dtype=bool))
    fig = heatmap_figure(w, PIECES_Q, PIECES_Q, title="causal", mask=mask, predicts=PIECES_Q)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), w)
    overlay = np.asarray(fig.data[1].z)  # uint8 (was float with NaN): 1 = masked (grey), 0 = transparent
    assert overlay.dtype == np.uint8 and (overlay[mask] == 0).all() and (overlay[~mask] == 1).all()
    assert [tuple(c) for c in fig.data[1].colorscale] == [(0, "rgba(0,0,0,0)"), (1, MASKED_COLOR)]
    assert (fig.data[1].zmin, fig.data[1].zmax) == (0, 1) and fig.data[1].yaxis == fig.data[0].yaxis
    assert fig.data[1].hoverinfo == "skip"  # a masked cell hovers the map below it: weight 0.000
    assert "masked" in fig.data[0].hovertemplate
    assert len(heatmap_figure(w, PIECES_Q, PIECES_Q, title="x", mask=np.ones((4, 4), bool)).data) == 1


def test_heatmap_cells_have_gaps_only_while_a_gap_stays_small():
    # past GAP_MAX_PIECES a 1-px gap would take a fifth of a cell, and Plotly draws a gapped heatmap cell by cell
    # instead of as one image (benchmarks/browser_draw.py)
    for n, gap in ((GAP_MAX_PIECES, 1), (GAP_MAX_PIECES + 1, 0)):
        pieces = ["▁a"] * n
        mask = np.tril(np.ones((n, n), dtype=bool))
        fig = heatmap_figure(np.tril(_weights((n, n))), pieces, pieces, title="t", mask=mask, predicts=pieces)
        assert [(t.xgap, t.ygap) for t in fig.data if t.type == "heatmap"] == [(gap, gap)] * 2  # map and mask alike


def test_a_long_axis_labels_every_kth_piece_and_the_hover_still_names_every_piece():
    n_q, n_k = LABELLED_MAX_PIECES, 5 * LABELS_LONG_AXIS  # queries all labelled, keys every 5th
    queries, keys = [f"q{i}" for i in range(n_q)], [f"k{j}" for j in range(n_k)]
    fig = heatmap_figure(_weights((n_q, n_k)), queries, keys, title="t")
    heat = fig.data[0]
    assert list(fig.layout.yaxis.ticktext) == queries and heat.yaxis == "y"
    assert list(fig.layout.xaxis.tickvals) == list(range(0, n_k, 5)) and len(fig.layout.xaxis.ticktext) == 60
    assert fig.layout.xaxis.ticktext[3] == "15 · k15"  # a skipping axis says where its labels are
    # the map sits on an unlabelled second x axis with every piece: %{x} in the hover names the cell's own piece
    assert heat.xaxis == "x2" and fig.layout.xaxis2.matches == "x" and fig.layout.xaxis2.overlaying == "x"
    assert list(fig.layout.xaxis2.ticktext) == keys and not fig.layout.xaxis2.showticklabels
    assert tuple(fig.layout.xaxis.range) == (-0.5, n_k - 0.5)
    assert [(t.xaxis, t.yaxis) for t in fig.data[1:]] == [("x", "y")]  # keeps the labelled axes drawn
    long = heatmap_figure(_weights((n_k, n_k)), keys, keys, title="t", predicts=keys,
                          mask=np.tril(np.ones((n_k, n_k), dtype=bool)))
    assert [(t.xaxis, t.yaxis) for t in long.data if t.type == "heatmap"] == [("x2", "y2")] * 2
    assert len(long.layout.yaxis.ticktext) == 60
    assert long.layout.yaxis2.ticktext[7] == "k7 (position 7)<br>this row predicts: k7"


def test_tick_labels_are_never_measured_label_by_label():
    # Plotly's default for numeric axes, ticklabeloverflow "hide past div", measures every tick label again after
    # placing each one: quadratic, 3 s for a 200-piece heatmap and 19 s for 500 in Chromium
    fig = heatmap_figure(_weights((4, 5)), PIECES_Q, PIECES_K, title="t")  # the template every figure shares
    for axis in (fig.layout.template.layout.xaxis, fig.layout.template.layout.yaxis):
        assert axis.ticklabeloverflow == "allow"


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
    for trace in (t for t in fig.data if t.mode == "lines" and len(t.meta["lines"])):  # segment: query i -> key j
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
    assert _lines(head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv")) == _lines(fig)  # 0.02 is the default
    assert MIN_LINE_WEIGHT == 0.02
    assert len(_lines(head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv", min_weight=0.5))) == 4  # the 0.7s, 0.99
    assert _lines(head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv", focus=("query", 2))) == [(0, 2, 3, 1.0)]
    by_key = _lines(head_view_figure(w, [0], PIECES_Q, PIECES_K, title="hv", focus=("key", 1)))
    assert [(i, j, o) for _, i, j, o in by_key] == [(0, 1, 0.7), (1, 1, 0.7), (3, 1, 0.7)]


def test_model_view_has_every_head_in_order():
    w = _weights((2, 3, 4, 5), seed=2)
    w[0, 0, 0] = [0.0, 0.0, 1.0, 0.0, 0.0]  # the ends of the scale stay exact
    fig = model_view_figure(w, PIECES_Q, PIECES_K, title="mv", selected=(1, 2))
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 6
    for n, trace in enumerate(heatmaps):
        # the model view draws uint8 levels, z = round(255 * weight) on a 0..255 colour scale, so it equals the
        # model's weights within 1/255 (rounding: within half of that); the heatmap a click opens is exact
        z = np.asarray(trace.z)
        assert z.dtype == np.uint8 and trace.coloraxis == "coloraxis"
        assert np.abs(z / 255 - w[n // 3, n % 3]).max() <= 0.5 / 255 + 1e-7
    assert np.asarray(heatmaps[0].z)[0].tolist() == [0, 0, 255, 0, 0]
    axis = fig.layout.coloraxis
    assert (axis.cmin, axis.cmax) == (0, 255) and list(axis.colorbar.ticktext) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    assert list(axis.colorbar.tickvals) == pytest.approx([0, 51, 102, 153, 204, 255])
    # one click target per map, customdata [layer, head]: a transparent square at the map's centre, wide enough
    # to cover the map (clipped to it), so a click anywhere on the map selects it
    clicks = [t for t in fig.data if t.type == "scatter"]
    assert [tuple(t.customdata[0][:2]) for t in clicks] == [(l, h) for l in range(2) for h in range(3)]
    for n, click in enumerate(clicks):
        assert (list(click.x), list(click.y)) == ([2.0], [1.5]) and click.cliponaxis is not False
        assert click.xaxis == heatmaps[n].xaxis and click.yaxis == heatmaps[n].yaxis
        assert click.marker.size == CLICK_TARGET_PX >= 2000 and click.marker.symbol == "square"
        assert click.marker.color == "rgba(0,0,0,0)"
    assert "layer 2 · head 2" in clicks[4].hovertemplate
    for axis in (fig.layout.xaxis5, fig.layout.yaxis5):  # fixed: autorange would pad for the marker
        assert axis.fixedrange
    assert tuple(fig.layout.xaxis5.range) == (-0.5, 4.5) and tuple(fig.layout.yaxis5.range) == (3.5, -0.5)
    assert fig.layout.shapes[0].xref == "x6 domain"  # the selected head (layer 2, head 3) is framed
    with pytest.raises(ValueError):
        model_view_figure(w, PIECES_Q[:3], PIECES_K, title="labels do not match")


def test_model_view_maps_past_the_cell_limit_show_block_maxima_in_piece_positions():
    n_q, n_k = MODEL_VIEW_MAX_CELLS + 1, 2 * MODEL_VIEW_MAX_CELLS + 1  # blocks of 2 x 3 pieces
    w = np.zeros((1, 2, n_q, n_k), dtype=np.float32)
    w[0, 1, 5, 7] = 1.0  # one sharp weight stays as dark as it is: block (2, 2)
    w[0, 1, n_q - 1, n_k - 1] = 0.5  # the last, padded block keeps its weight
    fig = model_view_figure(w, ["▁a"] * n_q, ["▁b"] * n_k, title="mv")
    small, sharp = [np.asarray(t.z) for t in fig.data if t.type == "heatmap"]
    assert sharp.shape == (-(-n_q // 2), -(-n_k // 3)) == (81, 107) and sharp.max() == 255 and sharp[2, 2] == 255
    assert sharp[-1, -1] == 128 and (small == 0).all()
    for trace in (t for t in fig.data if t.type == "heatmap"):  # cell (i, j) covers pieces 2i..2i+1, 3j..3j+2
        assert (trace.x0, trace.dx, trace.y0, trace.dy) == (1.0, 3, 0.5, 2)
    assert tuple(fig.layout.xaxis.range) == (-0.5, n_k - 0.5) and tuple(fig.layout.yaxis.range) == (n_q - 0.5, -0.5)
    clicks = [t for t in fig.data if t.type == "scatter"]
    assert (list(clicks[0].x), list(clicks[0].y)) == ([(n_k - 1) / 2], [(n_q - 1) / 2])  # the map's centre


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


# --- payload: what the browser downloads (len(fig.to_json()), deterministic) for a 200-piece sentence ------------

N_TOKENS = 200


def _peaky(shape, seed, causal=False):
    """Rows of softmax(3 * standard normal), float32, as in benchmarks/figures.py: a few keys take most weight."""
    logits = np.random.default_rng(seed).standard_normal(shape) * 3.0
    if causal:
        logits = np.where(np.tril(np.ones(shape[-2:], dtype=bool)), logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def _pieces(n, seed):
    words = ["▁the", "▁l", "s", "ing", "▁Haus", "▁über", "&", "<unk>", "▁attention", ","]
    return [str(p) for p in np.random.default_rng(seed).choice(words, n - 1)] + ["</s>"]


def test_heatmap_payload_at_200_pieces():
    dec_in, tgt = _pieces(N_TOKENS, 1), _pieces(N_TOKENS, 2)
    causal = np.tril(np.ones((N_TOKENS, N_TOKENS), dtype=bool))
    fig = heatmap_figure(_peaky((N_TOKENS, N_TOKENS), 0, causal=True), dec_in, dec_in, title="decoder self",
                         predicts=tgt, mask=causal)  # the heaviest heatmap: mask overlay and prediction hovers
    assert len(fig.to_json()) <= 0.3e6


def test_model_view_payload_at_200_pieces():
    fig = model_view_figure(_peaky((3, 8, N_TOKENS, N_TOKENS), 3), _pieces(N_TOKENS, 1), _pieces(N_TOKENS, 2),
                            title="every layer and head", selected=(1, 2))
    assert len(fig.to_json()) <= 3e6


def test_head_view_payload_at_200_pieces_at_the_default_threshold():
    w = _peaky((8, N_TOKENS, N_TOKENS), 4)
    fig = head_view_figure(w, list(range(8)), _pieces(N_TOKENS, 1), _pieces(N_TOKENS, 2), title="all heads")
    assert len(_lines(fig)) == int((w >= MIN_LINE_WEIGHT).sum())  # every line at or above the threshold is drawn
    assert len(fig.to_json()) <= 1.5e6


def test_a_long_input_starts_the_head_view_at_a_higher_threshold():
    assert default_min_weight(LONG_INPUT_PIECES) == MIN_LINE_WEIGHT
    assert default_min_weight(LONG_INPUT_PIECES + 1) == LONG_MIN_LINE_WEIGHT > MIN_LINE_WEIGHT


def test_the_head_view_draws_the_most_focused_heads_and_keeps_the_others_in_the_legend():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(6), size=(8, 5))  # [H, Q, K], every head spread thin
    weights[5] = np.eye(5, 6) * 0.9 + 0.1 / 6  # heads 6 and 3 look at one key each
    weights[2] = np.roll(np.eye(5, 6), 1, axis=1) * 0.8 + 0.2 / 6
    assert strongest_heads(weights) == [2, 5] and SHOWN_HEADS == 2
    fig = head_view_figure(weights, list(range(8)), list("abcde"), list("uvwxyz"), title="t", shown=[2, 5])
    lines = [t for t in fig.data if t.mode == "lines"]
    assert {t.meta["head"] for t in lines if t.visible is True} == {2, 5}
    hidden = {t.meta["head"] for t in lines if t.visible == "legendonly"}
    assert hidden == {0, 1, 3, 4, 6, 7}  # each a click away: its legend entry and its lines share one group
    assert all(t.legendgroup == f"head{t.meta['head']}" for t in lines)


@given(n_keys=st.integers(4, 400), peak=st.floats(0.0, 1.0))
def test_a_faint_map_is_coloured_on_its_own_scale_and_says_so(n_keys, peak):
    rows = np.full((3, n_keys), (1.0 - peak) / (n_keys - 1), dtype=np.float32)
    rows[:, 0] = peak  # every row sums to 1; its largest weight is max(peak, the rest)
    heat = heatmap_figure(rows, ["a", "b", "c"], [f"k{i}" for i in range(n_keys)], title="t").data[0]
    top = float(rows.max())
    if top >= ADAPT_BELOW:
        assert heat.zmax == 1.0 and heat.colorbar.title.text == "weight (0–1)"
    else:  # the scale ends at the largest weight (rounded up), and the colour bar names it
        assert top <= heat.zmax <= top + 0.01 and heat.colorbar.title.text == f"weight (scale 0–{heat.zmax:.2f})"
    np.testing.assert_array_equal(np.asarray(heat.z), rows)  # the weights themselves are never rescaled
