"""Page: Model and training — the shipped model's real configuration and parameters, the architecture
with its sizes, and how it was trained (Adam, warm-up schedule, dropout, label smoothing, its logs)."""
from __future__ import annotations

import itertools
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from app.charts import training as charts
from app.models.training_log import cooldown_lines, speed_by_stretch
from app.page import plot, require_checkpoint, to_numpy
from explain.model_training import parameter_counts, smoothed_loss_floor, smoothed_targets
from model.checkpoints.files import Checkpoint
from model.network.config import ModelConfig
from model.network.transformer import count_parameters
from training.schedule import noam_lr, training_segments

log = logging.getLogger("attention_explorer")
LOG_COLUMNS = {"step", "loss", "lr"}
EPOCH_COLUMNS = {"epoch", "train_loss", "valid_loss", "valid_bleu", "valid_chrf"}
ACTIVATION_NAMES = {"relu": "ReLU", "swish": "Swish (SiLU)", "gelu": "GELU", "gelu_tanh": "GELU (tanh form)"}
POSITION_LAYOUTS = {"interleaved": "sin/cos pairs", "halves": "sines, then cosines", "learned": "learned tables",
                    "fairseq": "sines, then cosines (fairseq)", "relative": "relative buckets (bias)"}
ACTIVATION_LATEX = {  # the checkpoint's non-linearity (Marian's opus-mt models use swish, T5 v1.1 GELU's tanh form)
    "relu": (r"\max(0,\; {z})", ""),
    "swish": (r"\mathrm{{swish}}({z})", r",\qquad \mathrm{swish}(z) = z\,\sigma(z)"),
    "gelu": (r"\mathrm{{GELU}}({z})", r",\qquad \mathrm{GELU}(z) = z\,\Phi(z)"),
    "gelu_tanh": (r"\mathrm{{GELU}}({z})", r",\qquad \mathrm{GELU}(z) \approx z\,\sigma_{\tanh}(z)"),
}


def ffn_latex(c: ModelConfig) -> str:
    """The FFN as this model computes it: the paper's max(0, xW1 + b1) W2 + b2 with the checkpoint's activation,
    without the biases where it has none, gated where it is gated (T5 v1.1: the activation times x W_gate)."""
    bias1, bias2 = (" + b_1", " + b_2") if c.linear_bias else ("", "")
    act, note = ACTIVATION_LATEX[c.activation]
    hidden = act.format(z=f"xW_1{bias1}")
    if c.ffn_gated:
        hidden = rf"\big({hidden} \odot (xW_{{gate}}{' + b_{gate}' if c.linear_bias else ''})\big)"
    return rf"\mathrm{{FFN}}(x) = {hidden}\,W_2{bias2}{note}"


def residual_latex(c: ModelConfig) -> str:
    norm = r"\mathrm{RMSNorm}" if c.norm == "rms" else r"\mathrm{LayerNorm}"
    if c.norm_first:
        return rf"x + \mathrm{{Dropout}}\big(\mathrm{{Sublayer}}({norm}(x))\big)"
    return rf"{norm}\big(x + \mathrm{{Dropout}}(\mathrm{{Sublayer}}(x))\big)"


