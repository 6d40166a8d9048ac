"""Decoding, step by step: what the decoder saw and predicted at each step, and (for beam search) the tree.
The step is in the URL (?step=3) and steps with the keys ← / → (a presentation clicker's PageUp / PageDown)."""
from __future__ import annotations

import logging
import math
from functools import partial

import streamlit as st

from app.browser import bind_keys
from app.charts.axes import plotly_text
from app.charts.decoding import (
    TreeCandidate,
    attention_row_figure,
    beam_tree_figure,
    beam_tree_nodes,
    nbest_frame,
    pruned_figure,
    sampling_figure,
    topk_figure,
)
from app.charts.style import plotly_config
from app.checks.escape import md
from app.explorer import clamp_state, head_label, layer_head_ui, pieces_html, point_customdata, select_head
from app.models.registry import load_model
from app.opening import open_focused
from app.page import TRANSLATE_PAGE, budget_notes, to_numpy
from app.presenter import presentable
from app.serving.scheduler import Request, current_request, translate_request
from app.serving.weak_fragment import weak_fragment
from app.state import sync_url
from app.views.contrastive import contrastive_ui
from model.decoding.constrained_beam import keep_states
from model.decoding.sampling import SampleChoice
from model.decoding.search import Candidate, DecodeStep, length_penalty
from model.serving.inference import InputError, Translation
from model.tokenization.kinds import TextTokenizer

log = logging.getLogger("attention_explorer")
STEP_KEYS = {"ArrowLeft": "prev_step", "PageUp": "prev_step", "ArrowRight": "next_step", "PageDown": "next_step"}


def _move_step(delta: int, n_steps: int) -> None:
    st.session_state["step"] = min(max(int(st.session_state.get("step", 1)) + delta, 1), n_steps)


def step_ui(n_steps: int, start: str) -> int:
    """Previous / Next buttons and a slider over the steps, numbered from 1 like layers and heads (the widget
    key "step" holds that number); returns the 0-based index into the decode steps. ``start`` is the piece every
    decoder input begins with."""
    clamp_state("step", 1, n_steps, 1)
    c_prev, c_slider, c_next = st.columns([1, 6, 1], vertical_alignment="bottom")
    c_prev.button("◀ Previous", key="prev_step", on_click=_move_step, args=(-1, n_steps),
                  disabled=st.session_state["step"] == 1, width="stretch")
    c_next.button("Next ▶", key="next_step", on_click=_move_step, args=(1, n_steps),
                  disabled=st.session_state["step"] == n_steps, width="stretch")
    if n_steps > 1:
        c_slider.slider(f"Step (of {n_steps})", 1, n_steps, key="step", persist_state="session",
                        help=f"Step t reads {start} and the t − 1 pieces chosen before it and predicts output piece t.")
    bind_keys(STEP_KEYS)
    c_slider.caption("Keys: **←** / **→** (or a clicker's PageUp / PageDown) previous / next step.")
    return int(st.session_state["step"]) - 1


def _default_candidate(translation: Translation, t: int) -> int:
    """The candidate of step t on the best translation's path (else the first one)."""
    best = translation.result.best
    candidates = translation.result.steps[t].candidates
    if t < len(best.path):
        for i, c in enumerate(candidates):
            if c.row == best.path[t] and c.token == best.tokens[t]:
                return i
    return 0


def candidate_ui(translation: Translation, tokenizer: TextTokenizer, request: Request, t: int) -> Candidate:
    """Which node of step t to inspect (beam search has several); resets to the best path when the step changes."""
    step = translation.result.steps[t]
    if len(step.candidates) == 1:
        return step.candidates[0]
    marker = (request, t)
    options = list(range(len(step.candidates)))
    if st.session_state.get("_beam_node_for") != marker or st.session_state.get("beam_node") not in options:
        st.session_state["beam_node"] = _default_candidate(translation, t)
        st.session_state["_beam_node_for"] = marker

    def describe(i: int) -> str:
        c = step.candidates[i]
        prefix = " ".join(tokenizer.pieces(step.prefixes[c.row].tolist())[-4:])
        return f"#{i + 1}: …{prefix} → {tokenizer.id_to_piece(c.token)}   (log-prob {c.log_prob:.2f}, {c.status})"

    labels = [describe(i) for i in options]  # the session keeps format_func: strings, not the step (docs/serving.md)
    index = st.selectbox(f"Node of step {t + 1} to inspect (or click one in the tree)", options, key="beam_node",
                         format_func=labels.__getitem__)
    return step.candidates[index]


