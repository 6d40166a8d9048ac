"""From text to a translation with everything the UI and the CLI show: pieces, steps, n-best, attention."""
from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass

import torch

from model.checkpoints.meta import decode_rules_of, forced_bos_of
from model.decoding.batch_decoding import greedy_batch_steps
from model.decoding.constrained_beam import MAX_KEEP_PIECES, MAX_KEEPS, Keeps, keep_steps
from model.decoding.copy_words import CopyLexicon, keep_spans
from model.decoding.search import DecodeResult, DecodeStep, decode_steps, forced_steps
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.positional import MAX_POSITIONS
from model.network.trace import AttentionTrace, HeadMask
from model.network.transformer import Transformer
from model.serving.budget import DEFAULT_BUDGET, Budget, Plan, decode_cost, plan_decode
from model.serving.compiled_step import decoder_for
from model.tokenization.huggingface import HFTokenizer
from model.tokenization.kinds import TextTokenizer
from model.tokenization.m2m100 import M2M100Tokenizer
from model.tokenization.marian import MarianTokenizer
from model.tokenization.pieces import BYTE_PIECE, TokenizerError, clean_text

_UIDS = itertools.count(1)


class InputError(ValueError):
    """Text the model cannot translate (e.g. empty); the message is meant for the user."""


class Cancelled(BaseException):
    """The caller asked the work to stop (its browser session left, reran or changed a setting). Like
    KeyboardInterrupt it is a signal, not an error: ``except Exception`` handlers let it pass to the caller."""


StopSignal = Callable[[], bool]  # asked after every step: True stops the work (raises Cancelled)


def check_stop(should_stop: StopSignal | None) -> None:
    """Raise Cancelled if the caller wants the work stopped: long loops call this once per step."""
    if should_stop is not None and should_stop():
        raise Cancelled("stopped: the request was abandoned")


@dataclass(frozen=True)
class Source:
    """Encoder input prepared from user text. ids [S] end with EOS; ``dropped`` counts pieces cut to fit;
    ``kept`` the names and numbers a translation keeping them must write (model.decoding.copy_words), ``keeps`` those
    as the
    search needs them (None when no copy lexicon was given or the text has none)."""

    text: str
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    dropped: int
    kept: tuple[str, ...] = ()
    keeps: Keeps | None = dataclasses.field(default=None, compare=False)
    unkept: tuple[tuple[str, str], ...] = ()  # the phrases to keep that were not, each with why (CUT_OFF, ...)


@dataclass(frozen=True)
class Translation:
    """A finished translation of one sentence.

    ``trace`` is the attention the decoder used for the best output, its step rows stacked (equal to one
    teacher-forced forward of that output): decoder positions are labelled by their inputs
    ``target_input_pieces`` (the start token + output[:-1]; <s>, or <pad> for Marian) and predict ``target_pieces``.
    """

    source: Source
    result: DecodeResult
    target_ids: tuple[int, ...]
    target_pieces: tuple[str, ...]
    target_input_pieces: tuple[str, ...]
    text: str
    trace: AttentionTrace
    notes: tuple[str, ...] = ()  # what the budget reduced before decoding, and why (model.serving.budget.plan_decode)
    # the settings it was decoded with (after the budget's reductions); a keyword, as it follows fields with defaults
    decode: DecodeConfig = dataclasses.field(kw_only=True)
    # Unique in this process: what a figure drawn from this translation can be cached under (its tensors cannot be
    # hashed or compared cheaply), so every session shown the same translation shares the figure.
    uid: int = dataclasses.field(default_factory=lambda: next(_UIDS), compare=False)

    @property
    def forced(self) -> bool:
        """Whether this is a translation the model was handed and scored (``score_translation``), not its own."""
        return bool(self.result.steps) and self.result.steps[0].forced is not None

    @property
    def nbytes(self) -> int:
        """Memory its tensors hold (the stacked trace and every step's rows, each storage counted once): what a
        cache of translations must bound. A sentence takes well under 1 MB, a 200-word paragraph about 18 MB."""
        held = self.trace.tensors()
        for step in self.result.steps:
            held += [step.prefixes, step.prefix_scores, step.topk_ids, step.topk_probs, step.beams, step.beam_scores]
            held += step.attention.tensors() if step.attention is not None else []
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in held}
        return sum(storages.values())