def config_panel(ckpt: Checkpoint) -> None:
    c = ckpt.config
    rows = [("Encoder layers N", c.n_encoder_layers, 6), ("Decoder layers N", c.n_decoder_layers, 6),
            ("d_model (token vector width)", c.d_model, 512), ("Heads h", c.n_heads, 8),
            ("d_k = d_v" + (" = d_model / h" if c.head_dim is None else " (its own)"), c.d_k, 64),
            ("d_ff (feed-forward width)", c.d_ff, 2048),
            ("Vocabulary (source + target)", c.vocab_size, "37000 (BPE)"),
            ("Dropout (residual, attn, FFN)", c.dropout, 0.1), ("Max positions", c.max_len, "—"),
            ("Normalisation", "pre-norm" if c.norm_first else "post-norm", "post-norm"),
            ("FFN activation", ACTIVATION_NAMES[c.activation], "ReLU"),
            ("Positional encoding", POSITION_LAYOUTS[c.positional_layout], POSITION_LAYOUTS["interleaved"]),
            ("Embedding × √d_model", "yes" if c.scale_embedding else "no", "yes"),
            ("LayerNorm on embeddings", "yes" if c.layernorm_embedding else "no", "no"),
            ("Output-layer bias", "yes" if c.final_logits_bias else "no", "no"),
            ("Norm", "RMSNorm" if c.norm == "rms" else "LayerNorm", "LayerNorm"),
            ("Scores ÷ √d_k", "yes" if c.attention_scale else "no", "yes"),
            ("Biases in linear maps", "yes" if c.linear_bias else "no", "yes"),
            ("Gated FFN", "yes" if c.ffn_gated else "no", "no"),
            ("Output layer", "the embedding E" if c.tie_output else "its own", "the embedding E")]
    table = pd.DataFrame(rows, columns=["setting", "this model", "paper (base)"]).astype(str)
    counts = parameter_counts(ckpt.model)
    # One above the other: side by side at 1280x720 the table's third column was cut (its columns need ~460 px).
    st.subheader("Configuration")
    # Explicit widths: sized to their contents, the setting names pushed the paper's column out of view. Height
    # "content": the default shows ten rows and hid the last ones behind a scroll bar.
    st.dataframe(table, hide_index=True, width="content", height="content", column_config={
        "setting": st.column_config.TextColumn(width=230, pinned=True),
        "this model": st.column_config.TextColumn(width=210),
        "paper (base)": st.column_config.TextColumn(width=150, help="Vaswani et al. (2017), Table 3, base model")})
    st.metric("Parameters", f"{count_parameters(ckpt.model):,}", help="The paper's base model has about 65 million.")
    trained = (f"Trained for {ckpt.meta['steps']:,} steps" if "steps" in ckpt.meta
               else "Training length not recorded")
    if "epochs" in ckpt.meta:
        trained += f" ({ckpt.meta['epochs']} epochs"
        trained += f", {ckpt.meta['train_seconds'] / 60:.0f} min)" if "train_seconds" in ckpt.meta else ")"
    st.caption(trained + ".")
    plot(charts.parameter_bars(counts), "model_parameters")


def architecture_panel(ckpt: Checkpoint) -> None:
    c = ckpt.config
    st.subheader("The architecture with this model's sizes")
    start = ckpt.tokenizer.id_to_piece(c.bos_id)  # <s>, or <pad> for Marian
    plot(charts.architecture_diagram(c.to_dict(), start), "model_architecture")
    st.markdown("**Encoder–decoder, auto-regressive.** The encoder reads the whole source at once and produces "
                f"one {c.d_model}-dimensional vector per piece. The decoder generates the output one piece at a time, "
                f"reading its own previous outputs (shifted right, starting with {start}) and the encoder output "
                "through cross-attention — see *Decoding, step by step*.")
    c1, c2 = st.columns(2)
    with c1:
        norm = "RMSNorm" if c.norm == "rms" else "LayerNorm"
        where = "pre-norm: the norm before each sub-layer, as this model does" if c.norm_first else \
            "post-norm, as in the paper"
        st.markdown(f"**Residual connection + {norm}** around every sub-layer ({where}):")
        st.latex(residual_latex(c))
        st.markdown("The residual path lets information and gradients skip each sub-layer, so deep stacks train; "
                    f"that is why every sub-layer and embedding outputs the same width d_model = {c.d_model}, so the "
                    "sums add up. "
                    "LayerNorm normalises **each token vector on its own** over its "
                    f"{c.d_model} features (mean 0, variance 1, then a learned scale and shift) — unlike BatchNorm, "
                    "which averages each feature over the batch and so depends on the other sentences and on "
                    "padding. Keeping every layer's inputs at a steady scale keeps activations out of their flat, "
                    "saturated regions and makes training converge faster."
                    + (" This model uses RMSNorm, the cheaper variant: it divides by the root mean square only (no "
                       "mean subtracted, no shift), then a learned scale." if c.norm == "rms" else ""))
    with c2:
        st.markdown("**Position-wise feed-forward network**, the same for every position:")
        st.latex(ffn_latex(c))
        st.markdown(f"Here W₁ is {c.d_model} × {c.d_ff} and W₂ is {c.d_ff} × {c.d_model}. Applied to each position "
                    "separately, it is the same as **two convolutions with kernel size 1**. Attention mixes "
                    "information between positions; the FFN transforms each position. The same weights serve every "
                    "position of a layer; each layer has its own.")
    output = ("and (transposed) the output layer before the softmax" if c.tie_output else
              "; the output layer before the softmax is a matrix of its own (this model does not share it)")
    scale = (f"In the embedding layers its rows are multiplied by √d_model = √{c.d_model} ≈ "
             f"{math.sqrt(c.d_model):.1f}." if c.scale_embedding else
             "This model does not multiply its rows by √d_model.")
    st.markdown(f"**Shared embeddings.** One {c.vocab_size:,} × {c.d_model} matrix E is the source embedding, the "
                f"target embedding {output}. {scale}")


