"""Translate (home): type a sentence, watch it being decoded token by token, then explore its attention."""
from __future__ import annotations

import html
import logging
import time
import weakref
from collections.abc import Callable
from contextlib import closing

import streamlit as st

from app.browser import viewport
from app.charts.axes import clipped
from app.checks.carried_numbers import added_numbers, dropped_numbers
from app.checks.escape import md
from app.checks.language_check import looks_like
from app.checks.paragraphs import split_sentences
from app.downloads import checkpoint_name, trace_json
from app.explorer import attention_explorer, clamp_state, pieces_html
from app.models.examples import (
    code_language,
    example_why,
    examples_for,
    first_sentence,
    language_name,
    languages,
    leading_token,
    no_examples_note,
    token_language,
    with_token,
)
from app.models.quality import quality_note
from app.models.registry import load_model, model_label
from app.page import budget_notes, show_failure
from app.presenter import is_on
from app.serving.cancel import session_stop_signal
from app.serving.scheduler import (
    BATCHES,
    MAX_INPUT_CHARS,
    SLOTS,
    OnWait,
    Request,
    batched,
    current_request,
    is_heavy,
    planned_request,
    store,
    translate_detached,
    translate_request,
    waiting_message,
)
from app.state import DEFAULTS, sync_url
from app.views.decode_settings import settings_ui
from app.views.scoring import explored, score_ui
from model.checkpoints.files import Checkpoint
from model.decoding.copy_words import written_whole
from model.decoding.search import DecodeStep
from model.network.positional import MAX_POSITIONS
from model.serving.budget import Plan
from model.serving.doubt import doubt_of
from model.serving.inference import (
    UNTRUSTED_UNKNOWN_SHARE,
    InputError,
    Source,
    Translation,
    finish,
    stream,
    target_language,
    unkept_notes,
    unknown_pieces,
    unknown_share,
)

log = logging.getLogger("attention_explorer")

SLOW_MOTION_SECONDS = 0.3
LISTED_NUMBERS = 8  # the numbers note names this many of each kind, then says how many more (a pasted table)


def _set_text(text: str, tokens: tuple[str, ...] = ()) -> None:
    """Put ``text`` in the box, keeping the target-language token the box starts with (a multilingual model)."""
    st.session_state["text"] = with_token(text, leading_token(st.session_state.get("text", ""), tokens))
    st.session_state["sentence"] = 0


def _set_token() -> None:
    st.session_state["text"] = with_token(st.session_state.get("text", ""), st.session_state["target_token"])


def target_language_ui(tokens: tuple[str, ...]) -> None:
    """A multilingual model (opus-mt-en-ROMANCE, ...) reads the language to translate into from a token at the start
    of the sentence, as its training data had it: choosing a language here writes that token into the box."""
    if not tokens:
        return
    st.session_state["target_token"] = leading_token(st.session_state.get("text", ""), tokens)
    st.selectbox("Translate into", tokens, key="target_token", index=None, format_func=token_language,
                 on_change=_set_token, placeholder="Choose the target language…",
                 help=f"This model translates into {len(tokens)} languages. It reads which one from a token at the "
                      "start of the sentence (e.g. >>fra<<), which is also the first piece its encoder attends over; "
                      "choosing here puts it in the box.")
    if st.session_state["target_token"] is None:
        st.warning("This model translates into several languages and needs a target-language token at the start "
                   "of the sentence (such as >>fra<<): choose a language above. Without one its output language is "
                   "a guess.")


def forced_language_ui(ckpt: Checkpoint) -> None:
    """A multilingual fairseq model (mBART-50, M2M100, NLLB) is told the language to translate into by the first
    piece of its output, which decoding forces (Hugging Face's forced_bos_token_id): chosen here."""
    codes = ckpt.tokenizer.target_languages
    if not codes:
        return
    if st.session_state.get("target_lang") not in codes:
        st.session_state["target_lang"] = target_language(ckpt.tokenizer, ckpt.meta)
    st.selectbox("Translate into", codes, key="target_lang", format_func=code_language, persist_state="session",
                 help=f"This model translates into {len(codes)} languages. Decoding forces the chosen language's "
                      "code as the first output piece (as Hugging Face's generate() does with forced_bos_token_id): "
                      "every later piece is predicted after it.")


