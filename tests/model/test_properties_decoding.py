"""Property tests: greedy and beam search on the tiny random model over generated source sentences.

Sources are ids in [4, vocab) followed by EOS (3), 1-12 positions in all (so a source of EOS alone comes up).
The random model almost never emits EOS within 10 steps, so every property also runs on an "eos-leaning" copy
of it whose hypotheses end at different lengths (finished beams, early stops, paths that jump between rows).
Profiles (derandomized "ci" by default, HYPOTHESIS_PROFILE=long for 500 examples) live in tests/conftest.py.
"""
from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch
from hypothesis import event, example, given
from hypothesis import strategies as st

from model.decoding.search import DecodeResult, beam_search, float32_sum, greedy_decode, length_penalty
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import KINDS
from tests.conftest import eos_leaning

EOS, FIRST_ID = 3, 4
TOL = 1e-5


@pytest.fixture(scope="module")
def models(tiny_model):
    """The tiny random model, and a copy of it that leans towards EOS (tests/conftest.py)."""
    leaning = eos_leaning(tiny_model, EOS)
    return {"random": tiny_model, "eos-leaning": leaning}


def sources(vocab_size: int):
    return st.lists(st.integers(FIRST_ID, vocab_size - 1), min_size=0, max_size=11).map(
        lambda ids: torch.tensor([*ids, EOS]))


def configs(beam_sizes: st.SearchStrategy[int]):
    return st.builds(DecodeConfig, beam_size=beam_sizes, max_len=st.integers(1, 10),
                     length_penalty=st.sampled_from([0.0, 0.6, 1.5]))


def teacher_forced(model, src: torch.Tensor, tokens: tuple[int, ...]):
    """(log-probs [T, V], trace) of one forward with the decoder input BOS + tokens[:-1]."""
    tgt_in = torch.tensor([(model.config.bos_id, *tokens[:-1])])
    with torch.no_grad():
        logits, trace = model(src[None], tgt_in, capture=Capture.WEIGHTS)
    return logits[0].float().log_softmax(-1), trace


def assert_strictly_causal(dec_self: torch.Tensor) -> None:
    """dec_self [L, B, H, T, T]: every entry above the diagonal (a future key) is exactly 0."""
    t = dec_self.size(-1)
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    assert (dec_self[..., future] == 0).all()


def assert_rows_equal_teacher_forcing(model, src: torch.Tensor, result: DecodeResult, alpha: float) -> None:
    for hyp in result.hypotheses:
        rows = result.attention_for(hyp)
        log_probs, forward = teacher_forced(model, src, hyp.tokens)
        for kind in KINDS:
            assert rows.weights(kind).shape == forward.weights(kind).shape, kind
            torch.testing.assert_close(rows.weights(kind), forward.weights(kind), atol=TOL, rtol=0, msg=kind)
            # Softmax inputs too: masked ones (dec_self's future) are finfo.min on both sides.
            torch.testing.assert_close(rows.scores(kind), forward.scores(kind), atol=TOL, rtol=0, msg=kind)
            assert torch.equal(rows.mask(kind), forward.mask(kind)), kind
        assert_strictly_causal(rows.weights("dec_self"))
        assert_strictly_causal(forward.weights("dec_self"))
        # The hypothesis' log-prob is the teacher-forced log-prob of its tokens, and its score that over the penalty.
        picked = log_probs.gather(1, torch.tensor(hyp.tokens)[:, None]).sum()
        assert hyp.log_prob == pytest.approx(float(picked), abs=TOL)
        assert hyp.score == pytest.approx(hyp.log_prob / length_penalty(len(hyp.tokens), alpha),
                                          abs=1e-6)


@given(data=st.data())
def test_beam_size_one_is_greedy(models, data):
    name = data.draw(st.sampled_from(sorted(models)), label="model")
    model = models[name]
    src = data.draw(sources(model.config.vocab_size), label="src")
    config = data.draw(configs(st.just(1)), label="config")
    greedy, beam = greedy_decode(model, src, config), beam_search(model, src, config)
    assert len(greedy.hypotheses) == len(beam.hypotheses) == 1
    assert greedy.best.tokens == beam.best.tokens
    assert greedy.best.log_prob == pytest.approx(beam.best.log_prob, abs=1e-6)
    assert greedy.best.score == pytest.approx(beam.best.score, abs=1e-6)
    assert greedy.best.path == beam.best.path
    assert len(greedy.steps) == len(beam.steps)


@given(data=st.data())
def test_decoded_attention_equals_one_teacher_forced_forward(models, data):
    name = data.draw(st.sampled_from(sorted(models)), label="model")
    model = models[name]
    src = data.draw(sources(model.config.vocab_size), label="src")
    config = data.draw(configs(st.integers(1, 4)), label="config")
    decode = greedy_decode if config.beam_size == 1 else beam_search
    result = decode(model, src, config)
    assert 1 <= len(result.hypotheses) <= config.beam_size
    ended = "some" if any(h.ended_with_eos for h in result.hypotheses) else "no"
    event(f"{name} model, beam {config.beam_size}, {ended} hypothesis ended with EOS")
    for hyp in result.hypotheses:
        assert 1 <= len(hyp.tokens) <= config.max_len and len(hyp.path) == len(hyp.tokens)
        assert hyp.ended_with_eos == (hyp.tokens[-1] == EOS)
        assert EOS not in hyp.tokens[:-1] and not {model.config.bos_id, model.config.pad_id} & set(hyp.tokens)
    assert_rows_equal_teacher_forcing(model, src, result, config.length_penalty)