def keeps_ran(translation: Translation) -> bool:
    """Whether this output comes from the search that keeps names and numbers (beam search's own kept them all
    otherwise, or the toggle was off)."""
    steps = translation.result.steps
    return translation.source.keeps is not None and bool(steps) and steps[0].banks is not None


def bank_note(translation: Translation, tokens: list[int], eos_id: int) -> str:
    """Which bank a node of the keep search falls in: the kept pieces its hypothesis holds, and the phrases it has
    written whole."""
    keeps, kept = translation.source.keeps, translation.source.kept
    assert keeps is not None  # asked only where keeps_ran(translation)
    state = keep_states(tokens, keeps, eos_id)[-1]
    written = [kept[i] for i in sorted(state.met)]
    return (f"Bank {state.bank(keeps)} of {keeps.total}: this hypothesis holds {state.bank(keeps)} of the "
            f"{keeps.total} pieces of the names and numbers to keep; written whole: "
            + (", ".join(f"“{md(k)}”" for k in written) if written else "none yet") + ".")


def step_detail_ui(translation: Translation, tokenizer: TextTokenizer, step: DecodeStep, chosen: Candidate,
                   eos_id: int) -> None:
    """The prefix, the next-token distribution and the attention rows behind one candidate."""
    row = chosen.row
    prefix = tokenizer.pieces(step.prefixes[row].tolist())
    piece = tokenizer.id_to_piece(chosen.token)
    fmt = st.session_state.get("image_format", "png")
    st.markdown(f"**Step {step.step + 1}** · the decoder reads the pieces so far and predicts the next one "
                f"(chosen: **{md(piece)}**, status *{chosen.status}*, cumulative log-prob {chosen.log_prob:.3f})"
                + pieces_html([*prefix, piece], highlight=len(prefix)), unsafe_allow_html=True)
    c_probs, c_attn = st.columns([2, 3])
    with c_probs:
        if step.sample is not None:
            sampler_ui(step, step.sample, tokenizer, fmt)
        else:
            ids = step.topk_ids[row].tolist()
            fig = topk_figure(tokenizer.pieces(ids), to_numpy(step.topk_probs[row]), [i == chosen.token for i in ids],
                              title=f"Top {len(ids)} next pieces at step {step.step + 1}")
            st.plotly_chart(presentable(fig), key="decoding_topk", width="stretch", theme=None,
                            config=plotly_config("next_piece_probs", fmt))
            if translation.decode.forced_eos and step.step + 1 == translation.decode.max_len:
                st.caption(f"The length limit ({translation.decode.max_len} pieces) is reached: this model's rule "
                           f"(Hugging Face's forced_eos_token_id) makes the last piece {md(piece)}, whatever the model "
                           "prefers (the bars), and adds nothing to the log-prob.")
            elif translation.decode.forced_bos is not None and step.step == 0:
                st.caption(f"This model's rule (Hugging Face's forced_bos_token_id) makes the first piece {md(piece)}, "
                           "whatever the model prefers (the bars), and adds nothing to the log-prob.")
            elif translation.decode.no_repeat_ngram and chosen.token not in ids[:1]:
                st.caption(f"This model's rule (Hugging Face's no_repeat_ngram_size = "
                           f"{translation.decode.no_repeat_ngram}) rules out any piece that would repeat a "
                           f"{translation.decode.no_repeat_ngram}-gram of the pieces so far: the most probable one may "
                           f"not be the one chosen.")
            elif chosen.token not in ids:
                st.caption(f"The chosen piece {md(piece)} is not among the top {len(ids)} of this row"
                           + (", but it takes a name or number one piece further: the search keeping them tries it "
                              "whatever the model's rank." if keeps_ran(translation) else "."))
            if keeps_ran(translation):
                st.caption(bank_note(translation, [*step.prefixes[row, 1:].tolist(), chosen.token], eos_id))
    with c_attn:
        dec_self, cross = step.dec_self, step.cross
        assert dec_self is not None and cross is not None  # the app decodes with attention (Capture.WEIGHTS)
        n_layers, _, n_heads, _ = dec_self.shape
        open_focused(translation)  # the same head as the Translate page's explorer, until the visitor picks one
        layer, head = layer_head_ui(n_layers, n_heads)
        query = plotly_text([prefix[-1]])[0]  # the query is the last piece read; figure titles are HTML
        what = f"layer {layer + 1} · {head_label(head)}"
        dec_row = select_head(to_numpy(dec_self[layer, row]), head)
        fig = attention_row_figure(dec_row, prefix, title=f"Decoder self-attention of “{query}”<br><sup>{what}</sup>",
                                   key_title="decoder input so far (earlier positions only)", query_label=prefix[-1])
        st.plotly_chart(presentable(fig),
                        key="decoding_dec_self", width="stretch", theme=None,
                        config=plotly_config("decoder_self_row", fmt))
        cross_row = select_head(to_numpy(cross[layer, row]), head)
        st.plotly_chart(presentable(attention_row_figure(cross_row, list(translation.source.pieces),
                                                         title=f"Cross-attention of “{query}” over the source"
                                                               f"<br><sup>{what}</sup>",
                                                         key_title="source piece", query_label=prefix[-1])),
                        key="decoding_cross", width="stretch", theme=None,
                        config=plotly_config("cross_row", fmt))


