"""The Translate page's decoding settings, folded under the sentence so that the translation and its map fit one
screen: beam size, length limit, length penalty, slow motion, keeping names and numbers, and sampling. The fold's
label says the settings in use, so a folded box still tells what decoded the sentence."""
from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app.explorer import clamp_state
from app.state import MAX_SEED
from model.checkpoints.files import Checkpoint
from model.network.positional import MAX_POSITIONS
from model.serving.budget import DEFAULT_BUDGET


def length_penalty_help(ckpt: Checkpoint) -> str:
    """The α slider's help: the formula this model's beam search uses and where its default comes from."""
    if ckpt.decode_rules["length_penalty_formula"] == "hf":
        return ("Only used by beam search (beam size > 1): finished hypotheses are ranked by log-prob / length^α, "
                "as Hugging Face's generate() ranks them for this converted model. α = 0 ranks by raw log-prob, which "
                f"favours short outputs. This model's default, {ckpt.length_penalty:g}, is its own config's.")
    return ("Only used by beam search (beam size > 1): finished hypotheses are ranked by "
            "log-prob / ((5 + length) / 6)^α. α = 0 ranks by raw log-prob, which favours short outputs. "
            f"This model's default, {ckpt.length_penalty:g}, is the α that scored best on its validation "
            "split (the paper chose 0.6 the same way for its models).")


def settings_label() -> str:
    """The fold's label: how the next Translate decodes (the session's settings, as the widgets hold them)."""
    state = st.session_state
    if state.get("sample"):
        how = f"sampling at temperature {float(state.get('temperature', 1.0)):g}"
    elif int(state.get("beam_size", 1)) > 1:
        how = f"beam {int(state['beam_size'])}, α {float(state.get('length_penalty', 0.0)):g}"
        how += ", keeping names and numbers" if state.get("keep_names") else ""
    else:
        how = "greedy"
    slow = ", slow motion" if state.get("slow_motion") else ""
    return f"Decoding: {how}, at most {int(state.get('max_len', 60))} pieces{slow}"


def settings_ui(ckpt: Checkpoint) -> bool:
    """The decoding settings in a fold; returns whether slow motion is on."""
    limit = MAX_POSITIONS - 1
    clamp_state("beam_size", 1, 8, 1)
    clamp_state("max_len", 1, limit, min(60, limit))
    with st.expander(settings_label(), key="decode_settings", icon=":material/tune:"):
        sampling = bool(st.session_state.get("sample"))
        c_beam, c_len, c_lp = st.container(), st.container(), st.container()  # one under another: the fold is narrow
        beam = c_beam.slider("Beam size (1 = greedy)", 1, 8, key="beam_size", persist_state="session",
                             disabled=sampling,
                             help="Greedy decoding takes the most probable piece at every step. Beam search keeps "
                                  "the best k partial translations and may find a better whole sentence. Not used "
                                  "while sampling (one hypothesis).")
        c_len.slider("Max output length (pieces)", 1, limit, key="max_len", persist_state="session",
                     help=f"Decoding stops at </s> or after this many pieces. This model was built for "
                          f"{ckpt.config.max_len} positions; longer outputs run on positions it never saw (at most "
                          f"{MAX_POSITIONS}). The server is shared: a request is held to a budget "
                          f"({DEFAULT_BUDGET.max_bytes // 2**20} MB of attention, {DEFAULT_BUDGET.max_seconds:.0f} s "
                          "of compute) and at most 2 × the source length + 10 pieces; what was reduced is said above "
                          "the result.")
        c_lp.slider("Length penalty α", 0.0, 2.0, step=0.1, key="length_penalty", persist_state="session",
                    disabled=beam == 1, help=length_penalty_help(ckpt))
        if beam == 1:
            c_lp.caption("Used only by beam search (beam size > 1).")
        if sampling:
            sampling_ui()
        c_slow, c_keep, c_sample = st.container(), st.container(), st.container()
        slow = c_slow.toggle("Slow motion", key="slow_motion", help="Pause briefly after each step while decoding.")
        keep_names_ui(c_keep, ckpt, beam > 1 and not sampling)
        c_sample.toggle("Sample instead of searching", key="sample", persist_state="session",
                        help="Draw each next piece from the model's distribution (as GPT-style demos do) instead of "
                             "taking the most probable one: a temperature reshapes it, top-k and top-p cut it.")
    return slow


def keep_names_ui(column: DeltaGenerator, ckpt: Checkpoint, searching: bool) -> None:
    """The toggle for beam search that keeps the sentence's names and numbers (model.decoding.constrained_beam)."""
    if ckpt.copy_lexicon is None:
        why = "This model ships no copy lexicon, so it does not know which words German keeps as they are."
    elif not searching:
        why = "Needs beam search: set the beam size to 2 or more (and turn sampling off)."
    else:
        why = ""
    column.toggle("Keep names and numbers", key="keep_names", persist_state="session", disabled=bool(why),
                  help="A small model often garbles a name or a number it copies piece by piece (Rahman → Rahmann). "
                       "With this on, beam search must write the sentence's names, years, times and codes as they "
                       "are: it also tries, at every step, the next piece of each one not yet written, and an output "
                       "that writes them all wins over one that does not. The model still scores every piece and "
                       "every attention map is its own; only the search changes. " + why)
    if why and ckpt.copy_lexicon is not None and st.session_state.get("keep_names"):
        column.caption("On, but used only by beam search (beam size > 1, no sampling).")  # greedy would garble them


def sampling_ui() -> None:
    """Temperature, top-k, top-p and seed of sampling (model.network.config.Sampling)."""
    c_t, c_k, c_p, c_s = st.columns(4)
    c_t.slider("Temperature", 0.0, 2.0, step=0.1, key="temperature", persist_state="session",
               help="The log-probabilities are divided by it before the draw: below 1 sharpens the distribution, "
                    "above 1 flattens it, 0 always takes the most probable piece (greedy).")
    c_k.slider("Top-k (0 = all pieces)", 0, 100, key="sample_top_k", persist_state="session",
               help="Draw only among the k most probable pieces.")
    c_p.slider("Top-p", 0.05, 1.0, step=0.05, key="top_p", persist_state="session",
               help="Draw only among the most probable pieces that together reach this probability (nucleus "
                    "sampling); 1 keeps all.")
    c_s.number_input("Seed", 0, MAX_SEED, step=1, key="seed", persist_state="session",
                     help="The same seed draws the same pieces: a sample can be shown again, and shared by link.")