@given(data=st.data())
def test_beam_results_are_sorted_by_score_without_duplicates(models, data):
    name = data.draw(st.sampled_from(sorted(models)), label="model")
    model = models[name]
    src = data.draw(sources(model.config.vocab_size), label="src")
    config = data.draw(configs(st.integers(2, 4)), label="config")
    result = beam_search(model, src, config)
    scores = [h.score for h in result.hypotheses]
    assert scores == sorted(scores, reverse=True)
    tokens = [h.tokens for h in result.hypotheses]
    assert len(set(tokens)) == len(tokens), f"duplicate hypotheses {tokens}"
    for step in result.steps:  # every step's finished list is best first and duplicate-free as well
        assert [h.score for h in step.finished] == sorted((h.score for h in step.finished), reverse=True)
        assert len({h.tokens for h in step.finished}) == len(step.finished)
        # A step's query row sees exactly the step + 1 positions fed so far, never a future one.
        assert step.dec_self.shape[-1] == step.step + 1


@given(data=st.data())
def test_forced_eos_ends_every_hypothesis_at_the_limit_with_eos_and_changes_no_earlier_step(models, data):
    """Hugging Face's forced_eos_token_id (Marian's configs set it): the last piece the length allows is EOS, adding 0
    to the log-prob; the search before that step is untouched."""
    name = data.draw(st.sampled_from(sorted(models)), label="model")
    model = models[name]
    src = data.draw(sources(model.config.vocab_size), label="src")
    config = data.draw(configs(st.integers(1, 4)), label="config")
    decode = greedy_decode if config.beam_size == 1 else beam_search
    free = decode(model, src, config, capture=Capture.NONE)
    forced = decode(model, src, dataclasses.replace(config, forced_eos=True), capture=Capture.NONE)
    event(f"{name} model: {'reached' if len(free.steps) == config.max_len else 'ended before'} the limit")
    assert all(h.ended_with_eos and len(h.tokens) <= config.max_len for h in forced.hypotheses)
    assert [s.candidates for s in forced.steps[:-1]] == [s.candidates for s in free.steps[:-1]]
    if len(free.steps) < config.max_len:  # ended before the limit: nothing was forced
        assert [h.tokens for h in forced.hypotheses] == [h.tokens for h in free.hypotheses]
    if len(forced.steps) == config.max_len:  # the search reached the limit: only EOS could be taken there
        assert all(c.token == EOS for c in forced.steps[-1].candidates if c.status != "pruned")
    if config.beam_size == 1 and not free.best.ended_with_eos:  # greedy cut at the limit: its last piece becomes EOS
        assert forced.best.tokens == (*free.best.tokens[:-1], EOS)
        first = free.steps[-1].prefix_scores[0]  # the log-prob before the last piece, which the forced EOS keeps
        assert forced.best.log_prob == pytest.approx(float(first), abs=1e-6)


@given(data=st.data())
def test_early_stopping_true_never_stops_later_than_false_nor_false_than_never(models, data):
    """generate()'s three stopping rules (model.decoding.beam_stopping) share every step until one stops: True's steps
    are the first of False's, False's the first of "never"'s, and a later stop only adds finished hypotheses, so its
    best
    score is at least as high. With α = 0 False and "never" are the same rule. The eos-leaning model only: the random
    one rarely finishes a hypothesis before the limit, where every rule stops alike."""
    model = models["eos-leaning"]
    src = data.draw(sources(model.config.vocab_size), label="src")
    config = data.draw(st.builds(DecodeConfig, beam_size=st.integers(2, 4), max_len=st.integers(3, 10),
                                 length_penalty=st.sampled_from([0.0, 0.6, 1.5]),
                                 length_penalty_formula=st.sampled_from(["gnmt", "hf"])), label="config")
    runs = [beam_search(model, src, dataclasses.replace(config, early_stopping=rule), capture=Capture.NONE)
            for rule in (True, False, "never")]
    event(f"True stopped {'before' if len(runs[0].steps) < len(runs[2].steps) else 'with'} 'never'")
    for earlier, later in itertools.pairwise(runs):
        assert len(earlier.steps) <= len(later.steps)
        assert [s.candidates for s in earlier.steps] == [s.candidates for s in later.steps[:len(earlier.steps)]]
        assert earlier.best.score <= later.best.score + 1e-9
    if config.length_penalty == 0:
        assert len(runs[1].steps) == len(runs[2].steps)


float32s = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(start=float32s, pieces=st.lists(st.one_of(float32s, st.floats(-30.0, 0.0, width=32), st.just(float("-inf"))),
                                       min_size=1, max_size=12))
@example(start=3.4028234663852886e38, pieces=[1.0141204801825835e31, 3.4028234663852886e38])  # to FLT_MAX, then inf
@example(start=-1.5, pieces=[float("-inf"), -2.0])
def test_a_score_summed_in_python_is_the_float32_tensor_sum_bit_for_bit(start, pieces):
    """Greedy keeps a hypothesis' log-prob as a Python float (model.decoding.search.float32_sum): every partial sum
    equals what adding the same float32 values as tensors gives, infinities and overflow included."""
    total, tensor = start, torch.tensor([start], dtype=torch.float32)
    for piece in pieces:
        total, tensor = float32_sum(total, piece), tensor + piece
        assert total == tensor.item() or (total != total and tensor.isnan().item())
