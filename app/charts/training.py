"""Figures for the Model and training page: parameter counts, the encoder-decoder diagram with the real
sizes, the learning-rate schedule, label smoothing's target distribution and the training curves."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.axes import nice_step, plotly_text
from app.charts.style import HEAD_COLORS, styled

INK = "#1a1a1a"  # explicit: Streamlit's chart theme would grey out annotation text
COLORS = {"attention": "#fcd9b6", "norm": "#fff1a8", "ffn": "#c9e0f5", "embed": "#f5c9d2", "out": "#cdebd3"}
MAX_POINTS = 2000  # a curve with more steps than this is thinned for the browser


def parameter_bars(rows: list[tuple[str, int]]) -> go.Figure:
    """Horizontal bars, one per block, in model order from the top."""
    names = [n for n, _ in rows]
    counts = [c for _, c in rows]
    colors = [HEAD_COLORS[0] if "Encoder" in n else HEAD_COLORS[1] if "Decoder" in n else HEAD_COLORS[2] for n in names]
    fig = go.Figure(go.Bar(x=counts, y=names, orientation="h", marker_color=colors, text=[f"{c:,}" for c in counts],
                           textposition="auto", hovertemplate="%{y}<br>%{x:,} parameters<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title_text=None)
    fig.update_xaxes(title_text="parameters")
    return styled(fig, f"Parameters per block (total {sum(counts):,})", int(min(1400, 120 + 24 * len(rows))))


DIAGRAM_FONT = 14  # every label of the diagram: x 1.3 in presenter mode gives 18 px


def _box(fig: go.Figure, x0: float, x1: float, y0: float, y1: float, text: str, color: str) -> None:
    fig.add_shape(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, fillcolor=color, line=dict(color="#555", width=1.2),
                  layer="below")
    fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=text, showarrow=False,
                       font=dict(size=DIAGRAM_FONT, color=INK))


def _arrow(fig: go.Figure, x0: float, y0: float, x1: float, y1: float) -> None:
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                       showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6, arrowcolor="#444")


def _residual(fig: go.Figure, x: float, y_from: float, y_to: float, side: float) -> None:
    """A skip connection drawn beside a sub-layer: from its input to the Add & Norm box."""
    fig.add_shape(type="path", path=f"M {x},{y_from} L {x + side},{y_from} L {x + side},{y_to} L {x},{y_to}",
                  line=dict(color="#2b7a3d", width=2, dash="dot"))


# Heights in data units: a sub-layer's box holds two lines, Add & LayerNorm one. Sized so that the diagram's
# labels fit their boxes in a 560-px-wide slide column at 14 px and in presenter mode's 820 px at 18 px.
BLOCK, NORM, GAP, BASE = 1.0, 0.5, 0.1, 2.6


def _stack(fig: go.Figure, x0: float, x1: float, blocks: list[tuple[str, str]], n_layers: int, title: str,
           side: float) -> tuple[float, dict[str, float]]:
    """Draw one stack of sub-layers (each followed by Add & LayerNorm) bottom-up; returns its top y and the
    centre height of each block."""
    y, centres = BASE, {}
    for label, color in blocks:
        _box(fig, x0 + 0.2, x1 - 0.2, y, y + BLOCK, label, COLORS[color])
        centres[label] = y + BLOCK / 2
        _arrow(fig, (x0 + x1) / 2, y - 0.3 if y > BASE else y - 0.8, (x0 + x1) / 2, y)
        norm_y = y + BLOCK + GAP
        _box(fig, x0 + 0.2, x1 - 0.2, norm_y, norm_y + NORM, "Add & LayerNorm", COLORS["norm"])
        _residual(fig, x0 + 0.2 if side < 0 else x1 - 0.2, y - 0.12, norm_y + NORM / 2, side)
        y = norm_y + NORM + 0.3
    top = y - 0.15
    fig.add_shape(type="rect", x0=x0, x1=x1, y0=BASE - 0.3, y1=top, line=dict(color="#333", width=2), layer="below")
    fig.add_annotation(x=x0, y=top, text=f"<b>{title}</b>  N = {n_layers} ×", xanchor="left", yanchor="bottom",
                       showarrow=False, font=dict(size=DIAGRAM_FONT, color=INK))
    return top, centres


def architecture_diagram(cfg: dict, start_piece: str = "<s>") -> go.Figure:
    """Encoder-decoder diagram (paper figure 1) annotated with this model's sizes.

    ``cfg`` needs d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers, vocab_size, norm_first (and names
    its activation: the paper's ReLU unless it says otherwise, e.g. Marian's swish). ``start_piece`` is what the
    decoder input begins with (Marian's is <pad>). Every label is at most about 27 characters a line.
    """
    d, h, dff, v = cfg["d_model"], cfg["n_heads"], cfg["d_ff"], cfg["vocab_size"]
    fig = go.Figure()
    att = f"{h} heads × d_k {d // h}"
    activation = {"relu": "ReLU", "swish": "Swish", "gelu": "GELU"}.get(cfg.get("activation", "relu"), "ReLU")
    ffn = f"Feed-forward ({activation})<br>{d} → {dff} → {d}"
    enc, dec = (0.1, 4.4), (5.6, 9.9)
    enc_top, _ = _stack(fig, *enc, [(f"Self-attention<br>{att}", "attention"), (ffn, "ffn")],
                        cfg["n_encoder_layers"], "Encoder", -0.3)
    dec_blocks = [(f"Masked self-attention<br>{att}", "attention"),
                  ("Cross-attention<br>Q: decoder · K, V: encoder", "attention"), (ffn, "ffn")]
    dec_top, centres = _stack(fig, *dec, dec_blocks, cfg["n_decoder_layers"], "Decoder", 0.3)
    shifted = f"Output shifted right: {plotly_text([start_piece])[0]} y<sub>1</sub> … y<sub>t−1</sub>"
    for (x0, x1), label in ((enc, "Source pieces (S)"), (dec, shifted)):
        _box(fig, x0 + 0.2, x1 - 0.2, 1.0, 1.8, f"Embedding × √{d}<br>+ positional encoding", COLORS["embed"])
        fig.add_annotation(x=(x0 + x1) / 2, y=0.35, text=label, showarrow=False,
                           font=dict(size=DIAGRAM_FONT, color=INK))
        _arrow(fig, (x0 + x1) / 2, 0.55, (x0 + x1) / 2, 1.0)
    fig.add_annotation(x=5.0, y=1.4, text=f"shared E<br>{v:,} × {d}", showarrow=False,
                       font=dict(size=DIAGRAM_FONT, color="#a33"))
    # encoder output -> every decoder layer's cross-attention (keys and values)
    mid, cross_y = sum(enc) / 2, centres[dec_blocks[1][0]]
    fig.add_shape(type="path", path=f"M {mid},{enc_top} L {mid},{enc_top + 0.6} L 5.0,{enc_top + 0.6} L 5.0,{cross_y}",
                  line=dict(color="#444", width=1.6))
    _arrow(fig, 5.0, cross_y, dec[0] + 0.2, cross_y)
    fig.add_annotation(x=mid, y=enc_top + 0.6, text=f"encoder output (S × {d})", showarrow=False, yanchor="bottom",
                       font=dict(size=DIAGRAM_FONT, color=INK))
    centre = sum(dec) / 2
    out = dec_top + 0.8  # the output layer's box, clear of the stack's title
    _box(fig, dec[0] + 0.2, dec[1] - 0.2, out, out + BLOCK, f"Linear {d} → {v:,} (= Eᵀ)<br>then softmax", COLORS["out"])
    _arrow(fig, centre, dec_top, centre, out)
    _arrow(fig, centre, out + BLOCK, centre, out + 0.4 + BLOCK)
    fig.add_annotation(x=centre, y=out + 0.4 + BLOCK, text="P(next piece), fed back in", showarrow=False,
                       yanchor="bottom", font=dict(size=DIAGRAM_FONT, color=INK))
    norm = "pre-norm: x + Sublayer(LayerNorm(x))" if cfg.get("norm_first") else "post-norm: LayerNorm(x + Sublayer(x))"
    fig.add_annotation(x=enc[0], y=out + BLOCK, showarrow=False, xanchor="left", yanchor="middle",
                       align="left", font=dict(size=DIAGRAM_FONT, color=INK),
                       text=f"<span style='color:#2b7a3d'>┈┈ residual connection</span><br>{norm}")
    fig.update_xaxes(visible=False, range=[-0.35, 10.35])
    fig.update_yaxes(visible=False, range=[0, out + 1.4 + BLOCK])
    fig.update_layout(margin=dict(l=5, r=5, t=40, b=5), showlegend=False)
    return styled(fig, "Encoder-decoder Transformer with this model's sizes", 720)


def lr_schedule(curves: list[tuple[str, np.ndarray, np.ndarray]], stop: tuple[int, float] | None = None,
                title: str = "Learning-rate schedule") -> go.Figure:
    """Learning rate against step; ``curves`` = (label, steps, lr) and ``stop`` = (step, lr) of the checkpoint's
    weights."""
    fig = go.Figure()
    for i, (label, steps, lrs) in enumerate(curves):
        fig.add_trace(go.Scatter(x=np.asarray(steps), y=np.asarray(lrs), mode="lines", name=label,
                                 line=dict(color=HEAD_COLORS[i % len(HEAD_COLORS)], width=2.5),
                                 hovertemplate=f"{label}<br>step %{{x:,}}<br>lr %{{y:.2e}}<extra></extra>"))
    if stop is not None:
        # the label goes where the plot has room: below the mark, or above it when the mark sits low (a rate cooled
        # down to about 0 at the end), so it never lands on the step axis's labels
        top = max((float(np.max(lrs)) for _, _, lrs in curves if len(lrs)), default=stop[1])
        low = stop[1] < 0.5 * top
        fig.add_trace(go.Scatter(x=[stop[0]], y=[stop[1]], mode="markers+text", name="this checkpoint",
                                 marker=dict(size=13, color="#d62728", symbol="x"),
                                 text=[f"checkpoint: step {stop[0]:,}"],
                                 textposition="top left" if low else "bottom left",
                                 hovertemplate="step %{x:,}<br>lr %{y:.2e}<extra></extra>"))
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="learning rate", exponentformat="e")
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return styled(fig, title, 420)


def label_smoothing_bars(dist: np.ndarray, labels: list[str], epsilon: float) -> go.Figure:
    """A target distribution over a small vocabulary (one-hot vs smoothed)."""
    dist = np.asarray(dist)
    fig = go.Figure(go.Bar(x=labels, y=dist, marker_color=[HEAD_COLORS[1] if p == dist.max() else HEAD_COLORS[0]
                                                           for p in dist],
                           text=[f"{p:.3f}" for p in dist], textposition="outside",
                           hovertemplate="%{x}<br>target probability %{y:.4f}<extra></extra>"))
    fig.update_xaxes(title_text="vocabulary entry", type="category")
    fig.update_yaxes(title_text="target probability", range=[0, 1.12])
    return styled(fig, f"Target for one position with ε = {epsilon:g} (bars sum to {dist.sum():.3f})", 380)


def _thin(df: pd.DataFrame) -> pd.DataFrame:
    step = max(1, len(df) // MAX_POINTS)
    return df.iloc[::step]


def loss_curve(log: pd.DataFrame, floor: float | None = None) -> go.Figure:
    """Per-step training loss (raw and smoothed) with the learning rate on a second axis; ``floor`` is the
    lowest loss label smoothing allows (drawn as a dashed line)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    smooth = log["loss"].rolling(max(1, len(log) // 100), min_periods=1).mean()
    thin = _thin(log.assign(smooth=smooth))
    fig.add_trace(go.Scatter(x=thin["step"], y=thin["loss"], mode="lines", name="loss per step",
                             line=dict(color="#9ecae1", width=1)), secondary_y=False)
    fig.add_trace(go.Scatter(x=thin["step"], y=thin["smooth"], mode="lines", name="loss (moving mean)",
                             line=dict(color=HEAD_COLORS[0], width=2.5)), secondary_y=False)
    fig.add_trace(go.Scatter(x=thin["step"], y=thin["lr"], mode="lines", name="learning rate",
                             line=dict(color=HEAD_COLORS[1], width=2, dash="dot")), secondary_y=True)
    # 5% room right of the last step, and no step tick within half a tick interval of the right end: a tick there
    # ("16k") would meet the learning rate's "0.0e+0" beside it, whatever the number of steps.
    end = float(log["step"].max()) * 1.05
    dtick = nice_step(end / 10)  # 4 to 10 intervals: nice_step rounds up by at most 2.5x
    ticks = [i * dtick for i in range(math.floor((end - dtick / 2) / dtick) + 1)]
    fig.update_xaxes(title_text="training step", range=[0, end], tickmode="array", tickvals=ticks,
                     ticktext=[f"{t / 1000:g}k" if t >= 1000 else f"{t:g}" for t in ticks])  # "5k" beside "10k"
    fig.update_yaxes(title_text="loss (nats)", secondary_y=False)
    if floor is not None:
        fig.add_hline(y=floor, line=dict(color="#555", dash="dash", width=1.5), secondary_y=False,
                      annotation_text=f"lowest possible with label smoothing: {floor:.3f}",
                      annotation_position="bottom right", annotation_font=dict(size=13, color=INK))
    fig.update_yaxes(title_text="learning rate", tickmode="auto", nticks=5, tickformat=".1e", secondary_y=True,
                     showgrid=False, rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return styled(fig, "Training loss (label-smoothed cross-entropy) and learning rate per step", 440)


def epoch_curves(epochs: pd.DataFrame) -> go.Figure:
    """Per-epoch train/validation loss and validation BLEU / chrF."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["Loss per epoch", "Validation scores"], horizontal_spacing=0.1)
    for col, name, color in (("train_loss", "train loss", HEAD_COLORS[0]), ("valid_loss", "validation loss",
                                                                             HEAD_COLORS[1])):
        fig.add_trace(go.Scatter(x=epochs["epoch"], y=epochs[col], mode="lines+markers", name=name,
                                 line=dict(color=color)), row=1, col=1)
    for col, name, color in (("valid_bleu", "BLEU", HEAD_COLORS[2]), ("valid_chrf", "chrF", HEAD_COLORS[3])):
        fig.add_trace(go.Scatter(x=epochs["epoch"], y=epochs[col], mode="lines+markers", name=name,
                                 line=dict(color=color)), row=1, col=2)
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(title_text="loss (nats)", row=1, col=1)
    fig.update_yaxes(title_text="score (0–100)", row=1, col=2)
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return styled(fig, "Training progress per epoch", 420)


def schedule_beside_run(formula: tuple[str, np.ndarray, np.ndarray], run: tuple[str, np.ndarray, np.ndarray],
                        warmup: int, title: str) -> go.Figure:
    """The paper's schedule as the main curve, with its warm-up peak marked, and beside it, smaller, the rate a real
    run used (restarts and all): ``formula`` and ``run`` are (label, steps, lr)."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.64, 0.36], horizontal_spacing=0.12,
                        subplot_titles=[formula[0], run[0]])
    for col, (label, steps, lrs), color, width in ((1, formula, HEAD_COLORS[0], 3.0), (2, run, "#888888", 1.5)):
        fig.add_trace(go.Scatter(x=np.asarray(steps), y=np.asarray(lrs), mode="lines", name=label, showlegend=False,
                                 line=dict(color=color, width=width),
                                 hovertemplate=f"{label}<br>step %{{x:,}}<br>lr %{{y:.2e}}<extra></extra>"),
                      row=1, col=col)
        end = float(np.max(steps)) if len(steps) else 1.0
        dtick = nice_step(end / (4 if col == 1 else 2))
        # the step labels stand lower than Plotly's default: the "0" under the corner ran into the rate axis's
        # "0e+0" beside it (tests/e2e/test_text_layout.py, presenter mode)
        fig.update_xaxes(title_text="training step", range=[0, end * 1.04], dtick=dtick, row=1, col=col,
                         tickformat="~s", ticklabelstandoff=10)
        # two significant digits, trailing zeros dropped: ".0e" printed 1.5e-3 as a second "2e-3"
        fig.update_yaxes(exponentformat="e", tickformat=".2~e", nticks=5, rangemode="tozero", row=1, col=col)
    peak = float(np.interp(warmup, formula[1], formula[2]))
    fig.add_trace(go.Scatter(x=[warmup], y=[peak], mode="markers+text", text=[f"end of warm-up: step {warmup:,}"],
                             textposition="middle right", marker=dict(size=11, color="#d62728"), showlegend=False,
                             hovertemplate="step %{x:,}<br>lr %{y:.2e}<extra></extra>"), row=1, col=1)
    fig.update_yaxes(title_text="learning rate", row=1, col=1)
    return styled(fig, title, 420)
