"""Beam search that must keep given words verbatim: grid beam search (Hokamp & Liu, 2017) with dynamic beam
allocation's candidates (Post & Vilar, 2018).

A small model copies a name or a number piece by piece and often slips ("Rahman" -> "Rahmann", "Kiel" dropped). The
words it must keep (``Keeps``: phrases of the source, model.decoding.copy_words, as the target's pieces) change the
search: every step also considers, per live row, the next piece of each phrase not yet written, and hypotheses are
grouped
into *banks* by how many kept pieces they hold, each bank a beam of its own. The model's own best hypotheses live in
bank 0 as in plain beam search, beside those that have written more of the phrases. EOS ends a hypothesis in any
bank, but the output is the best one that keeps every phrase; one that does not is the answer only when none does.
Every piece, kept or not, is scored by the model's own log-probability, and the attention of every step is the
model's: only the search changes, not what the model computes.

A phrase counts as written when its last piece is followed by a word boundary (a piece that starts a new word, a
punctuation mark or EOS): "Anna" is not kept by "Annatin". A row that already wrote a phrase's last word on its own
does not start that phrase: "2023. Anna Schmidt bezahlt" would go on "Dr. Anna Schmidt", the name twice; there the
phrase written again does not count.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from model.decoding.search import (
    Candidate,
    DecodeStep,
    Hypothesis,
    _banned,
    _finished,
    _search_is_over,
    beam_steps,
    extend_beams,
    forced_piece,
    search_step,
    selectable_log_probs,
    start_search,
    statuses,
    step_attention,
    top_next,
)
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import HeadMask
from model.network.transformer import Transformer

MAX_KEEPS = 8  # phrases one sentence may keep: each adds a candidate per live row and step
MAX_KEEP_PIECES = 24  # pieces of one kept phrase
MAX_BANKS = 8  # banks kept at a step: a search holds at most MAX_BANKS x beam_size live rows (model.serving.budget
# prices that)


@dataclass(frozen=True)
class Keeps:
    """The phrases an output must keep: ``phrases`` each as the target pieces that write it (a word start first),
    ``boundary`` [V] (bool) the pieces that may follow a finished phrase: those that start a word, and punctuation
    (EOS always may), and ``tails`` per phrase the pieces of its last word when it has more than one, else () (none
    given: no phrase has)."""

    phrases: tuple[tuple[int, ...], ...]
    boundary: torch.Tensor
    tails: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if len(self.phrases) > MAX_KEEPS:
            raise ValueError(f"at most {MAX_KEEPS} phrases can be kept, got {len(self.phrases)}")
        if any(not 1 <= len(w) <= MAX_KEEP_PIECES for w in self.phrases):
            raise ValueError(f"a kept phrase is 1 to {MAX_KEEP_PIECES} pieces")
        if self.tails and (len(self.tails) != len(self.phrases) or any(
                t and (len(t) >= len(w) or w[-len(t):] != t) for w, t in zip(self.phrases, self.tails, strict=True))):
            raise ValueError("a tail is the last pieces of its phrase, shorter than it, one per phrase")

    def startable(self, i: int, row: Sequence[int]) -> bool:
        """Whether phrase ``i`` may start after ``row`` (a hypothesis's pieces so far): not where its last word
        already stands, as it would stand twice."""
        tail = self.tails[i] if self.tails else ()
        return not tail or not _holds(row, tail)

    @property
    def total(self) -> int:
        """Pieces of every kept phrase: the highest bank."""
        return sum(len(w) for w in self.phrases)


@dataclass(frozen=True)
class KeepState:
    """How far one hypothesis is: ``met`` the phrases written whole; ``phrase`` the one being written (None if none) and
    ``written`` its pieces so far (all of them: it waits for a word boundary)."""

    met: frozenset[int] = frozenset()
    phrase: int | None = None
    written: int = 0

    def bank(self, keeps: Keeps) -> int:
        """Kept pieces this hypothesis holds: its bank."""
        return sum(len(keeps.phrases[i]) for i in self.met) + self.written

    def done(self, keeps: Keeps) -> bool:
        return len(self.met) == len(keeps.phrases)

    def next_pieces(self, keeps: Keeps, row: Sequence[int] = ()) -> set[int]:
        """The pieces that would take a kept phrase one piece further after ``row``: the next piece of every unmet
        phrase that starts like the one being written, or the first piece of every unmet phrase that may start."""
        return {keeps.phrases[i][self.written] for i in self._open(keeps) if self.written < len(keeps.phrases[i])
                and (self.phrase is not None or keeps.startable(i, row))}

    def _open(self, keeps: Keeps) -> list[int]:
        """Unmet phrases whose first ``written`` pieces are those written so far."""
        head = () if self.phrase is None else keeps.phrases[self.phrase][:self.written]
        return [i for i, w in enumerate(keeps.phrases) if i not in self.met and w[:self.written] == head]

    def advance(self, token: int, keeps: Keeps, boundary: bool, row: Sequence[int] = ()) -> KeepState:
        """The state after writing ``token`` after ``row`` (``boundary``: whether it may follow a finished phrase)."""
        met, state = self.met, self
        if self.phrase is not None and self.written == len(keeps.phrases[self.phrase]):  # written: ends here?
            met = met | {self.phrase} if boundary else met
            state = KeepState(met)
        if state.phrase is not None:  # being written: go on with it, or with an unmet phrase it shares pieces with
            for i in state._open(keeps):
                if state.written < len(keeps.phrases[i]) and keeps.phrases[i][state.written] == token:
                    return KeepState(met, i, state.written + 1)
        for i, phrase in enumerate(keeps.phrases):  # a piece that starts an unmet phrase (also right after a slip)
            if i not in met and phrase[0] == token and keeps.startable(i, row):
                return KeepState(met, i, 1)
        return KeepState(met)


def _holds(row: Sequence[int], part: Sequence[int]) -> bool:
    """Whether ``part`` stands in ``row`` as a run of consecutive pieces."""
    n, part = len(part), list(part)
    return any(list(row[i:i + n]) == part for i in range(len(row) - n + 1) if row[i] == part[0])


def keep_states(tokens: Sequence[int], keeps: Keeps, eos_id: int) -> list[KeepState]:
    """The state after each piece of an output (EOS closes a phrase): what the Decoding page shows per step."""
    states, state = [], KeepState()
    for at, token in enumerate(tokens):
        state = state.advance(token, keeps, token == eos_id or bool(keeps.boundary[token]), tokens[:at])
        states.append(state)
    return states


def _allocate(candidates: list[tuple[float, int, int, KeepState]], keeps: Keeps, eos_id: int,
              beam_size: int) -> list[tuple[Candidate, KeepState]]:
    """Grid beam search's selection (Hokamp & Liu, 2017): candidates (score, row, token, state after it) sorted
    into banks by kept pieces, and each bank is a beam of its own: as in beam search, EOS among its first
    beam_size finishes a hypothesis, other pieces fill it up to beam_size, the rest are pruned (of those, a step
    records each bank's best one: up to MAX_BANKS banks of candidates would crowd the beam tree). Past MAX_BANKS
    banks, the middle ones are pruned whole."""
    banks: dict[int, list[tuple[float, int, int, KeepState]]] = {}
    for c in sorted(candidates, key=lambda c: c[0], reverse=True):
        banks.setdefault(c[3].bank(keeps), []).append(c)
    order = sorted(banks, reverse=True)
    if len(order) > MAX_BANKS:  # the highest banks and bank 0, the model's own beam
        order = order[:MAX_BANKS - 1] + order[-1:]
    chosen = []
    for bank in sorted(banks, reverse=True):
        ranked = banks[bank]
        fates = statuses([c[:3] for c in ranked], eos_id, beam_size) if bank in order else ["pruned"] * len(ranked)
        first_pruned = fates.index("pruned") if "pruned" in fates else -1
        chosen += [(Candidate(row, token, score, status), state)
                   for rank, ((score, row, token, state), status) in enumerate(zip(ranked, fates, strict=True))
                   if status != "pruned" or rank == first_pruned]  # the tree shows where each bank's cut fell
    return chosen


def _candidates(scores: torch.Tensor, rows: Sequence[Sequence[int]], states: Sequence[KeepState], keeps: Keeps,
                boundary: list[bool], eos_id: int, beam_size: int) -> list[tuple[float, int, int, KeepState]]:
    """What the search considers at a step: each row's 2 x beam best continuations (so every bank can fill its
    beam from its own rows), each row's next kept pieces (DBA's addition), and EOS for each row it would finish with
    every phrase kept. scores [R, V] cumulative log-probs; rows: each row's pieces so far; boundary: keeps.boundary
    as a list."""
    top = scores.topk(min(2 * beam_size, scores.size(1)), dim=1).indices.tolist()  # [R, 2k]
    pairs = {(row, token) for row, tokens in enumerate(top) for token in tokens}
    pairs |= {(row, token) for row, state in enumerate(states) for token in state.next_pieces(keeps, rows[row])}
    pairs |= {(row, eos_id) for row, state in enumerate(states) if state.advance(eos_id, keeps, True).done(keeps)}
    ordered = sorted(pairs)
    values = scores[[r for r, _ in ordered], [t for _, t in ordered]].tolist()  # one read of the chosen cells
    return [(value, row, token, states[row].advance(token, keeps, token == eos_id or boundary[token], rows[row]))
            for value, (row, token) in zip(values, ordered, strict=True)]


@torch.inference_mode()
def keep_beam_steps(model: Transformer, src: torch.Tensor, keeps: Keeps,
                    config: DecodeConfig = DecodeConfig(beam_size=4), capture: Capture = Capture.WEIGHTS,
                    head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Beam search (as model.decoding.search.beam_steps, the same steps and stopping rules) whose output keeps
    every phrase of ``keeps`` when it can: finished hypotheses that keep them all come first (best first), then those
    that ended without them, so there is always an output. The search stops by the config's early_stopping rule
    applied to the first kind, at the length limit, or once it gives up (``_gave_up``). src [S] or [1, S]."""
    start = start_search(model, src, config, capture, head_mask)
    src, state, encoder, prefixes, scores = start.src, start.state, start.encoder, start.prefixes, start.scores
    cfg = model.config
    paths: list[tuple[int, ...]] = [()]
    states = [KeepState()]
    boundary = keeps.boundary.tolist()
    complete: list[Hypothesis] = []  # finished with every phrase kept: the answer
    partial: list[Hypothesis] = []  # finished without: the answer only if no hypothesis keeps them all
    for t in range(config.max_len):
        out = search_step(model, start, state, prefixes, t, capture)
        topk_probs, topk_ids = top_next(out.log_probs, config.top_k)  # [R, k]
        forced = forced_piece(config, t, cfg.eos_id)
        selectable = selectable_log_probs(out.log_probs, cfg.bos_id, cfg.pad_id, forced, cfg.eos_id,
                                          _banned(prefixes, config))  # [R, V]
        candidates = _candidates(scores[:, None] + selectable, prefixes[:, 1:].tolist(), states, keeps, boundary,
                                 cfg.eos_id, config.beam_size)
        chosen = _allocate(candidates, keeps, cfg.eos_id, config.beam_size)
        last = t + 1 == config.max_len
        for c, s in chosen:
            if c.status == "finished" or (last and c.status == "kept"):
                hyp = _finished((*prefixes[c.row, 1:].tolist(), c.token), c.log_prob, (*paths[c.row], c.row),
                                cfg.eos_id, config)
                (complete if s.done(keeps) else partial).append(hyp)
        complete.sort(key=lambda h: h.score, reverse=True)
        partial.sort(key=lambda h: h.score, reverse=True)
        kept = [(c, s) for c, s in chosen if c.status == "kept"]
        parents, beams, beam_scores = extend_beams(prefixes, [c for c, _ in kept])  # [R'], [R', t+2], [R']
        best_live = max((c.log_prob for c, _ in kept), default=float("-inf"))
        done = (last or not kept or _search_is_over(complete, best_live, t + 1, config)
                or _gave_up(complete, partial, t + 1, src.size(1)))
        yield DecodeStep(step=t, prefixes=prefixes, prefix_scores=scores, topk_ids=topk_ids, topk_probs=topk_probs,
                         attention=step_attention(encoder, out.attention), candidates=tuple(c for c, _ in chosen),
                         beams=beams, beam_scores=beam_scores, parents=parents, finished=(*complete, *partial),
                         done=done, banks=tuple(s.bank(keeps) for _, s in kept))
        if done:
            return
        state = out.state.reorder(parents)
        paths = [paths[c.row] + (c.row,) for c, _ in kept]
        states = [s for _, s in kept]
        prefixes, scores = beams, beam_scores


