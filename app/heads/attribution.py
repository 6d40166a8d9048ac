"""Heads page, section 2: attribution through the layers. Attention rollout, norm-based attention and gradient x
input per output piece, rollout and flow through the encoder, raw weights beside norm-based ones."""
from __future__ import annotations

import logging

import numpy as np
import streamlit as st

from app.charts import heads as charts
from app.explorer import select_head
from app.heads.pickers import axis_pieces, head_name, map_picker
from app.models.registry import load_model
from app.page import keep_valid, plot, to_numpy
from app.serving.cancel import session_stop_signal
from app.serving.scheduler import Request, heavy_slot
from app.serving.weak_fragment import weak_fragment
from explain.attribution import MAX_FLOW_PIECES, NORM_BASED, ROLLOUT, SALIENCY, attribute
from explain.heads import n_layers_of
from model.network.trace import KIND_LABELS
from model.serving.inference import Translation

log = logging.getLogger("attention_explorer")
METHOD_TEXT = {
    ROLLOUT: "**Attention rollout** (Abnar & Zuidema, 2020). A token's own vector also goes around every attention "
             "layer through the residual connection, so each encoder layer counts as Â = ½ I + ½ A (A = the mean "
             "over heads, rows renormalised); multiplying them from layer 1 up, R = Â_L ⋯ Â_1, says how much each "
             "input token reaches each position of the encoder output. **Our rule for the decoder:** every decoder "
             "layer's cross-attention C_l (mean over heads) reads the *final* encoder output, whose positions R "
             "maps back to input tokens, so output piece t gets the mean over decoder layers of (C_l R)[t]. It "
             "leaves out what reaches t through the decoder's self-attention.",
    NORM_BASED: "**Norm-based attention** (Kobayashi et al., 2020). A head passes on α_ij · f(x_j), with "
                "f(x_j) = v_j Wᴼ_h the value vector through that head's slice of Wᴼ: a large weight on a short "
                "vector passes on little, a small weight on a long vector can pass on much. Here: ‖Σ_h α f_h(x_j)‖ "
                "of the cross-attention (all heads together), mean over decoder layers, as shares of each row. Its "
                "columns are encoder *output* positions, which the residual keeps close to their input token.",
    SALIENCY: "**Gradient × input** (Shrikumar et al., 2016). How much log P(output piece t) moves with each source "
              "vector x_j = E[x_j]·√d_model + PE_j (token and position, what the encoder reads): the gradient "
              "times the vector, summed over its dimensions. Signed (red pushes the piece up, blue down), from "
              "one backward pass through the model's own modules; the comparison uses its magnitude.",
}


