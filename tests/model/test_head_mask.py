"""Switching heads off (Michel et al., 2019): a head mask zeroes a head's output before W^O, nothing else."""
import pytest
import torch

from model.decoding.search import beam_search, greedy_decode
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import KINDS, HeadMask

SRC = torch.tensor([5, 6, 7, 8, 9, 3])
TGT_IN = torch.tensor([[2, 10, 11, 12]])
LAYERS = {"enc_self": 2, "dec_self": 2, "cross": 2}


def test_masking_no_head_is_the_unmasked_model_exactly(tiny_model):
    all_on = HeadMask.switched_off([], LAYERS, 2)
    with torch.no_grad():
        plain, plain_trace = tiny_model(SRC[None], TGT_IN, capture=Capture.WEIGHTS)
        masked, masked_trace = tiny_model(SRC[None], TGT_IN, capture=Capture.WEIGHTS, head_mask=all_on)
    assert torch.equal(plain, masked)
    for kind in KINDS:
        assert torch.equal(plain_trace.weights(kind), masked_trace.weights(kind))


@pytest.mark.parametrize("kind", KINDS)
def test_every_head_of_a_layer_off_leaves_only_the_output_bias_of_that_sublayer(tiny_model, kind):
    layer = 1
    off = HeadMask.switched_off([(kind, layer, h) for h in range(2)], LAYERS, 2)
    with torch.no_grad():
        _, trace = tiny_model(SRC[None], TGT_IN, capture=Capture.INTERNALS, head_mask=off)
    parts = trace.internals[kind][layer]
    module = (tiny_model.encoder.layers[layer].self_attn if kind == "enc_self" else
              getattr(tiny_model.decoder.layers[layer], "self_attn" if kind == "dec_self" else "cross_attn"))
    assert torch.equal(parts.output, module.w_o.bias.expand_as(parts.output))
    assert (parts.context == 0).all()
    other = "cross" if kind != "cross" else "dec_self"
    assert (trace.internals[other][layer].output != trace.internals[other][layer].output[..., :1]).any()


def test_switching_a_head_off_changes_the_output_and_keeps_its_own_weights(tiny_model):
    off = HeadMask.switched_off([("enc_self", 0, 1)], LAYERS, 2)
    with torch.no_grad():
        plain, plain_trace = tiny_model(SRC[None], TGT_IN, capture=Capture.WEIGHTS)
        masked, masked_trace = tiny_model(SRC[None], TGT_IN, capture=Capture.WEIGHTS, head_mask=off)
    assert not torch.allclose(plain, masked)
    assert torch.equal(plain_trace.enc_self[0], masked_trace.enc_self[0])  # its weights are computed as before
    assert not torch.allclose(plain_trace.enc_self[1], masked_trace.enc_self[1])  # the next layer reads less


@pytest.mark.parametrize("beam", [1, 3])
def test_decoding_with_a_head_mask_is_deterministic_and_matches_teacher_forcing(tiny_model, beam):
    off = HeadMask.switched_off([("cross", 0, 0), ("dec_self", 1, 1)], LAYERS, 2)
    decode = greedy_decode if beam == 1 else beam_search
    config = DecodeConfig(beam_size=beam, max_len=8)
    first, second = decode(tiny_model, SRC, config, head_mask=off), decode(tiny_model, SRC, config, head_mask=off)
    assert [h.tokens for h in first.hypotheses] == [h.tokens for h in second.hypotheses]
    best = first.best
    with torch.no_grad():
        _, trace = tiny_model(SRC[None], torch.tensor([(2, *best.tokens[:-1])]), capture=Capture.WEIGHTS,
                              head_mask=off)
    assert torch.allclose(first.attention_for(best).weights("cross"), trace.weights("cross"), atol=1e-5)


def test_per_kind_holds_every_kind_in_order_and_refuses_an_unknown_one():
    from model.network.trace import KINDS, PerKind

    layers = PerKind(enc_self=3, dec_self=2, cross=2)
    assert list(layers) == list(KINDS) and dict(layers) == {"enc_self": 3, "dec_self": 2, "cross": 2}
    assert layers["cross"] == 2 and sum(layers.values()) == 7
    assert PerKind.build(len) == PerKind(enc_self=8, dec_self=8, cross=5)  # make(kind) for each kind
    assert layers.map(lambda n: n * 10) == PerKind(enc_self=30, dec_self=20, cross=20)
    with pytest.raises(ValueError, match="unknown attention kind 'encoder'"):
        layers["encoder"]
    with pytest.raises(TypeError):
        PerKind(enc_self=1, dec_self=2)  # no kind can be left out
    with pytest.raises(AttributeError):
        layers.cross = 5  # frozen
