"""Page: Masks — the current sentence padded in one batch with a second sentence, the padding and causal
masks each attention kind uses, and the scores before/after masking with the softmax weights that
come out exactly 0 on masked cells."""
from __future__ import annotations

import logging
from typing import Any

import numpy as np
import streamlit as st

from app.charts import masks as charts
from app.models.examples import mask_pair
from app.page import concept_page, figure_columns, keep_valid, plot, to_numpy
from app.serving.scheduler import Request, translate_request
from explain.masks import mask_parts, padded_batch_trace, unmasked_scores
from model.checkpoints.files import Checkpoint
from model.network.trace import KIND_LABELS, KINDS, AttentionTrace
from model.network.transformer import Transformer
from model.serving.inference import InputError, Translation

log = logging.getLogger("attention_explorer")
KIND_MASK = {"enc_self": "source padding", "dec_self": "target padding AND causal", "cross": "source padding"}
INTRO = (  # what the page shows, under its title
    "Two masks decide which keys each query may look at. The **padding mask** hides filler tokens in every "
    "attention; the **sequence mask** stops the decoder from peeking at future words. One convention in this "
    "project: a bool grid, **True = may attend**.")


def _set_other(text: str) -> None:
    st.session_state["mask_other"] = text


def other_ui(model_name: str, meta: dict, text: str) -> str:
    """The second sentence of the batch, in the model's source language (app.models.examples), with a shorter and a
    longer
    example to pick."""
    short, long = mask_pair(meta, text)
    if "mask_other" not in st.session_state or st.session_state.get("_mask_other_for") != model_name:
        st.session_state["mask_other"] = short
        st.session_state["_mask_other_for"] = model_name
    left, b1, b2 = st.columns([4, 1, 1], vertical_alignment="bottom")
    text = left.text_input("Second sentence in the batch", key="mask_other", max_chars=500,
                           help="Training always pads sentences of different lengths into one batch. "
                                "Try a shorter and a longer one than the current sentence.")
    b1.button("Shorter example", key="mask_short", on_click=_set_other, args=(short,), width="stretch")
    b2.button("Longer example", key="mask_long", on_click=_set_other, args=(long,), width="stretch")
    return text


def batch_panel(pieces: dict[str, list[str]], padded: list[list[bool]], tokens: dict[str, str], max_len: int) -> None:
    """The batch as a table, padding (``padded``, from the masks) in grey; ``tokens`` names the pad and start pieces
    ("pad", "pad_id", "start")."""
    st.subheader("1 · The padded batch")
    table = charts.batch_table(pieces)
    st.dataframe(charts.highlight_pads(table, padded, bold=(tokens["start"], "</s>")), width="stretch")
    start = tokens["start"]
    same = (f" This model starts its decoder with {start}, the pad piece itself, as Marian's models do: that first "
            "position is never masked as padding.") if start == tokens["pad"] else ""
    st.caption(f"Shorter rows are filled with **{tokens['pad']}** (id {tokens['pad_id']}) up to the longest row. The "
               f"decoder input is {start} followed by the output shifted right (teacher forcing), padded the same "
               f"way.{same} The other direction: a sentence longer than the model's {max_len} positions is truncated "
               "to fit (the Translate page says by how much).")


def masks_panel(parts: dict, trace: AttentionTrace, row: int, src: list[str], tgt: list[str]) -> None:
    st.subheader("2 · The masks (True = may attend ✓, grey = masked)")
    enc_mask = to_numpy(trace.mask("enc_self")[row, 0])
    dec_mask = to_numpy(trace.mask("dec_self")[row, 0])
    cross_mask = to_numpy(trace.mask("cross")[row, 0])
    (c1, c2), columns = figure_columns(2, src, tgt, colorbar=False)  # fewer side by side for a long sentence
    with c1:
        plot(charts.mask_grid(enc_mask, src, src, "Encoder self-attention = source padding mask", columns=columns),
             "mask_enc")
    with c2:
        plot(charts.mask_grid(cross_mask, tgt, src, "Cross-attention = source padding mask",
                              "key (source)", "query (decoder input)", columns=columns), "mask_cross")
    st.markdown("**Decoder self-attention** combines two masks with AND: a position may not look at padding, "
                "and (the *sequence mask*) may not look at later positions — it must not see the words it is about "
                "to predict.")
    (c1, c2, c3), columns = figure_columns(3, tgt, tgt, colorbar=False)
    with c1:
        plot(charts.mask_grid(to_numpy(parts["target padding"][row]), tgt, tgt,
                              "Target padding<br><sup>no query looks at a padded key</sup>", columns=columns),
             "mask_tpad")
    with c2:
        plot(charts.mask_grid(to_numpy(parts["causal"][row]), tgt, tgt,
                              "Causal (sequence) mask<br><sup>lower-triangular: no later key</sup>", columns=columns),
             "mask_causal")
    with c3:
        plot(charts.mask_grid(dec_mask, tgt, tgt, "Padding AND causal<br><sup>what decoder self-attention used</sup>",
                              columns=columns), "mask_dec")
    st.caption("Rows of padded *queries* are still computed, but nothing reads them: they are masked as keys "
               "everywhere and the loss ignores padded targets.")