@st.cache_data(show_spinner="Attributing every output piece three ways…", max_entries=64)
def attribution_arrays(model_name: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> dict:
    """explain.attribution.attribute as numpy: maps per method [T, S], rollout [S, S], norms per kind, agreement."""
    with heavy_slot():
        result = attribute(load_model(model_name).model, source_ids, output_ids, should_stop=session_stop_signal())
    norms = result.norms
    return {
        "maps": {name: to_numpy(m) for name, m in result.maps.items()},
        "rollout": to_numpy(result.source_rollout),
        "flow": None if result.source_flow is None else to_numpy(result.source_flow),
        "weights": {k: to_numpy(v) for k, v in norms.weights.items()},  # [L, H, Q, K]
        "per_head": {k: to_numpy(v) for k, v in norms.per_head.items()},  # [L, H, Q, K]
        "heads": {k: to_numpy(v) for k, v in norms.heads.items()},  # [L, Q, K]
        "value_norms": {k: to_numpy(v) for k, v in norms.value_norms.items()},  # [L, H, K]
        "top": to_numpy(result.agreement.top), "all_agree": to_numpy(result.agreement.all_agree),
        "pairwise": to_numpy(result.agreement.pairwise), "methods": list(result.agreement.methods),
    }


# --- 2. attribution through the layers --------------------------------------------------------------------

@weak_fragment
def attribution_section(translation: Translation, request: Request) -> None:
    model = load_model(request.model_name).model
    layers, n_heads = n_layers_of(model), model.config.n_heads
    source, output = tuple(translation.source.ids), tuple(translation.target_ids)
    try:
        data = attribution_arrays(request.model_name, source, output)
    except Exception:
        log.exception("attribution failed")
        st.error("The model could not attribute this sentence.")
        return
    src, out = list(translation.source.pieces), list(translation.target_pieces)
    st.markdown("Attention weights say where a head looked, not what reached the output. Three ways to follow "
                "an output piece back to the source, each with its own assumption: where they agree, trust them "
                "more (Jain & Wallace, 2019, showed that attention alone is not an explanation).")
    if request.model_name == "reverse":
        st.caption("On the reversal model the right answer is known: output piece t comes from source piece "
                   "S − 2 − t, the anti-diagonal.")
    st.markdown("##### 1 · Three attributions of each output piece")
    for name in (ROLLOUT, NORM_BASED, SALIENCY):
        st.markdown(METHOD_TEXT[name])
    keep_valid("heads_target", list(range(len(out))))
    target = st.selectbox("Output piece", list(range(len(out))), key="heads_target",
                          format_func=lambda t: f"{t} · {out[t]}", persist_state="session")
    maps = data["maps"]
    panels: list[tuple[str, np.ndarray, bool, float | None]] = [
        (name, maps[name], name == SALIENCY, None) for name in (ROLLOUT, NORM_BASED, SALIENCY)]
    plot(charts.panels_figure(panels, out, src, row_title="output piece", col_title="source piece",
                              highlight_row=target,
                              title="Attention rollout ∘ cross-attention · norm-based cross-attention · "
                                    "gradient × input"), "heads_attr_maps")
    magnitude = {name: np.abs(maps[name][target]) for name in maps}
    shares = {name: m / m.sum() if m.sum() > 0 else m for name, m in magnitude.items()}  # display: one scale
    plot(charts.share_bars(shares, src, title=f"Output piece {target} · {out[target]}: share of each source piece",
                           value_name="share of the row"), "heads_attr_bars")
    methods, top = data["methods"], data["top"]
    picks = ", ".join(f"{m}: **{src[int(top[i, target])]}**" for i, m in enumerate(methods))
    agree = bool(data["all_agree"][target])
    st.markdown(f"Top source piece for *{out[target]}* — {picks}: "
                + ("**all three agree.**" if agree else "**they disagree.**"))
    pairwise = data["pairwise"]
    st.caption(f"Over the whole sentence all three pick the same top source piece for "
               f"{int(data['all_agree'].sum())} of {len(out)} output pieces; pairwise: "
               + ", ".join(f"{methods[i]} – {methods[j]} {pairwise[i, j]:.0%}"
                           for i in range(len(methods)) for j in range(i + 1, len(methods))) + ".")

    encoder_section(data, src)

    st.markdown("##### 3 · Raw weights or weighted vectors (Kobayashi et al., 2020)")
    st.markdown("The same attention call twice: the weights α the softmax gave, and ‖α f(x_j)‖, the length of what "
                "each key actually passes on. They differ where the vectors differ in length: a large weight on a "
                "short vector (often </s> or punctuation) passes on little.")
    kind, layer, head = map_picker("heads_norm", layers, n_heads, head_label="all heads")
    queries, keys, q_title, k_title = axis_pieces(translation, kind)
    raw = select_head(data["weights"][kind][layer], head)
    norm = data["heads"][kind][layer] if head < 0 else data["per_head"][kind][layer, head]
    value_norms = select_head(data["value_norms"][kind][layer], head)
    formula = "‖Σ_h α f_h(x_j)‖" if head < 0 else "‖α f(x_j)‖"
    panels = [("weight α" + (" (mean)" if head < 0 else ""), raw, False, 1.0), (formula, norm, False, None)]
    plot(charts.panels_figure(panels, queries, keys, row_title=q_title, col_title=k_title,
                              title=f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head, 'all heads')}: "
                                    "raw weights and norm-based"), "heads_norm_maps")
    c_bars, c_note = st.columns([3, 2])
    with c_bars:
        plot(charts.norm_bars(value_norms, keys, key_title=k_title.split(" (")[0],
                              title="‖f(x_j)‖ of each key" + (" (mean over heads)" if head < 0 else "")),
             "heads_norm_bars")
    c_note.caption("‖f(x_j)‖ is the length of the vector that key j hands on when it is attended to (its value "
                   "through Wᴼ). Where it is short, a large weight passes on little and the norm-based map fades.")


def encoder_section(data: dict, src: list[str]) -> None:
    """Rollout and attention flow of the encoder side by side (both Abnar & Zuidema, 2020)."""
    st.markdown("##### 2 · Rollout and flow through the encoder (Abnar & Zuidema, 2020)")
    st.markdown("Both read each encoder layer as Â = ½ I + ½ A (the residual carries a token past attention). "
                "**Rollout** multiplies them, R = Â_L ⋯ Â_1: every path from input token *j* to position *i* "
                "counts with the product of its weights. **Flow** reads the same Â as pipe capacities and asks how "
                "much can reach position *i* from token *j* at most (a maximum-flow problem per cell), rows then "
                "scaled to sum to 1. Flow spreads credit more evenly and ties more; where both put a token first, "
                "the answer does not hang on how paths are combined.")
    panels = [("rollout", data["rollout"], False, None)]
    if data["flow"] is not None:
        panels.append(("flow", data["flow"], False, None))
    plot(charts.panels_figure(panels, src, src, row_title="encoder output position", col_title="input token",
                              title="Encoder attention rollout R = Â_L ⋯ Â_1" +
                                    (" · attention flow" if data["flow"] is not None else "")), "heads_rollout")
    if data["flow"] is None:
        st.caption(f"Attention flow solves one maximum-flow problem per cell (S² of them); it is shown for inputs "
                   f"of up to {MAX_FLOW_PIECES} pieces, this one has {len(src)}.")
    else:
        same = int((data["rollout"].argmax(-1) == data["flow"].argmax(-1)).sum())
        st.caption(f"Row *i*: how much of each input token reaches encoder output position *i*; rows sum to 1. "
                   f"Rollout and flow put the same input token first for {same} of {len(src)} positions. "
                   "The cross-attention reads these positions.")
