import pytest
import torch
from torch import nn

from model.network.attention import Capture, MultiHeadAttention
from model.network.masks import padding_mask
from tests.conftest import copy_attention_into_torch


def random_batch(seed: int, batch=3, q_len=5, k_len=7, d_model=16):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(batch, q_len, d_model, generator=g)
    key = torch.randn(batch, k_len, d_model, generator=g)
    lengths = torch.randint(1, k_len + 1, (batch,), generator=g)
    ids = (torch.arange(k_len)[None] < lengths[:, None]).long()  # 1 = real token, 0 = pad
    return query, key, padding_mask(ids, 0)


def test_rows_sum_to_one_and_masked_entries_are_exactly_zero():
    mha = MultiHeadAttention(16, 4).eval()
    query, key, mask = random_batch(0)
    out = mha(query, key, mask, capture=Capture.WEIGHTS)
    assert out.weights.shape == (3, 4, 5, 7)
    assert torch.allclose(out.weights.sum(-1), torch.ones(3, 4, 5), atol=1e-6)
    masked = ~mask.expand_as(out.weights)
    assert (out.weights[masked] == 0).all()
    assert (out.scores[masked] == torch.finfo(torch.float32).min).all()


def test_fully_masked_row_gives_zeros_not_nan():
    mha = MultiHeadAttention(16, 4).eval()
    query, key, _ = random_batch(1, batch=1)
    mask = torch.zeros(1, 1, 1, 7, dtype=torch.bool)
    explicit = mha(query, key, mask, capture=Capture.WEIGHTS)
    fused = mha(query, key, mask)
    assert (explicit.weights == 0).all() and not torch.isnan(explicit.output).any()
    assert torch.allclose(explicit.output, fused.output, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_matches_torch_multihead_attention_per_head(seed):
    d_model, heads = 16, 4
    ours = MultiHeadAttention(d_model, heads).eval()
    ref = nn.MultiheadAttention(d_model, heads, batch_first=True).eval()
    copy_attention_into_torch(ref, ours)
    query, key, mask = random_batch(seed)
    out = ours(query, key, mask, capture=Capture.WEIGHTS)
    ref_out, ref_weights = ref(query, key, key, key_padding_mask=~mask[:, 0, 0],  # torch: True = ignore
                               need_weights=True, average_attn_weights=False)
    assert torch.allclose(out.output, ref_out, atol=1e-5)
    assert torch.allclose(out.weights, ref_weights, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_fused_path_gives_the_same_output_as_the_explicit_path(seed):
    mha = MultiHeadAttention(16, 4).eval()
    query, key, mask = random_batch(seed)
    causal = torch.ones(5, 7, dtype=torch.bool).tril()[None, None]
    for m in (mask, mask & causal, None):
        assert torch.allclose(mha(query, key, m).output, mha(query, key, m, capture=Capture.WEIGHTS).output, atol=1e-6)


def test_kv_cache_equals_attending_over_the_whole_sequence():
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 6, 16)
    full = mha(x, x, torch.ones(6, 6, dtype=torch.bool).tril()[None, None], capture=Capture.WEIGHTS)
    past = None
    for t in range(6):
        step = mha(x[:, t:t + 1], x[:, t:t + 1], None, past=past, capture=Capture.WEIGHTS)
        past = step.key_value
        assert torch.allclose(step.output[0, 0], full.output[0, t], atol=1e-6)
        assert torch.allclose(step.weights[0, :, 0], full.weights[0, :, t, : t + 1], atol=1e-6)


def test_dropout_is_applied_after_the_weights_are_recorded():
    mha = MultiHeadAttention(16, 4, dropout=0.5).train()
    query, key, mask = random_batch(2)
    out = mha(query, key, mask, capture=Capture.WEIGHTS)
    assert torch.allclose(out.weights.sum(-1), torch.ones(3, 4, 5), atol=1e-6)


def test_a_score_bias_is_added_before_the_softmax_on_both_paths():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 4, 8)
    bias = torch.randn(2, 4, 4)  # [H, Q, K], e.g. a relative position bias
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool).tril()
    explicit = mha(x, x, mask, capture=Capture.WEIGHTS, score_bias=bias)
    fused = mha(x, x, mask, score_bias=bias)
    plain = mha(x, x, mask, capture=Capture.WEIGHTS)
    assert torch.allclose(explicit.scores[mask.expand_as(explicit.scores)],
                          (plain.scores + bias)[mask.expand_as(plain.scores)], atol=1e-6)
    assert torch.allclose(explicit.output, fused.output, atol=1e-6)
    assert (explicit.weights[~mask.expand_as(explicit.weights)] == 0).all()
