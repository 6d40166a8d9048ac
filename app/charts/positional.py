"""Figures for the Positional encoding page: the sinusoid matrix, chosen dimensions as curves, PE·PE^T,
and the three parts of what the first layer reads (token embedding, positional encoding, sum)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.axes import indexed_labels, token_axes
from app.charts.style import DIVERGING_COLORSCALE, HEAD_COLORS, styled

LAYOUT_AXIS = {"interleaved": "dimension (even = sin, odd = cos)",
               "halves": "dimension (first half sin, second half cos: Marian's layout)",
               "learned": "dimension (a learned table: no sin/cos pairs)",
               "fairseq": "dimension (first half sin, second half cos: fairseq's layout)"}


def pe_heatmap(pe: np.ndarray, title: str = "Sinusoidal positional encoding PE[position, dimension]",
               layout: str = "interleaved") -> go.Figure:
    """PE [P, D] with position down and dimension across; fast columns on the left (of each half, in Marian's
    ``layout`` "halves"), slow on the right. Sinusoids fill [-1, 1]; a learned table is drawn on a scale symmetric
    about 0 that its largest value reaches (the colour bar's title says so)."""
    pe = np.asarray(pe)
    top = 1.0 if layout != "learned" else float(np.abs(pe).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=pe, zmin=-top, zmax=top, zmid=0, colorscale=DIVERGING_COLORSCALE,
        colorbar=dict(title=dict(text="value" if layout != "learned" else "value<br>(±max)")),
        hovertemplate="position %{y}<br>dimension %{x}<br>PE %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text=LAYOUT_AXIS[layout], showgrid=False)
    fig.update_yaxes(title_text="position", autorange="reversed", showgrid=False)
    return styled(fig, title, 460)


def dimension_label(dim: int, wavelength: float, sine: bool) -> str:
    return f"dim {dim} ({'sin' if sine else 'cos'}, λ ≈ {wavelength:,.1f})"


def pe_curves(pe: np.ndarray, dims: list[int], wavelengths: list[float], sines: list[bool]) -> go.Figure:
    """One line per chosen dimension over position; ``wavelengths`` are those dimensions' wavelengths and ``sines``
    whether each is a sine (which dimensions are depends on the model's layout:
    model.network.positional.pair_dimensions)."""
    pe = np.asarray(pe)
    fig = go.Figure()
    positions = np.arange(pe.shape[0])
    for i, (dim, lam, sine) in enumerate(zip(dims, wavelengths, sines, strict=True)):
        fig.add_trace(go.Scatter(x=positions, y=pe[:, dim], mode="lines+markers", marker=dict(size=4),
                                 name=dimension_label(dim, lam, sine),
                                 line=dict(color=HEAD_COLORS[i % len(HEAD_COLORS)]),
                                 hovertemplate=f"dim {dim}<br>position %{{x}}<br>PE %{{y:.3f}}<extra></extra>"))
    fig.update_xaxes(title_text="position")
    fig.update_yaxes(title_text="PE value", range=[-1.1, 1.1])
    fig.update_layout(legend=dict(title=dict(text="dimension (wavelength in positions)")))
    return styled(fig, "Chosen dimensions as waves over position", 420)


def pe_similarity(sim: np.ndarray, title: str = "Similarity of positions: PE · PEᵀ") -> go.Figure:
    """PE·PE^T [P, P]: for sinusoids the value depends only on the offset between the two positions."""
    sim = np.asarray(sim)
    fig = go.Figure(go.Heatmap(
        z=sim, colorscale="Viridis", colorbar=dict(title=dict(text="PE·PE")),
        hovertemplate="position %{y} · position %{x}<br>dot product %{z:.2f}<extra></extra>"))
    fig.update_xaxes(title_text="position", showgrid=False)
    fig.update_yaxes(title_text="position", autorange="reversed", showgrid=False)
    return styled(fig, title, 520)


# Short: three panels share a slide's width (longer titles ran into each other; the hover names each in full).
PART_TITLES = {"token": "Embedding × √d", "positional": "Positional enc.", "sum": "Sum: layer 1 reads"}


def embedding_parts(parts: dict[str, np.ndarray], pieces: list[str]) -> go.Figure:
    """Three heatmaps [L, D] side by side, rows labelled by the source pieces. Each panel has its own colour scale,
    named under its title: the positional encoding (within ±1) on the embeddings' scale (±10 and more after
    × √d_model) was near-white."""
    names = [n for n in PART_TITLES if n in parts]
    bounds = {n: float(np.abs(np.asarray(parts[n])).max()) or 1.0 for n in names}
    titles = [f"{PART_TITLES[n]}<br><sup>scale ±{bounds[n]:.2g}</sup>" for n in names]
    fig = make_subplots(rows=1, cols=len(names), shared_yaxes=True, horizontal_spacing=0.04, subplot_titles=titles)
    labels = indexed_labels(pieces)
    for c, name in enumerate(names, 1):
        z = np.asarray(parts[name])
        bound = bounds[name]
        fig.add_trace(go.Heatmap(
            z=z, zmin=-bound, zmax=bound, zmid=0, colorscale=DIVERGING_COLORSCALE, showscale=False,
            customdata=np.repeat(np.array(labels, dtype=object)[:, None], z.shape[1], axis=1),
            name=PART_TITLES[name],
            hovertemplate=f"{PART_TITLES[name]}<br>%{{customdata}}<br>dimension %{{x}}<br>value %{{z:.3f}}"
                          "<extra></extra>"), row=1, col=c)
        fig.update_xaxes(title_text="dimension", showgrid=False, row=1, col=c)
    token_axes(fig, None, pieces, y_title="source piece", row=1, col=1)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    return styled(fig, None, int(min(900, 160 + 28 * len(pieces))))


def relative_bias(offsets: np.ndarray, bias: np.ndarray, title: str) -> go.Figure:
    """A T5 stack's learned bias [H, offsets] per head and offset key - query, on a scale symmetric about 0."""
    bias = np.asarray(bias)
    top = float(np.abs(bias).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=bias, x=np.asarray(offsets), y=[f"head {h + 1}" for h in range(bias.shape[0])], zmin=-top, zmax=top,
        zmid=0, colorscale=DIVERGING_COLORSCALE, colorbar=dict(title=dict(text="bias<br>(±max)")),
        hovertemplate="%{y}<br>key − query = %{x}<br>bias added %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="offset key − query (negative: a key before the query)", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    return styled(fig, title, int(min(520, 140 + 34 * bias.shape[0])))
