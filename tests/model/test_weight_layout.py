"""Weights laid out column-major for decoding on the CPU (model.network.weight_layout): the same linear maps, the same
translations and attention, the same tied parameters; only the storage order changes."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig
from model.network.weight_layout import column_major, lay_out_for_decoding
from model.serving.inference import translate

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"


def is_column_major(weight: torch.Tensor) -> bool:
    return weight.t().is_contiguous() and not weight.is_contiguous()


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 40), n_in=st.integers(2, 300), n_out=st.integers(2, 300), seed=st.integers(0, 2**16))
def test_a_column_major_weight_computes_the_same_linear_map(rows, n_in, n_out, seed):
    gen = torch.Generator().manual_seed(seed)
    x, weight, bias = (torch.randn(rows, n_in, generator=gen), torch.randn(n_out, n_in, generator=gen),
                       torch.randn(n_out, generator=gen))
    laid_out = column_major(weight)
    assert laid_out.shape == weight.shape and torch.equal(laid_out, weight) and is_column_major(laid_out)
    torch.testing.assert_close(F.linear(x, laid_out, bias), F.linear(x, weight, bias), rtol=1e-5, atol=1e-4)


def test_the_loaded_model_is_laid_out_and_keeps_its_tied_output_layer():
    ckpt = load_checkpoint(PRETRAINED / "en-de")
    model = ckpt.model
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert linears and all(is_column_major(m.weight) for m in linears)
    assert is_column_major(model.embed.token.weight)  # the output layer of this model, which ties them
    assert ckpt.config.tie_output and model.output is None  # so logits read the one embedding matrix
    parameters = dict(model.named_parameters())
    assert parameters["embed.token.weight"] is model.embed.token.weight


def test_laid_out_and_row_major_models_translate_alike_in_every_weight():
    """The shipped model as loaded (column-major) against a row-major copy: same pieces, log-probabilities and
    attention weights (1e-5), greedy and beam 4."""
    laid_out = load_checkpoint(PRETRAINED / "en-de")
    row_major = copy.deepcopy(laid_out.model)
    with torch.no_grad():
        for module in row_major.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                module.weight.data = module.weight.data.contiguous()
    assert not any(is_column_major(m.weight) for m in row_major.modules() if isinstance(m, nn.Linear))
    for beam in (1, 4):
        config = DecodeConfig(beam_size=beam, max_len=40)
        for text in ("My brother has bought a new house in the city.", "Attention is all you need."):
            ours = translate(laid_out.model, laid_out.tokenizer, text, config)
            theirs = translate(row_major, laid_out.tokenizer, text, config)
            assert ours.target_ids == theirs.target_ids
            assert ([h.score for h in ours.result.hypotheses]
                    == pytest.approx([h.score for h in theirs.result.hypotheses], abs=1e-5))
            for a, b in zip(ours.trace.tensors(), theirs.trace.tensors(), strict=True):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_laying_out_twice_changes_nothing():
    ckpt = load_checkpoint(PRETRAINED / "reverse")
    before = {k: v.clone() for k, v in ckpt.model.state_dict().items()}
    lay_out_for_decoding(ckpt.model)
    after = ckpt.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
