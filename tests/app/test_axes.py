"""Piece labels on matrix axes stay readable at any length: up to 40 pieces every one is named (turned and, where
needed, smaller); past that, where every piece's label would overlap, only every k-th is drawn (numbered), and cells
too small for a number or a ✓ carry none; the hover still names every piece."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.charts.axes import COLUMN_PX, LABEL_PX, SLANT, label_step, nice_step, plot_px, thinned
from app.charts.masks import mask_grid, masked_scores
from app.charts.mechanics import score_matrix


@given(n=st.integers(1, 2000), axis_px=st.floats(1, 3000))
def test_the_labels_drawn_fit_their_axis_and_all_are_drawn_when_they_fit(n, axis_px):
    step = label_step(n, axis_px)
    drawn = len(range(0, n, step))
    assert step == 1 or drawn * LABEL_PX <= axis_px + LABEL_PX  # at most one label more than the axis holds
    assert (step == 1) == (n * LABEL_PX <= axis_px)
    assert label_step(n, None) == 1


def test_skipped_pieces_leave_numbered_labels():
    pieces = [f"p{i}" for i in range(7)]
    assert thinned(pieces, 1) == dict(tickvals=list(range(7)), ticktext=pieces)
    assert thinned(pieces, 3) == dict(tickvals=[0, 3, 6], ticktext=["0 · p0", "3 · p3", "6 · p6"])


def pieces(n: int) -> list[str]:
    return [f"▁w{i}" for i in range(n)]


def test_a_long_sentences_mask_in_a_third_of_the_page_thins_its_labels_and_drops_the_ticks():
    mask = np.tril(np.ones((60, 71), dtype=bool))
    fig = mask_grid(mask, pieces(60), pieces(71), "mask")
    x, y = fig.layout.xaxis, fig.layout.yaxis
    assert len(x.tickvals) * LABEL_PX * SLANT <= COLUMN_PX[3] + LABEL_PX * SLANT * 3 and len(x.tickvals) < 71
    assert len(y.tickvals) * LABEL_PX <= plot_px(fig.layout.height) and len(y.tickvals) < 60
    assert fig.data[0].text is None
    assert fig.data[0].customdata[59, 70, 0] == "59 · ▁w59" and fig.data[0].customdata[59, 70, 1] == "70 · ▁w70"


def test_a_short_sentence_keeps_every_label_and_its_ticks_and_numbers():
    mask = np.tril(np.ones((6, 6), dtype=bool))
    fig = mask_grid(mask, pieces(6), pieces(6), "mask")
    assert list(fig.layout.xaxis.ticktext) == pieces(6) and list(fig.layout.yaxis.ticktext) == pieces(6)
    assert fig.data[0].text[0, 0] == "✓" and fig.data[0].text[0, 1] == ""
    scores = np.arange(36, dtype=float).reshape(6, 6)
    assert masked_scores(scores, mask, pieces(6), pieces(6), "scores").data[0].text[5, 5] == "35.0"
    assert score_matrix(scores[:4, :4], pieces(4), pieces(4), "QK", columns=1).data[0].text[0, 1] == "1.0"
    # 13 keys in a third of the page: cells of about 6 px cannot hold "-10.3" (it ran into its neighbours)
    assert score_matrix(np.full((13, 13), -10.3), pieces(13), pieces(13), "QK", columns=3).data[0].text is None
    assert masked_scores(np.zeros((40, 40)), np.ones((40, 40), bool), pieces(40), pieces(40), "s").data[0].text is None


@given(st.floats(0.5, 1e7))
def test_a_nice_step_is_round_and_leaves_no_more_than_a_few_ticks_too_many(span):
    step = nice_step(span)
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    assert span <= step < 5 * span and round(mantissa, 6) in (1.0, 2.0, 5.0)


@given(st.integers(2, 300_000))
def test_the_loss_curves_last_step_tick_stays_clear_of_the_learning_rate_axis(steps):
    """The learning rate's "0.0e+0" stands right of the plot at its bottom: a step tick at the right end met it
    ("14k", then "16k" as the shipped model trained on). Every tick stands half a round interval or more inside
    the end, and the range ends just past the last step."""
    from app.charts.training import loss_curve

    log = pd.DataFrame({"step": [1, steps], "loss": [9.0, 2.0], "lr": [1e-5, 5e-4]})
    axis = loss_curve(log).layout.xaxis
    end, ticks = axis.range[1], list(axis.tickvals)
    dtick = ticks[1] - ticks[0]
    assert steps <= end <= 1.06 * steps  # no empty stretch right of the curve
    assert ticks[0] == 0 and len(ticks) >= 3 and ticks[-1] <= end - dtick / 2 and dtick == nice_step(dtick)
    assert all(text.endswith("k") == (tick >= 1000) for tick, text in zip(ticks, axis.ticktext, strict=True))


@pytest.mark.parametrize("n", [14, 33, 40])
@pytest.mark.parametrize("columns", [1, 2, 3])
def test_an_axis_of_up_to_40_pieces_names_every_piece_without_index_prefixes(n, columns):
    """design.md: labels are never dropped to fit (every k-th label was the old fix); the axis turns and shrinks
    its labels instead."""
    import plotly.graph_objects as go

    from app.charts.axes import COLUMN_PX, MIN_TICK_PX, plot_px, token_axes

    pieces = [f"▁piece{i}" for i in range(n)]
    fig = token_axes(go.Figure(), pieces, pieces, x_px=COLUMN_PX[columns], y_px=plot_px(400))
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert list(axis.tickvals) == list(range(n)) and list(axis.ticktext) == pieces  # no "12 · " prefixes
        assert axis.tickfont.size >= MIN_TICK_PX
    assert fig.layout.meta["pieces"] == {"xaxis": n, "yaxis": n}


@pytest.mark.parametrize("n", [5, 12, 19, 33, 40])
def test_a_long_sentence_takes_fewer_columns_not_fewer_labels(n):
    """Side by side only while every piece keeps room for its own label (PIECE_ROOM_PX); a 33-piece sentence's
    masks stood in a third of the page with 8 px a label, and collided."""
    from app.charts.axes import COLORBAR_PX, PIECE_ROOM_PX, TICK_SIZE, columns_for

    pieces, rows = [f"▁p{i}" for i in range(n)], [f"▁row{i}" for i in range(n)]
    columns = columns_for(3, pieces, rows)
    assert columns == 1 or (COLUMN_PX[columns] - COLORBAR_PX - 0.6 * TICK_SIZE * 7) / n >= PIECE_ROOM_PX
    assert columns == 3 or (COLUMN_PX[columns + 1] - COLORBAR_PX - 0.6 * TICK_SIZE * 7) / n < PIECE_ROOM_PX
    assert columns_for(3, pieces[:5], rows[:5]) == 3 and columns_for(2, pieces, rows) <= 2


@pytest.mark.parametrize("n", [6, 19, 33])
def test_panels_of_a_long_sentence_wrap_into_rows_and_every_panel_names_every_piece(n):
    import plotly.graph_objects as go

    from app.charts.heads import checkpoints_figure, panels_figure
    from app.charts.mechanics import stage_bars
    from app.charts.style import presented

    pieces = [f"▁p{i}" for i in range(n)]
    z = np.full((n, n), 1.0 / n, dtype=np.float32)
    figures = [(panels_figure([(f"m{i}", z, False, None) for i in range(3)], pieces, pieces, title="t",
                              row_title="q", col_title="k"), 3),
               (checkpoints_figure([(f"epoch {i}", z) for i in range(4)], pieces, pieces, title="t", row_title="q",
                                   col_title="k"), 4),
               (stage_bars([(f"s{i}", z[0]) for i in range(4)], pieces, np.ones(n, bool), "t"), 4)]
    for fig, panels in figures:  # the panels' axes, row by row (a grid's last row may have a cell to spare)
        x_axes = ["xaxis"] + [f"xaxis{i}" for i in range(2, panels + 1)]
        rows = len({tuple(fig.layout["y" + k[1:]].domain) for k in x_axes})
        assert (rows > 1) == (n >= 19)  # a short sentence keeps its panels in one row
        for name in x_axes:
            assert list(fig.layout[name].ticktext) == pieces and fig.layout.meta["pieces"][name] == n
        # presenter mode keeps the rows of panels their height instead of squeezing them onto one screen
        assert presented(go.Figure(fig), 560).layout.height >= fig.layout.height
