"""Sampling: temperature 0 is greedy, a seed reproduces a sample, and the cuts keep what they say."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.decoding.sampling import reshape
from model.decoding.search import DecodeResult, decode_steps
from model.network.attention import Capture
from model.network.config import DecodeConfig, Sampling
from model.serving.inference import translate

WORDS = ["house", "small", "tea", "the", "station", "book", "is", "where", "12", "café"]
sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@given(text=sentences, temperature=st.sampled_from([0.0, 1e-4]), seed=st.integers(0, 2**32))
def test_temperature_zero_is_greedy(tiny_model, tokenizer, text, temperature, seed):
    greedy = translate(tiny_model, tokenizer, text, DecodeConfig(max_len=20))
    sampled = translate(tiny_model, tokenizer, text,
                        DecodeConfig(max_len=20, sampling=Sampling(temperature=temperature, seed=seed)))
    assert sampled.target_ids == greedy.target_ids
    assert torch.allclose(sampled.trace.weights("cross"), greedy.trace.weights("cross"))


@given(text=sentences, seed=st.integers(0, 2**32), top_k=st.integers(0, 20), top_p=st.floats(0.05, 1.0))
def test_a_seed_reproduces_a_sample(tiny_model, tokenizer, text, seed, top_k, top_p):
    config = DecodeConfig(max_len=20, sampling=Sampling(temperature=1.5, top_k=top_k, top_p=top_p, seed=seed))
    first, second = (translate(tiny_model, tokenizer, text, config) for _ in range(2))
    assert first.target_ids == second.target_ids
    for step in first.result.steps:  # each drawn piece survived the cut
        assert step.sample.token_after > 0 and step.sample.kept >= 1
        assert top_k == 0 or step.sample.kept <= top_k


def test_different_seeds_give_different_samples_at_a_high_temperature(tiny_model, tokenizer):
    outputs = {translate(tiny_model, tokenizer, "the house is small",
                         DecodeConfig(max_len=15, sampling=Sampling(temperature=3.0, seed=seed))).target_ids
               for seed in range(8)}
    assert len(outputs) > 1


@given(logits=st.lists(st.floats(-20, 5), min_size=2, max_size=50), temperature=st.floats(0.05, 5.0),
       top_k=st.integers(0, 60), top_p=st.floats(0.01, 1.0))
def test_reshape_is_a_distribution_that_keeps_exactly_the_cut(logits, temperature, top_k, top_p):
    log_probs = torch.tensor(logits).log_softmax(-1)
    probs = reshape(log_probs, Sampling(temperature=temperature, top_k=top_k, top_p=top_p))
    assert torch.isclose(probs.sum(), torch.tensor(1.0)) and (probs >= 0).all()
    tempered = (log_probs / temperature).softmax(-1)
    kept = probs > 0
    if top_k:
        assert kept.sum() <= max(top_k, int((tempered == tempered.topk(min(top_k, len(logits))).values[-1]).sum()))
    # every kept piece is at least as probable as every cut one, and the kept mass reaches top_p of what top-k left
    if (~kept).any():
        assert tempered[kept].min() >= tempered[~kept].max()
    if top_k == 0:
        assert tempered[kept].sum() >= top_p - 1e-5
        smaller = tempered[kept].sum() - tempered[kept].min()
        assert smaller < top_p + 1e-5  # and it is the smallest such set
    if top_k == 0 and top_p == 1.0:
        assert torch.allclose(probs, tempered, atol=1e-6)


def test_a_sampled_output_keeps_the_attention_it_used(tiny_model, tokenizer):
    src = torch.tensor(tokenizer.encode_source("the house is small"))
    config = DecodeConfig(max_len=12, sampling=Sampling(temperature=1.0, seed=3))
    result = DecodeResult.from_steps(list(decode_steps(tiny_model, src, config)), 1)
    stacked = result.attention_for()
    _, trace = tiny_model(src[None], torch.tensor([[tiny_model.config.bos_id, *result.best.tokens[:-1]]]),
                          capture=Capture.WEIGHTS)
    for kind in ("dec_self", "cross"):
        assert torch.allclose(stacked.weights(kind), trace.weights(kind), atol=1e-5)


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(temperature=float("nan")), dict(top_p=0),
                                 dict(top_p=1.5), dict(top_k=-1), dict(seed=-1)])
def test_bad_sampling_settings_are_refused(bad):
    with pytest.raises(ValueError):
        Sampling(**bad)
    with pytest.raises(ValueError):
        DecodeConfig(beam_size=2, sampling=Sampling())