def why_attention_panel() -> None:
    st.subheader("Why not an RNN or a CNN?")
    st.markdown("The paper's claim is in its abstract: a model *based solely on attention mechanisms, dispensing "
                "with recurrence and convolutions entirely*.")
    table = pd.DataFrame([
        ("Self-attention", "O(n² · d)", "O(1)", "O(1)"),
        ("Recurrent (RNN, LSTM)", "O(n · d²)", "O(n)", "O(n)"),
        ("Convolution (kernel k)", "O(k · n · d²)", "O(1)", "O(logₖ n)"),
    ], columns=["layer type", "work per layer", "sequential steps", "longest path between two words"])
    st.dataframe(table, hide_index=True, width="stretch")
    st.latex(r"h_t = f(h_{t-1},\, x_t)")
    st.markdown("An RNN (LSTM or GRU; often bidirectional in the encoder, one RNN reading left to right and one right "
                "to left) computes each hidden state from the previous one, so it must process position t − 1 before "
                "t: no parallelism inside a sentence, and long sentences limit how many fit in a batch. Information "
                "between distant words travels through n steps, fading on the way (LSTM gates only soften this). "
                "A CNN sees a local window and needs stacked layers to connect distant words. Self-attention links "
                "every pair of positions in one step and computes all positions in parallel — at the cost of n² "
                "work, fine for sentence-length n (paper, Table 1).")