def examples_ui(meta: dict, tokens: tuple[str, ...] = ()) -> None:
    """Buttons with example sentences in the model's source language (from its checkpoint), or a note."""
    examples = examples_for(meta)
    if examples is None:
        st.caption(no_examples_note(meta))
        return
    st.caption("Try an example. " + example_why(meta))
    with st.container(horizontal=True, wrap=True):
        for i, example in enumerate(examples.sentences):
            st.button(example, key=f"example_{i}", on_click=_set_text, args=(example, tokens), width="content")


def placeholder(meta: dict) -> str:
    if meta.get("task") == "reverse":
        return "Letters separated by spaces: a b c"
    pair = languages(meta)
    return f"Type a sentence in {language_name(pair[0])}…" if pair else "Type a sentence…"


def input_ui(ckpt: Checkpoint) -> None:
    """The sentence (and a multilingual model's target language, and which sentence of a paragraph)."""
    tokens = ckpt.tokenizer.language_tokens
    target_language_ui(tokens)
    forced_language_ui(ckpt)
    st.text_area("Sentence", key="text", persist_state="session", max_chars=MAX_INPUT_CHARS, height=68,
                 placeholder=placeholder(ckpt.meta), on_change=_new_text, label_visibility="collapsed")
    sentence_picker()


def actions_ui(ckpt: Checkpoint) -> tuple[bool, bool]:
    """The Translate button beside the folded examples and decoding settings; returns (pressed, slow motion)."""
    c_go, c_examples, c_settings = st.columns([1.25, 2.3, 4.2], vertical_alignment="top")
    clicked = c_go.button("Translate", key="translate", type="primary", icon="▶️", width="stretch")
    with c_examples.popover("Examples", key="examples_open", icon=":material/lightbulb:", width="stretch"):
        examples_ui(ckpt.meta, ckpt.tokenizer.language_tokens)
    with c_settings:
        slow = settings_ui(ckpt)
    return clicked, slow


def _new_text() -> None:
    st.session_state["sentence"] = 0  # a new text starts at its first sentence


def _sentence_picked() -> None:
    st.session_state["_sentence_picked"] = True  # picking a sentence translates it, as a click would


def sentence_picker() -> None:
    """For a text of several sentences, which one is translated and explored (one at a time, as translation tools
    do: the model was trained on single sentences)."""
    sentences = split_sentences(st.session_state["text"])
    if len(sentences) <= 1:
        return
    clamp_state("sentence", 0, len(sentences) - 1, 0)
    st.selectbox(f"This text has {len(sentences)} sentences. The model reads one sentence at a time, as translation "
                 "tools do: the one translated and explored below is", list(range(len(sentences))), key="sentence",
                 format_func=lambda i: f"{i + 1}. {clipped(sentences[i], 100)}", on_change=_sentence_picked)


def stream_translation(ckpt: Checkpoint, request: Request, slow: bool) -> Translation:
    """Decode with a live view of the pieces so far, then assemble and store the Translation.

    Decoding holds one of the server's few model slots (app.serving.scheduler.SLOTS); while every slot is taken, the
    progress bar says it waits, and after SLOT_WAIT_S seconds ServerBusy ends the wait. A greedy request decodes in a
    batch with other sessions' (app.serving.scheduler.BATCHES), its own steps streamed as they come; slow motion decodes
    alone and gives the slot back during each pause."""
    _, source, plan = planned_request(request)
    limit = plan.decode.max_len
    progress = st.progress(0.0, text="Encoding the source…")
    live = st.empty()

    def waiting(running: int, waited_s: float) -> None:
        progress.progress(0.0, text=waiting_message(running, waited_s))

    def show(step: DecodeStep) -> None:
        alive = f" · {step.beams.size(0)} hypotheses alive" if plan.decode.beam_size > 1 else ""
        progress.progress(min(1.0, (step.step + 1) / limit), text=f"Step {step.step + 1} (at most {limit}){alive}")
        live.markdown("**Decoding…** best so far:" + pieces_html(ckpt.tokenizer.pieces(step.best_tokens())),
                      unsafe_allow_html=True)

    try:
        if batched(plan) and not slow:
            translation = _batched(ckpt, source, plan, waiting, show)
        else:
            steps = []
            with SLOTS.slot(on_wait=waiting, heavy=is_heavy(plan)) as slot:
                for step in stream(ckpt.model, source, plan.decode):
                    steps.append(step)
                    show(step)
                    if slow:
                        with slot.paused():
                            time.sleep(SLOW_MOTION_SECONDS)
                translation = finish(ckpt.model, ckpt.tokenizer, source, steps, plan)
    except Exception:  # an error or ServerBusy: no half-finished progress left on the page (a rerun is not caught)
        progress.empty()
        live.empty()
        raise
    progress.empty()
    live.empty()
    store().put(request, translation)
    return translation


