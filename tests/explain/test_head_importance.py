import torch

from explain.heads import all_heads, head_importance, n_layers_of, sequence_log_probs
from model.trace import KINDS, HeadMask

SOURCE, OUTPUT = [5, 6, 7, 8, 3], [9, 10, 11, 3]


def test_batched_importance_equals_switching_one_head_off_at_a_time(tiny_model):
    table = head_importance(tiny_model, SOURCE, OUTPUT)
    layers = n_layers_of(tiny_model)
    base = sequence_log_probs(tiny_model, SOURCE, OUTPUT)[0]
    for kind, layer, head in all_heads(layers, tiny_model.config.n_heads):
        alone = HeadMask.switched_off([(kind, layer, head)], layers, tiny_model.config.n_heads)
        drop = base - sequence_log_probs(tiny_model, SOURCE, OUTPUT, alone)[0]
        assert torch.isclose(table[kind][layer, head], drop, atol=1e-4), (kind, layer, head)
    assert set(table) == set(KINDS) and all(t.shape == (2, 2) for t in table.values())


def test_sequence_log_prob_is_the_sum_of_the_teacher_forced_log_probs_and_chunks_agree(tiny_model):
    with torch.no_grad():
        logits = tiny_model(torch.tensor([SOURCE]), torch.tensor([[2] + OUTPUT[:-1]]))
    expected = logits.log_softmax(-1)[0, torch.arange(len(OUTPUT)), OUTPUT].sum()
    assert torch.isclose(sequence_log_probs(tiny_model, SOURCE, OUTPUT)[0], expected, atol=1e-5)
    layers = n_layers_of(tiny_model)
    mask = HeadMask.rows([[], [("cross", 0, 1)], [("enc_self", 1, 0)]], layers, 2)
    whole = sequence_log_probs(tiny_model, SOURCE, OUTPUT, mask)
    one_row_at_a_time = sequence_log_probs(tiny_model, SOURCE, OUTPUT, mask, activation_budget=1, logit_chunk=1)
    assert torch.allclose(whole, one_row_at_a_time, atol=1e-5) and whole.shape == (3,)
    rows = [sequence_log_probs(tiny_model, SOURCE, OUTPUT, HeadMask.rows([off], layers, 2))[0]
            for off in ([], [("cross", 0, 1)], [("enc_self", 1, 0)])]
    assert torch.allclose(whole, torch.stack(rows), atol=1e-5)
