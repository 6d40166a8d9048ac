"""Page: Mechanics of attention — one head of the current sentence opened up stage by stage with the
model's real numbers, the classic score functions side by side, soft vs hard attention, and why the
dot products are divided by sqrt(d_k)."""
from __future__ import annotations

import logging
import math

import numpy as np
import streamlit as st

from app.charts import mechanics as charts
from app.charts.axes import columns_for, plotly_text
from app.charts.masks import mask_grid
from app.page import (
    figure_columns,
    keep_valid,
    plot,
    require_checkpoint,
    require_translation,
    sentence_caption,
    to_numpy,
)
from app.serving.weak_fragment import weak_fragment
from explain.mechanics import (
    AttentionInternals,
    attention_internals,
    sample_softmax,
    score_function_weights,
    soft_vs_hard,
    softmax_saturation,
)
from model.checkpoints.files import Checkpoint
from model.network.trace import KIND_LABELS, KINDS, Kind, PerKind
from model.network.transformer import shifted_right
from model.serving.inference import Translation

log = logging.getLogger("attention_explorer")
D_KS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
QKV_SOURCES = (
    "\n"
    "| Attention | Queries Q from | Keys K and values V from | Mask |\n"
    "|---|---|---|---|\n"
    "| Encoder self-attention | the previous encoder layer (layer 1: embeddings + PE) | the same sequence "
    "| source padding |\n"
    "| Decoder self-attention | the previous decoder layer (layer 1: embeddings + PE) "
    "| the same sequence, positions ≤ t | target padding AND causal |\n"
    "| Cross-attention | the decoder's masked self-attention sub-layer "
    "| the **final encoder output** (every decoder layer) | source padding |\n"
)
SCORE_FUNCTIONS = [  # (name, formula, note)
    ("additive", r"\mathrm{score}(s_t,h_i)=v_a^\top\tanh(W_a[s_t;h_i])", "Bahdanau 2015"),
    ("general", r"\mathrm{score}(s_t,h_i)=s_t^\top W_a h_i", "Luong 2015"),
    ("dot", r"\mathrm{score}(s_t,h_i)=s_t^\top h_i", "Luong 2015"),
    ("scaled dot", r"\mathrm{score}(s_t,h_i)=\frac{s_t^\top h_i}{\sqrt{n}},\ n=d_k", "Vaswani 2017 — this model"),
    ("location-based", r"\alpha_{t}=\mathrm{softmax}(W_a s_t)", "Luong 2015 — ignores the keys"),
]