def _batched(ckpt: Checkpoint, source: Source, plan: Plan, waiting: OnWait, show: Callable[[DecodeStep], None]
             ) -> Translation:
    """Decode in the room's batch (app.serving.scheduler.BATCHES), showing this request's own steps as they come; the
    session leaving stops following it (and the batch, once all of its sessions left)."""
    member = BATCHES.submit(ckpt.model, ckpt.tokenizer, source, plan, lambda: SLOTS.slot(on_wait=waiting),
                            session_stop_signal(), lambda waited_s: waiting(SLOTS.running, waited_s))
    with closing(member.steps()) as steps:
        for step in steps:
            show(step)
    return member.translation()


def unknown_words(source: Source, unk_id: int) -> str:
    """How the tokenizer wrote what its vocabulary lacks: <unk>, one token for every unknown thing, or (with byte
    fallback, as the shipped en-de model's) the raw bytes of each character, which it met too rarely to read."""
    unk, raw = unknown_pieces(source, unk_id)
    spelled = "spelled out as raw bytes (the <0x..> pieces), which it met too rarely in training to read" if raw else ""
    read = "read as <unk>, one and the same unknown token" if unk else ""
    return " or ".join(words for words in (spelled, read) if words)


def notes_ui(translation: Translation, request: Request, stale: bool, model_max_len: int) -> None:
    """What the reader must know before trusting the result: stale settings, budget cuts, unknown or foreign input,
    numbers that changed, a cut input, positions the model never saw."""
    if stale:
        st.info("Settings changed — press **Translate**. Showing the last result "
                f"(“{request.text[:80]}{'…' if len(request.text) > 80 else ''}”, beam {request.beam_size}, "
                f"{model_label(request.model_name)}).", icon=":material/info:")
    budget_notes(translation)
    unk_id = load_model(request.model_name).tokenizer.unk_id
    unknown = unknown_share(translation.source, unk_id)
    if unknown >= UNTRUSTED_UNKNOWN_SHARE:
        st.warning(f"{unknown:.0%} of this input is unknown to the model's vocabulary: "
                   f"{unknown_words(translation.source, unk_id)}, so this translation cannot be trusted. Type a "
                   "sentence in the model's source language.", icon=":material/help:")
    wrong_language_note(request)
    dropped, n_source = translation.source.dropped, len(translation.source.ids)
    if not dropped:  # with a cut input, the numbers of the cut part are missing for another reason (said below)
        numbers_note(translation)
    if dropped and not translation.notes:  # a cut the budget made is in its notes already
        st.warning(f"The input is longer than the {MAX_POSITIONS} positions this app reads (</s> included): "
                   f"the last {dropped} pieces were dropped and only the first {n_source - 1} were translated.",
                   icon=":material/content_cut:")
    longest = max(n_source, len(translation.target_ids) + 1)
    if longest > model_max_len:
        st.info(f"This sentence needs {longest} positions, more than the {model_max_len} this model was built and "
                "trained for. The sinusoidal encoding extends to any position, so it still runs, but on positions it "
                "never saw: expect a weaker translation, and look at how the attention spreads.",
                icon=":material/straighten:")


def shown_ui(translation: Translation, doubt: str | None) -> None:
    """The translation, large, beside the sentence. When the model doubts it (``doubt``: doubt_line), a word of
    doubt ends its last line: a badge the room reads with the translation, adding no height above the map (a warning
    box there pushed the map below a 1280x720 screen); what the doubt rests on is said under the map (details_ui)
    and in the badge's tooltip."""
    badge = (f" <span class='ae-doubt' title='{html.escape(doubt)}' style='font-size:0.95rem;font-weight:600;"
             "white-space:nowrap;vertical-align:middle;padding:0.1rem 0.5rem;border-radius:0.5rem;"
             f"background:#fff4d6;color:#7a4b00'>⚠ unsure: a guess</span>") if doubt else ""
    st.markdown(f"<div style='font-size:1.9rem;font-weight:600;line-height:1.25;margin:0.1rem 0 1rem 0'>"
                f"<span class='ae-text'>{html.escape(translation.text) or '(empty output)'}</span>{badge}</div>",
                unsafe_allow_html=True)


