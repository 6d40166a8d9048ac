"""The vision models: Swin's windows and mask against slow loop references, attention that is a distribution,
checkpoints that validate, and shipped models that reach exactly the accuracy their cards state."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from model.checkpoints.header import CheckpointError
from model.network.attention import Capture
from model.vision.checkpoint import load_vision, save_vision
from model.vision.config import SwinConfig, ViTConfig
from model.vision.digits import load_digits
from model.vision.patches import patchify, unpatchify
from model.vision.swin import Swin
from model.vision.vit import ViT
from model.vision.windows import (
    region_labels,
    relative_position_index,
    shifted_window_mask,
    token_windows,
    tokens_to_window,
    window_partition,
    window_reverse,
    window_to_tokens,
)

PRETRAINED = Path(__file__).resolve().parents[2] / "pretrained"
GEOMETRIES = [(8, 4, 2), (8, 2, 1), (12, 4, 2), (6, 3, 1), (16, 8, 4)]  # (resolution, window, shift)


def _shifted_windows_by_loops(r: int, m: int) -> list[list[tuple[int, int]]]:
    """The positions (row, col) of the rolled grid in each window, windows and tokens row-major."""
    return [[(wi * m + i, wj * m + j) for i in range(m) for j in range(m)]
            for wi in range(r // m) for wj in range(r // m)]


@pytest.mark.parametrize("r, m, s", GEOMETRIES)
def test_shifted_window_mask_matches_a_loop_reference(r, m, s):
    """Two tokens of a rolled window may attend iff they were neighbours in the same arrangement before the roll:
    their offset in the original image equals their offset in the window (no wrap-around between them)."""
    mask = shifted_window_mask(r, m, s)
    regions = region_labels(r, m, s)
    assert mask.shape == ((r // m) ** 2, m * m, m * m) and mask.dtype == torch.bool
    for w, places in enumerate(_shifted_windows_by_loops(r, m)):
        for qi, (qr, qc) in enumerate(places):
            for ki, (kr, kc) in enumerate(places):
                q_orig = ((qr + s) % r, (qc + s) % r)  # where the rolled token came from
                k_orig = ((kr + s) % r, (kc + s) % r)
                neighbours = (q_orig[0] - k_orig[0], q_orig[1] - k_orig[1]) == (qr - kr, qc - kc)
                assert bool(mask[w, qi, ki]) == neighbours, (w, qi, ki)
                same_region = regions[qr, qc] == regions[kr, kc]
                assert bool(mask[w, qi, ki]) == bool(same_region), (w, qi, ki)
    assert mask[0].all(), "the top-left window never holds wrapped pixels"
    assert not mask[-1].all(), "the bottom-right window mixes pixels from the four corners"


def test_mask_without_shift_lets_every_pair_attend():
    assert shifted_window_mask(8, 4, 0).all()


@pytest.mark.parametrize("r, m, s", GEOMETRIES)
def test_window_partition_round_trips_and_orders_tokens_row_major(r, m, s):
    x = torch.randn(2, r, r, 3)
    windows = window_partition(x, m)  # [B*nW, M*M, 3]
    assert torch.equal(window_reverse(windows, m, r), x)
    for w, places in enumerate(_shifted_windows_by_loops(r, m)):
        for t, (row, col) in enumerate(places):
            assert torch.equal(windows[(r // m) ** 2 + w, t], x[1, row, col])
    ids = token_windows(r, m, s)  # window of each unshifted token in the shifted block
    for row in range(r):
        for col in range(r):
            sr, sc = (row - s) % r, (col - s) % r  # its place after the roll
            assert ids[row, col] == (sr // m) * (r // m) + sc // m


@pytest.mark.parametrize("m", [2, 3, 4, 7])
def test_relative_position_index_matches_a_loop_reference(m):
    index = relative_position_index(m)
    for i in range(m * m):
        for j in range(m * m):
            (yi, xi), (yj, xj) = divmod(i, m), divmod(j, m)
            assert index[i, j] == (yi - yj + m - 1) * (2 * m - 1) + (xi - xj + m - 1)
    assert index.min() == 0 and index.max() == (2 * m - 1) ** 2 - 1


def test_patchify_cuts_row_major_patches_and_round_trips():
    images = torch.arange(2 * 64, dtype=torch.float32).view(2, 8, 8)
    patches = patchify(images, 2)  # [2, 16, 4]
    assert patches.shape == (2, 16, 4)
    assert patches[0, 1].tolist() == [2.0, 3.0, 10.0, 11.0]  # patch 1: rows 0-1, columns 2-3
    assert patches[0, 4].tolist() == [16.0, 17.0, 24.0, 25.0]  # patch 4: rows 2-3, columns 0-1
    assert torch.equal(unpatchify(patches, 2), images)


def _rows_are_distributions(weights: torch.Tensor) -> None:
    assert not torch.isnan(weights).any()
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)), atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def batch():
    return torch.from_numpy(load_digits().part("test")[0][:8])


def test_vit_attention_rows_sum_to_one_and_capture_changes_nothing(batch):
    torch.manual_seed(0)
    model = ViT(ViTConfig()).eval()
    logits, trace = model(batch, capture=Capture.WEIGHTS)
    assert logits.shape == (8, 10) and trace.n_layers == {"enc_self": 4, "dec_self": 0, "cross": 0}
    for w in trace.enc_self:  # the text model's container: a ViT is an encoder
        assert w.shape == (8, 4, 17, 17)
        _rows_are_distributions(w)
    torch.testing.assert_close(model(batch), logits, atol=1e-5, rtol=1e-5)  # fused kernel = captured path


def test_swin_attention_is_a_trace_of_token_maps_that_hold_each_windows_weights(batch):
    """The Swin's attention comes back as the text model's AttentionTrace (kind enc_self): per block a token-by-token
    map [B, H, N, N] whose rows are distributions, exactly 0 between tokens of different windows and where the
    shifted mask blocks a pair, and which gives back each window's own weights."""
    torch.manual_seed(0)
    model = Swin(SwinConfig()).eval()
    logits, trace = model(batch, capture=Capture.WEIGHTS)
    assert logits.shape == (8, 10) and trace.n_layers == {"enc_self": 4, "dec_self": 0, "cross": 0}
    assert [(s, i, b.resolution, b.window, b.shift) for s, i, b in model.blocks()] == [
        (0, 0, 8, 4, 0), (0, 1, 8, 4, 2), (1, 0, 4, 4, 0), (1, 1, 4, 4, 0)]
    for (_, _, block), weights in zip(model.blocks(), trace.enc_self, strict=True):
        r, m, shift = block.resolution, block.window, block.shift
        assert weights.shape == (8, block.attention.attn.n_heads, r * r, r * r)
        _rows_are_distributions(weights)
        windows = token_windows(r, m, shift).view(-1)  # [N]: the window of each token
        allowed = windows[:, None] == windows[None, :]  # [N, N]
        per_window = tokens_to_window(weights, r, m, shift)  # [B, nW, H, M*M, M*M]
        if block.mask is not None:
            blocked = ~block.mask[None, :, None].expand_as(per_window)
            assert blocked.any() and (per_window[blocked] == 0).all()
        assert (weights[..., ~allowed] == 0).all()
        torch.testing.assert_close(window_to_tokens(per_window, r, m, shift, 0.0), weights)
    torch.testing.assert_close(model(batch), logits, atol=1e-5, rtol=1e-5)


