"""Marian (opus-mt) checkpoints converted by model.huggingface.marian compute exactly what Hugging Face's MarianMTModel
computes.

No download: tiny random Marian models are built with `transformers` (d_model 16, 2 heads, 2+2 layers, d_ff 32,
relu and swish, a non-zero final logits bias) beside tiny sentencepiece models trained here (separate source and
target models, one vocab.json). transformers is a test-only reference (requirements-dev.txt); only the tests that
compare with it are skipped without it. The refusals are tested on folders written without it.
"""
from __future__ import annotations

import json
import math
import pickle
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from model.__main__ import main as cli_main
from model.checkpoints.files import expected_shapes, load_checkpoint
from model.checkpoints.header import CheckpointError
from model.checkpoints.shards import save_weights
from model.decoding.search import beam_search, greedy_decode, length_penalty
from model.huggingface.marian import convert_marian, hf_names, languages
from model.network.attention import Capture
from model.network.config import ACTIVATIONS, DecodeConfig, ModelConfig
from model.network.layers import ACTIVATION_FUNCTIONS
from model.network.positional import sinusoidal_encoding
from model.network.transformer import Transformer, count_parameters
from model.serving.inference import translate
from tests.hf_reference import assert_same_forward
from tests.marian_helpers import EN, marian_tokenizer_files

TEXTS = ["The house is small.", "Where is the train?", "Zebra quartz!"]  # the last has pieces vocab.json lacks
MAX_NEW = 12
pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses",  # HF's tokenizer, not used
                                        "ignore:Detected pickle protocol")  # torch.load of the hostile pickle
EOS_SCALE = {"relu": 3.0, "swish": 2.0}  # found by trying: beam outputs of these random models end at 1-4 and 12 tokens


@pytest.fixture(scope="module")
def tokenizer_files() -> dict[str, bytes]:
    return marian_tokenizer_files()


def hf_config_dict(vocab_size: int, activation: str = "swish", **overrides) -> dict:
    """config.json as Hugging Face writes it for a tiny MarianMTModel (opus-mt's keys, small dims)."""
    return {"model_type": "marian", "architectures": ["MarianMTModel"], "vocab_size": vocab_size,
            "decoder_vocab_size": vocab_size, "d_model": 16, "encoder_layers": 2, "decoder_layers": 2,
            "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
            "max_position_embeddings": 64, "activation_function": activation, "scale_embedding": True,
            "pad_token_id": vocab_size - 1, "eos_token_id": 0, "decoder_start_token_id": vocab_size - 1,
            "forced_eos_token_id": None, "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
            "normalize_before": False, "static_position_embeddings": True, "dropout": 0.1, **overrides}


