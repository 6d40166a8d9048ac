"""Property tests: MultiHeadAttention against a slow reference written with plain Python loops.

Random batch (1-3), heads (1-4), d_k (1-8), query/key lengths (1-7) and random bool masks (True = may attend)
of the shapes the model uses, with fully masked rows and fully masked batch elements drawn often.
Profiles (derandomized "ci" by default, HYPOTHESIS_PROFILE=long for 500 examples) live in tests/conftest.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import event, given
from hypothesis import strategies as st

from model.network.attention import Capture, MultiHeadAttention

TOL = 1e-5
LOW = torch.finfo(torch.float32).min


@dataclass
class Case:
    mha: MultiHeadAttention
    query: torch.Tensor  # [B, Q, D]
    keys: torch.Tensor  # [B, K, D]
    mask: torch.Tensor | None  # bool, broadcastable to [B, 1, Q, K]

    def full_mask(self) -> torch.Tensor:
        """The mask as every head sees it: [B, H, Q, K] (all True without a mask)."""
        b, q, _ = self.query.shape
        shape = (b, self.mha.n_heads, q, self.keys.size(1))
        return torch.ones(shape, dtype=torch.bool) if self.mask is None else self.mask.expand(shape)


def mask_rows(draw, n_rows: int, n_keys: int) -> list[list[bool]]:
    """Rows of key flags; each row is all masked, all open, a padding prefix or arbitrary, so the edge cases
    (fully masked rows) come up in most examples instead of with probability 2^-K."""
    rows = []
    for _ in range(n_rows):
        kind = draw(st.sampled_from(["none", "all", "prefix", "random"]))
        if kind == "none":
            rows.append([False] * n_keys)
        elif kind == "all":
            rows.append([True] * n_keys)
        elif kind == "prefix":
            length = draw(st.integers(0, n_keys))
            rows.append([j < length for j in range(n_keys)])
        else:
            rows.append(draw(st.lists(st.booleans(), min_size=n_keys, max_size=n_keys)))
    return rows


@st.composite
def cases(draw) -> Case:
    batch, heads, d_k = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 8))
    n_q, n_k = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    d_model = heads * d_k
    seed, gain = draw(st.integers(0, 2**31 - 1)), draw(st.sampled_from([0.3, 1.0, 2.0]))
    g = torch.Generator().manual_seed(seed)
    mha = MultiHeadAttention(d_model, heads).eval()
    with torch.no_grad():
        for p in mha.parameters():  # weights ~ N(0, gain^2 / D), biases ~ N(0, 0.1^2): scores of order gain^2
            p.copy_(torch.randn(p.shape, generator=g) * (gain / math.sqrt(d_model) if p.dim() > 1 else 0.1))
    query = torch.randn(batch, n_q, d_model, generator=g)
    keys = torch.randn(batch, n_k, d_model, generator=g)
    shape = draw(st.sampled_from(["none", "padding", "per_query", "shared"]))
    if shape == "none":
        mask = None
    elif shape == "padding":  # [B, 1, 1, K]: a fully masked batch element masks every row of it
        mask = torch.tensor(mask_rows(draw, batch, n_k))[:, None, None, :]
    elif shape == "per_query":  # [B, 1, Q, K], e.g. padding & causal
        mask = torch.tensor([mask_rows(draw, n_q, n_k) for _ in range(batch)])[:, None]
    else:  # [1, 1, Q, K], a causal-like mask shared by the batch
        mask = torch.tensor(mask_rows(draw, n_q, n_k))[None, None]
    return Case(mha, query, keys, mask)


def reference(case: Case) -> tuple[list, list, list]:
    """(weights [B][H][Q][K], scores [B][H][Q][K] with masked = None, output [B][Q][D]) in float64 Python
    arithmetic: q = x W_q^T + b_q (same for k, v), per head q.k / sqrt(d_k), softmax over the allowed keys only
    (a row without any is all 0), weighted sum of v, heads concatenated, then W_o."""
    mha = case.mha

    def linear(layer, x):  # x [L][D] -> [L][D]
        w, b = layer.weight.double().tolist(), layer.bias.double().tolist()
        return [[sum(row[j] * wo[j] for j in range(len(row))) + bo for wo, bo in zip(w, b, strict=True)]
                for row in x]

    heads, d_k = mha.n_heads, mha.d_k
    allowed = case.full_mask().tolist()
    all_weights, all_scores, outputs = [], [], []
    for b in range(case.query.size(0)):
        xq, xk = case.query[b].double().tolist(), case.keys[b].double().tolist()
        q, k, v = linear(mha.w_q, xq), linear(mha.w_k, xk), linear(mha.w_v, xk)
        merged = [[0.0] * (heads * d_k) for _ in q]
        b_weights, b_scores = [], []
        for h in range(heads):
            dims = range(h * d_k, (h + 1) * d_k)
            h_weights, h_scores = [], []
            for i in range(len(q)):
                scores = [sum(q[i][d] * k[j][d] for d in dims) / math.sqrt(d_k) if allowed[b][h][i][j] else None
                          for j in range(len(k))]
                open_scores = [s for s in scores if s is not None]
                weights = [0.0] * len(k)
                if open_scores:
                    top = max(open_scores)
                    total = sum(math.exp(s - top) for s in open_scores)
                    weights = [0.0 if s is None else math.exp(s - top) / total for s in scores]
                for d in dims:
                    merged[i][d] = sum(weights[j] * v[j][d] for j in range(len(k)))
                h_weights.append(weights)
                h_scores.append(scores)
            b_weights.append(h_weights)
            b_scores.append(h_scores)
        all_weights.append(b_weights)
        all_scores.append(b_scores)
        outputs.append(linear(mha.w_o, merged))
    return all_weights, all_scores, outputs


@given(cases())
def test_explicit_attention_equals_the_python_loop_reference(case):
    with torch.no_grad():
        out = case.mha(case.query, case.keys, case.mask, capture=Capture.WEIGHTS)
    ref_weights, ref_scores, ref_output = reference(case)
    allowed = case.full_mask()
    shape = tuple(allowed.shape)
    assert out.weights.shape == shape and out.scores.shape == shape
    assert out.output.shape == case.query.shape
    for tensor in (out.weights, out.scores, out.output):
        assert torch.isfinite(tensor).all(), "NaN or inf in an attention output"

    torch.testing.assert_close(out.weights.double(), torch.tensor(ref_weights, dtype=torch.float64),
                               atol=TOL, rtol=0)
    torch.testing.assert_close(out.output.double(), torch.tensor(ref_output, dtype=torch.float64), atol=TOL, rtol=0)
    scores = torch.tensor([[[[LOW if s is None else s for s in row] for row in head] for head in batch]
                           for batch in ref_scores], dtype=torch.float64)
    torch.testing.assert_close(out.scores.double()[allowed], scores[allowed], atol=TOL, rtol=0)

    # Masked entries: weight exactly 0, score exactly finfo.min; each row sums to 1 or is all zero when fully masked.
    assert (out.weights[~allowed] == 0).all()
    assert (out.scores[~allowed] == LOW).all()
    fully_masked = ~allowed.any(-1)  # [B, H, Q]
    event("some row fully masked" if fully_masked.any() else "no row fully masked")
    sums = out.weights.sum(-1)
    assert (out.weights[fully_masked] == 0).all()
    torch.testing.assert_close(sums[~fully_masked], torch.ones_like(sums[~fully_masked]), atol=TOL, rtol=0)


@given(cases())
def test_fused_path_gives_the_explicit_output_on_every_row_with_a_key_to_attend(case):
    with torch.no_grad():
        explicit = case.mha(case.query, case.keys, case.mask, capture=Capture.WEIGHTS)
        fused = case.mha(case.query, case.keys, case.mask)
    assert fused.weights is None and fused.scores is None
    has_key = case.full_mask()[:, 0].any(-1)  # [B, Q]; the mask is shared by the heads
    torch.testing.assert_close(fused.output[has_key], explicit.output[has_key], atol=TOL, rtol=0)
    # Both paths project the same keys and values (the KV cache must not depend on the path).
    for a, b in zip(fused.key_value, explicit.key_value, strict=True):
        assert torch.equal(a, b)
