"""Greedy decoding of several sentences as one batch (model/batch_decoding.py): each sentence comes out as if it had
been decoded alone, pieces, log-probability and every attention weight and score, whatever else is in the batch
and whenever the others end; its attention never reaches another sentence's padding."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.batch_decoding import greedy_batch
from model.config import DecodeConfig
from model.decoding import greedy_decode
from model.static_cache import StaticCacheDecoder
from model.transformer import Transformer
from tests.conftest import eos_leaning, tiny_config

EOS, FIRST_ID, VOCAB = 3, 4, 60
TOL = 1e-5


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return eos_leaning(Transformer(tiny_config(VOCAB)).eval(), EOS)  # sentences end at different steps


def sources():
    return st.lists(st.integers(FIRST_ID, VOCAB - 1), min_size=0, max_size=11).map(lambda ids: torch.tensor([*ids, EOS]))


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
    results = greedy_batch(model, batch, DecodeConfig(max_len=8), return_attention=False)
    assert [r.tokens for r in results] == [greedy_decode(model, s, DecodeConfig(max_len=8)).best.tokens for s in batch]
    assert all(r.attention is None for r in results)


def test_beam_search_and_sampling_are_not_batched(model):
    with pytest.raises(ValueError, match="greedy"):
        greedy_batch(model, [torch.tensor([5, EOS])], DecodeConfig(beam_size=2))


def test_an_empty_batch_gives_no_results(model):
    assert greedy_batch(model, [], DecodeConfig()) == []