@st.fragment
def scores_panel(model: Transformer, src: Any, tgt_in: Any, trace: AttentionTrace, row: int,  # src, tgt_in: tensors
                 labels: dict[str, tuple[list[str], list[str]]]) -> None:
    st.subheader("3 · Scores before and after masking and softmax")
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("Attention", list(KINDS), index=1, key="mask_kind", format_func=KIND_LABELS.__getitem__)
    layers = list(range(trace.n_layers[kind]))
    keep_valid("mask_layer", layers)
    layer = c2.selectbox("Layer", layers, key="mask_layer", format_func=lambda i: f"layer {i + 1}")
    heads = list(range(trace.weights(kind).size(2)))
    keep_valid("mask_head", heads)
    head = c3.selectbox("Head", heads, key="mask_head", format_func=lambda i: f"head {i + 1}")
    queries, keys = labels[kind]
    scores = to_numpy(trace.scores(kind)[layer, row, head])
    weights = to_numpy(trace.weights(kind)[layer, row, head])
    mask = to_numpy(trace.mask(kind)[row, 0])
    raw = to_numpy(unmasked_scores(model, src, tgt_in, kind, layer)[row, head])  # [Q, K]
    where = f"{KIND_LABELS[kind]}, layer {layer + 1}, head {head + 1}"
    # two per row (cells wide enough for their numbers on a projector), one where a long sentence needs the width
    (before, after), columns = figure_columns(2, keys, queries)
    with before:
        plot(charts.unmasked_scores(raw, mask, queries, keys,
                                    "1 · Scores QKᵀ/√d_k<br><sup>before masking: ✗ = will be masked</sup>",
                                    columns=columns), "mask_raw_scores")
    with after:
        plot(charts.masked_scores(scores, mask, queries, keys,
                                  f"2 · After masking<br><sup>mask: {KIND_MASK[kind]}</sup>", columns=columns),
             "mask_scores")
    right, note = st.columns(2, vertical_alignment="center") if columns == 2 else (st.container(), st.container())
    with right:
        plot(charts.masked_weights(weights, mask, queries, keys,
                                   "3 · Softmax<br><sup>the weights exactly as the model used them</sup>",
                                   columns=columns), "mask_weights")
    leak = float(np.max(weights[~mask], initial=0.0))
    sums = weights.sum(-1)
    note.success(f"{where}: {int((~mask).sum())} masked cells · max weight on masked cells: **{leak}** · "
               f"every row sums to 1 "
               f"(min {sums.min():.6f}, max {sums.max():.6f}).", icon=":material/check_circle:")
    note.caption("The model fills masked scores with float32's most negative number (≈ −3.4·10³⁸, shown as −∞) "
               "before the softmax, so e^score underflows to 0; it then sets those weights to exactly 0, which "
               "also keeps a fully masked row at 0 instead of NaN.")


def render(ckpt: Checkpoint, translation: Translation) -> None:
    model_name = st.session_state["model_name"]
    other = other_ui(model_name, ckpt.meta, translation.source.text)
    try:
        other_translation = translate_request(Request(model_name=model_name, text=other))
        src, tgt_in, trace = padded_batch_trace(
            ckpt.model, ckpt.tokenizer, [translation.source.text, other_translation.source.text],
            [list(translation.target_ids), list(other_translation.target_ids)])
    except InputError as exc:
        st.info(f"Second sentence: {exc}", icon=":material/edit:")
        return
    except Exception:
        log.exception("padded batch trace failed")
        st.error("The model could not run this batch. Try a different second sentence.")
        return
    tok, cfg = ckpt.tokenizer, ckpt.config
    src_pieces = [tok.pieces(r.tolist()) for r in src.cpu()]
    tgt_pieces = [tok.pieces(r.tolist()) for r in tgt_in.cpu()]
    parts = mask_parts(src, tgt_in, cfg.pad_id)
    src_pad = ~to_numpy(parts["source padding"][:, 0])  # [B, S]: True = padding
    tgt_pad = ~to_numpy(parts["target padding"][:, 0])  # [B, T]
    batch_panel({"source · sentence 1": src_pieces[0], "source · sentence 2": src_pieces[1],
                 "decoder input · sentence 1": tgt_pieces[0], "decoder input · sentence 2": tgt_pieces[1]},
                [*src_pad.tolist(), *tgt_pad.tolist()],
                {"pad": tok.id_to_piece(cfg.pad_id), "pad_id": str(cfg.pad_id), "start": tok.id_to_piece(cfg.bos_id)},
                cfg.max_len)
    padded = int(src_pad[1].sum() + tgt_pad[1].sum() > src_pad[0].sum() + tgt_pad[0].sum())  # open on the padded one
    row = st.radio("Show the masks of", [0, 1], index=padded, key="mask_row", horizontal=True,
                   format_func=lambda r: f"sentence {r + 1} ({'current' if r == 0 else 'second'})")
    masks_panel(parts, trace, row, src_pieces[row], tgt_pieces[row])
    labels = {"enc_self": (src_pieces[row], src_pieces[row]), "dec_self": (tgt_pieces[row], tgt_pieces[row]),
              "cross": (tgt_pieces[row], src_pieces[row])}
    scores_panel(ckpt.model, src, tgt_in, trace, row, labels)


concept_page("Masks: padding and the sequence (causal) mask", INTRO, render)
