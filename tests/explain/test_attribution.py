"""Attribution through the layers: rollout and its composition with the cross-attention, attention flow against
a brute-force minimum cut, norm-based attention against a slow per-head loop, gradient x input against finite
differences (float64 copy of the tiny model)."""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from explain.attribution import (
    MAX_FLOW_PIECES,
    NORM_BASED,
    ROLLOUT,
    SALIENCY,
    agreement,
    attention_flow,
    attention_modules,
    attribute,
    decoder_source_attribution,
    decoder_states_from_source_embeddings,
    flow_values,
    gradient_x_input,
    norm_based,
    residual_attention,
    rollout,
    rollout_attribution,
    shares,
)
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import KINDS
from model.serving.inference import translate

SOURCE, OUTPUT = [5, 6, 7, 8, 3], [9, 10, 11, 3]
DECODER_INPUT = [2, *OUTPUT[:-1]]


def random_weights(seed: int, layers: int, heads: int, queries: int, keys: int, padded: int = 0,
                   self_attention: bool = False) -> torch.Tensor:
    """Softmax rows [L, H, Q, K]; the last ``padded`` keys masked (weight 0) and, for self-attention, their
    query rows all zero (what a padded position's row holds in the model)."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(layers, heads, queries, keys, generator=generator, dtype=torch.float64) * 3
    if padded:
        scores[..., keys - padded:] = float("-inf")
    weights = scores.softmax(dim=-1)
    if padded and self_attention:
        weights[..., queries - padded:, :] = 0.0
    return weights


@given(layers=st.integers(1, 4), heads=st.integers(1, 4), length=st.integers(1, 9))
def test_rollout_of_identity_attention_is_identity(layers, heads, length):
    eye = torch.eye(length, dtype=torch.float64).expand(layers, heads, length, length)
    assert torch.equal(rollout(eye), torch.eye(length, dtype=torch.float64))


@given(seed=st.integers(0, 10_000), layers=st.integers(1, 4), heads=st.integers(1, 4), length=st.integers(1, 9),
       targets=st.integers(1, 9), padded=st.integers(0, 3))
def test_every_rollout_and_composition_row_sums_to_one(seed, layers, heads, length, targets, padded):
    padded = min(padded, length - 1)
    encoder = random_weights(seed, layers, heads, length, length, padded, self_attention=True)
    cross = random_weights(seed + 1, layers, heads, targets, length, padded)
    source_rollout = rollout(encoder)  # [S, S]
    composed = decoder_source_attribution(cross, source_rollout)  # [T, S]
    assert source_rollout.shape == (length, length) and composed.shape == (targets, length)
    assert (source_rollout >= 0).all() and (composed >= 0).all()
    assert torch.allclose(source_rollout.sum(-1), torch.ones(length, dtype=torch.float64))
    assert torch.allclose(composed.sum(-1), torch.ones(targets, dtype=torch.float64))


def test_rollout_is_the_product_of_residual_maps_from_layer_one_up():
    weights = random_weights(3, 3, 2, 5, 5)
    eye = torch.eye(5, dtype=torch.float64)
    a1, a2, a3 = (0.5 * eye + 0.5 * weights[layer].mean(0) for layer in range(3))
    assert torch.allclose(rollout(weights), a3 @ a2 @ a1)
    cross = random_weights(4, 2, 2, 4, 5)
    expected = (cross[0].mean(0) @ (a3 @ a2 @ a1) + cross[1].mean(0) @ (a3 @ a2 @ a1)) / 2
    assert torch.allclose(decoder_source_attribution(cross, rollout(weights)), expected)


def minimum_cut(residual: np.ndarray, source: int, sink: int) -> float:
    """The smallest total capacity of edges leaving a node set that holds the last-layer ``source`` and not the
    input ``sink``, over every such set: by the max-flow min-cut theorem, the maximum flow (slow, tiny graphs)."""
    n_layers, length, _ = residual.shape
    nodes = [(layer, i) for layer in range(n_layers + 1) for i in range(length)]
    s, t = (n_layers, source), (0, sink)
    free = [node for node in nodes if node not in (s, t)]
    best = float("inf")
    for chosen in itertools.product((False, True), repeat=len(free)):
        inside = {s} | {node for node, keep in zip(free, chosen, strict=True) if keep}
        cut = sum(residual[layer - 1, i, j] for layer, i in inside if layer > 0
                  for j in range(length) if (layer - 1, j) not in inside)
        best = min(best, cut)
    return best


@given(seed=st.integers(0, 10_000), layers=st.integers(1, 2), length=st.integers(1, 3))
def test_attention_flow_is_the_minimum_cut_of_the_attention_graph(seed, layers, length):
    residual = residual_attention(random_weights(seed, layers, 2, length, length)).numpy()  # [L, S, S]
    values = flow_values(residual)  # [S, S]
    for i, j in itertools.product(range(length), repeat=2):
        assert values[i, j] == pytest.approx(minimum_cut(residual, i, j), abs=1e-5)


@given(seed=st.integers(0, 10_000), layers=st.integers(1, 4), heads=st.integers(1, 3), length=st.integers(1, 8),
       padded=st.integers(0, 3))
def test_every_attention_flow_row_sums_to_one(seed, layers, heads, length, padded):
    padded = min(padded, length - 1)
    flow = attention_flow(random_weights(seed, layers, heads, length, length, padded, self_attention=True))
    assert flow.shape == (length, length) and (flow >= 0).all()
    assert torch.allclose(flow.sum(-1), torch.ones(length, dtype=torch.float64))


@given(layers=st.integers(1, 4), heads=st.integers(1, 3), length=st.integers(1, 8))
def test_attention_flow_of_identity_attention_is_identity(layers, heads, length):
    eye = torch.eye(length, dtype=torch.float64).expand(layers, heads, length, length)
    assert torch.equal(attention_flow(eye), torch.eye(length, dtype=torch.float64))


@given(seed=st.integers(0, 10_000), heads=st.integers(1, 3), length=st.integers(1, 8))
def test_one_layer_of_flow_is_that_layers_residual_map(seed, heads, length):
    """One layer: the only path from position i to token j is the edge i -> j, so flow = Â = rollout."""
    weights = random_weights(seed, 1, heads, length, length)
    assert torch.allclose(attention_flow(weights), rollout(weights), atol=1e-5)


def test_attention_flow_refuses_more_pieces_than_it_can_solve_quickly():
    with pytest.raises(ValueError, match=str(MAX_FLOW_PIECES)):
        attention_flow(torch.eye(MAX_FLOW_PIECES + 1).expand(1, 1, -1, -1))


def test_rollout_attribution_reads_a_translations_trace(tiny_model, tokenizer):
    translation = translate(tiny_model, tokenizer, "The house is small.", DecodeConfig(max_len=6))
    source_rollout, attribution = rollout_attribution(translation.trace)
    s, t = len(translation.source.ids), len(translation.target_ids)
    assert source_rollout.shape == (s, s) and attribution.shape == (t, s)
    assert torch.allclose(attribution.sum(-1), torch.ones(t), atol=1e-5)
    assert torch.allclose(source_rollout, rollout(translation.trace.weights("enc_self")[:, 0]))


def test_norm_based_equals_a_slow_per_head_loop(tiny_model):
    result = norm_based(tiny_model, SOURCE, DECODER_INPUT)
    with torch.no_grad():
        _, trace = tiny_model(torch.tensor([SOURCE]), torch.tensor([DECODER_INPUT]), capture=Capture.INTERNALS)
    for kind in KINDS:
        for layer, module in enumerate(attention_modules(tiny_model, kind)):
            alpha, v = trace.weights(kind)[layer, 0], trace.internals[kind][layer].v[0]  # [H, Q, K], [H, K, d_k]
            n_heads, n_q, n_k = alpha.shape
            d_k = v.size(-1)
            w_o = module.w_o.weight.detach()  # [D, D]
            for h in range(n_heads):
                w_h = w_o[:, h * d_k:(h + 1) * d_k]  # [D, d_k]
                for j in range(n_k):
                    f = w_h @ v[h, j]  # [D]
                    assert torch.isclose(result.value_norms[kind][layer, h, j], f.norm(), atol=1e-5)
                    for i in range(n_q):
                        expected = torch.linalg.vector_norm(alpha[h, i, j] * f)
                        assert torch.isclose(result.per_head[kind][layer, h, i, j], expected, atol=1e-5)
            for i in range(n_q):
                for j in range(n_k):
                    summed = sum(alpha[h, i, j] * (w_o[:, h * d_k:(h + 1) * d_k] @ v[h, j]) for h in range(n_heads))
                    assert torch.isclose(result.heads[kind][layer, i, j], summed.norm(), atol=1e-5)
            assert torch.equal(result.weights[kind][layer], alpha)


def test_norm_based_vectors_add_up_to_the_attention_output(tiny_model):
    """sum over keys and heads of alpha f(x_j), plus W^O's bias, is the sub-layer output the forward computed:
    f is the right decomposition, not just some vector with the right norms."""
    with torch.no_grad():
        _, trace = tiny_model(torch.tensor([SOURCE]), torch.tensor([DECODER_INPUT]), capture=Capture.INTERNALS)
        for kind in KINDS:
            for layer, module in enumerate(attention_modules(tiny_model, kind)):
                parts = trace.internals[kind][layer]
                alpha, v = trace.weights(kind)[layer, 0], parts.v[0]
                n_heads, d_k = v.size(0), v.size(-1)
                w_o = module.w_o.weight.view(-1, n_heads, d_k).permute(1, 2, 0)  # [H, d_k, D]
                rebuilt = torch.einsum("hqk,hkd->qd", alpha, v @ w_o) + module.w_o.bias
                assert torch.allclose(rebuilt, parts.output[0], atol=1e-5), (kind, layer)


def test_decoder_states_from_source_embeddings_is_the_forward_pass(tiny_model):
    src, tgt = torch.tensor([SOURCE]), torch.tensor([DECODER_INPUT])
    with torch.no_grad():
        hidden = decoder_states_from_source_embeddings(tiny_model, tiny_model.embed(src), src, tgt)
        assert torch.allclose(tiny_model.logits(hidden), tiny_model(src, tgt), atol=1e-6)


@pytest.fixture(scope="module")
def tiny_model64(tiny_model):
    return copy.deepcopy(tiny_model).double().eval()


def piece_log_prob(model, source_vectors: torch.Tensor, t: int) -> float:
    """log P(OUTPUT[t]) of the teacher-forced forward started from source vectors [1, S, D]."""
    src, tgt = torch.tensor([SOURCE]), torch.tensor([DECODER_INPUT])
    with torch.no_grad():
        hidden = decoder_states_from_source_embeddings(model, source_vectors, src, tgt)
        return float(model.logits(hidden)[0, t].log_softmax(-1)[OUTPUT[t]])


def test_gradient_x_input_equals_a_finite_difference(tiny_model64):
    """sum_d g_jd x_jd is the derivative of log P(y_t) along x_j (the other tokens' vectors held):
    d/de f(x with x_j scaled by 1 + e) at e = 0, checked by a central difference in float64."""
    saliency = gradient_x_input(tiny_model64, SOURCE, OUTPUT)  # [T, S]
    assert saliency.shape == (len(OUTPUT), len(SOURCE)) and saliency.dtype == torch.float64
    x = tiny_model64.embed(torch.tensor([SOURCE])).detach()  # [1, S, D]
    eps = 1e-5
    for t in range(len(OUTPUT)):
        for j in range(len(SOURCE)):
            direction = torch.zeros_like(x)
            direction[0, j] = x[0, j]
            numeric = (piece_log_prob(tiny_model64, x + eps * direction, t)
                       - piece_log_prob(tiny_model64, x - eps * direction, t)) / (2 * eps)
            assert saliency[t, j].item() == pytest.approx(numeric, rel=1e-5, abs=1e-8), (t, j)


def test_gradient_x_input_leaves_no_gradient_on_the_weights(tiny_model):
    gradient_x_input(tiny_model, SOURCE, OUTPUT)
    assert all(p.grad is None for p in tiny_model.parameters())


@given(seed=st.integers(0, 10_000), rows=st.integers(1, 6), cols=st.integers(1, 8))
def test_shares_rows_sum_to_one(seed, rows, cols):
    values = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    result = shares(values)
    assert (result >= 0).all() and torch.allclose(result.sum(-1), torch.ones(rows, dtype=torch.float64))
    assert torch.equal(shares(torch.zeros(2, 3)), torch.zeros(2, 3))


def test_agreement_counts_shared_top_sources():
    a = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    b = torch.tensor([[0.7, 0.3], [0.9, 0.1], [0.1, 0.9]])
    c = torch.tensor([[-2.0, 1.0], [0.0, -3.0], [5.0, 0.0]])  # by magnitude: 0, 1, 0
    result = agreement({"a": a, "b": b, "c": c})
    assert result.methods == ("a", "b", "c")
    assert result.top.tolist() == [[0, 1, 0], [0, 0, 1], [0, 1, 0]]
    assert result.all_agree.tolist() == [True, False, False]
    assert result.pairwise[0, 1].item() == pytest.approx(1 / 3) and result.pairwise[0, 2].item() == 1.0


def test_attribute_puts_the_three_views_side_by_side(tiny_model):
    result = attribute(tiny_model, SOURCE, OUTPUT)
    t, s = len(OUTPUT), len(SOURCE)
    assert list(result.maps) == [ROLLOUT, NORM_BASED, SALIENCY]
    assert all(m.shape == (t, s) for m in result.maps.values())
    assert torch.allclose(result.maps[ROLLOUT].sum(-1), torch.ones(t), atol=1e-5)
    assert torch.allclose(result.maps[NORM_BASED].sum(-1), torch.ones(t), atol=1e-5)
    assert torch.allclose(result.maps[SALIENCY], gradient_x_input(tiny_model, SOURCE, OUTPUT))
    with torch.no_grad():
        _, trace = tiny_model(torch.tensor([SOURCE]), torch.tensor([DECODER_INPUT]), capture=Capture.WEIGHTS)
    source_rollout, composed = rollout_attribution(trace)
    assert torch.allclose(result.source_rollout, source_rollout) and torch.allclose(result.maps[ROLLOUT], composed)
    assert result.agreement.top.shape == (3, t)
    assert torch.allclose(result.source_flow, attention_flow(trace.weights("enc_self")[:, 0]))


def test_attribute_leaves_flow_out_past_its_piece_limit(tiny_model):
    long_source = [5, 6, 7, 8] * (MAX_FLOW_PIECES // 4) + [3]  # MAX_FLOW_PIECES + 1 pieces
    result = attribute(tiny_model, long_source, OUTPUT)
    assert result.source_flow is None and result.source_rollout.shape == (len(long_source), len(long_source))
