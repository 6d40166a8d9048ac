"""The Vision page's math: rollout, position similarity, an attention row put back on the grid, receptive fields."""
from __future__ import annotations

import torch

from explain.attribution import rollout
from explain.vision import (
    attention_on_grid,
    read_swin,
    read_vit,
    receptive_fields,
    sinusoid_similarity,
)
from model.vision.config import SwinConfig, ViTConfig
from model.vision.swin import Swin
from model.vision.vit import ViT
from model.vision.windows import window_tokens


def _attention(layers: int, heads: int, n: int) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(layers, heads, n, n).softmax(-1)


def test_rollout_of_one_layer_is_half_identity_half_mean_attention():
    attention = _attention(1, 3, 5)
    torch.testing.assert_close(rollout(attention), 0.5 * torch.eye(5) + 0.5 * attention[0].mean(0))


def test_rollout_composes_layers_last_on_the_left_and_keeps_rows_distributions():
    attention = _attention(3, 2, 6)
    flows = [0.5 * torch.eye(6) + 0.5 * layer.mean(0) for layer in attention]
    torch.testing.assert_close(rollout(attention), flows[2] @ flows[1] @ flows[0])
    torch.testing.assert_close(rollout(attention).sum(-1), torch.ones(6))


def test_sinusoid_similarity_is_one_on_the_diagonal_and_depends_on_the_offset():
    sim = sinusoid_similarity(16, 64)
    torch.testing.assert_close(sim.diagonal(), torch.ones(16))
    torch.testing.assert_close(sim[0, 3], sim[5, 8])


def test_readings_are_distributions_of_the_models_own_forward():
    torch.manual_seed(0)
    image = torch.randint(0, 17, (8, 8))
    vit = ViT(ViTConfig()).eval()
    reading = read_vit(vit, image.numpy())
    torch.testing.assert_close(reading.probabilities, vit(image[None]).softmax(-1)[0])
    assert reading.attention.shape == (4, 4, 17, 17)
    swin = Swin(SwinConfig()).eval()
    blocks = read_swin(swin, image.numpy()).blocks
    shifted = blocks[1]
    token = 0  # top-left pixel: in the shifted block it sits in the corner window, with the wrapped pixels
    grid = attention_on_grid(shifted, head=0, token=token)
    torch.testing.assert_close(grid.sum(), torch.tensor(1.0))
    w = int((window_tokens(8, 4, 2) == token).nonzero()[0, 0])
    assert w == 3, "after rolling by 2 the top-left pixel lands in the bottom-right window"
    assert (grid.view(-1)[window_tokens(8, 4, 2)[w]] > 0).sum() == 4, "only its own 2x2 region is unmasked"


def test_receptive_field_grows_with_the_shift_and_covers_the_image_after_merging():
    swin = Swin(SwinConfig()).eval()
    sizes = [int(m.sum()) for m in receptive_fields(swin, 1, 3)]
    assert sizes == [16, 32, 64, 64]  # its window; + the window the shifted one reaches; stage 2: everything
    corner = [int(m.sum()) for m in receptive_fields(swin, 0, 0)]
    assert corner[:2] == [16, 16], "the corner's shifted window holds only wrapped pixels it may not attend to"