def write_files(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def hf_state_dict(vocab_size: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights under Hugging Face's names, without transformers (for the refusal tests)."""
    config = ModelConfig(vocab_size=vocab_size, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2,
                         d_ff=32, pad_id=vocab_size - 1, unk_id=1, bos_id=vocab_size - 1, eos_id=0,
                         final_logits_bias=True, tokenizer="marian")
    torch.manual_seed(seed)
    ours = Transformer(config).state_dict()
    state = {theirs: ours[name].clone() for name, theirs in hf_names(config).items()}
    state["final_logits_bias"] = torch.randn(1, vocab_size)
    return state


@pytest.fixture
def folder(tmp_path, tokenizer_files) -> Path:
    """A Marian folder written without transformers: config.json, model.safetensors, tokenizer files."""
    vocab_size = len(json.loads(tokenizer_files["vocab.json"]))
    folder = write_files(tmp_path / "opus-mt-en-de", tokenizer_files)
    (folder / "config.json").write_text(json.dumps(hf_config_dict(vocab_size)))
    save_file(hf_state_dict(vocab_size), str(folder / "model.safetensors"))
    return folder


def refused(folder: Path, out: Path, message: str, capsys) -> None:
    """The converter's CheckpointError and the CLI's exit status 2 with the same single `error:` line."""
    with pytest.raises(CheckpointError) as info:
        convert_marian(folder, out)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert cli_main(["convert-marian", str(folder), "--out", str(out)]) == 2
    captured = capsys.readouterr()  # stdout: only the stages that started (1/5: reading config.json, ...)
    assert all(re.fullmatch(r"\d/5: [a-z].*", line) for line in captured.out.splitlines())
    assert captured.err == f"error: {info.value}\n"
    assert not out.exists()


# ---------------------------------------------------------------- the options Marian adds, defaulting to the paper

def test_the_new_options_default_to_the_paper_and_old_configs_load_unchanged():
    shipped = json.loads((Path(__file__).resolve().parents[2] / "pretrained/en-de/config.json").read_text())["model"]
    config = ModelConfig.from_dict(shipped)
    assert (config.activation, config.positional_layout, config.final_logits_bias, config.tokenizer) == \
        ("relu", "interleaved", False, "sentencepiece")
    assert config.decoder_start_id == config.bos_id == 2
    assert set(ACTIVATION_FUNCTIONS) == set(ACTIVATIONS)


@pytest.mark.parametrize("values, reason", [
    ({"activation": "tanh"}, "activation must be one of relu, gelu, swish, gelu_tanh, got 'tanh'"),
    ({"positional_layout": "rotary"},
     "positional_layout must be one of interleaved, halves, learned, fairseq, relative, got 'rotary'"),
    ({"positional_layout": "learned", "position_offset": -1}, "position_offset must be an integer from 0 to 16"),
    ({"layernorm_embedding": 1}, "layernorm_embedding must be true or false, got 1"),
    ({"final_logits_bias": "yes"}, "final_logits_bias must be true or false, got 'yes'"),
    ({"tokenizer": "bpe"}, "tokenizer must be one of sentencepiece, marian, hf, m2m100, got 'bpe'"),
    ({"decoder_start_id": 0}, "decoder_start_id must equal bos_id (2), got 0"),
    ({"decoder_start_id": 99}, "decoder_start_id must be an id in [0, 10), got 99"),
    ({"bos_id": 0}, "special ids must be distinct"),  # the project's vocabulary has a BOS piece
    ({"tokenizer": "marian"}, "a marian vocabulary has no BOS piece: bos_id must be the pad id 0"),
    ({"tokenizer": "marian", "bos_id": 0, "eos_id": 1}, "special ids must be distinct"),
])
def test_bad_marian_options_are_refused(values, reason):
    with pytest.raises(ValueError, match="^" + reason.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        ModelConfig(vocab_size=10, **values)


def test_a_marian_layout_is_valid_and_its_bias_is_counted():
    config = ModelConfig(vocab_size=10, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32,
                         pad_id=9, unk_id=1, bos_id=9, eos_id=0, final_logits_bias=True, tokenizer="marian")
    assert config.decoder_start_id == 9
    model = Transformer(config)
    assert count_parameters(model) == config.estimated_parameters()
    assert expected_shapes(config) == {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert expected_shapes(config)["final_logits_bias"] == (10,)


def test_the_halves_layout_is_marians_formula():
    """Hugging Face's MarianSinusoidalPositionalEmbedding: angle pos / 10000^(2 (j // 2) / D), the sines of the even
    j in the first half, the cosines of the odd j in the second; the paper interleaves the same values."""
    n, d = 50, 16
    angles = [[pos / 10000 ** (2 * (j // 2) / d) for j in range(d)] for pos in range(n)]
    expected = torch.tensor([[math.sin(a) for a in row[0::2]] + [math.cos(a) for a in row[1::2]] for row in angles])
    halves = sinusoidal_encoding(n, d, "halves")
    assert torch.allclose(halves, expected.float(), atol=1e-6)
    interleaved = sinusoidal_encoding(n, d)
    assert torch.allclose(halves, torch.cat([interleaved[:, 0::2], interleaved[:, 1::2]], dim=1), atol=1e-5)


def test_teacher_forcing_keeps_the_pad_start_token_visible():
    """Marian's decoder starts with <pad>: its key is never masked as padding (the project's BOS start is unchanged)."""
    config = ModelConfig(vocab_size=10, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32,
                         pad_id=9, unk_id=1, bos_id=9, eos_id=0, tokenizer="marian")
    mask = Transformer(config).target_mask(torch.tensor([[9, 4, 5, 9]]))  # start, two pieces, padding
    assert mask[0, 0].tolist() == [[True, False, False, False], [True, True, False, False],
                                   [True, True, True, False], [True, True, True, False]]


# ---------------------------------------------------------------- conversion without transformers

def test_a_folder_converts_round_trips_and_translates(folder, tmp_path, capsys):
    out = tmp_path / "pretrained" / "opus-mt-en-de"
    assert cli_main(["convert-marian", str(folder), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "read the weights from model.safetensors" in printed and "en -> de" in printed
    ckpt = load_checkpoint(out)
    assert ckpt.meta == {"converted_from": "opus-mt-en-de", "source_lang": "en", "target_lang": "de",
                         "forced_eos": False,  # the fixture's config sets forced_eos_token_id null
                         "length_penalty_formula": "hf", "length_penalty": 1.0,  # generate()'s, its default α
                         "early_stopping": False}  # generate()'s default stopping rule
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors", "source.spm", "target.spm",
                                                     "vocab.json"]
    state = hf_state_dict(ckpt.config.vocab_size)
    assert torch.equal(ckpt.model.final_logits_bias, state["final_logits_bias"][0])
    assert torch.equal(ckpt.model.encoder.layers[1].feed_forward.linear2.weight,
                       state["model.encoder.layers.1.fc2.weight"])
    result = translate(ckpt.model, ckpt.tokenizer, "The house is small.", DecodeConfig(max_len=5))
    assert result.source.pieces[-1] == "</s>" and result.target_input_pieces[0] == "<pad>"
    assert cli_main(["translate", "The house is small.", "--checkpoint", str(out), "--max-len", "5",
                     "--json", str(tmp_path / "t.json")]) == 0
    assert json.loads((tmp_path / "t.json").read_text())["translation"]["decoder_input_pieces"][0] == "<pad>"


def test_forced_eos_is_recorded_as_the_config_says_and_decoding_follows_it(folder, tmp_path, capsys):
    """forced_eos_token_id absent means Marian's default, </s> (0): every opus-mt model forces it at the limit."""
    config = json.loads((folder / "config.json").read_text())
    del config["forced_eos_token_id"]
    (folder / "config.json").write_text(json.dumps(config))
    ckpt = load_checkpoint(convert_marian(folder, tmp_path / "out").path)
    assert ckpt.meta["forced_eos"] is True and ckpt.forced_eos
    assert cli_main(["translate", "The house is small.", "--checkpoint", str(tmp_path / "out"), "--max-len", "2",
                     "--json", str(tmp_path / "t.json")]) == 0
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["decode"]["forced_eos"] is True and saved["translation"]["pieces"][-1] == "</s>"
    assert len(saved["translation"]["pieces"]) <= 2


def test_the_convert_command_reads_the_model_type_and_refuses_other_families_in_one_line(folder, tmp_path, capsys):
    assert cli_main(["convert", str(folder), "--out", str(tmp_path / "a")]) == 0
    assert cli_main(["convert-marian", str(folder), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    capsys.readouterr()
    config = json.loads((folder / "config.json").read_text())
    for family in ("pegasus", "prophetnet", None):
        (folder / "config.json").write_text(json.dumps({**config, "model_type": family}))
        assert cli_main(["convert", str(folder), "--out", str(tmp_path / "c")]) == 2
        said = f"model_type {family!r} cannot be converted" if family else "config.json names no model_type"
        assert capsys.readouterr().err.endswith(f"{said}; supported: bart, m2m_100, marian, mbart, t5\n")
        assert not (tmp_path / "c").exists()
    assert cli_main(["convert", str(tmp_path / "nowhere"), "--out", str(tmp_path / "c")]) == 2
    assert "Hugging Face folder not found" in capsys.readouterr().err


def test_a_sharded_folder_converts_to_the_same_checkpoint(folder, tmp_path):
    whole = load_checkpoint(convert_marian(folder, tmp_path / "whole").path)
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    assert len(save_weights(state, folder, {}, max_bytes=8192)) > 2  # model-0000k-of-0000n + the index, as HF writes
    sharded = load_checkpoint(convert_marian(folder, tmp_path / "sharded").path)
    for name, tensor in whole.model.state_dict().items():
        assert torch.equal(sharded.model.state_dict()[name], tensor), name


class Plant:
    """Unpickling this creates the marker file: what a malicious pickle does."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_pickle_is_read_only_with_weights_only_and_safetensors_is_preferred(folder, tmp_path, capsys):
    state = hf_state_dict(len(json.loads((folder / "vocab.json").read_text())), seed=1)
    torch.save(state, folder / "pytorch_model.bin")
    convert_marian(folder, tmp_path / "both")  # safetensors (seed 0) wins over the pickle (seed 1)
    assert not torch.equal(load_checkpoint(tmp_path / "both").model.final_logits_bias, state["final_logits_bias"][0])
    (folder / "model.safetensors").unlink()
    assert cli_main(["convert-marian", str(folder), "--out", str(tmp_path / "bin")]) == 0
    assert "with torch.load(weights_only=True" in capsys.readouterr().out
    assert torch.equal(load_checkpoint(tmp_path / "bin").model.final_logits_bias, state["final_logits_bias"][0])
    marker = tmp_path / "pwned"
    torch.save({"model.shared.weight": Plant(marker)}, folder / "pytorch_model.bin")
    never_run = ("pytorch_model.bin holds an object other than tensors (io.open): refused, never run (a pickle can run "
                 "code); convert the model's model.safetensors instead")
    refused(folder, tmp_path / "evil", never_run, capsys)
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Plant(marker)))  # an old-style pickle: no name given
    refused(folder, tmp_path / "evil", "pytorch_model.bin holds an object other than tensors: refused, never run",
            capsys)
    assert not marker.exists()


def test_a_refused_pickle_never_passes_on_the_advice_to_load_it_unsafely(folder, tmp_path):
    """torch's refusal says weights_only=False would load the file: the very thing never to do with someone else's
    pickle. Ours names the object and the safe way instead."""
    (folder / "model.safetensors").unlink()
    torch.save({"model.shared.weight": Plant(tmp_path / "pwned")}, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError) as info:
        convert_marian(folder, tmp_path / "evil")
    assert "weights_only" not in str(info.value) and "trust" not in str(info.value) and "\x1b" not in str(info.value)
    (folder / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not a zip archive")
    with pytest.raises(CheckpointError, match=r"^pytorch_model\.bin is not a readable PyTorch weights file \(Pytorch"):
        convert_marian(folder, tmp_path / "corrupt")


@pytest.mark.parametrize("change, message", [
    ({"model_type": "bart"}, "config.json: model_type is 'bart', not 'marian'"),
    ({"architectures": ["MarianForCausalLM"]},
     "config.json: architectures is ['MarianForCausalLM'], not MarianMTModel"),
    ({"normalize_before": True}, "config.json: unsupported, pre-norm layers (normalize_before: true)"),
    ({"scale_embedding": False}, "config.json: unsupported, embeddings not scaled by sqrt(d_model)"),
    ({"static_position_embeddings": False}, "config.json: unsupported, learned positions"),
    ({"share_encoder_decoder_embeddings": False}, "config.json: unsupported, separate source and target embeddings"),
    ({"activation_function": "gelu_new"}, "config.json: unsupported activation_function 'gelu_new'"),
    ({"decoder_ffn_dim": 64}, "config.json: unsupported, encoder_ffn_dim and decoder_ffn_dim differ"),
    ({"forced_eos_token_id": 5}, "config.json: unsupported, forced_eos_token_id 5 is not the eos_token_id 0"),
    ({"n_heads": 3}, None),  # an unknown key changes nothing
])
def test_unsupported_configs_are_refused_naming_the_file(folder, tmp_path, change, message, capsys):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    if message is None:
        convert_marian(folder, tmp_path / "out")
    else:
        refused(folder, tmp_path / "out", message, capsys)


def test_missing_files_and_a_vocabulary_mismatch_are_refused(folder, tmp_path, capsys):
    out = tmp_path / "out"
    vocab = json.loads((folder / "vocab.json").read_text())
    pieces = {piece: i for piece, i in vocab.items() if piece != "<pad>"}
    (folder / "vocab.json").write_text(json.dumps({**pieces, "▁extra": len(vocab) - 1, "<pad>": len(vocab)}))
    refused(folder, out, f"vocabulary mismatch: vocab.json has {len(vocab) + 1} pieces, config.json says vocab_size "
                         f"{len(vocab)}", capsys)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(hf_config_dict(len(vocab) + 1)))
    refused(folder, out, f"vocabulary mismatch: vocab.json has {len(vocab) + 1} pieces, the embedding in "
                         f"model.safetensors has shape ({len(vocab)}, 16)", capsys)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "model.safetensors").unlink()
    refused(folder, out, f"model.safetensors (or pytorch_model.bin) is missing in {folder}", capsys)
    (folder / "source.spm").unlink()
    refused(folder, out, f"source.spm is missing in {folder}", capsys)
    refused(tmp_path / "nowhere", out, "Marian folder not found", capsys)


def test_an_unconverted_folder_given_as_a_checkpoint_says_to_convert_it(folder, capsys):
    with pytest.raises(CheckpointError, match=r"config.json is a Hugging Face config \(model_type 'marian'\), not "
                                              r"this project's checkpoint; convert .* python -m model convert-marian"):
        load_checkpoint(folder)
    assert cli_main(["translate", "The house is small.", "--checkpoint", str(folder)]) == 2
    assert "convert-marian FOLDER --out pretrained/NAME" in capsys.readouterr().err


def test_an_existing_output_is_never_overwritten(folder, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "config.json").write_text("{}")
    with pytest.raises(CheckpointError, match="already exists and is not empty"):
        convert_marian(folder, tmp_path / "taken")
    assert (tmp_path / "taken" / "config.json").read_text() == "{}"


def test_a_converted_checkpoint_with_a_broken_vocabulary_is_refused_on_load(folder, tmp_path):
    out = convert_marian(folder, tmp_path / "out").path
    vocab = json.loads((out / "vocab.json").read_text())
    (out / "vocab.json").write_text(json.dumps({**vocab, "<pad>": 0, "</s>": len(vocab) - 1}))
    with pytest.raises(CheckpointError, match=r"vocab.json does not match config.json: <pad> is 0, config.json says "
                                              r"pad_id \d+; </s> is \d+, config.json says eos_id 0"):
        load_checkpoint(out)
    (out / "vocab.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match=r"vocab\.json must map pieces to integer ids"):
        load_checkpoint(out)


# ---------------------------------------------------------------- equivalence with Hugging Face (transformers)
# Marked slow for the quick loop: importing transformers takes seconds; each test itself takes well under one.

@pytest.fixture(scope="module", params=["relu", "swish"])
def pair(request, tmp_path_factory, tokenizer_files):
    """(Hugging Face's eager MarianMTModel, our converted checkpoint, HF's MarianTokenizer) of one random model."""
    import transformers  # the reference (requirements-dev.txt): missing, the test fails rather than skips
    vocab_size = len(json.loads(tokenizer_files["vocab.json"]))
    config = transformers.MarianConfig(**{k: v for k, v in hf_config_dict(vocab_size, request.param).items()
                                          if k not in ("model_type", "architectures")})
    torch.manual_seed(0)
    hf = transformers.MarianMTModel(config)
    with torch.no_grad():  # weights far from HF's init (std 0.02), so outputs differ clearly between tokens
        for name, p in hf.named_parameters():
            p.normal_(0.0, 0.5).add_(1.0 if "layer_norm.weight" in name else 0.0)
        hf.final_logits_bias.normal_(0.0, 1.0)
        hf.model.shared.weight[0] *= EOS_SCALE[request.param]  # </s> likely in some states, so outputs vary in length
    root = tmp_path_factory.mktemp(f"marian-{request.param}")
    folder = write_files(root / "opus-mt-en-de", tokenizer_files)
    hf.save_pretrained(folder)
    ckpt = load_checkpoint(convert_marian(folder, root / "converted").path)
    reference = transformers.MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = transformers.MarianTokenizer(source_spm=str(folder / "source.spm"), target_spm=str(folder / "target.spm"),
                                       vocab=str(folder / "vocab.json"))
    return reference, ckpt, tok


@pytest.mark.slow
def test_tokenizer_ids_and_text_are_hugging_faces(pair):
    _, ckpt, tok = pair
    for text in TEXTS + EN[:3] + [">>de<< The house"]:
        assert ckpt.tokenizer.encode_source(text) == tok(text)["input_ids"]
    ids = [i for i in range(ckpt.config.vocab_size) if i != ckpt.tokenizer.unk_id][:30]
    assert ckpt.tokenizer.decode(ids) == tok.decode(ids, skip_special_tokens=True, use_source_tokenizer=False)
    assert ckpt.tokenizer.pieces([0, 1, ckpt.config.pad_id]) == ["</s>", "<unk>", "<pad>"]


@pytest.mark.slow
def test_logits_and_every_attention_equal_hugging_faces(pair):
    """A padded batch of two sources; the decoder reads <pad> (its start) and four pieces."""
    hf, ckpt, _ = pair
    pad = ckpt.config.pad_id
    tgt = torch.tensor([[pad, 5, 7, 9, 3], [pad, 11, 4, 0, 8]])  # [2, T]
    assert_same_forward(hf, ckpt, TEXTS[:2], tgt, pad)


def hf_output(sequence: torch.Tensor, pad: int) -> tuple[int, ...]:
    """A generated sequence without its start token and the padding after </s>."""
    tokens = sequence.tolist()[1:]
    while tokens and tokens[-1] == pad:
        tokens.pop()
    return tuple(tokens)


def generate(hf, src: torch.Tensor, beams: int, **options):
    pad = hf.config.pad_token_id
    return hf.generate(src[None], num_beams=beams, do_sample=False, max_new_tokens=MAX_NEW, bad_words_ids=[[pad]],
                       num_return_sequences=beams, output_scores=True, return_dict_in_generate=True, **options)


@pytest.mark.slow
def test_greedy_and_beam_outputs_equal_generate(pair):
    """Greedy equals generate(num_beams=1). Beam 4 at length penalty 0 (both rank by raw log-prob): the n-best list
    and its log-probs equal generate(num_beams=4, early_stopping=True), which stops once 4 hypotheses ended, and
    generate(early_stopping=False) (HF's default), which keeps searching while a live beam's score beats the worst
    finished one, so its n-best can only be better: each of its scores is >= True's."""
    hf, ckpt, _ = pair
    pad, lengths = ckpt.config.pad_id, set()
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=MAX_NEW), capture=Capture.NONE).best
        assert greedy.tokens == hf_output(generate(hf, src, 1).sequences[0], pad)
        ours = beam_search(ckpt.model, src, DecodeConfig(beam_size=4, max_len=MAX_NEW, length_penalty=0.0),
                           capture=Capture.NONE).hypotheses
        theirs = generate(hf, src, 4, length_penalty=0.0, early_stopping=True)
        assert [h.tokens for h in ours] == [hf_output(s, pad) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.log_prob for h in ours]), theirs.sequences_scores, atol=1e-4)
        heuristic = generate(hf, src, 4, length_penalty=0.0, early_stopping=False)
        searched = beam_search(ckpt.model, src, DecodeConfig(beam_size=4, max_len=MAX_NEW, length_penalty=0.0,
                                                             early_stopping=False), capture=Capture.NONE).hypotheses
        assert [h.tokens for h in searched] == [hf_output(s, pad) for s in heuristic.sequences]
        assert torch.allclose(torch.tensor([h.log_prob for h in searched]), heuristic.sequences_scores, atol=1e-4)
        assert all(h.log_prob >= o.log_prob - 1e-6 for h, o in zip(searched, ours, strict=True))
        lengths |= {(len(h.tokens), h.ended_with_eos) for h in (greedy, *ours)}
    assert len(lengths) >= 4 and {eos for _, eos in lengths} == {True, False}  # several lengths, both ways to end


@pytest.mark.slow
def test_forced_eos_at_the_length_limit_equals_generate(pair):
    """Marian's configs set forced_eos_token_id: generate() makes the last piece max_new_tokens allows </s>, scored 0.
    DecodeConfig(forced_eos=True) does the same: greedy and beam 4 equal generate(forced_eos_token_id=eos) piece for
    piece, with beam 4's log-probs equal to its sequences_scores, at a limit that cuts most outputs and at one that
    cuts some."""
    hf, ckpt, _ = pair
    pad, eos, forced = ckpt.config.pad_id, ckpt.config.eos_id, 0
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        for limit in (3, MAX_NEW):
            options = dict(do_sample=False, max_new_tokens=limit, bad_words_ids=[[pad]], forced_eos_token_id=eos,
                           output_scores=True, return_dict_in_generate=True)
            greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=limit, forced_eos=True),
                                   capture=Capture.NONE)
            assert greedy.best.tokens == hf_output(hf.generate(src[None], num_beams=1, **options).sequences[0], pad)
            ours = beam_search(ckpt.model, src, DecodeConfig(beam_size=4, max_len=limit, length_penalty=0.0,
                                                             forced_eos=True), capture=Capture.NONE).hypotheses
            theirs = hf.generate(src[None], num_beams=4, num_return_sequences=4, length_penalty=0.0,
                                 early_stopping=True, **options)
            assert [h.tokens for h in ours] == [hf_output(s, pad) for s in theirs.sequences]
            assert torch.allclose(torch.tensor([h.log_prob for h in ours]), theirs.sequences_scores, atol=1e-4)
            assert all(h.ended_with_eos for h in (greedy.best, *ours))
            forced += sum(len(h.tokens) == limit for h in (greedy.best, *ours))
    assert forced >= 10  # the limit was reached often: the forced </s> was really exercised


@pytest.mark.slow
def test_the_app_pipeline_translates_as_generate_and_decode(pair):
    hf, ckpt, tok = pair
    for text in EN[:2]:
        ours = translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(max_len=MAX_NEW))
        src = torch.tensor(tok(text)["input_ids"])
        expected = generate(hf, src, 1).sequences[0]
        assert ours.text == tok.decode(expected, skip_special_tokens=True, use_source_tokenizer=False)


def test_our_length_penalty_is_gnmts_not_hugging_faces():
    """HF ranks finished beams by log P / |Y|^lp, we by GNMT's log P / ((5 + |Y|) / 6)^alpha (model.decoding.search);
    the two can order the same hypotheses differently, which is why beams are compared at penalty 0 above."""
    short, long = (-2.0, 2), (-3.5, 5)  # (log-prob, length incl. </s>)
    hf_rank = sorted([short, long], key=lambda h: h[0] / h[1] ** 1.0, reverse=True)
    gnmt_rank = sorted([short, long], key=lambda h: h[0] / length_penalty(h[1], 1.0), reverse=True)
    assert hf_rank == [long, short] and gnmt_rank == [short, long]
    assert length_penalty(7, 0.6) == ((5 + 7) / 6) ** 0.6 and length_penalty(7, 0.0) == 1.0


def test_languages_come_from_the_tokenizer_config_or_the_folder_name(tmp_path):
    cache = tmp_path / "models--Helsinki-NLP--opus-mt-tc-big-en-ROMANCE" / "snapshots" / "0123abc"
    cache.mkdir(parents=True)
    assert languages(cache) == ("en", "ROMANCE")
    (cache / "tokenizer_config.json").write_text(json.dumps({"source_lang": "eng", "target_lang": "deu"}))
    assert languages(cache) == ("eng", "deu")
    assert languages(tmp_path) == (None, None)
