import torch
from hypothesis import given
from hypothesis import strategies as st

from model.network.masks import causal_mask, decoder_self_mask, padding_mask, target_padding_mask
from model.network.positional import sinusoidal_encoding, wavelengths


def test_padding_mask_marks_real_tokens_and_broadcasts_over_queries():
    ids = torch.tensor([[5, 6, 3, 0], [7, 3, 0, 0]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, True, False], [True, True, False, False]]


def test_causal_mask_is_lower_triangular_true_may_attend():
    mask = causal_mask(4)
    assert mask.shape == (1, 1, 4, 4)
    assert mask[0, 0].tolist() == [[True, False, False, False], [True, True, False, False],
                                   [True, True, True, False], [True, True, True, True]]


def test_decoder_mask_combines_padding_and_causal():
    mask = decoder_self_mask(torch.tensor([[2, 9, 0]]), pad_id=0)
    assert mask.shape == (1, 1, 3, 3)
    assert mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


def test_sinusoidal_encoding_matches_paper_formula():
    pe = sinusoidal_encoding(50, 16)
    pos, i = 7, 3
    assert torch.isclose(pe[pos, 2 * i], torch.sin(torch.tensor(pos / 10000 ** (2 * i / 16))), atol=1e-6)
    assert torch.isclose(pe[pos, 2 * i + 1], torch.cos(torch.tensor(pos / 10000 ** (2 * i / 16))), atol=1e-6)
    assert pe[0, 0::2].abs().max() == 0 and torch.allclose(pe[0, 1::2], torch.ones(8))


def test_relative_offset_is_a_linear_map_of_position():
    """PE[pos + k] = M_k PE[pos] with the same M_k for every pos (rotation per sin/cos pair)."""
    pe = sinusoidal_encoding(40, 8).double()
    k = 5
    m = torch.linalg.lstsq(pe[:30], pe[k:30 + k]).solution  # [D, D]
    assert torch.allclose(pe[:30] @ m, pe[k:30 + k], atol=1e-6)


def test_wavelengths_span_two_pi_to_ten_thousand_two_pi():
    w = wavelengths(512)
    assert abs(w[0] - 2 * torch.pi) < 1e-9 and w[-1] < 10000 * 2 * torch.pi and w[-1] > 0.9 * 10000 * 2 * torch.pi


@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4), pad_id=st.integers(0, 9),
       start_is_pad=st.booleans())
def test_the_decoder_start_is_never_padding_and_real_tokens_never_are(lengths, pad_id, start_is_pad):
    """Decoder inputs are the start token, then the output, then right padding. Marian's start token is the pad id
    itself: position 0 must stay visible to every query, exactly as any real token, and only the padding is masked."""
    start = pad_id if start_is_pad else (pad_id + 1) % 10
    real = (pad_id + 2) % 10  # any id but the pad id
    width = 1 + max(lengths)
    ids = torch.tensor([[start] + [real] * n + [pad_id] * (width - 1 - n) for n in lengths])  # [B, T]
    keys = target_padding_mask(ids, pad_id)[:, 0, 0]  # [B, T]
    expected = torch.tensor([[t <= n for t in range(width)] for n in lengths])
    assert torch.equal(keys, expected)
    mask = decoder_self_mask(ids, pad_id)[:, 0]  # [B, T, T]
    assert mask[:, :, 0].all()
    assert torch.equal(mask, expected[:, None, :] & causal_mask(width)[0])
