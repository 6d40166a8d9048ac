import threading

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from explain.heads import all_heads, head_importance, n_layers_of, sequence_log_probs
from model.network.trace import KINDS, HeadMask
from model.network.transformer import Transformer
from tests.conftest import tiny_config

SOURCE, OUTPUT = [5, 6, 7, 8, 3], [9, 10, 11, 3]


def one_head_at_a_time(model, source, output) -> dict[str, torch.Tensor]:
    """The definition: for each head, a whole teacher-forced pass with only that head off."""
    layers, n_heads = n_layers_of(model), model.config.n_heads
    base = sequence_log_probs(model, source, output)[0]
    table = {kind: torch.zeros(layers[kind], n_heads) for kind in KINDS}
    for kind, layer, head in all_heads(layers, n_heads):
        alone = HeadMask.switched_off([(kind, layer, head)], layers, n_heads)
        table[kind][layer, head] = base - sequence_log_probs(model, source, output, alone)[0]
    return table


def test_batched_importance_equals_switching_one_head_off_at_a_time(tiny_model):
    table = head_importance(tiny_model, SOURCE, OUTPUT)
    expected = one_head_at_a_time(tiny_model, SOURCE, OUTPUT)
    assert set(table) == set(KINDS) and all(t.shape == (2, 2) for t in table.values())
    for kind in KINDS:
        assert torch.allclose(table[kind], expected[kind], atol=1e-4), kind
    assert any(bool(t.abs().gt(1e-3).any()) for t in table.values())  # a random model's heads do matter


@settings(max_examples=12)
@given(enc_layers=st.integers(1, 3), dec_layers=st.integers(1, 3), n_heads=st.sampled_from([1, 2, 4]),
       norm_first=st.booleans(), data=st.data())
def test_the_staircase_equals_the_definition_for_any_shape_and_sentence(tokenizer, enc_layers, dec_layers, n_heads,
                                                                         norm_first, data):
    """Rows joining at their own layer (and head groups split by the activation budget) change no drop."""
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    model = Transformer(tiny_config(tokenizer.vocab_size, n_heads=n_heads, n_encoder_layers=enc_layers,
                                    n_decoder_layers=dec_layers, norm_first=norm_first)).eval()
    ids = st.integers(4, tokenizer.vocab_size - 1)
    source = [*data.draw(st.lists(ids, min_size=1, max_size=9)), 3]
    output = [*data.draw(st.lists(ids, min_size=0, max_size=9)), 3]
    expected = one_head_at_a_time(model, source, output)
    for budget, workers in ((None, 1), (None, 2), (1, 2)):  # one group; a group per worker; one head per group
        table = head_importance(model, source, output, workers=workers) if budget is None else \
            head_importance(model, source, output, activation_budget=budget, logit_chunk=7, workers=workers)
        for kind in KINDS:
            assert torch.allclose(table[kind], expected[kind], atol=1e-4), (kind, budget, workers)


def test_another_sessions_forward_during_the_unmasked_pass_changes_nothing(tiny_model, monkeypatch):
    """The app shares one model between sessions: a forward from another thread while the table's hooks are on
    must not replace what the rows start from."""
    expected = head_importance(tiny_model, SOURCE, OUTPUT, workers=1)
    own_pass = tiny_model.teacher_forced_hidden

    def pass_then_another_session(*args, **kwargs):
        result = own_pass(*args, **kwargs)
        other = threading.Thread(target=lambda: own_pass(torch.tensor([[7, 5, 3]]), torch.tensor([[2, 4]]),
                                                         *args[2:], **kwargs))  # same capture level
        other.start()
        other.join()
        return result

    monkeypatch.setattr(tiny_model, "teacher_forced_hidden", pass_then_another_session)
    table = head_importance(tiny_model, SOURCE, OUTPUT, workers=1)
    for kind in KINDS:
        assert torch.equal(table[kind], expected[kind]), kind


def test_sequence_log_prob_is_the_sum_of_the_teacher_forced_log_probs_and_chunks_agree(tiny_model):
    with torch.no_grad():
        logits = tiny_model(torch.tensor([SOURCE]), torch.tensor([[2, *OUTPUT[:-1]]]))
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