def sampler_ui(step: DecodeStep, sample: SampleChoice, tokenizer: TextTokenizer, fmt: str) -> None:
    """What sampling did at this step (``sample``, its step.sample): the model's distribution, the one drawn from,
    and the piece drawn."""
    ids = sample.ids.tolist()
    fig = sampling_figure(tokenizer.pieces(ids), to_numpy(sample.before), to_numpy(sample.after),
                          [i == sample.token for i in ids], title=f"Step {step.step + 1}: the model, then the sampler")
    st.plotly_chart(presentable(fig), key="decoding_sample", width="stretch", theme=None,
                    config=plotly_config("sampling", fmt))
    drawn = md(tokenizer.id_to_piece(sample.token))
    st.caption(f"Drew **{drawn}**: probability {sample.token_before:.3f} from the model, {sample.token_after:.3f} "
               f"after the temperature and the cut, which left {sample.kept} pieces to draw from.")


def _pick_node(chart_key: str) -> None:
    """Tree click: jump to the clicked node's step and select it."""
    state = st.session_state.get(chart_key) or {}
    for point in (state.get("selection") or {}).get("points") or []:
        data = point_customdata(point)
        if data is not None and int(data[1]) >= 0:
            st.session_state["step"], st.session_state["beam_node"] = int(data[1]) + 1, int(point.get("y", 0))
            st.session_state["_beam_node_for"] = (current_request(), int(data[1]))
            return


