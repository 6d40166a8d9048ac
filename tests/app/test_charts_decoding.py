"""The decoding figure builders: probabilities, attention rows and the beam tree are drawn as given."""
from __future__ import annotations

import numpy as np
import pytest

from app.charts.decoding import (
    CHOSEN_COLOR,
    TreeCandidate,
    attention_row_figure,
    beam_tree_figure,
    beam_tree_nodes,
    nbest_frame,
    topk_figure,
)


def test_topk_bars_are_the_probabilities_and_the_chosen_one_is_highlighted():
    probs = np.array([0.6, 0.25, 0.1, 0.05])
    pieces = ["▁Haus", "▁Hause", "</s>", "▁Haus"]
    fig = topk_figure(pieces, probs, [False, True, False, False], title="top")
    bar = fig.data[0]
    np.testing.assert_array_equal(np.asarray(bar.x), probs)
    assert list(fig.layout.yaxis.ticktext) == ["▁Haus", "▁Hause", "&lt;/s&gt;", "▁Haus"]
    assert [c == CHOSEN_COLOR for c in bar.marker.color] == [False, True, False, False]


def test_attention_row_bars_are_the_weights():
    w = np.array([0.1, 0.7, 0.2])
    fig = attention_row_figure(w, ["<s>", "▁a", "▁a"], title="row", key_title="keys", query_label="▁a")
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), w)
    assert list(fig.layout.xaxis.ticktext) == ["&lt;s&gt;", "▁a", "▁a"]
    assert fig.layout.xaxis.title.text == "keys"


def _search():
    """A hand-made beam-2 search: step 0 keeps A, B (prunes C, D); step 1 finishes A+</s>, keeps B+E, A+F;
    step 2 finishes B+E+</s>. n-best: [A </s>] then [B E </s>]."""
    steps = [
        [TreeCandidate(0, 10, "A", -0.1, "kept"), TreeCandidate(0, 11, "B", -0.5, "kept"),
         TreeCandidate(0, 12, "C", -2.0, "pruned"), TreeCandidate(0, 13, "D", -3.0, "pruned")],
        [TreeCandidate(0, 3, "</s>", -0.3, "finished"), TreeCandidate(1, 14, "E", -0.8, "kept"),
         TreeCandidate(0, 15, "F", -1.0, "kept"), TreeCandidate(1, 16, "G", -2.5, "pruned")],
        [TreeCandidate(0, 3, "</s>", -0.9, "finished"), TreeCandidate(1, 17, "H", -1.5, "kept"),
         TreeCandidate(0, 18, "I", -3.0, "pruned"), TreeCandidate(1, 3, "</s>", -3.1, "pruned")],
    ]
    hypotheses = [((10, 3), (0, 0)), ((11, 14, 3), (0, 1, 0))]
    return steps, hypotheses


def test_beam_tree_nodes_are_the_candidates_with_their_parents():
    steps, hypotheses = _search()
    nodes = beam_tree_nodes(steps, hypotheses)
    assert len(nodes) == 1 + sum(len(s) for s in steps)
    body = nodes[nodes.status != "root"]
    assert list(body.status) == [c.status for s in steps for c in s]
    assert list(body.log_prob) == [c.log_prob for s in steps for c in s]
    piece = dict(zip(nodes.id, nodes.piece, strict=True))
    parent_piece = [piece[p] for p in body.parent]
    # step 1 extends rows [A, B]; step 2 extends rows [E, F] (the kept nodes of step 1, in order)
    assert parent_piece == ["<s>"] * 4 + ["A", "B", "A", "B"] + ["E", "F", "E", "F"]
    assert list(nodes[nodes.best].piece) == ["<s>", "A", "</s>"]
    assert sorted(nodes[nodes.nbest & ~nodes.best].piece) == ["</s>", "B", "E"]


def test_beam_tree_figure_draws_every_node_once_with_its_status():
    steps, hypotheses = _search()
    nodes = beam_tree_nodes(steps, hypotheses)
    fig = beam_tree_figure(nodes, title="tree", current_step=1, selected=int(nodes.id.iloc[5]))
    drawn = [row for t in fig.data if t.mode in ("markers+text", "markers") and t.customdata is not None
             for row in t.customdata]
    assert sorted(int(r[0]) for r in drawn) == list(nodes.id)
    status_of = {int(r[0]): r[4] for r in drawn if len(r) > 2}
    assert status_of == {int(i): s for i, s in zip(nodes.id, nodes.status, strict=True) if s != "root"}
    best_trace = next(t for t in fig.data if t.name == "best path")
    assert best_trace.marker.symbol[-1] == "diamond"
    # the best path reads along the top axis, every node from the start piece on, none dropped to fit
    assert list(fig.layout.xaxis2.ticktext) == ["&lt;s&gt;", "A", "&lt;/s&gt;"]
    assert list(fig.layout.xaxis2.tickvals) == [0, 1, 2]
    assert not fig.layout.xaxis.showgrid  # no vertical line through "<s>"
    pruned = next(t for t in fig.data if t.name.startswith("pruned"))
    assert len(pruned.x) == int((nodes.status == "pruned").sum())


def test_nbest_frame_keeps_scores():
    frame = nbest_frame([("a b", 3, -1.0, 1.2, -1.0 / 1.2, True), ("a", 2, -2.0, 1.1, -2.0 / 1.1, False)])
    assert list(frame.index) == [1, 2]
    assert frame.loc[1, "score = log-prob / lp"] == pytest.approx(-1.0 / 1.2)
