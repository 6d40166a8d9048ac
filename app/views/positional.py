"""Page: Positional encoding — the sinusoids for the model's real d_model, why relative offsets are
learnable, and what the first layer of the current sentence actually reads. A model with learned positions (BART,
mBART) shows its own tables instead, and says so."""
from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app.charts import positional as charts
from app.page import plot, require_checkpoint, require_translation, sentence_caption, to_numpy
from explain.positional import (
    embedding_parts,
    learned_positions,
    offset_error,
    pe_similarity,
    relative_bias_by_offset,
)
from model.checkpoints.files import Checkpoint
from model.network.positional import frequency_index, pair_dimensions, sinusoidal_encoding, wavelengths
from model.serving.inference import Translation

PE_LATEX = {  # the formula in the model's own dimension order
    "interleaved": r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\qquad "
                   r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)",
    "halves": r"PE_{(pos,\,i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\qquad "
              r"PE_{(pos,\,d_{model}/2\,+\,i)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)",
    "fairseq": r"PE_{(pos,\,i)} = \sin\!\left(\frac{pos}{10000^{i/(d_{model}/2\,-\,1)}}\right),\qquad "
               r"PE_{(pos,\,d_{model}/2\,+\,i)} = \cos\!\left(\frac{pos}{10000^{i/(d_{model}/2\,-\,1)}}\right)",
}
LAYOUT_NOTES = {  # what a converted model's table does differently from the paper's formula
    "halves": "The paper's formula interleaves sines and cosines (dimensions 2i and 2i + 1); this model (Marian) "
              "stores the same values as all sines, then all cosines: the same code, its dimensions reordered.",
    "fairseq": "This model (M2M100 / NLLB, fairseq's table) keeps all sines, then all cosines, and spaces the "
               "frequencies by i/(d_model/2 − 1) instead of 2i/d_model, so its slowest pair is exactly 1/10000. Its "
               "position p reads row p + {offset} of the table (rows below are fairseq's padding legacy).",
}


def positions_ui(max_len: int) -> int:
    return st.slider("Number of positions", 2, max_len, min(60, max_len), key="pe_positions",
                     help=f"This model has room for {max_len} positions.")


