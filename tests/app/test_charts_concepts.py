"""Figure builders of the concept pages draw exactly the numbers they are given."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from app.charts import masks, mechanics, positional, training
from explain.model_training import smoothed_targets
from model.network.positional import pair_dimensions, sinusoidal_encoding, wavelengths
from training.schedule import noam_lr


@pytest.fixture
def pe():
    return sinusoidal_encoding(12, 8).numpy()


def test_pe_heatmap_z_is_the_encoding(pe):
    fig = positional.pe_heatmap(pe)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), pe)
    assert fig.layout.yaxis.title.text == "position"


def test_pe_curves_are_the_chosen_columns_with_wavelengths(pe):
    lam = wavelengths(8).numpy()
    fig = positional.pe_curves(pe, [0, 5], [float(lam[0]), float(lam[2])], [True, False])
    assert len(fig.data) == 2
    np.testing.assert_array_equal(np.asarray(fig.data[1].y), pe[:, 5])
    assert "dim 5" in fig.data[1].name and "cos" in fig.data[1].name and f"{lam[2]:,.1f}" in fig.data[1].name


def test_marians_halves_are_labelled_sines_then_cosines():
    """In Marian's layout dimension 4 of 8 is the first cosine (it starts at 1), not a sine as an even index is in the
    paper's layout: the legend and the axis say which, from model.network.positional.pair_dimensions."""
    pe = sinusoidal_encoding(12, 8, "halves").numpy()
    sin_dims = set(pair_dimensions(8, "halves")[0].tolist())
    fig = positional.pe_curves(pe, [2, 4], [1.0, 1.0], [d in sin_dims for d in (2, 4)])
    assert "sin" in fig.data[0].name and "cos" in fig.data[1].name and pe[0, 4] == 1.0
    assert "first half sin" in positional.pe_heatmap(pe, layout="halves").layout.xaxis.title.text


def test_embedding_parts_three_panels_labelled_by_piece():
    parts = {"token": np.ones((3, 4)), "positional": np.zeros((3, 4)), "sum": np.full((3, 4), 2.0)}
    fig = positional.embedding_parts(parts, ["▁a", "▁a", "</s>"])
    assert [np.asarray(t.z)[0, 0] for t in fig.data] == [1.0, 0.0, 2.0]
    assert list(fig.layout.yaxis.ticktext) == ["▁a", "▁a", "&lt;/s&gt;"]  # repeats stay apart; HTML escaped


def test_mask_grid_cells_equal_the_bool_mask():
    mask = np.array([[True, False, False], [True, True, False]])
    fig = masks.mask_grid(mask, ["<s>", "▁x"], ["▁a", "▁b", "<pad>"], "m")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z).astype(bool), mask)
    assert list(fig.layout.xaxis.ticktext) == ["▁a", "▁b", "&lt;pad&gt;"]  # a raw "<pad>" would be read as HTML
    assert np.asarray(fig.data[0].text)[0, 1] == ""  # no tick on a masked cell


def test_masked_scores_hide_finfo_min():
    scores = np.array([[0.5, np.finfo(np.float32).min]], dtype=np.float32)
    mask = np.array([[True, False]])
    fig = masks.masked_scores(scores, mask, ["q"], ["k0", "<pad>"], "s")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z[0, 0] == pytest.approx(0.5) and np.isnan(z[0, 1])
    assert np.asarray(fig.data[0].text)[0, 1] == "−∞"
    assert fig.data[0].zmin == pytest.approx(-0.5)  # the colour scale ignores the masked value


def test_masked_weights_keep_exact_values():
    weights = np.array([[0.25, 0.75, 0.0]], dtype=np.float32)
    fig = masks.masked_weights(weights, np.array([[True, True, False]]), ["q"], ["a", "b", "<pad>"], "w")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), weights)
    overlay = np.asarray(fig.data[1].z, dtype=float)  # grey layer only on the masked cell
    np.testing.assert_array_equal(~np.isnan(overlay), [[False, False, True]])


def test_masked_weights_of_a_long_input_stay_exact_and_light():
    """Past 30 x 30 cells: no numbers in the cells, the weights exact in float32, the masked cells grey, and the
    hover from the axes (no label pair per cell): a causal 200-piece map is well under a megabyte."""
    n = 200
    rng = np.random.default_rng(0)
    mask = np.tril(np.ones((n, n), dtype=bool))  # causal
    weights = np.where(mask, rng.random((n, n)), 0.0).astype(np.float32)
    weights /= weights.sum(axis=1, keepdims=True)
    pieces = [f"▁w{i}" for i in range(n)]
    fig = masks.masked_weights(weights, mask, pieces, pieces, "w")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), weights)
    np.testing.assert_array_equal(np.asarray(fig.data[1].z, dtype=bool), ~mask)  # the grey overlay: masked cells
    assert all(trace.customdata is None and trace.text is None for trace in fig.data)
    assert len(fig.to_json()) < 10**6



def test_batch_table_greys_the_padding_the_masks_name_not_every_pad_piece():
    """Marian's decoder input starts with <pad>, which is no padding: only the flagged cells turn grey."""
    table = masks.batch_table({"s1": ["▁a", "</s>"], "s2": ["▁a", "<pad>"], "dec": ["<pad>", "▁b", "<pad>"]})
    assert table.shape == (3, 3) and table.loc["s2", "1"] == "<pad>"
    styled = masks.highlight_pads(table, [[False, False], [False, True], [False, False, True]], bold=("<pad>", "</s>"))
    css = styled._compute().ctx  # (row, column) -> [(property, value)] of the cells that got a style
    grey = {cell for cell, props in css.items() if ("background-color", masks.MASKED_COLOR) in props}
    assert grey == {(1, 1), (2, 2)}
    assert ("font-weight", "bold") in css[(2, 0)] and ("font-weight", "bold") in css[(0, 1)]
    with pytest.raises(ValueError):
        masks.highlight_pads(table, [[True]])


