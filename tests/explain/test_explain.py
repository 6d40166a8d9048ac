import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from explain.heads import head_statistics, merge_to_words, most_focused_head
from explain.masks import mask_parts, unmasked_scores
from explain.mechanics import attention_internals, compare_scores, hard_attention, location_based, softmax_saturation
from explain.model_training import parameter_counts
from explain.positional import embedding_parts, offset_error
from model.checkpoints.files import load_checkpoint
from model.network.attention import Capture
from model.network.positional import frequency_index, pair_dimensions, sinusoidal_encoding
from model.network.trace import KINDS
from model.network.transformer import Transformer, count_parameters
from model.serving.inference import pad_batch
from tests.bart_helpers import bart_checkpoint, t5_checkpoint
from tests.conftest import tiny_config


def test_head_statistics_of_known_patterns():
    q = k = 4
    diagonal = torch.eye(4)[None, None]  # [1, 1, Q, K]
    uniform = torch.full((1, 1, q, k), 0.25)
    weights = torch.cat([diagonal, uniform], dim=1)  # [1, 2, Q, K]
    special = torch.tensor([False, False, False, True])
    stats = head_statistics(weights, special, torch.ones(q, dtype=torch.bool))
    assert stats["entropy"][0].tolist() == pytest.approx([0.0, math.log(4)])
    assert stats["diagonality"][0].tolist() == pytest.approx([1.0, 0.25])
    assert stats["max_weight"][0].tolist() == pytest.approx([1.0, 0.25])
    assert stats["special_share"][0].tolist() == pytest.approx([0.25, 0.25])
    assert stats["mean_distance"][0, 0] == 0 and stats["mean_distance"][0, 1] == pytest.approx(20 / 16)


def test_merge_to_words_sums_keys_and_averages_queries():
    w = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.2, 0.2, 0.6]])
    merged = merge_to_words(w, [[0], [1, 2]], [[0, 1], [2]])
    assert torch.allclose(merged, torch.tensor([[0.8, 0.2], [0.3, 0.7]]))
    assert torch.allclose(merged.sum(-1), torch.ones(2))


def _focus_by_hand(weights: list, rows: list[int], keys: list[int]) -> list[list[float]]:
    """Per layer and head, the mean over ``rows`` of each row's largest weight among ``keys``, in plain Python."""
    return [[sum(max(head[i][j] for j in keys) for i in rows) / len(rows) for head in layer] for layer in weights]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_most_focused_head_has_the_largest_mean_top_weight_over_the_pieces_that_are_not_special(data):
    layers, heads = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    q, k = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    queries = data.draw(st.lists(st.sampled_from(["▁a", "b", "</s>"]), min_size=q, max_size=q))
    keys = data.draw(st.lists(st.sampled_from(["▁a", "b", "</s>", "<s>"]), min_size=k, max_size=k))
    levels = st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0])  # few values: ties between heads happen
    logits = torch.tensor(data.draw(st.lists(st.lists(st.lists(st.lists(levels, min_size=k, max_size=k),
                                                               min_size=q, max_size=q),
                                                      min_size=heads, max_size=heads),
                                             min_size=layers, max_size=layers)))
    weights = logits.softmax(-1)  # [L, H, Q, K], rows sum to 1
    rows = [i for i, p in enumerate(queries) if p != "</s>"] or list(range(q))
    cols = [j for j, p in enumerate(keys) if p not in ("</s>", "<s>")] or list(range(k))
    focus = _focus_by_hand(weights.double().tolist(), rows, cols)
    best = max(f for layer in focus for f in layer)
    first = next((l, h) for l in range(layers) for h in range(heads) if focus[l][h] >= best - 1e-12)
    found = most_focused_head(weights, queries, keys)
    assert (found.layer, found.head) == first  # the largest, the lowest layer and head among equals
    assert found.focus == pytest.approx(best)
    # what the special pieces hold does not count: the row writing </s> and the columns of </s> and <s>
    changed = weights.clone()
    changed[:, :, [i for i in range(q) if i not in rows]] = 1.0
    changed[..., [j for j in range(k) if j not in cols]] = 1.0
    assert most_focused_head(changed, queries, keys) == found


def test_a_head_parked_on_end_of_sentence_is_not_the_most_focused():
    parked = torch.tensor([[0.05, 0.05, 0.9], [0.05, 0.05, 0.9]])  # every row on </s>: an idle head
    aligned = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.7, 0.1]])
    weights = torch.stack([parked, aligned])[None]  # [1, 2, Q, K]
    found = most_focused_head(weights, ["▁x", "▁y"], ["▁a", "▁b", "</s>"])
    assert (found.layer, found.head) == (0, 1) and found.focus == pytest.approx(0.7)


def test_attention_internals_reproduce_the_trace(tiny_model):
    src, dec_in = [5, 6, 7, 8, 3], [2, 9, 10, 11]
    _, trace = tiny_model(torch.tensor([src]), torch.tensor([dec_in]), capture=Capture.WEIGHTS)
    for kind in KINDS:
        for layer in range(2):
            parts = attention_internals(tiny_model, src, dec_in, kind, layer)
            assert torch.allclose(parts.weights, trace.weights(kind)[layer, 0], atol=1e-6)
            assert torch.allclose(parts.unmasked, parts.qk / math.sqrt(parts.d_k))
            assert torch.allclose(parts.context, parts.weights @ parts.v, atol=1e-6)
    dec = attention_internals(tiny_model, src, dec_in, "dec_self", 0)
    assert not dec.mask[0, 1] and (dec.weights[:, 0, 1:] == 0).all()