def prepare_source(tokenizer: TextTokenizer, text: str, max_len: int = MAX_POSITIONS,
                   lexicon: CopyLexicon | None = None) -> Source:
    """Clean and encode user text; cut it to ``max_len`` positions (EOS included), by default the server's cap
    MAX_POSITIONS: a model reads past its own max_len (see ``beyond_training``), never past the cap. With a
    ``lexicon``, also the names and numbers of the text that was read (model.decoding.copy_words)."""
    cleaned = clean_text(text)
    if not cleaned:
        raise InputError("Type a sentence to translate.")
    try:
        ids = tokenizer.encode(cleaned)
    except TokenizerError as exc:  # a converted tokenizer.json that fails on this text (the library's own error)
        raise InputError(f"The model's tokenizer cannot read this text: {exc}") from None
    if not ids:
        raise InputError("The text has no characters the tokenizer can read.")
    source = tokenizer.source_ids(ids, max_len)
    wrapping = len(tokenizer.source_ids([]))  # EOS, or a tokenizer's own specials around a source (<s> ... </s>)
    dropped = len(ids) + wrapping - len(source)
    kept, unkept = ([], []) if lexicon is None else _kept(tokenizer, cleaned, lexicon, ids[:len(source) - wrapping])
    return Source(text=cleaned, ids=tuple(source), pieces=tuple(tokenizer.pieces(source)), dropped=dropped,
                  kept=tuple(phrase for phrase, _ in kept), unkept=tuple(unkept),
                  keeps=Keeps(tuple(ids for _, ids in kept), word_boundaries(tokenizer),
                              tuple(_last_word(tokenizer, ids) for _, ids in kept)) if kept else None)


CUT_OFF = "cut off with the end of the input"  # why a phrase is not kept (Source.unkept)
TOO_LONG = f"longer than {MAX_KEEP_PIECES} pieces"
TOO_MANY = f"at most {MAX_KEEPS} phrases per sentence"


def _kept(tokenizer: TextTokenizer, text: str, lexicon: CopyLexicon, read: list[int]
          ) -> tuple[list[tuple[str, tuple[int, ...]]], list[tuple[str, str]]]:
    """The phrases to keep, with their pieces, and those not kept, with why: among the text's pieces the encoder reads
    (``read``; a phrase the cut dropped is not the model's to write), at most MAX_KEEPS phrases of at most
    MAX_KEEP_PIECES pieces. Adjacent words too long to keep as one phrase ("1000 1001 ... 1029") are kept as several,
    each as many of the words as fit; a single word longer than that is left to the model."""
    read_text = tokenizer.decode(read)
    kept: list[tuple[str, tuple[int, ...]]] = []
    unkept: list[tuple[str, str]] = []
    for spans in keep_spans(text, lexicon):
        for phrase, ids in _parts(tokenizer, text, spans, full=lambda: len(kept) >= MAX_KEEPS):
            if phrase in (p for p, _ in kept) or phrase in (p for p, _ in unkept):
                continue
            if phrase not in read_text:
                unkept.append((phrase, CUT_OFF))
            elif len(kept) >= MAX_KEEPS:
                unkept.append((phrase, TOO_MANY))
            elif len(ids) > MAX_KEEP_PIECES:
                unkept.append((phrase, TOO_LONG))
            elif ids:
                kept.append((phrase, ids))
    return kept, unkept


def unkept_notes(unkept: Sequence[tuple[str, str]], shown: int = 4) -> list[str]:
    """What could not be kept and why, one line per reason: "not kept (at most 8 phrases per sentence): 1032 … 1059
    (28 words), Berlin" (the first ``shown`` phrases, a long one by its first and last word, or cut to 40
    characters)."""
    notes = []
    for why in dict.fromkeys(why for _, why in unkept):
        phrases = [_shown(phrase) for phrase, reason in unkept if reason == why]
        more = f" and {len(phrases) - shown} more" if len(phrases) > shown else ""
        notes.append(f"not kept ({why}): {', '.join(phrases[:shown])}{more}")
    return notes


def _shown(phrase: str) -> str:
    words = phrase.split()
    if len(phrase) <= 40:
        return phrase
    if len(words) > 2 and len(words[0]) + len(words[-1]) <= 36:
        return f"{words[0]} … {words[-1]} ({len(words)} words)"
    return phrase[:39] + "…"


