import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from model.network.attention import Capture
from model.network.positional import MAX_POSITIONS, sinusoidal_encoding
from model.network.trace import KINDS
from model.network.transformer import Transformer, shifted_right
from tests.conftest import copy_attention_into_torch, tiny_config


def model(**overrides):
    torch.manual_seed(0)
    return Transformer(tiny_config(40, **overrides)).eval()


SRC = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
TGT = torch.tensor([[2, 11, 12, 13], [2, 14, 0, 0]])


def test_trace_has_per_layer_per_head_maps_of_every_kind():
    logits, trace = model()(SRC, TGT, capture=Capture.WEIGHTS)
    assert logits.shape == (2, 4, 40)
    assert trace.weights("enc_self").shape == (2, 2, 2, 5, 5)  # [L, B, H, S, S]
    assert trace.weights("dec_self").shape == (2, 2, 2, 4, 4)
    assert trace.weights("cross").shape == (2, 2, 2, 4, 5)
    for kind in KINDS:
        w, mask = trace.weights(kind), trace.mask(kind)
        assert not torch.isnan(w).any()
        assert (w.masked_select(~mask.expand_as(w[0])[None].expand_as(w)) == 0).all()
        assert trace.scores(kind).shape == w.shape


def test_decoder_cannot_see_the_future_and_padding_does_not_leak():
    m = model()
    _, trace = m(SRC, TGT, capture=Capture.WEIGHTS)
    dec = trace.weights("dec_self")
    assert (dec.triu(diagonal=1) == 0).all()
    assert (trace.weights("cross")[:, 1, :, :, 3:] == 0).all()  # second sentence's source padding
    changed = TGT.clone()
    changed[0, 3] = 20
    assert torch.allclose(m(SRC, TGT)[0, :3], m(SRC, changed)[0, :3], atol=1e-6)


def test_batched_padded_sentence_equals_the_sentence_alone():
    m = model()
    batched = m(SRC, TGT)[1, :2]
    alone = m(SRC[1:, :3], TGT[1:, :2])[0]
    assert torch.allclose(batched, alone, atol=1e-5)


def test_fast_and_explicit_paths_agree_for_the_whole_model():
    for norm_first in (False, True):
        m = model(norm_first=norm_first)
        assert torch.allclose(m(SRC, TGT), m(SRC, TGT, capture=Capture.WEIGHTS)[0], atol=1e-5)


def test_one_matrix_is_shared_by_both_embeddings_and_the_output_layer():
    m = model()
    assert sum(p.numel() for p in m.parameters() if p.shape == (40, 16)) == 40 * 16
    hidden = torch.randn(3, 16)
    assert torch.allclose(m.logits(hidden), hidden @ m.embed.token.weight.T)


def test_embedding_is_scaled_by_sqrt_d_model_plus_positional_encoding():
    m = model(dropout=0.0)
    ids = torch.tensor([[5, 6]])
    expected = m.embed.token.weight[[5, 6]] * 4.0 + m.embed.positional[:2]
    assert torch.allclose(m.embed(ids)[0], expected)


def test_a_model_runs_past_its_max_len_on_the_extended_encoding_and_refuses_past_the_cap():
    m = model(max_len=8)
    ids = torch.ones(1, 9, dtype=torch.long)
    logits = m(ids, torch.ones(1, 2, dtype=torch.long))  # 9 source positions: one more than the model was built for
    assert torch.isfinite(logits).all()
    assert torch.equal(m.embed.positional[8], sinusoidal_encoding(9, m.config.d_model)[8])
    with pytest.raises(ValueError, match=f"limit of {MAX_POSITIONS} positions"):
        m(torch.ones(1, MAX_POSITIONS + 1, dtype=torch.long), torch.ones(1, 2, dtype=torch.long))


def _copy_block(ref: nn.Module, ours) -> None:
    ref.linear1.load_state_dict(ours.feed_forward.linear1.state_dict())
    ref.linear2.load_state_dict(ours.feed_forward.linear2.state_dict())
    for i, sub in enumerate(ours.sublayers):
        getattr(ref, f"norm{i + 1}").load_state_dict(sub.norm.state_dict())