def test_unmasked_scores_of_a_padded_batch_are_the_trace_scores_before_the_mask(tiny_model):
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 3, 0, 0, 0]])  # [2, 5], the second row padded
    tgt = torch.tensor([[2, 9, 10, 11], [2, 12, 0, 0]])  # [2, 4]
    _, trace = tiny_model(src, tgt, capture=Capture.WEIGHTS)
    for kind in KINDS:
        for layer in range(2):
            raw = unmasked_scores(tiny_model, src, tgt, kind, layer)  # [B, H, Q, K]
            mask = trace.mask(kind).expand_as(raw)
            assert torch.isfinite(raw).all() and (~mask).any()
            assert torch.allclose(raw[mask], trace.scores(kind)[layer][mask], atol=1e-5)


def test_embedding_parts_and_parameter_counts(tiny_model):
    parts = embedding_parts(tiny_model, [5, 6, 3])
    assert torch.allclose(parts["sum"], parts["token"] + parts["positional"])
    assert torch.allclose(parts["token"][0], tiny_model.embed.token.weight[5] * 4.0)
    assert sum(n for _, n in parameter_counts(tiny_model)) == count_parameters(tiny_model)


def test_score_functions_and_saturation():
    query, keys = torch.randn(8), torch.randn(5, 8)
    scores = compare_scores(query, keys)
    assert set(scores) == {"additive", "general", "dot", "scaled dot"}
    assert torch.allclose(scores["scaled dot"], keys @ query / math.sqrt(8))
    assert torch.allclose(location_based(query, 5).sum(), torch.tensor(1.0))
    assert hard_attention(torch.tensor([0.2, 0.5, 0.3])).tolist() == [0, 1, 0]
    sat = softmax_saturation([4, 256], samples=100)
    assert sat["entropy_unscaled"][1] < 0.5 * sat["entropy_scaled"][1]  # unscaled softmax saturates at large d_k
    assert sat["grad_norm_unscaled"][1] < sat["grad_norm_scaled"][1]
    assert abs(sat["entropy_scaled"][0] - sat["entropy_scaled"][1]) < 0.2  # scaling keeps it stable


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
def test_a_fixed_offset_is_one_rotation_per_pair_in_either_layout(layout):
    assert offset_error(40, 16, 5, layout) < 1e-5
    sin, cos = pair_dimensions(16, layout)
    pe = sinusoidal_encoding(3, 16, layout)
    assert torch.allclose(pe[:, sin] ** 2 + pe[:, cos] ** 2, torch.ones(3, 8))  # each pair is a point on a circle
    assert [frequency_index(int(d), 16, layout) for d in cos] == list(range(8))


@pytest.fixture(scope="module")
def marian_model():
    """A tiny model with Marian's options: the decoder starts with <pad> (bos_id = pad_id), a final logits bias."""
    torch.manual_seed(0)
    config = tiny_config(20, pad_id=19, unk_id=1, bos_id=19, eos_id=0, decoder_start_id=19, tokenizer="marian",
                         activation="swish", positional_layout="halves", final_logits_bias=True)
    return Transformer(config).eval()


@settings(max_examples=15)
@given(source_lengths=st.lists(st.integers(1, 5), min_size=2, max_size=3), data=st.data())
def test_the_masks_page_parts_combine_to_the_masks_the_forward_pass_used(marian_model, source_lengths, data):
    """Marian's decoder input starts with the pad id: mask_parts must not call it padding, so that its pieces give
    exactly the masks the model applied, for every padded batch."""
    pad = marian_model.config.pad_id
    output_lengths = data.draw(st.lists(st.integers(0, 5), min_size=len(source_lengths), max_size=len(source_lengths)))
    src = pad_batch([[4] * (n - 1) + [0] for n in source_lengths], pad)  # [B, S], each row ends with </s>
    tgt_in = pad_batch([[pad] + [5] * n for n in output_lengths], pad)  # [B, T]: <pad> start, output, padding
    _, trace = marian_model(src, tgt_in, capture=Capture.WEIGHTS)
    parts = mask_parts(src, tgt_in, pad)
    assert torch.equal(parts["target padding & causal"], trace.mask("dec_self")[:, 0])
    assert torch.equal(parts["source padding"], trace.mask("enc_self")[:, 0].expand_as(parts["source padding"]))
    assert parts["target padding"][:, :, 0].all()


def test_parameter_counts_add_up_with_marians_final_logits_bias(marian_model):
    counts = dict(parameter_counts(marian_model))
    assert counts["Final logits bias"] == 20
    assert sum(counts.values()) == count_parameters(marian_model)


@pytest.mark.parametrize("family", ["bart", "mbart", "m2m_100", "t5"])
def test_parameter_counts_add_up_for_every_converted_family(family, tmp_path):
    """Learned positions, embedding norms, a relative bias and an output layer of its own each have a row, so the
    Model page's bars add up to the model whatever its family."""
    path = t5_checkpoint(tmp_path / family) if family == "t5" else bart_checkpoint(tmp_path / family, family)
    model = load_checkpoint(path).model
    counts = dict(parameter_counts(model))
    assert sum(counts.values()) == count_parameters(model)
    expected = {"bart": "Learned positions (encoder + decoder)", "mbart": "Embedding LayerNorms",
                "m2m_100": "Final LayerNorms (pre-norm only)", "t5": "Relative position bias (encoder + decoder)"}
    assert expected[family] in counts and ("Output layer (its own)" in counts) == (family == "t5")