def details_ui(translation: Translation, request: Request, doubt: str | None) -> None:
    """Under the map: why the model doubts its translation (``doubt``: doubt_line), the pieces each side reads and
    writes, how the search ran, the way to every step."""
    if doubt:
        st.warning(md(doubt), icon=":material/help:")
    c_src, c_tgt = st.columns(2)
    c_src.markdown("**Source pieces** (what the encoder reads)" + pieces_html(translation.source.pieces),
                   unsafe_allow_html=True)
    c_tgt.markdown("**Output pieces** (one per decoding step)" + pieces_html(translation.target_pieces),
                   unsafe_allow_html=True)
    hyps = translation.result.hypotheses
    if translation.decode.beam_size > 1:
        st.caption(f"Beam search (beam {translation.decode.beam_size}, α = {request.length_penalty}) finished "
                   f"{len(hyps)} hypotheses; the best is shown." + kept_note(translation))
    elif (sampling := translation.decode.sampling) is not None:
        st.caption(f"Sampled: temperature {sampling.temperature:g}, top-k {sampling.top_k or 'all'}, top-p "
                   f"{sampling.top_p:g}, seed {sampling.seed} (the same seed draws the same pieces).")
    st.page_link("app/views/decoding.py", label="See how it was decoded, step by step", icon=":material/stairs:")


def doubt_line(translation: Translation) -> str | None:
    """The sentence saying that the model was unsure of its translation, by its own per-piece probabilities
    (model.serving.doubt, calibrated on held-out text), or None; never for a translation it was handed to score."""
    note = None if translation.forced else doubt_of(translation.result, translation.target_pieces).note()
    return note[0].upper() + note[1:] + "." if note else None


def kept_note(translation: Translation) -> str:
    """What keeping names and numbers did, for the caption under the translation."""
    if not translation.decode.keep_words:
        return ""
    kept = translation.source.kept
    unkept = "".join(f" {md(note[0].upper() + note[1:])}." for note in unkept_notes(translation.source.unkept))
    if not kept:
        if unkept:
            return f" Keeping names and numbers: it keeps none.{unkept}"
        return " Keeping names and numbers: the sentence has none German writes as it is."
    listed = ", ".join(f"“{md(k)}”" for k in kept)
    written = [k for k in kept if written_whole(k, translation.text)]
    if len(written) == len(kept):
        return f" It had to keep {listed}, and does.{unkept}"
    return (f" It had to keep {listed}; the model could not write "
            f"{', '.join(f'“{md(k)}”' for k in kept if k not in written)} anywhere it found likely, "
            f"so the best output without it is shown.{unkept}")


def wrong_language_note(request: Request) -> None:
    """A warning when the sentence reads as another language than the model's source (app.checks.language_check)."""
    pair = languages(load_model(request.model_name).meta)
    other = looks_like(with_token(request.text, None), pair[0]) if pair else None
    if other and pair:
        source, target = language_name(pair[0]), language_name(pair[1])
        st.warning(f"This looks like {language_name(other)}, but this model translates from {source}. It still "
                   f"writes a {target} sentence, one that need not mean what you typed: type a sentence in {source}.",
                   icon=":material/translate:")


def numbers_note(translation: Translation) -> None:
    """A warning when numbers of the sentence are missing from its translation, or the translation has numbers the
    sentence lacks (app.checks.carried_numbers): a changed digit reads as fluently as a right one."""
    missing = dropped_numbers(translation.source.text, translation.text)
    added = added_numbers(translation.source.text, translation.text)
    if missing or added:
        found = [f"{where}: {listed(numbers)}." for where, numbers in
                 (("Not in the translation", missing), ("Not in your sentence", added)) if numbers]
        hint = "" if translation.decode.keep_words else (
            " With a beam of 2 or more, **Keep names and numbers** makes the search write them as they are.")
        st.warning(f"**Check the numbers.** {' '.join(found)} A model writes a number piece by piece and can drop "
                   "one, change a digit or add one as fluently as it writes the rest (on the Decoding page, step to "
                   "them to see what the model weighed there)." + hint, icon=":material/pin:")


def listed(numbers: list[str]) -> str:
    """The first LISTED_NUMBERS numbers as code, with how many more."""
    shown = ", ".join(f"`{number}`" for number in numbers[:LISTED_NUMBERS])
    return shown + (f" and {len(numbers) - LISTED_NUMBERS} more" if len(numbers) > LISTED_NUMBERS else "")


