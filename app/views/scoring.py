"""Score my own translation (Translate page): the model reads a translation the visitor types as its own output
(teacher forcing, model.serving.inference.score_translation) and says per piece its probability, its rank and its own
first choice, where the two part ways, with every attention map of that pass in the same explorer."""
from __future__ import annotations

import math

import streamlit as st

from app.charts.contrastive import forced_frame
from app.checks.escape import md
from app.models.registry import load_model
from app.page import budget_notes, show_failure
from app.serving.cancel import session_stop_signal
from app.serving.scheduler import HEAVY_S, MAX_INPUT_CHARS, SLOTS, Request
from model.serving.inference import InputError, Translation, check_stop, planned_forced, score_translation


def score(request: Request, source_text: str, given: str) -> Translation:
    """Score ``given`` as the translation of ``source_text``, priced first and in one of the server's model slots
    (a heavy one past HEAVY_S); Cancelled when the session leaves or reruns."""
    ckpt = load_model(request.model_name)
    plan = planned_forced(ckpt.model, ckpt.tokenizer, source_text, given, request.decode_config)[2]
    stop = session_stop_signal()
    with SLOTS.slot(on_wait=lambda *_: check_stop(stop), heavy=plan.cost.seconds > HEAVY_S):
        return score_translation(ckpt.model, ckpt.tokenizer, source_text, given, request.decode_config,
                                 should_stop=stop)


def score_ui(translation: Translation, request: Request) -> Translation | None:
    """The input, the button, and the scored translation once there is one for this sentence and text (returned, for
    the explorer to offer)."""
    st.subheader("Score my own translation")
    st.caption("Type a translation of this sentence (yours, or a reference): the model reads it as if it had written "
               "it itself (teacher forcing) and says, piece by piece, how probable it found each piece, where it "
               "ranked it, and what it would have written instead.")
    c_in, c_go = st.columns([6, 1], vertical_alignment="bottom")
    given = c_in.text_input("Your translation", key="forced_text", max_chars=MAX_INPUT_CHARS,
                            placeholder=translation.text or "Type a translation…")
    clicked = c_go.button("Score", key="score_forced", icon=":material/grading:")
    marker = (request, translation.source.text, given)
    if clicked:
        try:
            st.session_state["_scored"] = (marker, score(request, translation.source.text, given))
        except InputError as exc:
            st.info(str(exc))
            return None
        except Exception as exc:  # ServerBusy as a warning, anything else as one line; Cancelled passes
            show_failure(exc, f"scoring {given[:80]!r}", "Sorry, the translation could not be scored (an internal "
                                                         "error; the details are in the server log).")
            return None
    stored = st.session_state.get("_scored")
    if stored is None or stored[0] != marker:
        return None
    scored_ui(stored[1], translation, request)
    return stored[1]


def scored_ui(scored: Translation, own: Translation, request: Request) -> None:
    tokenizer = load_model(request.model_name).tokenizer
    budget_notes(scored)
    choices = [step.forced for step in scored.result.steps if step.forced is not None]
    log_prob = scored.result.best.log_prob
    st.markdown(f"Log-probability of **{md(scored.text)}**: **{log_prob:.3f}** over {len(choices)} pieces "
                f"({log_prob / max(len(choices), 1):.3f} per piece); the model's own translation "
                f"**{md(own.text)}** has {own.result.best.log_prob:.3f} over {len(own.target_ids)} pieces. The model "
                f"would have written {sum(c.agrees for c in choices)} of your {len(choices)} pieces itself.")
    frame = forced_frame(list(scored.target_pieces), [math.exp(c.log_prob) for c in choices], [c.rank for c in choices],
                         [tokenizer.id_to_piece(c.first) for c in choices],
                         [math.exp(c.first_log_prob) for c in choices])
    st.dataframe(frame, key="forced_table", hide_index=True, width="stretch",
                 column_config={"probability": st.column_config.NumberColumn(format="%.4f"),
                                "its probability": st.column_config.NumberColumn(format="%.4f")})
    parted = next((t for t, c in enumerate(choices) if not c.agrees), None)
    if parted is None:
        st.success("The model would have written every piece of this translation itself.")
    else:
        c = choices[parted]
        st.markdown(f"**Where the two part ways:** at step {parted + 1} you wrote "
                    f"**{md(tokenizer.id_to_piece(c.token))}** (p = {math.exp(c.log_prob):.4f}, rank {c.rank}); the "
                    f"model prefers **{md(tokenizer.id_to_piece(c.first))}** (p = {math.exp(c.first_log_prob):.4f}). "
                    "Every later step reads your pieces, not its own.")


def explored(own: Translation, scored: Translation | None) -> Translation:
    """Which pass the one attention explorer shows: the model's own translation, or (once one is scored) the pass
    that read the visitor's translation, every attention map of it."""
    if scored is None:
        return own
    choice = st.segmented_control("Explore the attention of", ["the model's translation", "your translation"],
                                  key="explore_scored", default="your translation", persist_state="session")
    return scored if choice == "your translation" else own
