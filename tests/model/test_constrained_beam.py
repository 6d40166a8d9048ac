"""Keeping names and numbers: model.decoding.constrained_beam's search on the tiny random model, over generated sources
and
generated phrases to keep (properties), and its word-boundary rule on hand-made cases."""
from __future__ import annotations

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from model.decoding.constrained_beam import MAX_BANKS, Keeps, KeepState, keep_beam_steps, keep_states, keep_steps
from model.decoding.search import DecodeResult, beam_steps
from model.network.attention import Capture
from model.network.config import DecodeConfig
from tests.conftest import eos_leaning
from tests.model.test_properties_decoding import EOS, FIRST_ID, assert_rows_equal_teacher_forcing, sources

WORD_START = 10  # in these tests, ids from WORD_START on start a word; those below continue one


@pytest.fixture(scope="module")
def models(tiny_model):
    return {"random": tiny_model, "eos-leaning": eos_leaning(tiny_model, EOS)}


def boundaries(vocab: int) -> torch.Tensor:
    return torch.arange(vocab) >= WORD_START  # [V]


def phrases(vocab: int):
    """1-2 phrases of 1-3 pieces, each starting a word (so that an output keeping them fits in 10 pieces, the length
    the log-prob tolerance of the teacher-forcing check is set for)."""
    phrase = st.tuples(st.integers(WORD_START, vocab - 1)).flatmap(
        lambda head: st.lists(st.integers(FIRST_ID, vocab - 1), max_size=2).map(lambda rest: (*head, *rest)))
    return st.lists(phrase, min_size=1, max_size=2, unique=True).map(tuple)


def decode(model, src, keeps, config) -> DecodeResult:
    return DecodeResult.from_steps(list(keep_beam_steps(model, src, keeps, config)), config.beam_size)


def kept_all(tokens, keeps) -> bool:
    return keep_states(tokens, keeps, EOS)[-1].done(keeps) if tokens else not keeps.phrases


@given(data=st.data())
def test_nothing_to_keep_is_beam_search(models, data):
    """Bank 0 is the model's own beam: with no phrase, the same steps, outputs and scores as beam search."""
    model = models[data.draw(st.sampled_from(sorted(models)), label="model")]
    src = data.draw(sources(model.config.vocab_size), label="src")
    config = DecodeConfig(beam_size=data.draw(st.integers(2, 4)), max_len=data.draw(st.integers(1, 8)),
                          length_penalty=data.draw(st.sampled_from([0.0, 0.6, 1.5])))
    keeps = Keeps((), boundaries(model.config.vocab_size))
    ours = list(keep_beam_steps(model, src, keeps, config, capture=Capture.NONE))
    plain = list(beam_steps(model, src, config, capture=Capture.NONE))
    assert len(ours) == len(plain)
    for a, b in zip(ours, plain, strict=True):
        assert torch.equal(a.beams, b.beams)
        assert [(h.tokens, h.score) for h in a.finished] == [(h.tokens, h.score) for h in b.finished]


@given(data=st.data())
def test_outputs_keep_every_phrase_first(models, data):
    """Every finished hypothesis that keeps all phrases (each written whole, followed by a word start or EOS) ranks
    before every one that does not; the outputs' attention and scores are the model's own (one teacher-forced
    forward), forced pieces included; a search never holds more than MAX_BANKS beams."""
    model = models[data.draw(st.sampled_from(sorted(models)), label="model")]
    vocab = model.config.vocab_size
    src = data.draw(sources(vocab), label="src")
    keeps = Keeps(data.draw(phrases(vocab), label="phrases"), boundaries(vocab))
    alpha = data.draw(st.sampled_from([0.0, 0.6, 1.5]))
    config = DecodeConfig(beam_size=data.draw(st.integers(2, 3)), max_len=data.draw(st.integers(keeps.total + 1, 10)),
                          length_penalty=alpha)
    steps = list(keep_beam_steps(model, src, keeps, config))
    finished = steps[-1].finished
    flags = [kept_all(h.tokens, keeps) for h in finished]
    assert flags == sorted(flags, reverse=True)
    complete = [h for h, kept in zip(finished, flags, strict=True) if kept]
    assert [h.score for h in complete] == sorted((h.score for h in complete), reverse=True)
    assert all(s.prefixes.size(0) <= MAX_BANKS * config.beam_size for s in steps)
    assert_rows_equal_teacher_forcing(model, src, DecodeResult.from_steps(steps, config.beam_size), alpha)


