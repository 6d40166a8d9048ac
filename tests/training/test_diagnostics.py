import torch

from model.network.config import ModelConfig
from model.network.transformer import Transformer
from training.diagnostics import attention_entropy


def test_attention_entropy_is_one_for_uniform_attention_over_the_real_tokens_of_padded_batches():
    """With W_Q zeroed every score is equal, so each row spreads evenly over the sentence's real tokens:
    the spread must read 1.0 exactly; counting padding keys or padded query rows would pull it away."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=20, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2,
                                    d_ff=32, max_len=32)).eval()
    with torch.no_grad():
        for layer in [*model.encoder.layers, *model.decoder.layers]:
            attn = getattr(layer, "cross_attn", layer.self_attn)
            attn.w_q.weight.zero_()
            attn.w_q.bias.zero_()
    pairs = [([5, 6, 3], [7, 3]), ([5, 6, 7, 8, 9, 10, 3], [7, 8, 9, 3]), ([11, 12, 13, 3], [14, 3])]
    spread = attention_entropy(model, pairs)
    assert spread["encoder_self"] == [1.0, 1.0] and spread["cross"] == [1.0, 1.0]
    assert model.training is False  # left as it was found
