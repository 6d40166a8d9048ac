"""T5 checkpoints converted by model.huggingface.t5 compute exactly what Hugging Face's T5ForConditionalGeneration
computes.

No download: a tiny unigram tokenizer in T5's layout (tests.bart_helpers) and tiny random T5 models built with
transformers: v1 (ReLU, the output layer tied to the embedding and read from hidden x d_model^-0.5) and v1.1 /
Flan-T5 (gated GELU, an output layer of its own, 3 heads of width 8 in d_model 16). transformers is the test-only
reference; the tests that need it are marked slow.
"""
from __future__ import annotations

import json
import shutil

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.huggingface.convert import convert
from model.network.config import ModelConfig
from model.network.relative_position import RelativePositionBias, relative_buckets
from model.network.transformer import Transformer, count_parameters
from tests.bart_helpers import t5_tokenizer, t5_tokenizer_json
from tests.hf_folders import assert_t5_decodes_as_generate, t5_config
from tests.hf_reference import assert_same_forward
from tests.marian_helpers import EN

TEXTS = ["The house is small.", "Where is the train?", "Zebra quartz!"]
MAX_NEW = 12
EOS_SCALE = {"v1": -3.0, "v1.1": -3.0}  # found by trying: outputs of these random models end at 1-12 pieces


@given(st.integers(-300, 300), st.booleans())
def test_relative_buckets_are_exact_near_and_logarithmic_far(offset, bidirectional):
    """32 buckets, max distance 128 (T5's): offsets under 8 (16 one way) have a bucket each; farther ones share
    buckets that never decrease with the distance, and every offset past 128 lands in the last one."""
    bucket = int(relative_buckets(torch.tensor(offset), bidirectional, 32, 128))
    half = 16 if bidirectional else 32
    distance = abs(offset) if bidirectional else max(-offset, 0)
    side = half if bidirectional and offset > 0 else 0
    assert side <= bucket < side + half
    if distance < half // 2:
        assert bucket == side + distance
    farther = int(relative_buckets(torch.tensor(offset + (1 if offset > 0 else -1)), bidirectional, 32, 128))
    assert farther >= bucket or (not bidirectional and offset > 0)
    if distance >= 128:
        assert bucket == side + half - 1


def test_t5_options_are_counted_and_a_step_equals_the_teacher_forced_pass():
    """Heads of their own width, no biases, RMSNorm, a gated FFN, relative buckets, an untied output layer: the
    parameter count is the config's, and decoding step by step (the bias of query t against keys 0..t) gives the
    teacher-forced logits."""
    config = ModelConfig(vocab_size=40, d_model=16, n_heads=3, head_dim=8, n_encoder_layers=2, n_decoder_layers=2,
                         d_ff=32, pad_id=0, unk_id=2, bos_id=0, eos_id=1, norm_first=True, activation="gelu_tanh",
                         positional_layout="relative", tokenizer="hf", scale_embedding=False, norm="rms",
                         norm_eps=1e-6, linear_bias=False, attention_scale=False, ffn_gated=True, tie_output=False,
                         relative_buckets=8, relative_max_distance=16)
    torch.manual_seed(0)
    model = Transformer(config).eval()
    assert count_parameters(model) == config.estimated_parameters()
    src, tgt = torch.tensor([[5, 6, 7, 8, 1]]), torch.tensor([[0, 9, 10, 11]])
    with torch.no_grad():
        full = model(src, tgt).log_softmax(-1)  # [1, T, V]
        state, _ = model.start(src)
        for t in range(tgt.size(1)):
            out = model.step(state, tgt[:, t:t + 1])
            state = out.state
            torch.testing.assert_close(out.log_probs, full[:, t], atol=1e-5, rtol=1e-5)


def test_a_stack_computes_its_relative_bias_once_per_pass_and_follows_its_table():
    """Every self-attention of a stack reads the same bias: while decoding (no gradients) one lookup serves them all,
    and a changed table (an edit) or another shape gives a fresh one; while training every call builds its own, so
    that two backward passes never share a graph."""
    bias = RelativePositionBias(8, 16, n_heads=2, bidirectional=True)
    with torch.no_grad():
        first = bias(5, 5)
        assert bias(5, 5) is first and bias(1, 6).shape == (1, 2, 1, 6)
        bias.table.weight.add_(1.0)
        changed = bias(5, 5)
    torch.testing.assert_close(changed, first + 1.0)
    buckets = relative_buckets(torch.arange(5)[None] - torch.arange(5)[:, None], True, 8, 16)  # [Q, K]
    torch.testing.assert_close(changed, bias.table.weight[buckets].permute(2, 0, 1)[None].detach())
    for _ in range(2):  # two training passes, each with its own backward
        bias(5, 5).sum().backward()
    assert bias.table.weight.grad is not None


# ---------------------------------------------------------------- equivalence with Hugging Face (transformers)