@given(data=st.data())
def test_what_beam_search_already_keeps_stays_exactly_as_it_was(models, data):
    """keep_steps: where beam search's output keeps every phrase (here, phrases cut from that very output), the same
    steps; where it does not, the keep search's steps."""
    model = models[data.draw(st.sampled_from(sorted(models)), label="model")]
    vocab = model.config.vocab_size
    src = data.draw(sources(vocab), label="src")
    config = DecodeConfig(beam_size=data.draw(st.integers(2, 3)), max_len=data.draw(st.integers(2, 10)))
    plain = list(beam_steps(model, src, config, capture=Capture.NONE))
    best = plain[-1].finished[0].tokens
    ends = {i: next((j for j in range(i + 1, len(best)) if best[j] >= WORD_START or best[j] == EOS), None)
            for i, t in enumerate(best) if t >= WORD_START}
    words = {i: j for i, j in ends.items() if j is not None}  # whole words a word start or EOS follows
    own = data.draw(st.booleans(), label="from its output") and bool(words)
    if own:
        at = data.draw(st.sampled_from(sorted(words)))
        phrase = best[at:words[at]]
    else:
        phrase = data.draw(phrases(vocab))[0]
    keeps = Keeps((tuple(phrase),), boundaries(vocab))
    ours = list(keep_steps(model, src, keeps, config, capture=Capture.NONE))
    kept_by_plain = kept_all(best, keeps)
    assert kept_by_plain or not own  # a whole word of the output, followed by a word start or its end, is kept
    expected = plain if kept_by_plain else list(keep_beam_steps(model, src, keeps, config, capture=Capture.NONE))
    assert [tuple(s.beams.flatten().tolist()) for s in ours] == [tuple(s.beams.flatten().tolist()) for s in expected]
    assert all((s.banks is None) == kept_by_plain for s in ours)  # the page tells the two searches apart by it
    if not kept_by_plain:  # each live beam's bank is the kept pieces it holds
        assert all(s.banks == tuple(keep_states(b[1:].tolist(), keeps, EOS)[-1].bank(keeps) for b in s.beams)
                   for s in ours)
    assert ours[-1].finished[0].tokens == expected[-1].finished[0].tokens


def test_a_phrase_the_model_would_not_write_is_kept(tiny_model):
    """The random model does not write a given piece on its own; the search does, and the best output keeps it."""
    src = torch.tensor([5, 6, 7, 8, EOS])
    config = DecodeConfig(beam_size=3, max_len=10, length_penalty=0.6)
    plain = DecodeResult.from_steps(list(beam_steps(tiny_model, src, config, capture=Capture.NONE)), 3)
    target = next(t for t in range(WORD_START, tiny_model.config.vocab_size) if t not in plain.best.tokens)
    keeps = Keeps(((target, FIRST_ID),), boundaries(tiny_model.config.vocab_size))
    best = decode(tiny_model, src, keeps, config).best
    at = best.tokens.index(target)
    assert best.tokens[at + 1] == FIRST_ID
    assert at + 2 == len(best.tokens) or best.tokens[at + 2] >= WORD_START or best.tokens[at + 2] == EOS


KEEPS = Keeps(((20, 5), (20, 6, 7), (30,)), boundaries(40))


def states(tokens):
    return keep_states(tokens, KEEPS, EOS)


def test_a_phrase_counts_only_when_a_word_boundary_follows():
    assert states([30])[-1].met == frozenset()  # written, waiting for its end
    assert states([30, 31])[-1].met == {2}  # a word start ends it
    assert states([30, 8])[-1].met == frozenset()  # "Anna" + "tin": not kept
    assert states([30, EOS])[-1].met == {2}