def test_configs_validate_and_round_trip_through_json():
    for cfg in (ViTConfig(), SwinConfig()):
        assert type(cfg).from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="divide"):
        ViTConfig(patch_size=3)
    with pytest.raises(ValueError, match="heads"):
        ViTConfig(d_model=30)
    with pytest.raises(ValueError, match="window"):
        SwinConfig(window=3)
    with pytest.raises(ValueError, match="one entry per stage"):
        SwinConfig(heads=(2,))
    with pytest.raises(ValueError, match="unknown"):
        SwinConfig.from_dict({"windw": 4})


def test_checkpoint_round_trip_and_clear_errors(tmp_path, batch):
    torch.manual_seed(0)
    model = Swin(SwinConfig()).eval()
    save_vision(model, tmp_path / "swin", meta={"note": "test"})
    loaded = load_vision(tmp_path / "swin")
    assert loaded.kind == "swin" and loaded.config == model.config and loaded.meta == {"note": "test"}
    torch.testing.assert_close(loaded.model(batch), model(batch))
    with pytest.raises(CheckpointError, match="not found"):
        load_vision(tmp_path / "nothing")
    broken = tmp_path / "broken"
    save_vision(ViT(ViTConfig()), broken)
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "kind": "resnet"}))
    with pytest.raises(CheckpointError, match="unknown model kind"):
        load_vision(broken)
    (broken / "config.json").write_text(json.dumps({**config, "model": {**config["model"], "d_model": 32}}))
    with pytest.raises(CheckpointError, match="shape"):
        load_vision(broken)
    (broken / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_vision(broken)


CARD_ACCURACY = re.compile(r"Test accuracy: \*\*(\d+) / (\d+) = ([\d.]+)%\*\*")


@pytest.mark.parametrize("name, kind", [("vit-digits", "vit"), ("swin-digits", "swin")])
def test_shipped_models_reach_exactly_their_cards_accuracy(name, kind):
    directory = PRETRAINED / name
    ckpt = load_vision(directory)
    assert ckpt.kind == kind
    correct, total, percent = CARD_ACCURACY.search((directory / "MODEL_CARD.md").read_text()).groups()
    images, labels = load_digits().part("test")
    with torch.no_grad():
        predicted = ckpt.model(torch.from_numpy(images)).argmax(-1).numpy()
    assert len(labels) == int(total)
    assert int((predicted == labels).sum()) == int(correct)
    assert f"{100 * int(correct) / int(total):.2f}" == percent
    assert ckpt.meta["test_correct"] == int(correct)
    assert (directory / "model.safetensors").stat().st_size < 400_000


def test_shipped_vit_meets_the_target():
    ckpt = load_vision(PRETRAINED / "vit-digits")
    assert ckpt.meta["test_accuracy"] >= 0.97


def test_digits_file_has_a_fixed_stratified_split():
    data = load_digits()
    assert data.images.shape == (1797, 8, 8) and data.images.dtype == np.uint8 and data.images.max() == 16
    counts = np.bincount(data.split, minlength=3)
    assert counts.tolist() == [1259, 179, 359]
    for digit in range(10):  # every class is split in the same proportions (+-1 image)
        in_class = data.split[data.labels == digit]
        assert abs((in_class == 2).sum() - 0.2 * len(in_class)) <= 1
    flat = {split: {img.tobytes() for img in data.images[data.split == split]} for split in range(3)}
    assert not flat[2] & flat[0] and not flat[1] & flat[0] and not flat[2] & flat[1]