def _parts(tokenizer: TextTokenizer, text: str, spans: list[tuple[int, int]], full: Callable[[], bool]
           ) -> Iterator[tuple[str, tuple[int, ...]]]:
    """A phrase of keep_spans as the parts to keep, with their pieces: whole when it fits MAX_KEEP_PIECES, else cut
    between words into runs that each fit, longest first. Once ``full()`` (no phrase can be kept any more) the rest
    comes whole and unencoded: at most MAX_KEEPS runs are ever built, however many numbers a text lists."""
    whole = text[spans[0][0]:spans[-1][1]]
    if full():
        yield whole, ()
        return
    ids = tuple(tokenizer.encode(whole))
    if len(ids) <= MAX_KEEP_PIECES or len(spans) == 1:
        yield whole, ids
        return
    start = 0
    while start < len(spans):
        if full():
            yield text[spans[start][0]:spans[-1][1]], ()
            return
        end, part = start + 1, text[spans[start][0]:spans[start][1]]
        part_ids = tuple(tokenizer.encode(part))
        while end < len(spans) and len(part_ids) <= MAX_KEEP_PIECES:
            longer = text[spans[start][0]:spans[end][1]]
            longer_ids = tuple(tokenizer.encode(longer))
            if len(longer_ids) > MAX_KEEP_PIECES:
                break
            part, part_ids, end = longer, longer_ids, end + 1
        yield part, part_ids
        start = end


def _last_word(tokenizer: TextTokenizer, ids: tuple[int, ...]) -> tuple[int, ...]:
    """The pieces of a kept phrase's last word when it has more than one ("Schmidt" of "Dr. Anna Schmidt"), else ():
    the keep search does not write the phrase where its last word already stands (model.decoding.constrained_beam)."""
    starts = [j for j, piece in enumerate(tokenizer.pieces(list(ids))) if j and piece.startswith("▁")]
    return ids[starts[-1]:] if starts else ()


_BOUNDARIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> its word boundaries


def word_boundaries(tokenizer: TextTokenizer) -> torch.Tensor:
    """[V] bool: the pieces that may follow a finished kept phrase: one that starts a word ("▁"), punctuation
    (sentencepiece's convention; a raw byte may be inside a word, so it is not one); the search adds EOS. Once per
    tokenizer while it lives."""
    if tokenizer not in _BOUNDARIES:
        pieces = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)]
        starts = [p.startswith("▁") or (not p[:1].isalnum() and not BYTE_PIECE.fullmatch(p)) for p in pieces]
        _BOUNDARIES[tokenizer] = torch.tensor(starts)
    return _BOUNDARIES[tokenizer]


def _capped(model: Transformer, config: DecodeConfig) -> DecodeConfig:
    """The config with its output capped at MAX_POSITIONS positions (BOS included), or at the model's own position
    limit (a learned table has no row past it)."""
    limit = min(MAX_POSITIONS, model.config.position_limit)
    return dataclasses.replace(config, max_len=min(config.max_len, limit - 1))


def stream(model: Transformer, source: Source, config: DecodeConfig, capture: Capture = Capture.WEIGHTS,
           head_mask: HeadMask | None = None) -> Iterator[DecodeStep]:
    """The decode steps for a prepared source, its output capped (``_capped``); with config.keep_words and names or
    numbers in the source, the search keeps them (model.decoding.constrained_beam)."""
    device = next(model.parameters()).device
    if config.keep_words and source.keeps is not None:
        return keep_steps(model, torch.tensor(source.ids, device=device), source.keeps, _capped(model, config),
                          capture, None if head_mask is None else head_mask.to(device))
    return decode_steps(decoder_for(model, capture), torch.tensor(source.ids, device=device), _capped(model, config),
                        capture, None if head_mask is None else head_mask.to(device))


def stream_batch(model: Transformer, sources: Sequence[Source], configs: Sequence[DecodeConfig],
                 capture: Capture = Capture.WEIGHTS) -> Generator[dict[int, DecodeStep], None, None]:
    """Greedy decoding of several prepared sources as one batch (model.decoding.batch_decoding), source i under
    configs[i]:
    per step, {i: the step ``stream`` yields for source i alone} for each source still decoding."""
    device = next(model.parameters()).device
    return greedy_batch_steps(decoder_for(model, capture), [torch.tensor(s.ids, device=device) for s in sources],
                              [_capped(model, c) for c in configs], capture)


