"""Head ablation on one sentence (Michel et al., 2019): the log-prob change, the maps of the original output with
and without the heads, the summed importance over sentences."""
from __future__ import annotations

import torch

from explain.ablation import (
    ablate,
    changed_pieces,
    importance_over_sentences,
    map_difference,
    switched_off,
    teacher_forced_pair,
)
from explain.heads import head_importance, sequence_log_probs
from model.network.config import DecodeConfig
from model.serving.inference import translate

TEXT = "The house is small."
CONFIG = DecodeConfig(max_len=6)


def test_ablation_log_probs_are_sequence_log_probs_and_the_pieces_add_up(tiny_model, tokenizer):
    original = translate(tiny_model, tokenizer, TEXT, CONFIG)
    heads = [("cross", 1, 0), ("enc_self", 0, 1)]
    result = ablate(tiny_model, tokenizer, original, heads, CONFIG)
    source, output = original.source.ids, original.target_ids
    assert result.log_prob == sequence_log_probs(tiny_model, source, output)[0].item()
    off = sequence_log_probs(tiny_model, source, output, switched_off(tiny_model, heads))[0].item()
    assert result.ablated_log_prob == off
    assert abs(result.log_prob_change - (off - result.log_prob)) < 1e-9
    assert torch.allclose(result.piece_log_probs.sum(-1), torch.tensor([result.log_prob, off]), atol=1e-4)
    direct = translate(tiny_model, tokenizer, TEXT, CONFIG, head_mask=switched_off(tiny_model, heads))
    assert result.ablated.target_ids == direct.target_ids and result.heads == tuple(sorted(heads))


def test_switching_nothing_off_changes_nothing(tiny_model, tokenizer):
    original = translate(tiny_model, tokenizer, TEXT, CONFIG)
    result = ablate(tiny_model, tokenizer, original, [], CONFIG)
    assert result.ablated.target_ids == original.target_ids and result.log_prob_change == 0.0
    assert all(float(result.difference(kind).abs().max()) == 0.0 for kind in result.maps)
    assert all(float(change.max()) == 0.0 for change in result.largest_change().values())


def test_largest_change_per_layer_is_the_largest_difference(tiny_model, tokenizer):
    original = translate(tiny_model, tokenizer, TEXT, CONFIG)
    result = ablate(tiny_model, tokenizer, original, [("enc_self", 0, 0)], CONFIG)
    change = result.largest_change()
    assert change["enc_self"][0] == 0.0 and change["enc_self"][1] > 0 and (change["cross"] > 0).all()
    for kind, per_layer in change.items():
        for layer, value in enumerate(per_layer):
            assert value == result.difference(kind)[layer].abs().max()


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 rounding. The two rows are one batch: the same inputs can take different blocked kernel
    paths per row (which paths depends on what ran before in the process), so equal maps agree to about 1e-7,
    not bit for bit; a map the switched-off head changed differs by orders of magnitude more."""
    return torch.allclose(a, b, rtol=0, atol=1e-6)


def test_a_head_switched_off_changes_only_the_maps_above_it(tiny_model):
    """A head's output is dropped after its weights are computed: its own layer's maps stay, later ones move."""
    source, output = [5, 6, 7, 8, 3], [9, 10, 11, 3]
    _, weights = teacher_forced_pair(tiny_model, source, output, [("enc_self", 0, 1)])
    assert same(weights["enc_self"][0, 1], weights["enc_self"][0, 0])
    assert (weights["enc_self"][1, 1] - weights["enc_self"][1, 0]).abs().max() > 1e-4
    assert (weights["cross"][0, 1] - weights["cross"][0, 0]).abs().max() > 1e-4  # the encoder output moved
    assert same(weights["dec_self"][0, 1], weights["dec_self"][0, 0])  # the decoder's first layer reads ids
    _, weights = teacher_forced_pair(tiny_model, source, output, [("cross", 1, 0)])
    assert all(same(w[:, 1], w[:, 0]) for w in (weights["enc_self"], weights["dec_self"], weights["cross"]))


def test_map_difference_only_for_maps_that_line_up():
    a, b = torch.rand(2, 3, 4, 5), torch.rand(2, 3, 4, 5)
    assert torch.equal(map_difference(a, b), a - b)
    assert map_difference(a, torch.rand(2, 3, 4, 6)) is None


def test_changed_pieces_marks_what_is_not_shared():
    before, after = changed_pieces(["▁Das", "▁Haus", "▁ist", "▁klein", "."], ["▁Das", "▁Tier", "▁ist", "."])
    assert before == [False, True, False, True, False] and after == [False, True, False, False]
    assert changed_pieces([], ["a"]) == ([], [True])


def test_importance_over_sentences_is_the_sum_of_each_sentences_importance(tiny_model, tokenizer):
    texts = ["The house is small.", "Where is the station?"]
    total = importance_over_sentences(tiny_model, tokenizer, texts, CONFIG)
    expected = None
    for text in texts:
        t = translate(tiny_model, tokenizer, text, CONFIG)
        one = head_importance(tiny_model, t.source.ids, t.target_ids)
        expected = one if expected is None else {k: expected[k] + v for k, v in one.items()}
    assert all(torch.allclose(total[kind], expected[kind], atol=1e-5) for kind in expected)
