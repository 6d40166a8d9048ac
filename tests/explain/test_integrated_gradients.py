"""Integrated gradients and gradient x input of one decoding step (explain.integrated_gradients): equal to Captum's
IntegratedGradients on the same model and inputs, complete up to a gap that shrinks with the steps, and the
contrastive objective is the difference of two log-probabilities the model's own forward gives; T5 (no position code)
gets a baseline away from the zero vectors where its norms jump."""
from __future__ import annotations

import copy

import pytest
import torch
from captum.attr import IntegratedGradients
from hypothesis import given
from hypothesis import strategies as st

from explain.integrated_gradients import (
    BASELINE,
    MAX_STEPS,
    MEAN_BASELINE,
    baseline_name,
    baseline_vectors,
    gradient_x_input,
    input_vectors,
    integrated_gradients,
    objective,
)
from model.checkpoints.files import load_checkpoint
from model.network.transformer import Transformer
from model.serving.inference import Cancelled
from tests.bart_helpers import t5_checkpoint
from tests.conftest import tiny_config

EOS, BOS, FIRST_ID, VOCAB = 3, 2, 4, 120


@pytest.fixture(scope="module")
def models():
    """Our model and two converted families' shapes (learned positions and an embedding norm as BART has them; T5's
    relative positions and RMS norm), tiny and in float64 so quadrature, not rounding, is what is measured."""
    torch.manual_seed(0)
    built = {"ours": Transformer(tiny_config(VOCAB)).eval(),
             "bart-like": Transformer(tiny_config(VOCAB, positional_layout="learned", layernorm_embedding=True,
                                                  scale_embedding=False, activation="gelu")).eval(),
             "t5-like": Transformer(tiny_config(VOCAB, positional_layout="relative", norm="rms", norm_first=True,
                                                linear_bias=False, attention_scale=False)).eval()}
    return {name: copy.deepcopy(model).double() for name, model in built.items()}


ids = st.lists(st.integers(FIRST_ID, VOCAB - 1), min_size=0, max_size=7)


@given(source=ids, prefix=ids, piece=st.integers(FIRST_ID, VOCAB - 1),
       alternative=st.none() | st.integers(0, VOCAB - 1), steps=st.sampled_from([1, 5, 16, 50]),
       which=st.sampled_from(["ours", "bart-like", "t5-like"]))
def test_equal_to_captum(models, source, prefix, piece, alternative, steps, which):
    model = models[which]
    src, pre = [*source, EOS], [BOS, *prefix]
    ours = integrated_gradients(model, src, pre, piece, alternative, steps=steps, batch_rows=7)
    inputs = input_vectors(model, src, pre)
    ig = IntegratedGradients(objective(model, src, pre, piece, alternative))
    theirs, delta = ig.attribute(inputs, baselines=baseline_vectors(model, *inputs), n_steps=steps,
                                 method="gausslegendre", return_convergence_delta=True)
    torch.testing.assert_close(ours.source, theirs[0][0].sum(-1), atol=1e-4, rtol=0)
    torch.testing.assert_close(ours.prefix, theirs[1][0].sum(-1), atol=1e-4, rtol=0)
    assert abs(ours.gap - float(delta[0])) < 1e-4  # Captum's convergence delta is the same completeness gap


@given(source=ids, prefix=ids, piece=st.integers(FIRST_ID, VOCAB - 1), alternative=st.integers(FIRST_ID, VOCAB - 1),
       which=st.sampled_from(["ours", "bart-like", "t5-like"]))
def test_completeness_gap_shrinks_as_the_steps_grow(models, source, prefix, piece, alternative, which):
    """Sum of attributions -> f(x) - f(x'): with many steps the gap is a small share of f(x) - f(x') and below
    what a few steps leave (quadrature of a piecewise smooth path is not monotone step by step, so coarse and fine
    are compared as groups). For every family: each one's baseline keeps the path away from the all-zero input,
    where T5's norms jump (test_t5s_zero_input_is_a_jump_its_baseline_keeps_away_from)."""
    model, src, pre = models[which], [*source, EOS], [BOS, *prefix]
    gaps = {n: abs(integrated_gradients(model, src, pre, piece, alternative, steps=n, batch_rows=256).gap)
            for n in (2, 4, 8)}
    fine = integrated_gradients(model, src, pre, piece, alternative, steps=256, batch_rows=256)
    gaps[256] = abs(fine.gap)
    change = abs(fine.value - fine.baseline_value)
    assert gaps[256] <= max(gaps[2], gaps[4], gaps[8]) + 1e-9
    assert gaps[256] <= 0.02 * (1 + change)