GIVE_UP_STRETCH = 1.5  # how much longer than the best output without every phrase the search goes on looking


def _gave_up(complete: Sequence[Hypothesis], partial: Sequence[Hypothesis], generated: int, source: int) -> bool:
    """Whether to stop looking for an output that keeps every word: none has finished, and the live beams are
    already half again as long as the source and as the best output that ended without them (plus a few pieces). A
    word the model cannot write otherwise sends the beams on and on, into text no one asked for."""
    if complete or not partial:
        return False
    return generated >= GIVE_UP_STRETCH * max(len(partial[0].tokens), source) + 4


def keep_steps(model: Transformer, src: torch.Tensor, keeps: Keeps, config: DecodeConfig,
               capture: Capture = Capture.WEIGHTS, head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """Beam search's steps when its output already keeps every phrase, else the steps of ``keep_beam_steps``. A
    wider search finds outputs the model scores higher, and a small model scores short ones high ("Beschleunigt das
    100%." for a whole sentence): so the keep search runs only where beam search drops or garbles a phrase, and
    what it already got right stays exactly as it was."""
    steps = list(beam_steps(model, src, config, capture, head_mask))
    best = steps[-1].finished[0].tokens if steps[-1].finished else ()
    if best and keep_states(best, keeps, model.config.eos_id)[-1].done(keeps):
        yield from steps
        return
    yield from keep_beam_steps(model, src, keeps, config, capture, head_mask)
