"""The map of all heads (explain.head_map): its distance is a Jensen-Shannon divergence (symmetric, 0 on identical
heads, at most ln 2), classical MDS recovers points from their distances, a head is named by what it does, the weights
it reads are the model's own, the query-key plane keeps a plane's points exactly; and it is priced before it runs."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from explain.head_map import (
    BEHAVIOURS,
    LN2,
    Reading,
    build_head_map,
    classical_mds,
    head_map,
    js_divergence,
    query_key_plane,
    read_sentence,
)
from explain.heads import teacher_forced
from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig
from model.network.trace import KINDS
from model.serving.budget import Budget, BudgetError, head_map_cost, plan_head_map
from model.serving.inference import Cancelled, translate
from tests.bart_helpers import bart_checkpoint, t5_checkpoint

distributions = arrays(np.float64, st.integers(2, 9), elements=st.floats(0, 1)).filter(lambda a: a.sum() > 1e-3)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_distance_is_symmetric_zero_on_identical_heads_and_at_most_ln2(data):
    p = data.draw(distributions)
    q = data.draw(arrays(np.float64, len(p), elements=st.floats(0, 1)).filter(lambda a: a.sum() > 1e-3))
    p, q = p / p.sum(), q / q.sum()
    d = float(js_divergence(p, q))
    assert 0.0 <= d <= LN2
    assert d == pytest.approx(float(js_divergence(q, p)), abs=1e-12)
    assert float(js_divergence(p, p)) == pytest.approx(0.0, abs=1e-12)
    if not np.allclose(p, q, atol=1e-6):
        assert d > 0


def test_disjoint_heads_are_ln2_apart():
    assert float(js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0]))) == pytest.approx(math.log(2))


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(3, 12), st.just(2)), elements=st.floats(-5, 5)))
def test_classical_mds_recovers_points_of_a_plane_from_their_distances(points):
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)
    coords, explained = classical_mds(distances)
    np.testing.assert_allclose(np.linalg.norm(coords[:, None] - coords[None], axis=-1), distances, atol=1e-6)
    assert explained == pytest.approx(1.0, abs=1e-6) or distances.max() < 1e-9


def reading(weights: dict[str, np.ndarray], pieces: tuple[str, ...]) -> Reading:
    """A crafted reading: source and decoder input both ``pieces`` (ids 10.., the last one </s> = id 2)."""
    ids = (*range(10, 10 + len(pieces) - 1), 2)
    empty = {kind: np.zeros((*w.shape[:3], 4)) for kind, w in weights.items()}
    return Reading(source_ids=ids, input_ids=ids, source_pieces=pieces, input_pieces=pieces, weights=weights,
                   queries=empty, keys=empty)


def test_heads_are_named_by_what_they_do_and_alike_heads_stand_together():
    n = 6
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0  # the first piece has no previous one: it reads itself
    uniform = np.full((n, n), 1.0 / n)
    causal = np.tril(np.ones((n, n)))
    causal /= causal.sum(-1, keepdims=True)  # a decoder head spreading evenly over what it can see
    end = np.zeros((n, n))
    end[:, -1] = 1.0  # every row on </s>
    aligned = np.eye(n)
    weights = {"enc_self": np.stack([np.stack([previous, previous, uniform])]),  # [L=1, H=3, Q, K]
               "dec_self": np.stack([np.stack([previous * np.tril(np.ones((n, n))), causal, causal])]),
               "cross": np.stack([np.stack([aligned, end, uniform])])}
    hmap = head_map([reading(weights, ("▁a", "▁b", ",", "▁c", "▁d", "</s>"))], frozenset({0, 1, 2}))
    names = dict(zip(hmap.heads, hmap.names, strict=True))
    assert names[("enc_self", 0, 0)] == names[("enc_self", 0, 1)] == "previous piece"
    assert names[("enc_self", 0, 2)] == "broad" and names[("cross", 0, 2)] == "broad"
    assert names[("cross", 0, 0)] == "aligned" and names[("cross", 0, 1)] == "</s>"
    assert names[("dec_self", 0, 0)] == "previous piece"
    index = {h: i for i, h in enumerate(hmap.heads)}
    assert hmap.scores[index[("enc_self", 0, 0)]] == pytest.approx(5 / 6)  # 5 of 6 rows on the previous piece
    assert hmap.distances[index[("enc_self", 0, 0)], index[("enc_self", 0, 1)]] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(hmap.coords[index[("enc_self", 0, 0)]], hmap.coords[index[("enc_self", 0, 1)]],
                               atol=1e-9)
    # a previous-piece head of the decoder is nearer the encoder's previous-piece heads than a broad head is
    far = hmap.distances[index[("enc_self", 0, 0)], index[("enc_self", 0, 2)]]
    assert hmap.distances[index[("enc_self", 0, 0)], index[("dec_self", 0, 0)]] < far
    assert np.isnan(hmap.measures["aligned"][index[("enc_self", 0, 0)]])  # a measure a kind has not: no value
    assert np.isnan(hmap.measures["next piece"][index[("dec_self", 0, 1)]])
    assert set(hmap.names) <= set(BEHAVIOURS)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(0, 10_000))
def test_the_query_key_plane_keeps_points_that_lie_in_a_plane(n, m, seed):
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(8, 2)))[0].T  # [2, 8]: a plane in 8 dimensions
    q, k = rng.normal(size=(n, 2)) @ basis, rng.normal(size=(m, 2)) @ basis + 3.0 * basis[0]
    plane = query_key_plane(q, k)
    both = np.concatenate([plane.queries, plane.keys])
    moved = np.concatenate([q * plane.scale, (k + plane.key_shift) / plane.scale])
    original = np.linalg.norm(moved[:, None] - moved[None], axis=-1)
    np.testing.assert_allclose(np.linalg.norm(both[:, None] - both[None], axis=-1), original, atol=1e-8)
    assert plane.explained == pytest.approx(1.0, abs=1e-9) or original.max() < 1e-9
    # neither the shift nor the scale changes a row's softmax: every score moves by the same amount
    scores, kept = q @ k.T, (q * plane.scale) @ ((k + plane.key_shift) / plane.scale).T
    np.testing.assert_allclose(kept - kept[:, :1], scores - scores[:, :1], atol=1e-8)


def test_the_weights_read_are_the_models_own(tiny_model, tokenizer):
    t = translate(tiny_model, tokenizer, "the cat sat on the mat", DecodeConfig(max_len=8))
    r = read_sentence(tiny_model, t.source.ids, t.target_ids, t.source.pieces, t.target_input_pieces)
    _, weights = teacher_forced(tiny_model, t.source.ids, t.target_ids)
    for kind in KINDS:
        np.testing.assert_allclose(r.weights[kind], weights[kind][:, 0].numpy(), atol=1e-6)
        assert r.queries[kind].shape[:3] == r.weights[kind].shape[:3]
        assert r.keys[kind].shape[2] == r.weights[kind].shape[3]


def test_a_map_stops_when_its_session_leaves(tiny_model, tokenizer):
    t = translate(tiny_model, tokenizer, "the cat", DecodeConfig(max_len=6))
    with pytest.raises(Cancelled):
        build_head_map(tiny_model, [(t.source.ids, t.target_ids, t.source.pieces, t.target_input_pieces)],
                       should_stop=lambda: True)


@pytest.mark.parametrize("family", ["bart", "t5"])
def test_converted_families_are_mapped_like_our_own(tmp_path, family):
    path = t5_checkpoint(tmp_path / "t5") if family == "t5" else bart_checkpoint(tmp_path / "bart", family)
    ckpt = load_checkpoint(path, torch.device("cpu"))
    texts = ["The house is small.", "I have a cat."]
    ts = [translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(max_len=6)) for text in texts]
    hmap = build_head_map(ckpt.model, [(t.source.ids, t.target_ids, t.source.pieces, t.target_input_pieces)
                                       for t in ts])
    cfg = ckpt.config
    assert len(hmap.heads) == cfg.n_heads * (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers)
    assert hmap.coords.shape == (len(hmap.heads), 2) and np.isfinite(hmap.coords).all()
    assert np.all(hmap.distances >= 0) and np.all(hmap.distances <= LN2) and np.allclose(hmap.distances,
                                                                                          hmap.distances.T)
    assert all(0 <= s <= 1 + 1e-9 for s in hmap.scores)


def test_the_map_is_priced_before_it_runs_and_cut_to_the_budget(shipped_config):
    sentences = [(12, 34)] * 5
    cost = head_map_cost(shipped_config, sentences)
    assert cost.seconds > head_map_cost(shipped_config, sentences[:1]).seconds > 0
    tight = Budget(max_seconds=head_map_cost(shipped_config, sentences[:2]).seconds * 1.01)
    plan = plan_head_map(shipped_config, sentences, tight)
    assert plan.sentences == 2 and "5 → 2" in plan.notes[0]
    assert plan_head_map(shipped_config, sentences).sentences == 5
    with pytest.raises(BudgetError, match="does not fit"):
        plan_head_map(shipped_config, sentences, Budget(max_seconds=1e-6))


@pytest.fixture
def shipped_config():
    return load_checkpoint(Path(__file__).resolve().parents[2] / "pretrained" / "en-de", torch.device("cpu")).config
