import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from model.checkpoints.files import CONFIG, TOKENIZER, WEIGHTS, load_checkpoint, peek_checkpoint, save_checkpoint
from model.checkpoints.header import CheckpointError
from model.checkpoints.meta import clean_meta
from model.network.transformer import Transformer
from tests.conftest import tiny_config

SRC, TGT = torch.tensor([[5, 6, 7, 3]]), torch.tensor([[2, 8, 9]])


def test_round_trip_gives_identical_outputs(tiny_checkpoint, tiny_model):
    ckpt = load_checkpoint(tiny_checkpoint)
    assert ckpt.config == tiny_model.config and not ckpt.model.training
    assert torch.equal(ckpt.model(SRC, TGT), tiny_model(SRC, TGT))


def test_fp16_checkpoint_loads_as_fp32_close_to_the_original(tmp_path, tokenizer, tiny_model):
    save_checkpoint(tiny_model, tokenizer, tmp_path / "half", dtype=torch.float16)
    ckpt = load_checkpoint(tmp_path / "half")
    assert ckpt.model.embed.token.weight.dtype == torch.float32
    assert torch.allclose(ckpt.model(SRC, TGT), tiny_model(SRC, TGT), atol=5e-2)


@pytest.fixture
def broken(tmp_path, tiny_checkpoint):
    target = tmp_path / "broken"
    shutil.copytree(tiny_checkpoint, target)
    return target


def expect_error(path, *words):
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    for word in words:
        assert word in str(info.value)


def test_missing_directory_and_files_are_named(tmp_path, broken):
    expect_error(tmp_path / "nope", "not found")
    (broken / WEIGHTS).unlink()
    expect_error(broken, WEIGHTS, "missing")


def test_corrupt_weights_file(broken):
    (broken / WEIGHTS).write_bytes(b"\x80\x04 this is a pickle, not safetensors")
    expect_error(broken, "not a valid safetensors")


def test_shape_mismatch_names_the_tensor(broken, tokenizer):
    other = Transformer(tiny_config(tokenizer.vocab_size, d_ff=48))
    save_file({k: v.contiguous() for k, v in other.state_dict().items()}, str(broken / WEIGHTS))
    expect_error(broken, "feed_forward.linear", "has shape", "48")


def test_missing_tensor_is_named(broken, tiny_model):
    weights = {k: v.contiguous() for k, v in tiny_model.state_dict().items() if "decoder.layers.1" not in k}
    save_file(weights, str(broken / WEIGHTS))
    expect_error(broken, "missing", "decoder.layers.1")


def test_vocabulary_mismatch_with_tokenizer(broken):
    payload = json.loads((broken / CONFIG).read_text())
    payload["model"]["vocab_size"] += 1
    (broken / CONFIG).write_text(json.dumps(payload))
    expect_error(broken, "vocabulary mismatch")


def test_bad_config_values_and_json(broken):
    payload = json.loads((broken / CONFIG).read_text())
    payload["model"]["n_heads"] = 3
    (broken / CONFIG).write_text(json.dumps(payload))
    expect_error(broken, "divisible")
    (broken / CONFIG).write_text("{not json")
    expect_error(broken, "not valid JSON")


def test_corrupt_tokenizer(broken):
    (broken / TOKENIZER).write_bytes(b"garbage")
    expect_error(broken, TOKENIZER)


def test_nan_weights_are_refused(broken, tiny_model):
    weights = {k: v.clone().contiguous() for k, v in tiny_model.state_dict().items()}
    weights["encoder.layers.0.feed_forward.linear1.bias"][0] = float("nan")
    save_file(weights, str(broken / WEIGHTS))
    expect_error(broken, "NaN")


def test_the_marian_options_round_trip_with_the_projects_tokenizer(tmp_path, tokenizer):
    """gelu, "halves" positions and a final logits bias are saved, reloaded and give the same outputs; the bias is a
    tensor of the checkpoint only when enabled."""
    torch.manual_seed(1)
    model = Transformer(tiny_config(tokenizer.vocab_size, activation="gelu", positional_layout="halves",
                                    final_logits_bias=True)).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_()
    ckpt = load_checkpoint(save_checkpoint(model, tokenizer, tmp_path / "options"))
    assert ckpt.config == model.config and "final_logits_bias" in ckpt.model.state_dict()
    assert torch.equal(ckpt.model(SRC, TGT), model(SRC, TGT))
    assert "final_logits_bias" not in Transformer(tiny_config(tokenizer.vocab_size)).state_dict()


def test_peek_checkpoint_reads_only_the_config(tmp_path, tiny_checkpoint):
    config, meta = peek_checkpoint(tiny_checkpoint)
    assert config.vocab_size == 120 and meta == {}
    assert peek_checkpoint(tmp_path) is None  # no config.json
    shutil.copytree(tiny_checkpoint, tmp_path / "no-tokenizer")
    (tmp_path / "no-tokenizer" / TOKENIZER).unlink()
    assert peek_checkpoint(tmp_path / "no-tokenizer") is None
    vision = Path(__file__).resolve().parents[2] / "pretrained" / "vit-digits"
    assert peek_checkpoint(vision) is None  # its config.json holds a vision model


def test_meta_text_is_kept_only_short_and_printable():
    assert clean_meta({"source_lang": "en", "target_lang": "x" * 101, "converted_from": "a\nb"}) == \
        {"source_lang": "en"}


@pytest.mark.parametrize("widths, kept", [([1024, 2048], True), ([2048, 1024], False), ([1024], False),
                                          ([1024, "2048"], False), ([True, 2048], False), ([0, 8], False)])
def test_a_widening_record_is_kept_only_as_training_grow_writes_it(widths, kept):
    """The model card prints the two widths of a widened FFN (training.grow); an uploaded meta says what it likes."""
    link = clean_meta({"continued_from": {"step": 5, "feed_forward_after": widths}})["continued_from"]
    assert ("feed_forward_after" in link) == kept and link["step"] == 5


@pytest.mark.parametrize("content", [b"not json", b"\xff\xfe", b'{"copied": [1]}', b"[" * 100_000])
def test_a_broken_copy_lexicon_is_named(broken, content):
    (broken / "copy_lexicon.json").write_bytes(content)
    expect_error(broken, "copy_lexicon.json", "not a copy lexicon")


def test_a_copy_lexicon_is_loaded_beside_the_model(broken):
    (broken / "copy_lexicon.json").write_text('{"copied": ["Berlin"], "translated": ["Monday"], "lower": ["table"]}')
    assert load_checkpoint(broken).copy_lexicon.copied == {"Berlin"}
    (broken / "copy_lexicon.json").unlink()
    assert load_checkpoint(broken).copy_lexicon is None
