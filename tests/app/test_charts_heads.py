"""Figure builders of the Heads and attribution page draw exactly the numbers they are given, light and with hovers."""
from __future__ import annotations

import numpy as np
import pytest

from app.charts import heads


def test_importance_figure_one_map_per_kind_and_crosses_on_switched_off_heads():
    importance = {"enc_self": np.array([[0.1, -0.2]]), "dec_self": np.zeros((1, 2)), "cross": np.array([[0.5, 1.5]])}
    fig = heads.importance_figure(importance, {"cross": "Cross"}, title="t", off=[("cross", 0, 1)])
    maps = [t for t in fig.data if t.type == "heatmap"]
    assert [t.name for t in maps] == ["enc_self", "dec_self", "cross"]
    np.testing.assert_array_equal(maps[2].z, np.float32([[0.5, 1.5]]))
    assert maps[0].z.dtype == np.float32 and "drop" in maps[0].hovertemplate
    cross = [t for t in fig.data if t.type == "scatter"]
    assert len(cross) == 1 and list(cross[0].x) == [2] and list(cross[0].y) == [1]  # 1-based head, layer
    assert fig.layout.coloraxis.cmid == 0 and fig.layout.coloraxis.cmax == 1.5


def test_panels_share_the_row_pieces_and_keep_each_scale():
    a, b = np.array([[0.2, 0.8], [1.0, 0.0]]), np.array([[-0.5, 0.25], [0.0, 0.1]])
    fig = heads.panels_figure([("on", a, False, 1.0), ("diff", b, True, None)], ["<s>", "▁x"], ["▁a", "</s>"],
                              title="t", row_title="query", col_title="key", highlight_row=1)
    np.testing.assert_array_equal(fig.data[0].z, a.astype(np.float32))
    np.testing.assert_array_equal(fig.data[1].z, b.astype(np.float32))
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1.0
    assert fig.layout.coloraxis2.cmid == 0 and fig.layout.coloraxis2.cmax == 0.5
    assert (list(fig.layout.yaxis.ticktext) == ["&lt;s&gt;", "▁x"]
            and list(fig.layout.xaxis2.ticktext)[1] == "&lt;/s&gt;")
    assert "diff: <b>%{z:.4f}</b>" in fig.data[1].hovertemplate and "%{y}" in fig.data[1].hovertemplate
    assert fig.data[0].customdata is None and fig.data[0].text is None  # no per-cell strings
    assert len(fig.layout.shapes) == 2  # the selected row, outlined in both panels


def test_matrix_figure_signed_is_centred_on_zero():
    z = np.array([[0.3, -0.6]])
    fig = heads.matrix_figure(z, ["▁a"], ["▁b", "▁c"], title="t", value_name="difference", row_title="q",
                              col_title="k", signed=True)
    assert fig.data[0].zmid == 0 and fig.data[0].zmax == pytest.approx(0.6) and fig.data[0].zmin == pytest.approx(-0.6)


def test_piece_log_prob_bars_are_after_minus_before():
    before, after = np.array([-0.1, -2.0, -0.5]), np.array([-0.1, -3.5, -0.2])
    fig = heads.piece_log_prob_figure(before, after, ["▁Das", "▁Haus", "</s>"], title="t")
    np.testing.assert_allclose(fig.data[0].y, after - before, atol=1e-6)
    assert fig.data[0].marker.color[1] == heads.OFF_COLOR


def test_share_bars_one_trace_per_method():
    fig = heads.share_bars({"a": np.array([0.5, 0.5]), "b": np.array([1.0, 0.0])}, ["▁x", "</s>"], title="t")
    assert [t.name for t in fig.data] == ["a", "b"] and list(fig.data[1].y) == [1.0, 0.0]


def test_chips_mark_changed_pieces_and_escape_them():
    html = heads.chips_html(["▁Das", "</s>"], [True, False])
    assert "&lt;/s&gt;" in html and html.count(f"color:{heads.OFF_COLOR}") == 1