def downloads_ui(translation: Translation, request: Request) -> None:
    ckpt = load_model(request.model_name)
    checkpoint = checkpoint_name(request.model_name, ckpt.path)
    held = weakref.ref(translation)  # the session keeps this callable: not the translation (app.serving.weak_fragment)
    st.download_button("Download the whole trace (JSON)",
                       data=lambda: trace_json(held() or translate_detached(ckpt, request), ckpt.tokenizer, checkpoint),
                       file_name="attention_trace.json", mime="application/json", key="download_trace",
                       on_click="ignore", help="Source and output pieces, every decoding step with its top-k, the "
                                               "n-best list and every attention map (layer × head × query × key).")


# The page's first screen: the translation beside its sentence and the whole map under them, on a 1280x720 screen
# with the sidebar open (tests/e2e/test_first_visit.py). For that, a slimmer top (the header's bar, which holds only
# the menu at the right, lets the title show through), title and gaps than Streamlit's; presenter mode has its own.
PAGE_CSS = """<style>
[data-testid=stHeader] {background: transparent}
.stMainBlockContainer {padding-top: 2rem}
.stMainBlockContainer [data-testid=stVerticalBlock] {gap: 0.5rem}
.stMainBlockContainer h1 {font-size: 2rem !important; padding: 0 !important; line-height: 1.25 !important}
</style>"""
INTRO = ("Type a sentence: an encoder-decoder Transformer (*Attention Is All You Need*) translates it piece by piece, "
         "and every attention weight it used is shown below.")
ABOVE_MAP_PX = 340  # where the first map starts on that screen (measured in Chromium): what its height cannot use
BELOW_MAP_PX = 8


def main() -> None:
    if not is_on():
        st.html(PAGE_CSS)
    c_title, c_intro = st.columns([1, 1.9], vertical_alignment="center")
    c_title.title("Attention Explorer", anchor=False)
    c_intro.caption(INTRO)
    model_name = st.session_state["model_name"]
    try:
        ckpt = load_model(model_name)
    except Exception:
        log.exception("could not load model %s", model_name)
        st.error(f"The model “{model_label(model_name)}” could not be loaded. "
                 "Pick another model in the sidebar.")
        return
    note = quality_note(ckpt)
    if note:
        st.caption(f":material/warning: {note}")
    c_in, c_out = st.columns(2, gap="medium")
    with c_in:
        input_ui(ckpt)
    request = current_request()
    clicked, slow = actions_ui(ckpt)
    clicked = clicked or st.session_state.pop("_sentence_picked", False)
    from_link = st.session_state.pop("_from_link", False)  # a linked view is drawn without a click, like the default
    if not with_token(request.text, None).strip():  # blank, or a multilingual model's target-language token alone
        c_out.info("Type a sentence (or pick an example), then press **Translate**.")
        return
    translation, stale, shown = store().get(request), False, request
    # A first visit shows the default sentence (or an example) translated at once: it is the same for everyone, so
    # it is decoded once per server and every later visitor gets it from the shared store without a click.
    examples = examples_for(ckpt.meta)
    shared = request.text == first_sentence(ckpt.meta, DEFAULTS["text"]) or (
        examples is not None and with_token(request.text, None) in examples.sentences)
    first_view = "last_request" not in st.session_state
    try:
        with c_out:  # the decoding streams where its translation will stand
            if translation is None and clicked:
                sync_url()  # the link carries the sentence from the click on: a reload mid-decode brings it back
                translation = stream_translation(ckpt, request, slow)
            elif translation is None and (from_link or (shared and first_view)):
                translation = translate_request(request)
    except InputError as exc:
        c_out.info(str(exc))
        return
    except Exception as exc:
        with c_out:
            show_failure(exc, f"translating {request!r}",
                         "Sorry, the translation failed (an internal error; the details are in the server log).")
        return
    if translation is None:
        last = st.session_state.get("last_request")
        translation = store().get(last) if last is not None else None
        if translation is None or last is None:
            c_out.info("Press **Translate** to decode this sentence.")
            return
        stale, shown = True, last
    else:
        st.session_state["last_request"] = request
        sync_url()
    doubt = doubt_line(translation)  # beside the translation and, with its reason, under the map
    with c_out:
        shown_ui(translation, doubt)
    notes_ui(translation, shown, stale, load_model(shown.model_name).config.max_len)
    explorer = st.container()  # the map first; what is read after it is drawn below it, and decided here
    details_ui(translation, shown, doubt)
    scored = score_ui(translation, shown)
    downloads_ui(translation, shown)
    with explorer:
        attention_explorer(explored(translation, scored), key="translate",
                           fit_px=viewport()[1] - ABOVE_MAP_PX - BELOW_MAP_PX)


main()