@pytest.fixture(scope="module", params=["v1", "v1.1"])
def pair(request, tmp_path_factory):
    """(Hugging Face's eager T5ForConditionalGeneration, our converted checkpoint) of one random model."""
    import transformers  # the reference (requirements-dev.txt): missing, the test fails rather than skips
    data = t5_tokenizer_json()
    vocab_size = t5_tokenizer(data).vocab_size + 4  # spare embedding rows past the tokenizer, as T5 has
    torch.manual_seed(0)
    hf = transformers.T5ForConditionalGeneration(transformers.T5Config(**t5_config(request.param, vocab_size)))
    with torch.no_grad():  # weights far from HF's init, so outputs differ clearly between tokens
        for name, p in hf.named_parameters():
            p.normal_(0.0, 0.5).add_(1.0 if "layer_norm" in name else 0.0)
        hf.shared.weight.normal_(0.0, 0.5)
        hf.shared.weight[1] *= EOS_SCALE[request.param]  # </s> likely in some states, so outputs vary in length
    root = tmp_path_factory.mktemp(f"t5-{request.param.replace('.', '')}")
    folder = root / "tiny-t5"
    hf.save_pretrained(folder)
    (folder / "tokenizer.json").write_bytes(data)
    ckpt = load_checkpoint(convert(folder, root / "converted").path)
    reference = transformers.T5ForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()
    return reference, ckpt


@pytest.mark.slow
def test_the_converted_config_says_what_t5_does(pair):
    hf, ckpt = pair
    c, v1 = ckpt.config, hf.config.feed_forward_proj == "relu"
    assert (c.positional_layout, c.norm, c.linear_bias, c.attention_scale, c.scale_embedding, c.norm_first) == \
        ("relative", "rms", False, False, False, True)
    # transformers 5 ties T5's output layer to the embedding always; v1.1 only stops scaling the decoder's output
    assert (c.ffn_gated, c.tie_output, c.rescale_output) == ((False, True, True) if v1 else (True, True, False))
    assert c.d_k == 8 and c.decoder_start_id == c.bos_id == c.pad_id == 0 and ckpt.tokenizer.vocab_size < c.vocab_size


@pytest.mark.slow
def test_logits_and_every_attention_equal_hugging_faces(pair):
    """A padded batch of two sources; the decoder reads <pad> (its start) and four pieces."""
    hf, ckpt = pair
    tgt = torch.tensor([[0, 5, 7, 9, 3], [0, 11, 4, 1, 8]])  # [2, T]
    assert_same_forward(hf, ckpt, TEXTS[:2], tgt, pad=0, logits_atol=1e-4)


@pytest.mark.slow
def test_greedy_and_beam_outputs_equal_generate(pair):
    """Greedy equals generate(num_beams=1); beam 4 at length penalty 0 equals generate(num_beams=4,
    early_stopping=True), n-best and log-probs."""
    hf, ckpt = pair
    lengths = assert_t5_decodes_as_generate(hf, ckpt, EN[:4] + TEXTS, MAX_NEW, 0.0)
    assert len(lengths) >= 3  # outputs of several lengths: EOS was chosen, not only the limit reached


@pytest.mark.slow
def test_an_output_layer_of_its_own_is_read_from_lm_head(pair, tmp_path):
    """A file whose lm_head.weight differs from the embedding (T5 v1.1 and Flan-T5 as Google trained them) converts
    to an output layer of its own: the logits are the decoder's last hidden state times lm_head.weight."""
    _, ckpt = pair
    folder = tmp_path / "untied"
    shutil.copytree(ckpt.path.parent / "tiny-t5", folder)
    weights = load_file(folder / "model.safetensors")
    head = torch.randn_like(weights["shared.weight"])
    save_file({**weights, "lm_head.weight": head}, folder / "model.safetensors")
    untied = load_checkpoint(convert(folder, tmp_path / "out").path)
    assert not untied.config.tie_output and torch.equal(untied.model.output.weight, head)
    src, tgt = torch.tensor([ckpt.tokenizer.encode_source(TEXTS[0])]), torch.tensor([[0, 5, 7]])
    with torch.no_grad():
        hidden, _ = untied.model.teacher_forced_hidden(src, tgt)  # [1, T, D]
        expected = hidden * untied.model.output_scale @ head.T
        torch.testing.assert_close(untied.model(src, tgt), expected)


def test_an_unknown_feed_forward_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "tiny-t5"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "t5", "feed_forward_proj": "gated-tanh"}))
    (folder / "tokenizer.json").write_bytes(t5_tokenizer_json())
    with pytest.raises(CheckpointError, match=r"^config\.json: unsupported feed_forward_proj 'gated-tanh'") as info:
        convert(folder, tmp_path / "out")
    assert "\n" not in str(info.value) and not (tmp_path / "out").exists()