def finish(model: Transformer, tokenizer: TextTokenizer, source: Source, steps: list[DecodeStep],
           plan: Plan) -> Translation:
    """Assemble the Translation once the last step is in, its trace from the rows captured while decoding."""
    result = DecodeResult.from_steps(steps, plan.decode.beam_size)
    best = result.best
    inputs = (model.config.bos_id, *best.tokens[:-1])  # bos_id: the decoder_start_id (ModelConfig checks they agree)
    return Translation(source=source, result=result, target_ids=best.tokens,
                       target_pieces=tuple(tokenizer.pieces(best.tokens)),
                       target_input_pieces=tuple(tokenizer.pieces(inputs)), text=tokenizer.decode(best.tokens),
                       trace=result.attention_for(best), notes=plan.notes_for(len(steps)), decode=plan.decode)


UNTRUSTED_UNKNOWN_SHARE = 0.3  # from this share of unknown source pieces on, a translation is mostly guesswork


def unknown_pieces(source: Source, unk_id: int) -> tuple[int, int]:
    """The source's pieces (EOS excluded) the vocabulary lacks, as (read as <unk>, spelled as raw bytes by a
    byte-fallback tokenizer): the app says which of the two the model was given."""
    ids, pieces = source.ids[:-1], source.pieces[:-1]
    unk = sum(i == unk_id for i in ids)
    raw = sum(i != unk_id and bool(BYTE_PIECE.fullmatch(p)) for i, p in zip(ids, pieces, strict=True))
    return unk, raw


def unknown_share(source: Source, unk_id: int) -> float:
    """The share of the source's pieces (EOS excluded) the vocabulary lacks (``unknown_pieces``). Chinese or emoji
    for the en-de model are all such pieces, and its "translation" then says nothing about the input."""
    return sum(unknown_pieces(source, unk_id)) / max(len(source.ids) - 1, 1)


def beyond_training(model: Transformer, length: int) -> bool:
    """Whether a sequence of ``length`` positions is longer than the model was built for (its config's
    max_len): it still runs, on positions it never saw, so the UI says so."""
    return length > model.config.max_len


def target_language(tokenizer: TextTokenizer, meta: dict, chosen: str | None = None) -> str | None:
    """The code a multilingual fairseq model (mBART-50, M2M100, NLLB) translates into: ``chosen`` when the model has
    it, else the one its own config forces, else German (the examples are English -> German), else its first; None
    for a model with one target language."""
    codes = tokenizer.target_languages
    if not codes:
        return None
    if chosen in codes:
        return chosen
    own = forced_bos_of(meta)
    if own is not None and tokenizer.id_to_piece(own) in codes:
        return tokenizer.id_to_piece(own)
    return next((code for code in codes if code.strip("_").startswith("de")), codes[0])


