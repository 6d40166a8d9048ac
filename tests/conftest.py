"""Shared fixtures: a tiny tokenizer and a tiny randomly initialised checkpoint (seconds to build)."""
from __future__ import annotations

import copy
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# No background compile of the decoding step in the app's tests and their servers (a minute of CPU each): the tests
# that check it turn it on themselves (tests/model/test_compiled_step.py, tests/e2e/test_compiled_step_browser.py).
os.environ.setdefault("ATTENTION_EXPLORER_COMPILED_STEP", "off")

import pytest
import torch
from hypothesis import settings

from model.checkpoints.files import save_checkpoint
from model.network.config import ModelConfig
from model.network.transformer import Transformer
from model.tokenization.joint import train_tokenizer
from tests.no_skips import pytest_sessionfinish  # noqa: F401  (the hook: a skipped test fails the run)

SENTENCES = [
    "The house is small.", "Das Haus ist klein.", "I would like to drink a cup of tea.",
    "Ich möchte eine Tasse Tee trinken.", "Where is the station?", "Wo ist der Bahnhof?",
    "She has read the book that you gave her yesterday.", "Sie hat das Buch gelesen, das du ihr gestern gegeben hast.",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.", "naïve café – “quotes” 日本語 🙂",
] * 20


def tiny_config(vocab_size: int, **overrides) -> ModelConfig:
    base = dict(vocab_size=vocab_size, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2, d_ff=32,
                dropout=0.1, max_len=64)
    return ModelConfig(**{**base, **overrides})


# Hypothesis profiles for the property tests (tests/**/test_properties_*.py). "ci", the default, is derandomized
# (the same examples on every run) and small. For a long randomized search run:
#   HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/model/test_properties_*.py
settings.register_profile("ci", derandomize=True, max_examples=30, deadline=None, print_blob=True)
settings.register_profile("long", max_examples=500, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def copy_attention_into_torch(ref: torch.nn.MultiheadAttention, ours) -> None:
    """Load our MultiHeadAttention's W^Q, W^K, W^V, W^O into torch's fused in_proj/out_proj layout."""
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        ref.out_proj.bias.copy_(ours.w_o.bias)


def eos_leaning(model: Transformer, eos_id: int = 3, strength: float = 6.0) -> Transformer:
    """A copy of ``model`` whose last decoder LayerNorm bias points along the EOS embedding (which is also the output
    layer's EOS row), raising EOS's logit by about 6 so that some hypotheses finish early: a random model almost
    never ends within ten steps, and decoders must be tested on outputs of different lengths."""
    leaning = copy.deepcopy(model)
    decoder = leaning.decoder
    last_norm = decoder.final_norm if isinstance(decoder.final_norm, torch.nn.LayerNorm) else \
        decoder.layers[-1].sublayers[-1].norm  # pre-norm ends with final_norm, post-norm with the FFN's norm
    with torch.no_grad():
        eos = leaning.embed.token.weight[eos_id]
        last_norm.bias.copy_(strength * eos / eos.norm())
    return leaning


@pytest.fixture(scope="session")
def tokenizer():
    return train_tokenizer(SENTENCES, vocab_size=120)


@pytest.fixture(scope="session")
def tiny_model(tokenizer):
    torch.manual_seed(0)
    return Transformer(tiny_config(tokenizer.vocab_size)).eval()


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizer, tiny_model):
    return save_checkpoint(tiny_model, tokenizer, tmp_path_factory.mktemp("ckpt") / "tiny")