def beam_ui(translation: Translation, tokenizer: TextTokenizer, request: Request, t: int, chosen: Candidate) -> None:
    """The search tree and the n-best list."""
    steps = translation.result.steps
    tree = [[TreeCandidate(row=c.row, token=c.token, piece=tokenizer.id_to_piece(c.token), log_prob=c.log_prob,
                           status=c.status)
             for c in s.candidates] for s in steps]
    nodes = beam_tree_nodes(tree, [(h.tokens, h.path) for h in translation.result.hypotheses],
                            root_piece=translation.target_input_pieces[0])
    selected = nodes[(nodes.step == t) & (nodes.row == chosen.row) & (nodes.token == chosen.token)].id
    beam = translation.decode.beam_size
    fig = beam_tree_figure(nodes, title=f"Beam search tree (beam {beam}): every candidate considered",
                           current_step=t, selected=int(selected.iloc[0]) if len(selected) else None)
    st.plotly_chart(presentable(fig), key="beam_tree", width="stretch", theme=None,
                    on_select=partial(_pick_node, "beam_tree"),
                    selection_mode="points", config=plotly_config("beam_tree", st.session_state["image_format"]))
    kept = translation.source.kept if translation.decode.keep_words else ()
    if keeps_ran(translation):
        st.caption(f"Keeping {', '.join(f'“{md(k)}”' for k in kept)}: besides each hypothesis' "
                   "best continuations, the search tries the next piece of every name or number it has not written "
                   "yet (but not a name whose last word the hypothesis already wrote: it would stand twice). "
                   "Hypotheses are grouped into banks by how many of those pieces they hold, and each bank is "
                   f"a beam of its own: its best {beam} that do not end are kept (circles), an ending with </s> among "
                   f"its best {beam} finishes a hypothesis (diamond), and the best one it prunes is shown (grey ×). "
                   "An output that writes them all ranks first. Red: the best translation's path; blue: the other "
                   "n-best. "
                   "The yellow column is the current step; click a node to inspect it.")
    else:
        if kept:
            st.caption(f"Beam search's own output already keeps {', '.join(f'“{md(k)}”' for k in kept)}, so it is "
                       "shown as it is: the search that keeps names and numbers runs only where beam search drops "
                       "or garbles one.")
        st.caption(f"At each step the {2 * beam} best continuations of all live hypotheses are looked at: "
                   f"the best {beam} that do not end are kept (circles), an ending with </s> among the best "
                   f"{beam} finishes a hypothesis (diamond), the rest are pruned (grey ×). Red: the "
                   "best translation's path; blue: the other n-best; pale: kept for a while, then dropped. "
                   "The yellow column is the current step; click a node to inspect it.")
    alpha, formula = request.length_penalty, request.length_penalty_formula
    rows = [(tokenizer.decode(h.tokens), len(h.tokens), h.log_prob, length_penalty(len(h.tokens), alpha, formula),
             h.score, h.ended_with_eos) for h in translation.result.hypotheses]
    lp = "length^α (Hugging Face's, as this converted model's generate() ranks them)" if formula == "hf" else \
        "((5 + length) / 6)^α (GNMT's)"
    st.markdown(f"**n-best list** · length penalty lp = {lp} with α = {alpha}; "
                "hypotheses are ranked by score = log-prob / lp.")
    st.dataframe(nbest_frame(rows), key="nbest", width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("log-prob", "length penalty lp", "score = log-prob / lp")})
    pruned_ui(translation, tokenizer, request, t, chosen)


def pruned_candidates(translation: Translation) -> list[tuple[int, int]]:
    """(step, index into that step's candidates) of every candidate the search pruned, in step order (not the pieces
    a rule made impossible, at -inf: nothing outscored those)."""
    return [(s.step, i) for s in translation.result.steps for i, c in enumerate(s.candidates)
            if c.status == "pruned" and math.isfinite(c.log_prob)]


def node_label(tokenizer: TextTokenizer, step: DecodeStep, c: Candidate, words: int = 3) -> str:
    """"…the last pieces of its prefix → its piece"."""
    prefix = tokenizer.pieces(step.prefixes[c.row].tolist())[-words:]
    return f"…{' '.join(prefix)} → {tokenizer.id_to_piece(c.token)}"


def _open_pruned(pruned: list[tuple[int, int]]) -> None:
    """The pruned hypothesis picked in the list becomes the node inspected (its step and node), as a click does."""
    index = st.session_state.get("pruned_pick")
    if isinstance(index, int) and 0 <= index < len(pruned):
        t, node = pruned[index]
        st.session_state["step"], st.session_state["beam_node"] = t + 1, node
        st.session_state["_beam_node_for"] = (current_request(), t)


