"""A widened model computes what it did (the new FFN units start silent), keeps every trained weight, and its new
units learn once training goes on; a run continued with --widen-ff records the change in its recipe."""
from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.network.attention import Capture
from model.network.transformer import Transformer
from tests.conftest import tiny_config
from tests.training.test_train import TINY
from training.card_text import recipe_lines
from training.grow import widen_feed_forward
from training.schedule import training_segments
from training.train import main as train_main

VOCAB = 40


@given(extra=st.integers(0, 48), activation=st.sampled_from(["relu", "gelu", "swish"]), gated=st.booleans(),
       bias=st.booleans(), norm_first=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_a_widened_model_gives_the_same_logits_and_attention(extra, activation, gated, bias, norm_first, seed):
    torch.manual_seed(seed)
    model = Transformer(tiny_config(VOCAB, activation=activation, ffn_gated=gated, linear_bias=bias,
                                    norm_first=norm_first)).eval()
    wide = widen_feed_forward(model, model.config.d_ff + extra, seed=seed)
    assert wide.config.d_ff == model.config.d_ff + extra and not wide.training
    src, tgt = torch.randint(4, VOCAB, (2, 9)), torch.randint(4, VOCAB, (2, 6))  # [B, S], [B, T]
    tgt[:, 0] = model.config.bos_id
    with torch.no_grad():
        logits, trace = model(src, tgt, capture=Capture.WEIGHTS)  # [B, T, V]
        wide_logits, wide_trace = wide(src, tgt, capture=Capture.WEIGHTS)
    torch.testing.assert_close(wide_logits, logits, rtol=0, atol=1e-5)
    for kind in ("enc_self", "dec_self", "cross"):
        for ours, theirs in zip(wide_trace.weights(kind), trace.weights(kind), strict=True):
            torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)


def test_every_trained_weight_is_kept_and_the_new_units_write_zeros(tiny_model):
    old = tiny_model.state_dict()
    wide = widen_feed_forward(tiny_model, 3 * tiny_model.config.d_ff)
    state, d_ff = wide.state_dict(), tiny_model.config.d_ff
    for name, value in old.items():
        if name.endswith("linear1.weight") or name.endswith("linear1.bias"):
            assert torch.equal(state[name][:d_ff], value)
            assert name.endswith("bias") or state[name][d_ff:].abs().sum() > 0  # fresh rows, not zeros
        elif name.endswith("linear2.weight"):
            assert torch.equal(state[name][:, :d_ff], value) and not state[name][:, d_ff:].any()
        else:
            assert torch.equal(state[name], value), name
    with pytest.raises(ValueError, match="only be widened"):
        widen_feed_forward(tiny_model, d_ff - 1)


def test_the_new_units_learn_once_training_goes_on(tiny_model):
    torch.manual_seed(1)
    wide = widen_feed_forward(tiny_model, 2 * tiny_model.config.d_ff).train()
    d_ff = tiny_model.config.d_ff
    optimizer = torch.optim.SGD(wide.parameters(), lr=0.1)
    src, tgt = torch.randint(4, 100, (4, 7)), torch.randint(4, 100, (4, 5))
    linear1 = wide.encoder.layers[0].feed_forward.linear1
    linear2 = wide.encoder.layers[0].feed_forward.linear2
    for step in range(2):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(wide(src, tgt).flatten(0, 1), tgt.flatten()).backward()
        assert linear2.weight.grad[:, d_ff:].abs().sum() > 0  # the silent units' outputs get a gradient at once
        if step == 1:  # and, once their outputs are off zero, so do their inputs
            assert linear1.weight.grad[d_ff:].abs().sum() > 0
        optimizer.step()


@pytest.mark.slow
def test_a_run_continued_with_widen_ff_trains_the_wider_model_and_says_so(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert train_main([*TINY, "--out", str(first), "--max-steps", "20"]) == 0
    assert train_main([*TINY, "--out", str(second), "--init-from", str(first / "last"), "--widen-ff", "96",
                       "--max-steps", "24"]) == 0
    config = json.loads((second / "last" / "config.json").read_text())
    assert config["model"]["d_ff"] == 96 and config["meta"]["continued_from"]["feed_forward_after"] == [64, 96]
    assert train_main([*TINY, "--out", str(second), "--widen-ff", "96", "--init-from", str(first / "last"),
                       "--max-steps", "26"]) == 0  # resumed from its own last/: widened once, not again
    meta = json.loads((second / "last" / "config.json").read_text())["meta"]
    assert meta["steps"] == 26 and json.loads((second / "last" / "config.json").read_text())["model"]["d_ff"] == 96
    assert [s.get("widened_ff") for s in training_segments(meta)] == [None, [64, 96]]
    assert "FFN widened from 64 to 96 hidden units" in "\n".join(recipe_lines(meta))
    with pytest.raises(SystemExit):  # nothing to widen
        train_main([*TINY, "--out", str(tmp_path / "third"), "--widen-ff", "96"])
    with pytest.raises(SystemExit, match="would narrow"):  # said, not a traceback
        train_main([*TINY, "--out", str(tmp_path / "fourth"), "--init-from", str(first / "last"), "--widen-ff", "32"])