def decode_rules(tokenizer: TextTokenizer, meta: dict, chosen: str | None = None) -> dict:
    """The decoding rules a model brings (model.checkpoints.meta.decode_rules_of), the piece forced first being the
    target
    language's code for a multilingual model (target_language): DecodeConfig's keyword arguments."""
    rules = decode_rules_of(meta)
    code = target_language(tokenizer, meta, chosen)
    if code is not None and isinstance(tokenizer, HFTokenizer | M2M100Tokenizer):  # the kinds with target languages
        rules["forced_bos"] = tokenizer.piece_id(code)
    return rules


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Right-pad id lists to one length, as training batches them: -> [B, L] (long)."""
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long,
                        device=device)  # [B, L]


def planned(model: Transformer, tokenizer: TextTokenizer, text: str, config: DecodeConfig,
            budget: Budget = DEFAULT_BUDGET, lexicon: CopyLexicon | None = None) -> tuple[Source, Plan]:
    """The source and the decode settings a request runs with, priced and fitted into ``budget`` before any
    decoding (model.serving.budget.plan_decode: what was reduced is in the plan's notes). With config.keep_words, the
    names and numbers the ``lexicon`` picks are kept."""
    lexicon = lexicon if config.keep_words else None
    source = prepare_source(tokenizer, text, min(MAX_POSITIONS, model.config.position_limit), lexicon)
    plan = plan_decode(model.config, len(source.ids), config, budget)
    if plan.source_len < len(source.ids):
        source = prepare_source(tokenizer, text, plan.source_len, lexicon)
    return source, plan


def translate(model: Transformer, tokenizer: TextTokenizer, text: str, config: DecodeConfig = DecodeConfig(),
              head_mask: HeadMask | None = None, budget: Budget = DEFAULT_BUDGET,
              should_stop: StopSignal | None = None, lexicon: CopyLexicon | None = None) -> Translation:
    """Translate one sentence and capture all its attention (with the heads in ``head_mask`` switched off).

    The request is priced first and reduced to fit ``budget`` (the Translation's ``notes`` say what was
    reduced); ``should_stop`` is asked after every step and stops the decode with Cancelled."""
    source, plan = planned(model, tokenizer, text, config, budget, lexicon)
    steps = []
    for step in stream(model, source, plan.decode, head_mask=head_mask):
        steps.append(step)
        check_stop(should_stop)
    return finish(model, tokenizer, source, steps, plan)


def target_ids(tokenizer: TextTokenizer, text: str) -> list[int]:
    """The pieces of a translation as the model writes them, without EOS: Marian's through its target sentencepiece
    model (its source one cuts the other language), every other tokenizer's through its one model."""
    if isinstance(tokenizer, MarianTokenizer):
        return [tokenizer.vocab.get(piece, tokenizer.unk_id) for piece in tokenizer.target.encode(text, out_type=str)]
    return tokenizer.encode(text)


def planned_forced(model: Transformer, tokenizer: TextTokenizer, text: str, forced_text: str,
                   config: DecodeConfig = DecodeConfig(), budget: Budget = DEFAULT_BUDGET
                   ) -> tuple[Source, tuple[int, ...], Plan]:
    """The source, the pieces to force and the plan of scoring ``forced_text`` as the translation of ``text``, priced
    before any work like a greedy decode of that many pieces. The given translation is bounded like the source: at
    most the positions the model reads (MAX_POSITIONS, or its own position limit), then what the budget allows; a
    cut one loses its end (and its EOS), and the plan's notes say so. The config's forced first piece (a multilingual
    model's language code) is put first, as decoding writes it."""
    source = prepare_source(tokenizer, text, min(MAX_POSITIONS, model.config.position_limit))
    cleaned = clean_text(forced_text)
    if not cleaned:
        raise InputError("Type the translation to score.")
    pieces = target_ids(tokenizer, cleaned)
    if not pieces:
        raise InputError("The translation to score has no characters the tokenizer can read.")
    ids = ([] if config.forced_bos is None else [config.forced_bos]) + pieces + [model.config.eos_id]
    given = len(ids)
    ids = ids[:min(MAX_POSITIONS, model.config.position_limit) - 1]  # the start token takes a position too
    greedy = dataclasses.replace(config, beam_size=1, sampling=None, keep_words=False, no_repeat_ngram=0,
                                 forced_eos=False, max_len=len(ids))
    cost = decode_cost(model.config, len(source.ids), greedy)  # the length is given: no output_bound to cut it to
    plan = plan_decode(model.config, len(source.ids), greedy, budget) if cost.over(budget) else \
        Plan(greedy, len(source.ids), cost)
    if plan.source_len < len(source.ids):
        source = prepare_source(tokenizer, text, plan.source_len)
    ids = ids[:plan.decode.max_len]
    notes = plan.notes
    if len(ids) < given:
        notes += (f"The translation to score was cut to its first {len(ids)} of {given} pieces (</s> included): the "
                  "rest, and its end, are not scored.",)
    return source, tuple(ids), dataclasses.replace(plan, notes=notes, bound_note=None)


def score_translation(model: Transformer, tokenizer: TextTokenizer, text: str, forced_text: str,
                      config: DecodeConfig = DecodeConfig(), head_mask: HeadMask | None = None,
                      budget: Budget = DEFAULT_BUDGET, should_stop: StopSignal | None = None) -> Translation:
    """What the model thinks of a translation it is handed (teacher forcing, model.decoding.forcing): the ordinary
    Translation of a decode made to write ``forced_text``, with its steps (each with the model's top-k and how the
    given piece stood: ``DecodeStep.forced``), its n-best list of one (its log_prob the given text's log-probability)
    and every attention weight of that pass. Priced and bounded first (``planned_forced``); ``should_stop`` is asked
    after every step. Forcing the greedy output gives the greedy Translation back."""
    source, ids, plan = planned_forced(model, tokenizer, text, forced_text, config, budget)
    device = next(model.parameters()).device
    steps = []
    for step in forced_steps(model, torch.tensor(source.ids, device=device), ids, plan.decode,
                             head_mask=None if head_mask is None else head_mask.to(device)):
        steps.append(step)
        check_stop(should_stop)
    return finish(model, tokenizer, source, steps, plan)