def pruned_ui(translation: Translation, tokenizer: TextTokenizer, request: Request, t: int, chosen: Candidate) -> None:
    """Why a hypothesis was pruned: pick one (here or by clicking its grey × in the tree); the step where it fell out,
    its score against the ones kept, and why the piece kept after the same prefix and not it."""
    pruned = pruned_candidates(translation)
    if not pruned:
        return
    steps = translation.result.steps
    here = next((i for i, (s, node) in enumerate(pruned)
                 if s == t and steps[s].candidates[node] == chosen), None)
    st.session_state["pruned_pick"] = here  # the node inspected, when it is a pruned one

    def describe(i: int) -> str:
        step, node = steps[pruned[i][0]], pruned[i][1]
        c = step.candidates[node]
        return f"step {step.step + 1}: {node_label(tokenizer, step, c)}  (log-prob {c.log_prob:.2f})"
    st.markdown("**Why was a hypothesis pruned?** Pick one (or click a grey × in the tree).")
    labels = [describe(i) for i in range(len(pruned))]  # the session keeps format_func: strings, not the steps
    st.selectbox("Pruned hypothesis", list(range(len(pruned))), key="pruned_pick", placeholder="a pruned hypothesis…",
                 on_change=_open_pruned, args=(pruned,), format_func=labels.__getitem__)
    if here is not None:
        why_pruned_ui(translation, tokenizer, request, steps[t], pruned[here][1])


def why_pruned_ui(translation: Translation, tokenizer: TextTokenizer, request: Request, step: DecodeStep,
                  node: int) -> None:
    """The step where candidate ``node`` of ``step`` fell out: every candidate of the step by cumulative log-prob, and
    the contrast between the piece kept after the same prefix and this one (app.views.contrastive)."""
    c = step.candidates[node]
    beam = translation.decode.beam_size
    kept = [k for k in step.candidates if k.status == "kept"]
    cut = kept[-1].log_prob if kept else None
    labels = [node_label(tokenizer, step, k) for k in step.candidates]
    fig = pruned_figure(labels, [k.log_prob for k in step.candidates], [k.status for k in step.candidates], node,
                        cut, title=f"Step {step.step + 1}: the {len(step.candidates)} continuations looked at"
                                   "<br><sup>red: the pruned one · dashed: the last one kept</sup>")
    st.plotly_chart(presentable(fig), key="pruned_step", width="stretch", theme=None,
                    config=plotly_config("pruned_step", st.session_state["image_format"]))
    piece = md(tokenizer.id_to_piece(c.token))
    if c.token == load_model(request.model_name).config.eos_id:
        why = (f"An ending </s> finishes a hypothesis only among the best {beam} of the step; this one ranked "
               f"{node + 1}.")
    elif cut is not None:
        why = (f"The beam keeps the best {beam} that do not end; the last one kept had {cut:.3f}, "
               f"{cut - c.log_prob:.3f} more than this one.")
    else:
        why = "No continuation was kept at this step."
    st.caption(f"**{md(labels[node])}** fell out at step {step.step + 1}: it ranked {node + 1} of the "
               f"{len(step.candidates)} continuations looked at, with cumulative log-prob {c.log_prob:.3f}. {why}")
    if keeps_ran(translation):
        st.caption("Keeping names and numbers: each bank of hypotheses is a beam of its own, so a bank's cut may lie "
                   "elsewhere than the line above.")
    sibling = next((k for k in step.candidates if k.row == c.row and k.status in ("kept", "finished")), None)
    if sibling is None:
        st.info("No piece after this prefix was kept: the whole prefix fell out at this step, outscored by the "
                "continuations of the other hypotheses. There is no kept piece after the same prefix to set it "
                "against.", icon=":material/content_cut:")
        return
    prefix_ids = tuple(step.prefixes[c.row].tolist())
    own = float(step.prefix_scores[c.row])
    kept_piece = md(tokenizer.id_to_piece(sibling.token))
    st.markdown(f"**Why {kept_piece} and not {piece}?** After the same prefix the search kept {kept_piece} "
                f"(cumulative log-prob {sibling.log_prob:.3f}): the two differ by exactly f = log p({kept_piece}) − "
                f"log p({piece}) = {sibling.log_prob - c.log_prob:.3f} at this step, which the attributions below "
                "split over the source pieces and the pieces read so far.")
    contrastive_ui(request.model_name, tuple(translation.source.ids), list(translation.source.pieces), prefix_ids,
                   tokenizer.pieces(list(prefix_ids)), sibling.token,
                   [(c.token, tokenizer.id_to_piece(c.token), math.exp(c.log_prob - own))], key="decoding_pruned")