def dimensions_ui(d_model: int, layout: str) -> list[int]:
    first_sin, first_cos = (int(t[0]) for t in pair_dimensions(d_model, layout))
    defaults = sorted({first_sin, first_cos, 2 * (d_model // 16), 2 * (d_model // 8), d_model // 2, d_model - 2})
    where = ("Even dimensions are sines, odd ones cosines of the same frequency." if layout == "interleaved" else
             "This model keeps all sines in the first half and the matching cosines in the second.")
    return st.multiselect("Dimensions to draw", list(range(d_model)), default=defaults, key="pe_dims", help=where)


@st.fragment
def matrix_panel(d_model: int, max_len: int, layout: str) -> None:
    n = positions_ui(max_len)
    pe = to_numpy(sinusoidal_encoding(n, d_model, layout))
    plot(charts.pe_heatmap(pe, f"PE for the first {n} positions × d_model = {d_model} dimensions", layout),
         "pe_matrix")
    lam = to_numpy(wavelengths(d_model, layout))
    sin_dims, cos_dims = (to_numpy(t).astype(int) for t in pair_dimensions(d_model, layout))
    st.markdown(f"Each (sin, cos) pair is a wave. Wavelengths grow geometrically, from **2π ≈ {lam[0]:.2f}** "
                f"positions (dimensions {sin_dims[0]}, {cos_dims[0]}) to **{lam[-1]:,.0f}** positions (the last "
                "pair; the formula's limit "
                f"is 10000·2π ≈ {10000 * 2 * math.pi:,.0f}). "
                f"Left columns{' of each half' if layout != 'interleaved' else ''} "
                "change every position; right columns barely change over a whole sentence, so together they give "
                "each position a unique code.")
    dims = dimensions_ui(d_model, layout)
    if dims:
        plot(charts.pe_curves(pe, dims, [float(lam[frequency_index(d, d_model, layout)]) for d in dims],
                              [d in set(sin_dims.tolist()) for d in dims]), "pe_curves")
    else:
        st.info("Pick at least one dimension to draw its wave.")


@st.fragment
def relative_panel(d_model: int, max_len: int, layout: str) -> None:
    st.subheader("Relative offsets are a linear map")
    st.markdown("For any fixed offset *k*, each (sin, cos) pair at position *p + k* is the pair at *p* "
                "rotated by the angle ω·k — the same rotation for every *p*:")
    st.latex(r"\begin{pmatrix}\sin\omega_i(p+k)\\ \cos\omega_i(p+k)\end{pmatrix} = "
             r"\begin{pmatrix}\cos\omega_i k & \sin\omega_i k\\ -\sin\omega_i k & \cos\omega_i k\end{pmatrix}"
             r"\begin{pmatrix}\sin\omega_i p\\ \cos\omega_i p\end{pmatrix},\qquad \omega_i = "
             + (r"10000^{-i/(d_{model}/2\,-\,1)}" if layout == "fairseq" else r"10000^{-2i/d_{model}}"))
    k = st.slider("Offset k", 1, min(50, max_len - 1), 3, key="pe_offset")
    err = offset_error(max_len, d_model, k, layout)
    st.markdown(f"Checked on this model's encoding: with one {d_model} × {d_model} block-diagonal matrix "
                f"M<sub>{k}</sub>, max |PE[p+{k}] − PE[p]·M<sub>{k}</sub>| over all {max_len - k} positions = "
                f"**{err:.1e}** (float rounding). A layer's linear projections can therefore learn "
                "\"attend *k* places back\" once, for every position.", unsafe_allow_html=True)
    n = min(max_len, 64)
    plot(charts.pe_similarity(to_numpy(pe_similarity(n, d_model, layout))), "pe_similarity")
    st.caption("PE·PEᵀ depends only on the offset between two positions (every diagonal is constant) and is "
               "largest at offset 0: nearby positions look alike, distant ones less so.")


@st.fragment
def learned_panel(ckpt: Checkpoint) -> None:
    """A learned-position model's own table (the encoder's or the decoder's) and the similarity of its rows."""
    config = ckpt.config
    side = st.segmented_control("Table", ["encoder", "decoder"], default="encoder", key="pe_side",
                                help="This model learns one table per stack; each reads its own.") or "encoder"
    n = positions_ui(config.position_limit)
    table = to_numpy(learned_positions(ckpt.model, n, side))
    first = f" (rows {config.position_offset}..{config.position_offset + n - 1} of the stored table)" \
        if config.position_offset else ""
    plot(charts.pe_heatmap(table, f"The {side}'s learned positions: first {n} × d_model = {config.d_model}{first}",
                           "learned"), "pe_matrix")
    plot(charts.pe_similarity(table @ table.T, "Similarity of learned positions: P · Pᵀ"), "pe_similarity")
    st.caption("Nothing forces a learned table to depend only on the offset between positions, as the sinusoids "
               "do: whatever bands appear along the diagonals here, training put there. The table has no row past "
               f"position {config.position_limit}, so this model cannot read a longer sequence at all.")


@st.fragment
def position_bias_panel(ckpt: Checkpoint) -> None:
    """T5: no position code; the bias each head adds to a score, by the offset between key and query."""
    config = ckpt.config
    side = st.segmented_control("Stack", ["encoder", "decoder"], default="encoder", key="pe_side",
                                help="Each stack learns its own table; the encoder tells before from after, the "
                                     "decoder only looks back.") or "encoder"
    reach = st.slider("Offsets shown (±)", 4, 2 * config.relative_max_distance, min(40, config.relative_max_distance),
                      key="pe_reach")
    offsets, bias = (to_numpy(t) for t in relative_bias_by_offset(ckpt.model, side, reach))
    plot(charts.relative_bias(offsets, bias, f"What each {side} head adds to a score, by offset"), "pe_relative")
    exact = config.relative_buckets // (2 if side == "encoder" else 1) // 2
    st.caption(f"{config.relative_buckets} buckets per stack: offsets under {exact} each have their own, larger ones "
               f"share logarithmically wider buckets up to {config.relative_max_distance}, beyond which all are one. "
               "A head with large values near 0 looks at its neighbours; one whose values rise on the negative side "
               "prefers what came before. The same table serves every layer of the stack.")


def embedding_panel(ckpt: Checkpoint, translation: Translation) -> None:
    st.subheader("What layer 1 reads for the current sentence")
    sentence_caption(translation)
    d = ckpt.config.d_model
    parts = {k: to_numpy(v) for k, v in embedding_parts(ckpt.model, list(translation.source.ids)).items()}
    plot(charts.embedding_parts(parts, list(translation.source.pieces)), "embedding_parts")
    token_size = float(np.abs(parts["token"]).mean())
    c = ckpt.config
    scale = (f"The learned embedding is multiplied by √d_model = √{d} ≈ {math.sqrt(d):.1f} so that it is not "
             "drowned by the encoding" if c.scale_embedding else
             "This model does not multiply its embedding by √d_model (its config's scale_embedding is off)")
    sizes = f"mean |value| here is {token_size:.2f} for the tokens"
    if "positional" in parts:
        sizes += f" and {float(np.abs(parts['positional']).mean()):.2f} for the positions"
    else:
        sizes += "; nothing is added for the positions (they enter every self-attention's scores instead)"
    norm = (" The sum then goes through a LayerNorm of the encoder's own (layernorm_embedding) before layer 1: the "
            "right panel is what layer 1 reads." if c.layernorm_embedding else "")
    output = "its output layer (shared weights)" if c.tie_output else "not its output layer (that one is its own)"
    st.caption(f"{scale}: {sizes}. The same matrix is the decoder's embedding and {output}.{norm}")


def render() -> None:
    st.title("Positional encoding")
    ckpt = require_checkpoint()
    relative = ckpt is not None and ckpt.config.positional_layout == "relative"
    st.markdown("Attention on its own ignores order: shuffle the keys and values and every output stays the same. "
                + ("The paper therefore **adds** a position code to each token embedding; this model tells positions "
                   "apart another way:" if relative else
                   "So the model **adds** a position code to each token embedding before the first layer:"))
    if ckpt is None:
        return
    d_model, max_len = ckpt.config.d_model, ckpt.config.max_len
    layout = ckpt.config.positional_layout  # the paper interleaves sin/cos; Marian puts them in two halves
    if layout == "relative":
        st.info("**This model adds no position code.** Instead each self-attention adds a learned number per head to "
                "the score of every (query, key) pair, chosen by how far apart they are (T5's relative position "
                "buckets; Shaw et al., 2018, had the idea). Order enters the scores directly, not the embeddings. "
                "The paper's sinusoids are on the lecture's positional-encoding slide.", icon=":material/push_pin:")
        st.latex(r"\mathrm{score}(q_i, k_j) = q_i \cdot k_j + b_h\big(\mathrm{bucket}(j - i)\big)")
        position_bias_panel(ckpt)
        translation = require_translation()
        if translation is not None:
            embedding_panel(ckpt, translation)
        return
    if layout == "learned":
        st.info("**This model learns its positions.** It has no sinusoids: each stack looks its position's row up "
                "in a table trained with the rest of the model (BART's and mBART's way; the paper tried it too and "
                "found it nearly as good, Table 3 row E). Its tables are below; the paper's sinusoids are on the "
                "lecture's positional-encoding slide.", icon=":material/push_pin:")
        learned_panel(ckpt)
        translation = require_translation()
        if translation is not None:
            embedding_panel(ckpt, translation)
        return
    st.latex(PE_LATEX[layout])
    if layout in LAYOUT_NOTES:
        st.caption(LAYOUT_NOTES[layout].format(offset=ckpt.config.position_offset))
    matrix_panel(d_model, max_len, layout)
    relative_panel(d_model, max_len, layout)
    st.info("**Learned vs fixed.** The paper also tried learned positional embeddings and got nearly identical "
            "results (Table 3, row E). It kept the sinusoids because they need no parameters and may extrapolate "
            "to sentences longer than any seen in training. This model uses the fixed sinusoids.",
            icon=":material/push_pin:")
    translation = require_translation()
    if translation is not None:
        embedding_panel(ckpt, translation)


render()
