"""Greedy decoding of several sentences as one batch (model/decoding/batch_decoding.py): each sentence comes out as if
it had been decoded alone, pieces, log-probability and every attention weight and score, whatever else is in the batch
and whenever the others end; its attention never reaches another sentence's padding."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.decoding.batch_decoding import batchable, greedy_batch, greedy_batch_steps
from model.decoding.search import DecodeStep, decode_steps, greedy_decode
from model.decoding.static_cache import StaticCacheDecoder
from model.network.attention import Capture
from model.network.config import DecodeConfig, Sampling
from model.network.trace import KINDS
from model.network.transformer import Transformer
from model.serving.inference import finish, planned, stream_batch, translate
from tests.conftest import SENTENCES, eos_leaning, tiny_config

PAD, EOS, FIRST_ID, VOCAB = 0, 3, 4, 60
TOL = 1e-5


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return eos_leaning(Transformer(tiny_config(VOCAB)).eval(), EOS)  # sentences end at different steps


def sources(pad: bool = False):
    ids = st.integers(FIRST_ID, VOCAB - 1) | st.just(PAD) if pad else st.integers(FIRST_ID, VOCAB - 1)
    return st.lists(ids, min_size=0, max_size=11).map(lambda ids: torch.tensor([*ids, EOS]))


def assert_same_step(got: DecodeStep, alone: DecodeStep) -> None:
    """Every field of a batch row's step equals the step decoded alone: tensors to TOL, tokens exactly; its attention
    rows sum to 1, hold no NaN and give masked keys exactly 0."""
    assert (got.step, got.done, got.sample) == (alone.step, alone.done, alone.sample)
    for name in ("prefixes", "topk_ids", "beams", "parents"):
        assert torch.equal(getattr(got, name), getattr(alone, name)), name
    for name in ("prefix_scores", "topk_probs", "beam_scores"):
        torch.testing.assert_close(getattr(got, name), getattr(alone, name), atol=TOL, rtol=0)
    assert ([(c.row, c.token, c.status) for c in got.candidates]
            == [(c.row, c.token, c.status) for c in alone.candidates])
    assert [c.log_prob for c in got.candidates] == pytest.approx([c.log_prob for c in alone.candidates], abs=TOL)
    assert [(h.tokens, h.path, h.ended_with_eos) for h in got.finished] == \
        [(h.tokens, h.path, h.ended_with_eos) for h in alone.finished]
    assert [v for h in got.finished for v in (h.log_prob, h.score)] == \
        pytest.approx([v for h in alone.finished for v in (h.log_prob, h.score)], abs=TOL)
    assert torch.equal(got.attention.src_mask, alone.attention.src_mask)
    assert got.attention.tgt_mask is None and alone.attention.tgt_mask is None
    for kind in KINDS:
        weights = got.attention.weights(kind)  # [L, 1, H, Q, K]: this sentence's own keys only
        assert weights.shape == alone.attention.weights(kind).shape, kind
        torch.testing.assert_close(weights, alone.attention.weights(kind), atol=TOL, rtol=0)
        torch.testing.assert_close(got.attention.scores(kind), alone.attention.scores(kind), atol=TOL, rtol=TOL)
        torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)), atol=TOL, rtol=0)
        assert not weights.isnan().any(), kind
        if kind != "dec_self":  # a decoding step's query sees every earlier position
            masked = ~got.attention.src_mask[None].expand_as(weights)  # [L, 1, H, Q, K]
            assert (weights[masked] == 0).all(), kind


@given(batch=st.lists(sources(pad=True), min_size=1, max_size=5), limits=st.lists(st.integers(1, 12), min_size=5,
       max_size=5), forced_eos=st.booleans(), forced_bos=st.none() | st.integers(FIRST_ID, VOCAB - 1),
       static=st.booleans())
def test_each_step_of_a_batch_is_the_step_of_that_sentence_alone(model, batch, limits, forced_eos, forced_bos, static):
    configs = [DecodeConfig(max_len=limit, forced_eos=forced_eos, forced_bos=forced_bos) for limit in limits]
    engine = StaticCacheDecoder(model, first_capacity=4) if static else model
    alone = [list(decode_steps(model, src, config)) for src, config in zip(batch, configs, strict=False)]
    seen: list[list[DecodeStep]] = [[] for _ in batch]
    for t, step in enumerate(greedy_batch_steps(engine, batch, configs[:len(batch)])):
        assert sorted(step) == [i for i, steps in enumerate(alone) if len(steps) > t]  # those still decoding
        for i, own in step.items():
            seen[i].append(own)
    for got, expected in zip(seen, alone, strict=True):
        assert len(got) == len(expected)
        for got_step, alone_step in zip(got, expected, strict=True):
            assert_same_step(got_step, alone_step)


@pytest.fixture(scope="module")
def text_model(tiny_model, tokenizer):
    return eos_leaning(tiny_model, tokenizer.eos_id)


@given(texts=st.lists(st.sampled_from(SENTENCES[:10]) | st.text("abcdehilnorst ", min_size=1, max_size=30),
                      min_size=1, max_size=5), max_len=st.integers(1, 40))
def test_a_batch_of_requests_finishes_as_each_translated_alone(text_model, tokenizer, texts, max_len):
    """stream_batch + finish, as the app's scheduler runs them, give each request the Translation translate() gives
    it alone: the same output, text and stacked trace."""
    config = DecodeConfig(max_len=max_len)
    texts = [t for t in texts if t.strip()] or ["The house is small."]
    prepared = [planned(text_model, tokenizer, text, config) for text in texts]  # each with its own length limit
    steps: list[list[DecodeStep]] = [[] for _ in texts]
    for step in stream_batch(text_model, [s for s, _ in prepared], [p.decode for _, p in prepared]):
        for i, own in step.items():
            steps[i].append(own)
    for text, (source, plan), own in zip(texts, prepared, steps, strict=True):
        alone = translate(text_model, tokenizer, text, config)
        assert len(own) == len(alone.result.steps)
        got = finish(text_model, tokenizer, source, own, plan)
        assert (got.target_ids, got.text, got.target_pieces, got.notes) == \
            (alone.target_ids, alone.text, alone.target_pieces, alone.notes)
        assert got.nbytes == alone.nbytes  # it holds its own rows, not the batch's: what the shared store bounds
        for kind in KINDS:
            torch.testing.assert_close(got.trace.weights(kind), alone.trace.weights(kind), atol=TOL, rtol=0)
            torch.testing.assert_close(got.trace.scores(kind), alone.trace.scores(kind), atol=TOL, rtol=TOL)
            assert torch.equal(got.trace.mask(kind), alone.trace.mask(kind))


@given(batch=st.lists(sources(), min_size=1, max_size=5), max_len=st.integers(1, 12), forced_eos=st.booleans(),
       static=st.booleans())
def test_each_sentence_of_a_batch_decodes_as_it_would_alone(model, batch, max_len, forced_eos, static):
    config = DecodeConfig(max_len=max_len, forced_eos=forced_eos)
    engine = StaticCacheDecoder(model, first_capacity=4) if static else model
    results = greedy_batch(engine, batch, config)
    assert len(results) == len(batch)
    for src, got in zip(batch, results, strict=True):
        alone = greedy_decode(model, src, config)
        assert got.tokens == alone.best.tokens
        assert got.log_prob == pytest.approx(alone.best.log_prob, abs=TOL)
        expected = alone.attention_for()
        for kind in ("enc_self", "dec_self", "cross"):
            weights = got.attention.weights(kind)  # [L, 1, H, Q, K]: this sentence's own keys only
            assert weights.shape == expected.weights(kind).shape, kind
            torch.testing.assert_close(weights, expected.weights(kind), atol=TOL, rtol=0)
            torch.testing.assert_close(got.attention.scores(kind), expected.scores(kind), atol=TOL, rtol=TOL)
            torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)), atol=TOL, rtol=0)
        assert got.attention.weights("cross").size(-1) == src.numel()  # no column of another sentence's padding


def test_without_attention_only_the_pieces_come_back(model):
    batch = [torch.tensor([5, 6, EOS]), torch.tensor([7, EOS])]
    results = greedy_batch(model, batch, DecodeConfig(max_len=8), capture=Capture.NONE)
    assert [r.tokens for r in results] == [greedy_decode(model, s, DecodeConfig(max_len=8)).best.tokens for s in batch]
    assert all(r.attention is None for r in results)


@pytest.mark.parametrize("config", [DecodeConfig(beam_size=2), DecodeConfig(sampling=Sampling()),
                                    DecodeConfig(no_repeat_ngram=2)], ids=["beam", "sampling", "ngram"])
def test_beam_search_sampling_and_ngram_rules_are_not_batched(model, config):
    assert not batchable(config)
    with pytest.raises(ValueError, match="greedy"):
        greedy_batch(model, [torch.tensor([5, EOS])], config)
    with pytest.raises(ValueError, match="greedy"):
        next(greedy_batch_steps(model, [torch.tensor([5, EOS])], [config]))


def test_a_batch_shares_every_setting_but_the_length_limit(model):
    with pytest.raises(ValueError, match="all but max_len"):
        next(greedy_batch_steps(model, [torch.tensor([5, EOS])] * 2, [DecodeConfig(), DecodeConfig(forced_eos=True)]))


def test_an_empty_batch_gives_no_results(model):
    assert greedy_batch(model, [], DecodeConfig()) == []