def test_whole_model_equals_torch_reference_transformer_with_the_same_weights():
    """Our encoder-decoder is the standard post-norm Transformer: copied into torch's own
    nn.TransformerEncoder/Decoder layers, the same weights give the same logits."""
    m = model()
    with torch.no_grad():  # move every weight off its default (LayerNorm's ones and zeros would hide a mix-up)
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    cfg = m.config
    enc_layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, 0.0, batch_first=True)
    dec_layer = nn.TransformerDecoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, 0.0, batch_first=True)
    encoder = nn.TransformerEncoder(enc_layer, cfg.n_encoder_layers, enable_nested_tensor=False).eval()
    decoder = nn.TransformerDecoder(dec_layer, cfg.n_decoder_layers).eval()
    with torch.no_grad():
        for ref, ours in zip(encoder.layers, m.encoder.layers, strict=True):
            copy_attention_into_torch(ref.self_attn, ours.self_attn)
            _copy_block(ref, ours)
        for ref, ours in zip(decoder.layers, m.decoder.layers, strict=True):
            copy_attention_into_torch(ref.self_attn, ours.self_attn)
            copy_attention_into_torch(ref.multihead_attn, ours.cross_attn)
            _copy_block(ref, ours)
        memory = encoder(m.embed(SRC), src_key_padding_mask=SRC == 0)  # torch masks: True = ignore
        causal = torch.ones(TGT.size(1), TGT.size(1), dtype=torch.bool).triu(1)
        hidden = decoder(m.embed(TGT), memory, tgt_mask=causal, tgt_key_padding_mask=TGT == 0,
                         memory_key_padding_mask=SRC == 0)
        expected, actual = m.logits(hidden), m(SRC, TGT)
    real = TGT != 0
    assert torch.allclose(actual[real], expected[real], atol=1e-5)


@given(st.lists(st.integers(0, 50), max_size=20), st.integers(0, 50))
def test_the_decoder_input_is_the_output_shifted_right_behind_the_start_token(output, start):
    shifted = shifted_right(output, start)
    assert len(shifted) == max(len(output), 1) and shifted[0] == start and shifted[1:] == output[:-1]


@pytest.mark.parametrize("norm_first", [False, True])
def test_rows_joining_a_layer_with_its_own_attention_output_get_the_layers_result(norm_first):
    """forward_joined is where an ablation runs on from: rows joining with the attention output the forward itself
    computed must come out as the forward's rows, at whichever sub-layer they join, beside rows that run it all."""
    torch.manual_seed(0)
    model = Transformer(tiny_config(40, norm_first=norm_first)).eval()
    src, tgt = torch.randint(4, 40, (1, 7)), torch.randint(4, 40, (1, 5))
    with torch.no_grad():
        _, trace = model.teacher_forced_hidden(src, tgt, Capture.INTERNALS)
        memory, src_mask, _ = model.encode(src)
        kv = model.memory_key_values(memory)[1]  # [1, H, S, d_k] each
        enc, dec = model.encoder.layers[1], model.decoder.layers[1]
        it = trace.internals["enc_self"][1]  # layer 2's self-attention: the residual entering it and its output
        out, _ = enc(it.residual_input, src_mask)  # [1, S, D]
        both = enc.forward_joined(it.residual_input, src_mask, (it.residual_input, it.output))  # [2, S, D]
        torch.testing.assert_close(both, out.expand(2, -1, -1))
        self_it, cross_it = trace.internals["dec_self"][1], trace.internals["cross"][1]
        out, _, _ = dec(self_it.residual_input, kv, model.target_mask(tgt), src_mask)  # [1, T, D]
        three = dec.forward_joined(self_it.residual_input, (kv[0].expand(2, -1, -1, -1), kv[1].expand(2, -1, -1, -1)),
                                   model.target_mask(tgt), src_mask, self_join=(self_it.residual_input, self_it.output),
                                   cross_join=(cross_it.residual_input, cross_it.output))  # [3, T, D]
        torch.testing.assert_close(three, out.expand(3, -1, -1))
        late = dec.forward_joined(cross_it.residual_input, kv, model.target_mask(tgt), src_mask, self_done=True)
        torch.testing.assert_close(late, out)  # rows already past self-attention join at cross-attention