def test_stage_bars_last_panel_is_the_weights_and_masked_keys_have_no_bar():
    weights = np.array([0.4, 0.6, 0.0])
    mask_row = np.array([True, True, False])
    stages = [("raw", np.array([1.0, 2.0, 3.0])), ("scaled", np.array([0.5, 1.0, 1.5])),
              ("masked", np.array([0.5, 1.0, 1.5])), ("softmax", weights)]
    fig = mechanics.stage_bars(stages, ["a", "b", "<pad>"], mask_row, "t")
    bars = [t for t in fig.data if t.type == "bar"]
    np.testing.assert_array_equal(np.asarray(bars[-1].y), weights)
    assert np.asarray(bars[0].y, dtype=float)[2] == 3.0  # before masking the raw score is still there
    assert np.isnan(np.asarray(bars[2].y, dtype=float)[2])  # after masking it is gone


def test_concat_heads_lays_heads_side_by_side():
    context = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)  # [H, Q, d_k]
    fig = mechanics.concat_heads(context, ["a", "b", "c"], head=1)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (3, 8)
    np.testing.assert_array_equal(z[:, 4:], context[1])


def test_schedule_curve_equals_noam_lr():
    steps = np.arange(1, 200)
    lrs = np.array([noam_lr(int(s), 64, 30, 2.0) for s in steps])
    fig = training.lr_schedule([("m", steps, lrs)], stop=(150, noam_lr(150, 64, 30, 2.0)))
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), lrs)
    assert np.asarray(fig.data[0].x)[np.argmax(np.asarray(fig.data[0].y))] == 30  # peak at the end of warm-up
    assert list(fig.data[1].x) == [150]


def test_a_checkpoint_at_the_end_of_a_cool_down_is_labelled_above_its_mark():
    """A rate cooled to about 0 puts the checkpoint's mark on the step axis: its label goes above it, clear of the
    axis's tick labels (the e2e layout check measures the page at 1280x720)."""
    steps = np.arange(1, 200)
    lrs = np.array([noam_lr(int(s), 64, 30, 2.0) * min(1.0, (199 - s) / 50) for s in steps])
    fig = training.lr_schedule([("m", steps, lrs)], stop=(199, float(lrs[-1])))
    assert fig.data[1].textposition == "top left"
    fig = training.lr_schedule([("m", steps, lrs)], stop=(40, float(lrs[39])))  # near the peak: below it
    assert fig.data[1].textposition == "bottom left"


def test_label_smoothing_bars_sum_to_one():
    dist = smoothed_targets(torch.tensor([3]), 10, 0.1)[0].numpy()
    fig = training.label_smoothing_bars(dist, [str(i) for i in range(10)], 0.1)
    y = np.asarray(fig.data[0].y)
    assert y.sum() == pytest.approx(1.0)
    assert y[3] == pytest.approx(0.91) and y[0] == pytest.approx(0.01)


def test_parameter_bars_total_in_title():
    fig = training.parameter_bars([("Shared embedding / output layer", 100), ("Encoder layer 1 · feed-forward", 23)])
    assert list(fig.data[0].x) == [100, 23] and "123" in fig.layout.title.text


def test_architecture_diagram_names_real_sizes():
    cfg = dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=3, vocab_size=30,
               norm_first=False)
    texts = " ".join(a.text for a in training.architecture_diagram(cfg).layout.annotations)
    for needle in ("4 heads × d_k 16", "64 → 256 → 64", "N = 2", "N = 3", "30 × 64", "LayerNorm(x + Sublayer(x))",
                   "Output shifted right: &lt;s&gt;"):
        assert needle in texts
    marian = " ".join(a.text for a in training.architecture_diagram({**cfg, "activation": "swish"}, "<pad>")
                      .layout.annotations)
    assert "Output shifted right: &lt;pad&gt;" in marian and "(Swish)" in marian


def test_training_curves_plot_the_logs():
    log = pd.DataFrame({"step": [1, 2, 3], "epoch": [1, 1, 1], "loss": [3.0, 2.0, 1.0], "lr": [1e-4, 2e-4, 3e-4]})
    fig = training.loss_curve(log)
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), [3.0, 2.0, 1.0])
    epochs = pd.DataFrame({"epoch": [1, 2], "train_loss": [2.0, 1.0], "valid_loss": [2.5, 1.5],
                           "valid_bleu": [10.0, 20.0], "valid_chrf": [30.0, 40.0]})
    fig = training.epoch_curves(epochs)
    np.testing.assert_array_equal(np.asarray(fig.data[2].y), [10.0, 20.0])


def test_saturation_plots_both_variants():
    stats = {f"{m}_{v}": np.array([1.0, 2.0]) * (1 if v == "scaled" else 3)
             for m in ("entropy", "max_weight", "grad_norm") for v in ("scaled", "unscaled")}
    fig = mechanics.saturation([4, 16], stats)
    assert len(fig.data) == 6
    np.testing.assert_array_equal(np.asarray(fig.data[1].y), [3.0, 6.0])