def test_values_are_the_models_own_log_probs(models):
    model, src, pre = models["ours"], [5, 9, 11, EOS], [BOS, 7, 8]
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([pre]))
    log_probs = logits[0, -1].log_softmax(-1)
    plain = integrated_gradients(model, src, pre, 12, steps=4)
    contrast = integrated_gradients(model, src, pre, 12, 30, steps=4)
    assert plain.value == pytest.approx(float(log_probs[12]), abs=1e-9)
    assert contrast.value == pytest.approx(float(log_probs[12] - log_probs[30]), abs=1e-9)
    assert plain.source.shape == (4,) and plain.prefix.shape == (3,) and plain.steps == 4


def test_gradient_x_input_is_gradient_times_the_token_vectors(models):
    """G x I by hand, and its first-order link to IG: on a function linear in its inputs both are exact."""
    model, src, pre = models["ours"], [5, 9, EOS], [BOS, 7]
    gxi = gradient_x_input(model, src, pre, 12, 30)
    x = input_vectors(model, src, pre)
    inputs = tuple(v.clone().requires_grad_() for v in x)
    f = objective(model, src, pre, 12, 30)(*inputs)
    grads = torch.autograd.grad(f.sum(), inputs)
    torch.testing.assert_close(gxi.source, (grads[0] * x[0])[0].sum(-1), atol=1e-9, rtol=0)
    torch.testing.assert_close(gxi.prefix, (grads[1] * x[1])[0].sum(-1), atol=1e-9, rtol=0)
    assert gxi.value == pytest.approx(float(f.detach()), abs=1e-9) and gxi.steps == 0


def test_bad_requests_and_stopping(models):
    model = models["ours"]
    for steps in (0, MAX_STEPS + 1):
        with pytest.raises(ValueError):
            integrated_gradients(model, [5, EOS], [BOS], 6, steps=steps)
    with pytest.raises(ValueError):
        integrated_gradients(model, [5, EOS], [BOS], VOCAB)
    with pytest.raises(ValueError):
        integrated_gradients(model, [], [BOS], 6)
    with pytest.raises(ValueError):  # a baseline of another shape than the inputs
        integrated_gradients(model, [5, EOS], [BOS], 6, baseline=(torch.zeros(1, 3, 16), torch.zeros(1, 1, 16)))
    asked = []

    def stop() -> bool:
        asked.append(True)
        return len(asked) > 1
    with pytest.raises(Cancelled):
        integrated_gradients(model, [5, EOS], [BOS], 6, steps=32, batch_rows=8, should_stop=stop)
    assert len(asked) == 2  # asked between batches: stopped after the first of four


def test_t5s_zero_input_is_a_jump_its_baseline_keeps_away_from(models, tmp_path):
    """T5 adds no position code, so zero token vectors would make every activation zero, and its stacked RMSNorms
    lift a x to full size for any a above about 1e-10: f jumps at a = 0, where no quadrature looks, and the zero
    baseline's gap does not shrink. Its baseline (the mean token vector, the start piece kept) keeps the path away
    from zero: the gap shrinks as the steps grow, on a converted T5 too, whose start piece is <pad>, a zero row."""
    t5 = models["t5-like"]
    f = objective(t5, [9, EOS], [BOS], 4, 5)
    source, prefix = input_vectors(t5, [9, EOS], [BOS])
    with torch.no_grad():
        assert abs(float(f(1e-8 * source, 1e-8 * prefix)[0] - f(0 * source, 0 * prefix)[0])) > 1  # the jump
    assert baseline_name(t5) == MEAN_BASELINE and baseline_name(models["ours"]) == BASELINE
    converted = load_checkpoint(t5_checkpoint(tmp_path / "t5")).model.double()
    eos, start = converted.config.eos_id, converted.config.decoder_start_id
    assert not converted.embed.token.weight[start].any()  # the path of the start piece would end at zero
    for model, src, pre, piece, alternative in ((t5, [10, 20, 30, EOS], [BOS, 7, 8], 12, 30),
                                                (converted, [15, 25, 40, 50, 60, eos], [start, 9], 40, 41),
                                                (converted, [10, 20, 30, eos], [start, 7, 8], 12, 30)):
        runs = {n: integrated_gradients(model, src, pre, piece, alternative, steps=n, batch_rows=256)
                for n in (8, 256)}
        change = abs(runs[256].value - runs[256].baseline_value)
        assert abs(runs[256].gap) < abs(runs[8].gap) and abs(runs[256].gap) <= 0.02 * (1 + change)
        assert runs[256].baseline == MEAN_BASELINE
        zeros = tuple(torch.zeros_like(x) for x in input_vectors(model, src, pre))
        from_zero = integrated_gradients(model, src, pre, piece, alternative, steps=256, batch_rows=256,
                                         baseline=zeros)
        assert abs(from_zero.gap) > 0.05 * (1 + abs(from_zero.value - from_zero.baseline_value))