def selection_ui(translation: Translation, n_layers: PerKind[int], n_heads: int) -> tuple[Kind, int, int, int]:
    """Kind, layer, head and query position the page opens up."""
    c1, c2, c3, c4 = st.columns([3, 1.2, 1.2, 2])
    kind = c1.selectbox("Attention", list(KINDS), index=2, key="mech_kind", format_func=KIND_LABELS.__getitem__)
    layers = list(range(n_layers[kind]))
    keep_valid("mech_layer", layers)
    layer = c2.selectbox("Layer", layers, key="mech_layer", format_func=lambda i: f"layer {i + 1}")
    heads = list(range(n_heads))
    keep_valid("mech_head", heads)
    head = c3.selectbox("Head", heads, key="mech_head", format_func=lambda i: f"head {i + 1}")
    pieces = query_pieces(translation, kind)
    queries = list(range(len(pieces)))
    keep_valid("mech_query", queries)
    query = c4.selectbox("Query position", queries, index=min(len(pieces) - 1, len(pieces) // 2), key="mech_query",
                         format_func=lambda i: f"{i} · {pieces[i]}")
    return kind, layer, head, query


def query_pieces(translation: Translation, kind: str) -> list[str]:
    """A decoder row is named by the piece written at that step (the explorer's "Input rows": by its input)."""
    if kind == "enc_self":
        return list(translation.source.pieces)
    return list(translation.target_input_pieces if st.session_state.get("rows_input") else translation.target_pieces)


def key_pieces(translation: Translation, kind: str) -> list[str]:
    return list(translation.target_input_pieces if kind == "dec_self" else translation.source.pieces)


def stages_panel(it: AttentionInternals, trace_weights: np.ndarray, qs: list[str], ks: list[str], head: int,
                 query: int) -> None:
    """Q, K, V -> QK^T -> / sqrt(d_k) -> mask -> softmax -> weights @ V, one figure each."""
    q, k, v = (to_numpy(getattr(it, name)[head]) for name in ("q", "k", "v"))
    mask = to_numpy(it.mask)
    st.markdown("**Step 1 — project.** Each token vector is multiplied by this head's W<sup>Q</sup>, W<sup>K</sup>, "
                f"W<sup>V</sup> (d_model {it.query_input.shape[-1]} → d_k {it.d_k}).", unsafe_allow_html=True)
    c1, c2, c3 = st.columns(3)
    with c1:
        plot(charts.vector_matrix(q, qs, "Q = X W<sup>Q</sup> (queries)", "query", query), "mech_q")
    with c2:
        plot(charts.vector_matrix(k, ks, "K = X W<sup>K</sup> (keys)", "key"), "mech_k")
    with c3:
        plot(charts.vector_matrix(v, ks, "V = X W<sup>V</sup> (values)", "key"), "mech_v")
    scale = (f"then divided by √d_k = √{it.d_k} = {math.sqrt(it.d_k):.3f}" if it.scaled else
             "and **not** divided by √d_k (this model, like T5, folds the scale into how its weights were "
             "initialised)")
    bias = (", plus a learned bias per head for how far the key is from the query (the model's only sense of "
            "order; see Positional encoding)" if it.position_bias else "")
    st.markdown(f"**Step 2 — compare, scale, mask.** Every query is dotted with every key, {scale}{bias}; masked "
                "pairs are set to −∞.")
    (c1, c2, c3), columns = figure_columns(3, ks, qs)  # fewer side by side where a long sentence needs the width
    with c1:
        plot(charts.score_matrix(to_numpy(it.qk[head]), qs, ks, "QKᵀ (raw dot products)", query, columns=columns),
             "mech_qk")
    with c2:
        plot(charts.score_matrix(to_numpy(it.unmasked[head]), qs, ks,
                                 f"{it.scores_label}  (scaled)" if it.scaled else it.scores_label, query,
                                 columns=columns), "mech_scaled")
    with c3:
        fig = mask_grid(mask, qs, ks, "Mask (✓ = may attend)", columns=columns)
        plot(charts.highlight_row(fig, query, len(ks)), "mech_mask")
    st.markdown("**Step 3 — softmax and weighted sum.** Each row becomes a distribution over the keys: "
                "softmax exponentiates, so the largest scores take most of the weight and small ones shrink towards "
                "0. The head's output for a query is the weighted sum of the value vectors.")
    (c1, c2), columns = figure_columns(2, ks, qs)
    with c1:
        plot(charts.weights_matrix(trace_weights, mask, qs, ks, "softmax(…) = attention weights", query,
                                   columns=columns), "mech_weights")
    with c2:
        plot(charts.vector_matrix(to_numpy(it.context[head]), qs, "Context = weights · V", "query", query),
             "mech_context")
    stages = [("QKᵀ", to_numpy(it.qk[head, query])),
              (f"÷ √{it.d_k}" if it.scaled else "+ bias" if it.position_bias else "(not ÷ √d_k)",
               to_numpy(it.unmasked[head, query])),
              ("masked", to_numpy(it.unmasked[head, query])),
              ("softmax", trace_weights[query])]
    title = f"Query {query} · {plotly_text([qs[query]])[0]} through the stages"
    plot(charts.stage_bars(stages, ks, mask[query], title), "mech_stages")


def multihead_panel(it: AttentionInternals, qs: list[str], head: int, query: int, n_heads: int) -> None:
    st.subheader("All heads together: Concat and $W^O$")
    st.latex(r"\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W^O,\quad "
             r"\mathrm{head}_i=\mathrm{Attention}(QW_i^Q,KW_i^K,VW_i^V)")
    st.markdown(f"The {n_heads} heads run in parallel on {it.d_k}-dimensional slices; their outputs are laid side by "
                f"side ({n_heads} × {it.d_k} = {n_heads * it.d_k}) and mixed by one matrix $W^O$. The dotted box "
                "is the head shown above. Why several heads? One head averages everything it attends to into one "
                "vector; with h heads, each with its own W<sup>Q</sup>, W<sup>K</sup>, W<sup>V</sup>, the model can "
                "attend to different positions in different representation subspaces at once (the paper found one "
                "head 0.9 BLEU worse than 8, Table 3). The cost stays that of one full-width head: d_k = d_model / h.",
                unsafe_allow_html=True)
    c1, c2 = st.columns(2)
    with c1:
        plot(charts.concat_heads(to_numpy(it.context.float()), qs, head, query), "mech_concat")
    with c2:
        plot(charts.output_matrix(to_numpy(it.output.float()), qs, it.output.shape[-1], query), "mech_output")


def score_functions_panel(it: AttentionInternals, ks: list[str], head: int, query: int) -> None:
    st.subheader("Other ways to score a query against keys")
    allowed = to_numpy(it.mask[query])
    keys = [p for p, a in zip(ks, allowed, strict=True) if a]
    if len(keys) < 2:
        st.info("This query may attend to only one key, so every score function gives it weight 1. "
                "Pick a later query position to compare them.")
        return
    weights = {name: to_numpy(w) for name, w in score_function_weights(it, head, query).items()}
    st.markdown("Attention began as an add-on to recurrent encoder-decoders (seq2seq, Sutskever 2014): the RNN "
                "decoder's state s<sub>t</sub> (the query) was scored against every encoder state h<sub>i</sub> (the "
                "keys, which were also the values) so the decoder could look back at the whole source instead of one "
                "fixed vector. The Transformer keeps exactly that as its cross-attention and drops the RNN. "
                "In the formulas below s<sub>t</sub> is the query, h<sub>i</sub> a key, and n their dimension.",
                unsafe_allow_html=True)
    st.markdown(f"All on the same vectors: this head's query for position **{query}** and its "
                f"{len(keys)} allowed keys (d = {it.d_k}). Only *scaled dot* is what this model trained; the "
                "matrices W<sub>a</sub>, v<sub>a</sub> of the others are random here, to show their form.",
                unsafe_allow_html=True)
    per_row = columns_for(3, keys, colorbar=False)  # fewer side by side where a long sentence needs the width
    cols = st.columns(per_row) if per_row > 1 else [st.container()]
    for i, (name, formula, note) in enumerate(SCORE_FUNCTIONS):
        with cols[i % per_row]:
            st.markdown(f"**{name}** · {note}")
            st.latex(formula)
            plot(charts.weight_bars(weights[name], keys, f"{name}: softmax weights",
                                    charts.HIGHLIGHT if name == "scaled dot" else "#1f77b4", columns=per_row),
                 f"mech_score_{i}")
    with cols[len(SCORE_FUNCTIONS) % per_row]:
        st.markdown("**Self-attention** (Cheng 2016) is not another formula: it is any of these with the queries, "
                    "keys and values taken from the *same* sequence — the encoder and decoder self-attention here. "
                    "Before the Transformer it was used inside RNN models for reading comprehension, summarisation, "
                    "textual entailment and sentence representations.")
    st.markdown("**Global / soft vs local / hard.** Soft (global) attention spreads weight over all keys and is "
                "differentiable; hard attention picks one key (argmax), which needs sampling or reinforcement "
                "learning to train (Xu 2015: hard attention looks at one image patch when writing each word of a "
                "caption). "
                "Local attention (Luong) is in between: soft, but only over a window of keys around a predicted "
                "position, so it is cheaper than global and still differentiable. The Transformer uses soft, global "
                "attention everywhere.")
    parts = {k: to_numpy(t) for k, t in soft_vs_hard(it.weights[head, query], it.v[head]).items()}
    plot(charts.soft_hard(parts["soft"], parts["hard"], parts["soft_output"], parts["hard_output"], ks),
         "mech_soft_hard")


@st.cache_data(show_spinner=False)
def saturation_stats() -> dict[str, np.ndarray]:
    """Same numbers for every visitor: compute once per server."""
    return {k: to_numpy(v) for k, v in softmax_saturation(D_KS).items()}


@st.fragment
def sqrt_dk_panel(model_dk: int) -> None:
    st.subheader("Why divide by √d_k?")
    st.markdown("If the entries of q and k have mean 0 and variance 1, their dot product q·k = Σ qᵢkᵢ has "
                "variance **d_k**. With wide heads the scores spread out, the softmax puts almost all weight on "
                "one key, and its gradient diag(p) − ppᵀ is almost 0: learning stalls. Dividing by √d_k brings "
                f"the variance back to 1 whatever the width. (This model: d_k = {model_dk}; the paper: 64.)")
    plot(charts.saturation(D_KS, saturation_stats()), "mech_saturation")
    d_k = st.select_slider("d_k for one sample", D_KS, value=512, key="mech_dk")
    sample = sample_softmax(d_k)
    plot(charts.sample_softmax(to_numpy(sample["scaled"]), to_numpy(sample["unscaled"]), d_k), "mech_sample")


@weak_fragment
def head_panel(ckpt: Checkpoint, translation: Translation) -> None:
    trace = translation.trace
    n_heads = trace.weights("enc_self").size(2)
    kind, layer, head, query = selection_ui(translation, trace.n_layers, n_heads)
    qs, ks = query_pieces(translation, kind), key_pieces(translation, kind)
    decoder_input = shifted_right(translation.target_ids, ckpt.config.bos_id)
    try:
        it = attention_internals(ckpt.model, list(translation.source.ids), decoder_input, kind, layer)
    except Exception:
        log.exception("attention_internals failed")
        st.error("The model could not open up this attention layer.")
        return
    trace_weights = to_numpy(trace.weights(kind)[layer, 0, head])
    st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    stages_panel(it, trace_weights, qs, ks, head, query)
    multihead_panel(it, qs, head, query, n_heads)
    score_functions_panel(it, ks, head, query)


def render() -> None:
    st.title("Mechanics of attention")
    st.markdown("A query asks, keys answer how relevant they are, values carry what is passed on — like a search "
                "engine matching your query against item descriptions (keys) and returning the items (values). "
                "In the Transformer all three are linear projections of token vectors; *which* vectors depends on "
                "where the attention sits:")
    st.markdown(QKV_SOURCES)
    st.caption("A common mix-up: in cross-attention only the queries come from the decoder; keys *and* values come "
               "from the encoder, so each output position gathers source information.")
    ckpt = require_checkpoint()
    if ckpt is None:
        return
    translation = require_translation()
    if translation is not None:
        sentence_caption(translation)
        head_panel(ckpt, translation)
    sqrt_dk_panel(ckpt.config.d_k)


render()