def schedule_panel(ckpt: Checkpoint) -> None:
    st.subheader("Optimiser and learning-rate schedule")
    meta, d = ckpt.meta, ckpt.config.d_model
    warmup, factor, steps = int(meta.get("warmup", 4000)), float(meta.get("lr_factor", 1.0)), meta.get("steps")
    st.markdown("Adam with **β₁ = 0.9, β₂ = 0.98, ε = 10⁻⁹** (the paper's values; training/train.py uses them). "
                "The learning rate rises linearly during a warm-up — Adam's moment estimates are noisy at first, "
                "and big early steps would wreck a post-norm Transformer — then decays with 1/√step:")
    st.latex(r"lrate = factor \cdot d_{model}^{-0.5}\cdot\min\!\left(step^{-0.5},\; step\cdot warmup^{-1.5}\right)")
    if "warmup" not in meta:
        st.caption("This checkpoint does not record its warm-up; the paper's 4000 is shown.")
    logged = _read_csv(ckpt.path / "log.csv", LOG_COLUMNS) if ckpt.path else None
    if logged is not None:  # the rates actually used, step by step (a continued run may have changed the factor)
        light = logged.iloc[::max(1, len(logged) // 800)]  # [<=~800 rows] keeps the figure light
        xs, own = light["step"].to_numpy(), light["lr"].to_numpy()
        at = logged[logged["step"] == int(steps)] if steps else logged.iloc[-1:]  # the step these weights are from
        at = at if len(at) else logged.iloc[-1:]
        stop: tuple[int, float] | None = (int(at["step"].iloc[0]), float(at["lr"].iloc[0]))
        label = f"used in training (log.csv): d_model {d}, warm-up {warmup}"
    else:
        last = int(steps) if steps else 4 * warmup
        xs = np.unique(np.linspace(1, max(last, 2 * warmup), 400).astype(int))
        own = np.array([noam_lr(int(s), d, warmup, factor) for s in xs])
        stop = (last, noam_lr(last, d, warmup, factor)) if steps else None
        label = f"this model: d_model {d}, warm-up {warmup}, factor {factor:g}"
    left, right = st.columns(2)
    with left:
        plot(charts.lr_schedule([(label, xs, own)], stop, "This model's learning rate"), "model_lr_own")
        segments = training_segments(meta)
        for before, after in itertools.pairwise(segments):
            if None not in (before["lr_factor"], after["lr_factor"], before["last_step"]) \
                    and before["lr_factor"] != after["lr_factor"]:
                st.caption(f"Training was continued from the step-{before['last_step']:,} checkpoint with factor "
                           f"{after['lr_factor']:g} instead of {before['lr_factor']:g}: the drop in the curve there.")
        for line in cooldown_lines(segments):
            st.caption(line)
    with right:
        compare_schedule_panel(d, warmup, factor)
    st.markdown(f"**Regularisation.** Dropout sets a random share P_drop of a layer's outputs to 0 during training "
                "(and scales the rest up), so no unit can rely on another: it fights overfitting. Residual dropout "
                f"P_drop = **{ckpt.config.dropout:g}** on every sub-layer "
                "output before the residual add, and on the sums of embeddings and positional encodings (also "
                "inside attention and the FFN here). Label smoothing below.")


@st.fragment
def compare_schedule_panel(d_model: int, warmup: int, factor: float) -> None:
    c1, c2 = st.columns(2)
    paper_warmup = c1.slider("Compare: warm-up steps", 100, 16000, 4000, step=100, key="lr_warmup")
    paper_d = c2.select_slider("Compare: d_model", [64, 128, 256, 512, 1024], value=512, key="lr_dmodel")
    horizon = max(4 * paper_warmup, 4 * warmup, 20000)
    xs = np.unique(np.linspace(1, horizon, 500).astype(int))
    curves = [(f"d_model {paper_d}, warm-up {paper_warmup} (paper: 512, 4000)",
               xs, np.array([noam_lr(int(s), paper_d, paper_warmup) for s in xs])),
              (f"this model: d_model {d_model}, warm-up {warmup}",
               xs, np.array([noam_lr(int(s), d_model, warmup, factor) for s in xs]))]
    plot(charts.lr_schedule(curves, None, "Compared with other settings"), "model_lr_compare")


@st.fragment
def label_smoothing_panel(ckpt: Checkpoint) -> None:
    st.subheader("Label smoothing")
    used = float(ckpt.meta.get("label_smoothing", 0.1))
    v = ckpt.config.vocab_size
    st.markdown(f"Instead of a one-hot target the loss compares against (1 − ε)·one-hot + ε/V. This model used "
                f"**ε = {used:g}**: with its V = {v:,} pieces the true piece gets 1 − ε + ε/V = "
                f"**{1 - used + used / v:.5f}** and every other piece ε/V = **{used / v:.2e}**. The chart uses a "
                f"10-piece vocabulary so that the small bars stay visible; drag ε to see the mass move.")
    eps = st.slider("ε", 0.0, 0.5, used, step=0.01, key="ls_eps")
    small_v, true = 10, 3
    dist = to_numpy(smoothed_targets([true], small_v, eps)[0])
    plot(charts.label_smoothing_bars(dist, [f"piece {i}" + (" (true)" if i == true else "") for i in range(small_v)],
                                     eps), "model_label_smoothing")
    st.caption("It makes the model less sure of itself: perplexity gets worse (probability mass is kept away from "
               "the right answer), but accuracy and BLEU improve (paper, section 5.4).")


def _read_csv(path: Path, columns: set[str]) -> pd.DataFrame | None:
    """A training log with ``columns``; None when the checkpoint has none (a converted model never has one: no
    traceback in the log for that) or when it cannot be read (logged)."""
    if not path.is_file():
        return None
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        log.exception("cannot read %s", path)
        return None
    return df if columns <= set(df.columns) and len(df) else None


def training_logs_panel(ckpt: Checkpoint) -> None:
    st.subheader("How this model trained")
    folder = ckpt.path
    log_df = _read_csv(folder / "log.csv", LOG_COLUMNS) if folder else None
    epochs_df = _read_csv(folder / "epochs.csv", EPOCH_COLUMNS) if folder else None
    if log_df is None and epochs_df is None:
        st.info("This checkpoint ships no training logs (log.csv, epochs.csv).")
        return
    if log_df is not None:
        eps = float(ckpt.meta.get("label_smoothing", 0.0))
        floor = smoothed_loss_floor(ckpt.config.vocab_size, eps) if eps else None
        plot(charts.loss_curve(log_df, floor), "model_loss")
        if floor is not None:
            st.caption(f"The training loss is cross-entropy against the smoothed target (ε = {eps:g}), so it cannot "
                       f"go below that target's entropy, {floor:.3f} nats, even for a perfect model. The validation "
                       "loss below is plain cross-entropy without smoothing or dropout, which is why it sits lower.")
        if "tokens_per_s" in log_df:
            speeds = speed_by_stretch(log_df, training_segments(ckpt.meta))
            if len(speeds) > 1:
                st.caption("Median speed of each stretch of training (a continued run may have moved to another "
                           "machine; one median over all steps would hide the slower ones):")
                st.dataframe(speeds, hide_index=True)
            else:
                st.caption(f"Median speed {log_df['tokens_per_s'].median():,.0f} tokens/s over {len(log_df):,} "
                           "steps.")
    else:
        st.info("No per-step log (log.csv) in this checkpoint.")
    if epochs_df is not None:
        plot(charts.epoch_curves(epochs_df), "model_epochs")
        best = epochs_df.iloc[int(epochs_df["valid_loss"].argmin())]
        st.caption(f"Lowest validation loss {best['valid_loss']:.3f} after epoch {int(best['epoch'])} "
                   f"(BLEU {best['valid_bleu']:.1f}, chrF {best['valid_chrf']:.1f} on the validation set). "
                   "For scale, the paper's base model (65M parameters) trained 100,000 steps on 4.5 million WMT 2014 "
                   "sentence pairs with 8 GPUs for 12 hours and reached 27.3 BLEU on English→German (big model: "
                   "28.4). BLEU (0–100) counts how many of the output's word n-grams (1 to 4 words) also occur in a "
                   "human reference translation, with a penalty for outputs that are too short; chrF does the same "
                   "with character n-grams, which is kinder to German's long compound words.")
    else:
        st.info("No per-epoch log (epochs.csv) in this checkpoint.")


def model_card_panel(ckpt: Checkpoint) -> None:
    st.subheader("Model card")
    card = ckpt.path / "MODEL_CARD.md" if ckpt.path else None
    if card is not None and card.is_file():
        with st.container(border=True):
            st.markdown(card.read_text(encoding="utf-8"))
    else:
        st.info("This checkpoint has no MODEL_CARD.md (what data it saw, how it scores, its limits).")


def render() -> None:
    st.title("Model and training")
    ckpt = require_checkpoint()
    if ckpt is None:
        return
    config_panel(ckpt)
    architecture_panel(ckpt)
    why_attention_panel()
    schedule_panel(ckpt)
    label_smoothing_panel(ckpt)
    training_logs_panel(ckpt)
    model_card_panel(ckpt)


render()
