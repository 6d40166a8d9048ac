"""Watch attention learn: a checkpoint's teacher-forced reading of a fixed output, and which checkpoints line up."""
from __future__ import annotations

import torch

from explain.checkpoints import incompatibility, read_output
from explain.heads import row_entropy, sequence_log_probs
from model.checkpoints.files import Checkpoint
from model.network.attention import Capture
from model.network.trace import KINDS
from model.network.transformer import Transformer
from model.tokenization.joint import train_tokenizer
from tests.conftest import SENTENCES, tiny_config

SOURCE, OUTPUT = [5, 6, 7, 8, 3], [9, 10, 11, 3]


def test_a_reading_is_the_teacher_forced_forward_of_the_output(tiny_model):
    reading = read_output(tiny_model, SOURCE, OUTPUT)
    with torch.no_grad():
        _, trace = tiny_model(torch.tensor([SOURCE]), torch.tensor([[2, *OUTPUT[:-1]]]), capture=Capture.WEIGHTS)
    for kind in KINDS:
        assert torch.equal(reading.maps[kind], trace.weights(kind)[:, 0].float())
        expected = row_entropy(reading.maps[kind].double()).mean(-1).float()  # [L, H]
        assert torch.allclose(reading.spread[kind], expected)
    assert reading.maps["cross"].shape[-2:] == (len(OUTPUT), len(SOURCE))
    assert abs(reading.log_prob - float(sequence_log_probs(tiny_model, SOURCE, OUTPUT)[0])) < 1e-4


def test_an_untrained_checkpoint_reads_flatter_than_a_peaked_one(tokenizer):
    """The lecture claim, on constructed weights: W^Q = W^K = 0 makes every score equal, so every row is uniform
    (the highest entropy there is); any other weights give lower or equal entropy."""
    torch.manual_seed(1)
    model = Transformer(tiny_config(tokenizer.vocab_size)).eval()
    flat = Transformer(tiny_config(tokenizer.vocab_size)).eval()
    flat.load_state_dict(model.state_dict())
    with torch.no_grad():
        for name, param in flat.named_parameters():
            if ".w_q." in name or ".w_k." in name:
                param.zero_()
    flat_reading, reading = read_output(flat, SOURCE, OUTPUT), read_output(model, SOURCE, OUTPUT)
    uniform = torch.log(torch.tensor(float(len(SOURCE))))
    assert torch.allclose(flat_reading.spread["cross"], uniform.expand_as(flat_reading.spread["cross"]), atol=1e-5)
    assert (reading.spread["cross"] <= flat_reading.spread["cross"] + 1e-5).all()


def _checkpoint(model, tokenizer) -> Checkpoint:
    return Checkpoint(model=model, tokenizer=tokenizer, config=model.config, meta={}, path=None)


def test_only_checkpoints_with_the_same_tokenizer_and_shape_line_up(tiny_model, tokenizer):
    reference = _checkpoint(tiny_model, tokenizer)
    torch.manual_seed(2)
    assert incompatibility(reference, _checkpoint(Transformer(tiny_config(tokenizer.vocab_size)), tokenizer)) is None
    other_tokenizer = train_tokenizer(SENTENCES[:4] * 10, vocab_size=tokenizer.vocab_size)
    assert "tokenizer" in incompatibility(reference, _checkpoint(tiny_model, other_tokenizer))
    wider = Transformer(tiny_config(tokenizer.vocab_size, n_heads=4))
    assert incompatibility(reference, _checkpoint(wider, tokenizer)) == "it has 2+2 layers × 4 heads, this model " \
                                                                      "2+2 layers × 2 heads"