def why_ui(translation: Translation, tokenizer: TextTokenizer, request: Request, step: DecodeStep, chosen: Candidate
           ) -> None:
    """Why this step's piece and not another of its top-k (app.views.contrastive), beside the cross-attention row."""
    if step.sample is not None:
        return
    row = chosen.row
    alternatives = [(int(i), tokenizer.id_to_piece(int(i)), float(p))
                    for i, p in zip(step.topk_ids[row].tolist(), step.topk_probs[row].tolist(), strict=True)
                    if int(i) != chosen.token]
    prefix_ids = tuple(step.prefixes[row].tolist())
    st.markdown(f"**Why this piece and not another?** Which source pieces and which pieces read so far push the model "
                f"towards **{md(tokenizer.id_to_piece(chosen.token))}** rather than another piece of the top "
                f"{len(alternatives) + 1}: compare with the cross-attention row above, where attention and attribution "
                "agree and where they do not.")
    contrastive_ui(request.model_name, tuple(translation.source.ids), list(translation.source.pieces), prefix_ids,
                   tokenizer.pieces(list(prefix_ids)), chosen.token, alternatives, key="decoding_why")


@weak_fragment
def steps_panel(translation: Translation, tokenizer: TextTokenizer, request: Request) -> None:
    steps = translation.result.steps
    if st.session_state.get("_step_for") not in (None, request):  # a new sentence or new settings: start at step 1
        st.session_state["step"] = 1  # (on a first visit, keep the step a link asked for)
    st.session_state["_step_for"] = request
    t = step_ui(len(steps), translation.target_input_pieces[0])
    chosen = candidate_ui(translation, tokenizer, request, t)
    step_detail_ui(translation, tokenizer, steps[t], chosen, load_model(request.model_name).config.eos_id)
    why_ui(translation, tokenizer, request, steps[t], chosen)
    if translation.decode.beam_size > 1:
        beam_ui(translation, tokenizer, request, t, chosen)
    elif translation.decode.sampling is not None:
        st.info("Sampling: one hypothesis, each piece drawn at random from the reshaped distribution (left). Another "
                "seed on the Translate page draws another sentence; temperature 0 is greedy decoding.")
    else:
        st.info("Greedy decoding: one hypothesis, one choice per step. Set the beam size above 1 on the Translate "
                "page to see the beam-search tree and the n-best list.")
    sync_url()


def main() -> None:
    st.title("Decoding, step by step")
    request = current_request()
    if not request.text.strip():
        st.info("No sentence yet: type one on the Translate page first.")
        st.page_link(TRANSLATE_PAGE, label="Go to Translate", icon=":material/translate:")
        return
    try:
        ckpt = load_model(request.model_name)
        translation = translate_request(request)
    except InputError as exc:
        st.info(f"{exc} Go to the Translate page to enter a sentence.")
        st.page_link(TRANSLATE_PAGE, label="Go to Translate", icon=":material/translate:")
        return
    except Exception:
        log.exception("decoding page failed for %r", request)
        st.error("Sorry, this sentence could not be decoded (an internal error; the details are in the server log).")
        return
    beam, sampling = translation.decode.beam_size, translation.decode.sampling
    search = "greedy" if beam == 1 else f"beam search, beam {beam}"
    if sampling is not None:
        search = f"sampled at temperature {sampling.temperature:g}, seed {sampling.seed}"
    st.markdown(f"Source: **{md(translation.source.text)}** → **{md(translation.text) or '(empty output)'}** "
                f"({search}, {len(translation.result.steps)} steps).")
    budget_notes(translation)
    st.caption(f"Each step runs the decoder once: it reads {translation.target_input_pieces[0]} (the start piece) "
               "and the pieces chosen so far, attends to itself "
               "(masked: earlier positions only) and to the encoded source, and outputs a probability for every "
               "piece of the vocabulary.")
    steps_panel(translation, ckpt.tokenizer, request)


main()