def test_phrases_that_share_pieces_are_told_apart_as_they_go_on():
    assert states([20, 6, 7, 11])[-1].met == {1}
    assert states([20, 5, 11])[-1].met == {0}
    assert states([20, 6, 9])[-1] == KeepState()  # a slip: its pieces no longer count
    assert states([20, 6, 30])[-1] == KeepState(frozenset(), 2, 1)  # ... and a slip can start another phrase
    assert states([20, 5, 20, 6, 7, EOS])[-1].done(KEEPS) is False  # (30,) is still missing
    assert states([20, 5, 20, 6, 7, 30, EOS])[-1].done(KEEPS)


TITLED = Keeps(((20, 5, 30, 31), (25,)), boundaries(40), ((31,), ()))  # "Dr. Anna Schmidt" (its last word "Schmidt")


def test_a_phrase_does_not_start_where_its_last_word_already_stands():
    """The name written on its own, then the whole phrase again, keeps nothing: that output writes it twice."""
    assert keep_states([20, 5, 30, 31, EOS], TITLED, EOS)[-1].met == {0}
    assert keep_states([30, 31, 11, 20, 5, 30, 31, EOS], TITLED, EOS)[-1].met == frozenset()
    assert KeepState().next_pieces(TITLED, [30, 31, 11]) == {25}  # the search does not offer its first piece
    assert KeepState().next_pieces(TITLED, [30, 11]) == {20, 25}
    assert KeepState(frozenset(), 0, 2).next_pieces(TITLED, [31, 20, 5]) == {30}  # once started, it goes on
    with pytest.raises(ValueError, match="last pieces of its phrase"):
        Keeps(((20, 5),), boundaries(40), ((6,),))


@given(data=st.data())
def test_no_output_that_keeps_a_phrase_writes_its_last_word_before_it(models, data):
    """A two-word phrase whose last word is the model's own first word (as "Anna Schmidt" before "Dr. Anna
    Schmidt"): every output counted as keeping it holds that word first inside the phrase, never before it."""
    model = models[data.draw(st.sampled_from(sorted(models)), label="model")]
    vocab = model.config.vocab_size
    src = data.draw(sources(vocab), label="src")
    config = DecodeConfig(beam_size=data.draw(st.integers(2, 3)), max_len=data.draw(st.integers(4, 10)))
    own = list(beam_steps(model, src, config, capture=Capture.NONE))[-1].finished[0].tokens
    words = [t for t in own if t >= WORD_START]
    assume(words)
    last = words[0]
    first = data.draw(st.integers(WORD_START, vocab - 1).filter(lambda t: t != last), label="first word")
    keeps = Keeps(((first, last),), boundaries(vocab), ((last,),))
    complete = [h.tokens for h in list(keep_beam_steps(model, src, keeps, config, capture=Capture.NONE))[-1].finished
                if kept_all(h.tokens, keeps)]
    for tokens in complete:
        assert tokens.index(last) == next(i for i in range(1, len(tokens)) if tokens[i - 1:i + 1] == (first, last))


def test_bank_counts_the_pieces_held():
    assert states([20, 6])[-1].bank(KEEPS) == 2
    assert states([30, 11, 20])[-1].bank(KEEPS) == 2
    assert KEEPS.total == 6


def test_keeps_are_bounded():
    with pytest.raises(ValueError, match="at most 8 phrases"):
        Keeps(tuple((i,) for i in range(10, 19)), boundaries(40))
    with pytest.raises(ValueError, match="1 to 24 pieces"):
        Keeps(((),), boundaries(40))


def test_keeping_words_needs_beam_search():
    with pytest.raises(ValueError, match="needs beam search"):
        DecodeConfig(beam_size=1, keep_words=True)
    with pytest.raises(ValueError, match="true or false"):
        DecodeConfig(beam_size=2, keep_words="yes")
