"""Why this piece and not that one, at one decoding step: integrated gradients and gradient x input of
log p(chosen) - log p(alternative) over the source pieces and the prefix (explain.integrated_gradients), priced before
it runs (model.serving.budget.plan_gradients) and stopped when its session leaves. Drawn on the Decoding page beside
the step's cross-attention row, and by the lecture's contrastive slide."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import streamlit as st

from app.charts.contrastive import contrastive_figure
from app.checks.escape import md
from app.models.registry import load_model
from app.page import plot, to_numpy
from app.serving.cancel import session_stop_signal
from app.serving.scheduler import heavy_slot
from explain.integrated_gradients import DEFAULT_STEPS, gradient_x_input, integrated_gradients
from model.network.transformer import Transformer
from model.serving.budget import BudgetError, GradientPlan, plan_gradients

log = logging.getLogger("attention_explorer")
STEP_CHOICES = (8, 16, 32, 64, 128)


@dataclass(frozen=True)
class Contrast:
    """One answer, as numpy: attributions over the source [S] and the prefix [T] by both methods, f(x), IG's f(x'),
    its steps and its baseline x' in words (the model's family decides it)."""

    ig_source: np.ndarray
    ig_prefix: np.ndarray
    gxi_source: np.ndarray
    gxi_prefix: np.ndarray
    value: float
    baseline_value: float
    total: float
    gap: float
    steps: int
    baseline: str


def price(model_name: str, source_len: int, prefix_len: int, steps: int) -> GradientPlan:
    """What integrated gradients at this step will cost (and the steps it will run), before it runs."""
    return plan_gradients(load_model(model_name).config, source_len, prefix_len, steps)


def contrast(model_name: str, source_ids: tuple[int, ...], prefix_ids: tuple[int, ...], chosen: int, alternative: int,
             plan: GradientPlan) -> Contrast:
    """Both attributions, in one of the server's heavy slots; Cancelled when the session leaves or reruns."""
    return attribute(load_model(model_name).model, source_ids, prefix_ids, chosen, alternative, plan)


def attribute(model: Transformer, source_ids: tuple[int, ...], prefix_ids: tuple[int, ...], chosen: int,
              alternative: int, plan: GradientPlan) -> Contrast:
    """``contrast`` on a model in hand (the lecture's deck holds its own)."""
    with heavy_slot():
        ig = integrated_gradients(model, source_ids, prefix_ids, chosen, alternative, steps=plan.steps,
                                  batch_rows=plan.batch_rows, should_stop=session_stop_signal())
        gxi = gradient_x_input(model, source_ids, prefix_ids, chosen, alternative)
    return Contrast(ig_source=to_numpy(ig.source), ig_prefix=to_numpy(ig.prefix), gxi_source=to_numpy(gxi.source),
                    gxi_prefix=to_numpy(gxi.prefix), value=ig.value, baseline_value=ig.baseline_value,
                    total=ig.total, gap=ig.gap, steps=ig.steps, baseline=ig.baseline)


def contrastive_ui(model_name: str, source_ids: tuple[int, ...], source_pieces: list[str], prefix_ids: tuple[int, ...],
                   prefix_pieces: list[str], chosen: int, alternatives: list[tuple[int, str, float]],
                   key: str) -> None:
    """Pick an alternative from the step's top-k and a number of steps; the cost is said before the button runs it.
    ``alternatives`` are (id, piece, probability) of the step's other top pieces."""
    tokenizer = load_model(model_name).tokenizer
    piece = tokenizer.id_to_piece(chosen)
    if not alternatives:
        st.caption("No other piece in this step's top-k to compare with.")
        return
    c_alt, c_steps = st.columns([3, 2])
    index = c_alt.selectbox(f"Why **{md(piece)}** and not…", list(range(len(alternatives))), key=f"{key}_alt",
                            format_func=lambda i: f"{alternatives[i][1]}  (p = {alternatives[i][2]:.3f})")
    steps = c_steps.select_slider("Integrated-gradients steps", STEP_CHOICES, value=DEFAULT_STEPS,
                                  key=f"{key}_steps", help="Forward and backward passes along the path from the "
                                  "baseline to the sentence: more steps, a smaller completeness gap, a longer wait.")
    alternative, other, _ = alternatives[index]
    try:
        plan = price(model_name, len(source_ids), len(prefix_ids), steps)
    except BudgetError as exc:
        st.warning(str(exc))
        return
    note = f" {' '.join(md(n) for n in plan.notes)}" if plan.notes else ""
    st.caption(f"Cost before it runs: gradient × input is one forward and backward pass; integrated gradients is "
               f"{plan.steps} of them (estimated {plan.cost.seconds:.1f} s of compute on this server).{note}")
    marker = (model_name, source_ids, prefix_ids, chosen, alternative, plan.steps)
    if st.button("Attribute", key=f"{key}_run", icon=":material/functions:"):
        try:
            st.session_state[f"{key}_result"] = (marker, contrast(model_name, source_ids, prefix_ids, chosen,
                                                                  alternative, plan))
        except Exception as exc:  # Cancelled passes (a BaseException); ServerBusy and failures become a message
            log.exception("contrastive attribution failed")
            st.error(str(exc) if exc.__class__.__name__ == "ServerBusy" else
                     "The model could not attribute this step (an internal error; the details are in the server log).")
            return
    stored = st.session_state.get(f"{key}_result")
    if stored is None or stored[0] != marker:
        return
    result: Contrast = stored[1]
    title = f"Why “{piece}” and not “{other}”"
    plot(contrastive_figure(source_pieces, result.ig_source, result.gxi_source,
                            title=f"{title}: the source pieces", axis_title="source piece"), key=f"{key}_source")
    plot(contrastive_figure(prefix_pieces, result.ig_prefix, result.gxi_prefix,
                            title=f"{title}: the pieces read so far", axis_title="decoder input so far"),
         key=f"{key}_prefix")
    st.caption(f"f = log p({md(piece)}) − log p({md(other)}) = {result.value:.3f} at this step. Above 0 a piece pushes "
               f"towards **{md(piece)}**, below 0 towards **{md(other)}**. Integrated gradients (Sundararajan et al., "
               f"2017): baseline = {md(result.baseline)} (f = {result.baseline_value:.3f} there), {result.steps} "
               f"Gauss-Legendre steps; its attributions sum to {result.total:.3f} against f(x) − f(baseline) = "
               f"{result.value - result.baseline_value:.3f}: completeness gap {result.gap:+.3f}. Gradient × input "
               "(grey) is the gradient at the sentence times each token vector: one pass, a first-order estimate.")
