"""Hostile checkpoints ("Reliability under abuse"): each is refused with one line naming the file and the reason,
no code in it runs, and nothing is built or read by safetensors before the checks pass. Through the Python API
(load_checkpoint) and the CLI; the app's upload is tested in tests/app/test_upload.py."""
from __future__ import annotations

import io
import json
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from safetensors.torch import save_file

import model.checkpoints.files as checkpoint
import model.checkpoints.header as header
from model.__main__ import main as cli_main
from model.checkpoints.files import (
    CONFIG,
    MAX_CONFIG_BYTES,
    MAX_TOKENIZER_BYTES,
    TOKENIZER,
    WEIGHTS,
    expected_shapes,
    load_checkpoint,
)
from model.checkpoints.header import MAX_WEIGHTS_BYTES, CheckpointError
from model.network.config import (
    MAX_D_FF,
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_MODEL_BYTES,
    MAX_MODEL_LEN,
    MAX_VOCAB_SIZE,
    ModelConfig,
    format_bytes,
)
from model.network.transformer import Transformer, count_parameters
from tests.conftest import tiny_config

ROOT = Path(__file__).resolve().parents[2]
GB = 2**30


class Plant:
    """Unpickling this calls open(marker, "w"), creating the marker file: what a malicious pickle does."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def torch_save_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def pickled(form: str, marker: Path) -> bytes:
    if form == "torch.save":
        return torch_save_bytes({"weight": Plant(marker)})
    return pickle.dumps(Plant(marker), protocol={"pickle protocol 4": 4, "pickle protocol 0": 0}[form])


PICKLE_MESSAGES = {
    "pickle protocol 4": f"{WEIGHTS} is not a valid safetensors file: it is a Python pickle (PyTorch's .bin/.pt "
                         "format), which can run code and is never loaded",
    "torch.save": f"{WEIGHTS} is not a valid safetensors file: it is a zip archive (PyTorch's torch.save format is "
                  "one: a pickle inside)",
}


def pickle_message(form: str, data: bytes) -> str:
    if form in PICKLE_MESSAGES:
        return PICKLE_MESSAGES[form]
    claimed = int.from_bytes(data[:8], "little")  # protocol 0 is text: "cio\nopen" read as a length
    return (f"{WEIGHTS} is not a valid safetensors file (truncated or corrupt): its header length field claims "
            f"{format_bytes(claimed)} but the file has {format_bytes(len(data))}")


@pytest.fixture
def ckpt(tmp_path, tiny_checkpoint) -> Path:
    target = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, target)
    return target


@pytest.fixture
def nothing_built(monkeypatch):
    """Fails the test if a model is built or safetensors opens the weights before the refusal."""
    def forbidden(*args, **kwargs):
        raise AssertionError("a model was built or safetensors read the file before the checks refused it")
    for name in ("Transformer", "safe_open", "load_safetensors_bytes"):
        monkeypatch.setattr(checkpoint, name, forbidden)


def refused(directory: Path, message: str) -> None:
    """load_checkpoint raises CheckpointError with exactly ``message`` (one line)."""
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


def cli_refuses(directory: Path, capsys, message: str) -> None:
    """python -m model translate, in process: exit status 2 and one line "error: <message>" on stderr."""
    assert cli_main(["translate", "x", "--checkpoint", str(directory)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"error: {message}\n"


def run_cli(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "model", "translate", "x", "--checkpoint", str(directory)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


# ---------------------------------------------------------------- pickles: never unpickled, whatever their name

PICKLE_FORMS = ["pickle protocol 4", "pickle protocol 0", "torch.save"]


@pytest.mark.parametrize("form", PICKLE_FORMS)
def test_the_pickle_payloads_are_live(tmp_path, form):
    """The payloads below really run code when unpickled, so the tests that they never do are not vacuous."""
    proof = tmp_path / "proof"
    data = pickled(form, proof)
    if form == "torch.save":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    pickle.loads(data)
    assert proof.exists()


@pytest.mark.parametrize("form", PICKLE_FORMS)
def test_a_pickle_named_model_safetensors_is_refused_and_never_run(ckpt, tmp_path, form, nothing_built, capsys):
    marker = tmp_path / "pwned"
    data = pickled(form, marker)
    (ckpt / WEIGHTS).write_bytes(data)
    refused(ckpt, pickle_message(form, data))
    cli_refuses(ckpt, capsys, pickle_message(form, data))
    assert not marker.exists()


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt"])
def test_pickled_weights_beside_the_config_are_not_read(ckpt, tmp_path, name, capsys):
    marker = tmp_path / "pwned"
    (ckpt / WEIGHTS).unlink()
    (ckpt / name).write_bytes(torch_save_bytes({"weight": Plant(marker)}))
    message = (f"{WEIGHTS} is missing in {ckpt} ({name} is not read: only safetensors weights are loaded, "
               "a pickle can run code)")
    refused(ckpt, message)
    cli_refuses(ckpt, capsys, message)
    assert not marker.exists()


def test_a_pickle_next_to_good_weights_is_ignored(ckpt, tmp_path):
    marker = tmp_path / "pwned"
    (ckpt / "pytorch_model.bin").write_bytes(pickle.dumps(Plant(marker), protocol=4))
    assert load_checkpoint(ckpt).config.vocab_size > 0
    assert not marker.exists()


def test_the_cli_refuses_a_pickle_with_one_line_and_status_2(ckpt, tmp_path):
    """The real command line, as a user runs it (one subprocess: starting Python with torch takes seconds)."""
    marker = tmp_path / "pwned"
    (ckpt / WEIGHTS).write_bytes(pickle.dumps(Plant(marker), protocol=4))
    proc = run_cli(ckpt)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: {PICKLE_MESSAGES['pickle protocol 4']}\n"
    assert not marker.exists()


# ---------------------------------------------------------------- safetensors headers checked before reading

def split(data: bytes) -> tuple[dict, bytes]:
    length = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + length]), data[8 + length:]


def join(header: dict, body: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + body


def last_tensor(header: dict) -> str:
    return max((n for n in header if n != "__metadata__"), key=lambda n: header[n]["data_offsets"][1])


def claim_12_gb_in_offsets(data):
    header, body = split(data)
    entry = header[last_tensor(header)]
    entry["data_offsets"][1] = entry["data_offsets"][0] + 12 * GB
    return join(header, body), f"{WEIGHTS}: header claims 12 GB of tensor data but the file has only " \
                               f"{format_bytes(len(body))} after its header (truncated or corrupt)"


def claim_12_gb_in_shape_and_offsets(data):
    header, body = split(data)
    entry = header[last_tensor(header)]
    entry["shape"], entry["data_offsets"][1] = [3 * GB], entry["data_offsets"][0] + 12 * GB
    return join(header, body), f"{WEIGHTS}: header claims 12 GB of tensor data but the file has only " \
                               f"{format_bytes(len(body))} after its header (truncated or corrupt)"


def claim_huge_shape(data):
    header, body = split(data)
    header["embed.token.weight"]["shape"] = [10**6, 10**6]
    needed = tuple(split(data)[0]["embed.token.weight"]["shape"])
    return join(header, body), f"{WEIGHTS}: embed.token.weight has shape (1000000, 1000000), the config needs {needed}"


def claim_huge_header_length(data):
    return (2**63).to_bytes(8, "little") + data[8:], f"{WEIGHTS} is not a valid safetensors file (truncated or " \
        f"corrupt): its header length field claims 8.0 EB but the file has {format_bytes(len(data))}"


def claim_header_past_the_limit(data):
    n_tensors = len(split(data)[0]) - 1
    length = header.HEADER_BASE_BYTES + header.HEADER_BYTES_PER_TENSOR * n_tensors + 1
    return length.to_bytes(8, "little") + b" " * length, f"{WEIGHTS}: its header claims {format_bytes(length)}, " \
        f"more than the {format_bytes(length - 1)} a checkpoint of this config needs"


def corrupt_header_json(data):
    length = int.from_bytes(data[:8], "little")
    return data[:8] + b"{" + b"\xff" * (length - 1) + data[8 + length:], \
        f"{WEIGHTS} is not a valid safetensors file: its header is not JSON"


def header_not_an_object(data):
    length = int.from_bytes(data[:8], "little")
    return data[:8] + b"[" + b" " * (length - 2) + b"]" + data[8 + length:], \
        f"{WEIGHTS} is not a valid safetensors file: its header is not a JSON object"


def truncate_to(fraction):
    def cut(data):
        keep = data[:int(len(data) * fraction)] if fraction else data[:5]
        length = int.from_bytes(data[:8], "little")
        if len(keep) < 8:
            return keep, f"{WEIGHTS} is not a valid safetensors file (truncated or corrupt): it has only 5 bytes"
        if len(keep) < 8 + length:
            return keep, f"{WEIGHTS} is not a valid safetensors file (truncated or corrupt): its header length " \
                         f"field claims {format_bytes(length)} but the file has {format_bytes(len(keep))}"
        return keep, f"{WEIGHTS}: header claims {format_bytes(len(data) - 8 - length)} of tensor data but the " \
                     f"file has only {format_bytes(len(keep) - 8 - length)} after its header (truncated or corrupt)"
    return cut


def offsets_not_matching_the_shape(data):
    header, body = split(data)
    name = "encoder.layers.0.self_attn.w_q.bias"
    begin, end = header[name]["data_offsets"]
    header[name]["data_offsets"] = [begin, end - 4]
    return join(header, body), f"{WEIGHTS}: {name}'s data_offsets span {format_bytes(end - begin - 4)}, its " \
                               f"shape {tuple(header[name]['shape'])} as F32 takes {format_bytes(end - begin)}"


def overlapping_tensors(data):
    header, body = split(data)
    a, b = "encoder.layers.0.self_attn.w_q.bias", "encoder.layers.0.self_attn.w_k.bias"
    gap = min(header[a]["data_offsets"][0], header[b]["data_offsets"][0])
    header[b]["data_offsets"] = list(header[a]["data_offsets"])
    return join(header, body), f"{WEIGHTS}: tensors overlap or leave a gap at byte {gap} of the data"


def trailing_data(data):
    _, body = split(data)
    return data + b"\0" * 100, f"{WEIGHTS} has 100 bytes of unexplained data after its tensors (the file has " \
                               f"{format_bytes(len(data) + 100)}, the config's tensors take {format_bytes(len(body))})"


def entry_change(name_of_change, change, reason):
    def mutate(data):
        header, body = split(data)
        name = "decoder.layers.0.cross_attn.w_o.weight"
        change(header[name])
        return join(header, body), f"{WEIGHTS}: the header entry of '{name}' {reason}"
    mutate.__name__ = name_of_change
    return mutate


def bad_metadata(data):
    header, body = split(data)
    header["__metadata__"] = {"format": 1}
    return join(header, body), f"{WEIGHTS} is not a valid safetensors file: __metadata__ must map names to strings"


def unexpected_tensor_name(data):
    header, body = split(data)
    name = "x" * 200 + "\n" + "y"
    header[name] = {"dtype": "F32", "shape": [0], "data_offsets": [len(body), len(body)]}
    return join(header, body), f"{WEIGHTS} does not match the config: missing [], unexpected ['{'x' * 57}...']"


HEADER_CASES = [
    claim_12_gb_in_offsets, claim_12_gb_in_shape_and_offsets, claim_huge_shape, claim_huge_header_length,
    claim_header_past_the_limit, corrupt_header_json, header_not_an_object, truncate_to(0), truncate_to(0.003),
    truncate_to(0.5), offsets_not_matching_the_shape, overlapping_tensors, trailing_data, bad_metadata,
    unexpected_tensor_name,
    entry_change("unknown_dtype", lambda e: e.update(dtype="F128"), "has an unknown dtype 'F128'"),
    entry_change("shape_not_a_list", lambda e: e.update(shape="16x16"),
                 "has an invalid shape (a list of sizes >= 0 is needed)"),
    entry_change("negative_size", lambda e: e.update(shape=[-16, -16]),
                 "has an invalid shape (a list of sizes >= 0 is needed)"),
    entry_change("bool_size", lambda e: e.update(shape=[True, 16]),
                 "has an invalid shape (a list of sizes >= 0 is needed)"),
    entry_change("offsets_reversed", lambda e: e.update(data_offsets=e["data_offsets"][::-1]),
                 "has invalid data_offsets (a pair [begin, end], 0 <= begin <= end, is needed)"),
    entry_change("negative_offset", lambda e: e.update(data_offsets=[-8, e["data_offsets"][1]]),
                 "has invalid data_offsets (a pair [begin, end], 0 <= begin <= end, is needed)"),
    entry_change("float_offset", lambda e: e.update(data_offsets=[0.5, e["data_offsets"][1]]),
                 "has invalid data_offsets (a pair [begin, end], 0 <= begin <= end, is needed)"),
    entry_change("no_dtype", lambda e: e.pop("dtype"), "is malformed (it needs dtype, shape and data_offsets)"),
]


@pytest.mark.parametrize("hostile", HEADER_CASES, ids=lambda f: f.__name__)
def test_a_hostile_safetensors_header_is_refused_before_anything_is_read(ckpt, hostile, nothing_built, capsys):
    data, message = hostile((ckpt / WEIGHTS).read_bytes())
    (ckpt / WEIGHTS).write_bytes(data)
    refused(ckpt, message)
    cli_refuses(ckpt, capsys, message)


def test_a_file_far_larger_than_the_config_implies_is_refused_unread(ckpt, nothing_built):
    config = ModelConfig.from_dict(json.loads((ckpt / CONFIG).read_text())["model"])
    n = config.estimated_parameters()
    with (ckpt / WEIGHTS).open("ab") as f:
        f.write(b"\0" * 8 * 2**20)
    size = (ckpt / WEIGHTS).stat().st_size
    refused(ckpt, f"{WEIGHTS} has {format_bytes(size)}, far more than the config implies ({n:,} parameters take "
                  f"at most {format_bytes(4 * n)}, as float32)")


def test_a_weights_file_over_the_size_limit_is_refused_unread(ckpt, nothing_built):
    with (ckpt / WEIGHTS).open("r+b") as f:
        f.truncate(MAX_WEIGHTS_BYTES + 200 * 2**20)  # sparse: nothing is written, and nothing may be read
    refused(ckpt, f"{WEIGHTS} has 3.2 GB, more than the limit of 3.0 GB")


def test_the_cli_refuses_a_header_claiming_gigabytes_with_one_line(ckpt):
    data, message = claim_12_gb_in_offsets((ckpt / WEIGHTS).read_bytes())
    (ckpt / WEIGHTS).write_bytes(data)
    proc = run_cli(ckpt)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr == f"error: {message}\n"


# ---------------------------------------------------------------- dtypes, shapes, values of the tensors

@pytest.mark.parametrize("dtype, shown", [(torch.int64, "I64 (integer)"), (torch.int32, "I32 (integer)"),
                                          (torch.uint8, "U8 (integer)"), (torch.bool, "BOOL (bool)"),
                                          (torch.float64, "F64 (float64)")])
def test_weights_that_are_not_float16_bfloat16_or_float32_are_refused(ckpt, tiny_model, dtype, shown,
                                                                      nothing_built):
    weights = {k: v.detach().clone().contiguous() for k, v in tiny_model.state_dict().items()}
    name = "encoder.layers.1.feed_forward.linear2.weight"
    weights[name] = weights[name].to(dtype)
    save_file(weights, str(ckpt / WEIGHTS))
    refused(ckpt, f"{WEIGHTS}: {name} is {shown}, expected floating point: float16, bfloat16 or float32")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_float16_bfloat16_and_float32_weights_load(ckpt, tiny_model, dtype):
    save_file({k: v.detach().to(dtype).contiguous() for k, v in tiny_model.state_dict().items()}, str(ckpt / WEIGHTS))
    loaded = load_checkpoint(ckpt).model
    assert loaded.embed.token.weight.dtype == torch.float32
    assert torch.allclose(loaded.embed.token.weight, tiny_model.embed.token.weight, atol=1e-2)


def test_a_wrong_shape_is_refused_before_the_model_is_built(ckpt, tokenizer, nothing_built):
    other = Transformer(tiny_config(tokenizer.vocab_size, d_model=32, n_heads=2))
    save_file({k: v.contiguous() for k, v in other.state_dict().items()}, str(ckpt / WEIGHTS))
    refused(ckpt, f"{WEIGHTS}: embed.token.weight has shape ({tokenizer.vocab_size}, 32), the config needs "
                  f"({tokenizer.vocab_size}, 16)")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_weights_are_refused(ckpt, tiny_model, value):
    weights = {k: v.detach().clone().contiguous() for k, v in tiny_model.state_dict().items()}
    weights["decoder.layers.1.sublayers.2.norm.weight"][3] = value
    save_file({k: v.half() for k, v in weights.items()}, str(ckpt / WEIGHTS))
    refused(ckpt, f"{WEIGHTS}: decoder.layers.1.sublayers.2.norm.weight contains NaN or infinite values")


# ---------------------------------------------------------------- config.json: types, consistency, limits

def with_model(ckpt: Path, **values) -> None:
    payload = json.loads((ckpt / CONFIG).read_text())
    payload["model"].update(values)
    (ckpt / CONFIG).write_text(json.dumps(payload))


CONFIG_CASES = [
    ({"vocab_size": -1}, "ModelConfig.vocab_size must be a positive integer, got -1"),
    ({"d_model": 0}, "ModelConfig.d_model must be a positive integer, got 0"),
    ({"n_heads": 2.5}, "ModelConfig.n_heads must be a positive integer, got 2.5"),
    ({"d_ff": "8"}, "ModelConfig.d_ff must be a positive integer, got '8'"),
    ({"n_encoder_layers": True}, "ModelConfig.n_encoder_layers must be a positive integer, got True"),
    ({"max_len": 64.0}, "ModelConfig.max_len must be a positive integer, got 64.0"),
    ({"n_decoder_layers": None}, "ModelConfig.n_decoder_layers must be a positive integer, got None"),
    ({"d_model": 20, "n_heads": 8}, "d_model (20) must be divisible by n_heads (8)"),
    ({"d_model": 15, "n_heads": 3}, "d_model must be even (sinusoidal positions come in sin/cos pairs), got 15"),
    ({"max_len": 10**9}, f"ModelConfig.max_len is 1000000000, more than the limit of {MAX_MODEL_LEN}"),
    ({"n_encoder_layers": 10**6}, f"ModelConfig.n_encoder_layers is 1000000, more than the limit of {MAX_LAYERS}"),
    ({"n_decoder_layers": 49}, f"ModelConfig.n_decoder_layers is 49, more than the limit of {MAX_LAYERS}"),
    ({"vocab_size": 10**9}, f"ModelConfig.vocab_size is 1000000000, more than the limit of {MAX_VOCAB_SIZE}"),
    ({"d_model": 10**6}, f"ModelConfig.d_model is 1000000, more than the limit of {MAX_D_MODEL}"),
    ({"n_heads": 128}, f"ModelConfig.n_heads is 128, more than the limit of {MAX_HEADS}"),
    ({"d_ff": 10**9}, f"ModelConfig.d_ff is 1000000000, more than the limit of {MAX_D_FF}"),
    ({"vocab_size": 250_000, "d_model": 4096, "n_heads": 64},
     "this config describes 1,427,898,496 parameters (5.3 GB as float32), more than the limit of 3.0 GB"),
    ({"d_model": 4096, "n_heads": 32, "d_ff": 16384, "n_encoder_layers": 48, "n_decoder_layers": 48},
     "this config describes 22,555,361,280 parameters (84 GB as float32), more than the limit of 3.0 GB"),
    ({"dropout": "0.1"}, "dropout must be a number in [0, 1), got '0.1'"),
    ({"dropout": 1.5}, "dropout must be a number in [0, 1), got 1.5"),
    ({"dropout": float("nan")}, "dropout must be a number in [0, 1), got nan"),
    ({"dropout": True}, "dropout must be a number in [0, 1), got True"),
    ({"norm_first": "yes"}, "norm_first must be true or false, got 'yes'"),
    ({"pad_id": True}, "pad_id must be an id in [0, 120), got True"),
    ({"eos_id": 10**9}, "eos_id must be an id in [0, 120), got 1000000000"),
    ({"bos_id": 0}, "special ids must be distinct, got {'pad_id': 0, 'unk_id': 1, 'bos_id': 0, 'eos_id': 3}"),
    ({"evil": "__import__('os')"}, "unknown ModelConfig keys: 'evil'"),
]


@pytest.mark.parametrize("values, reason", CONFIG_CASES, ids=lambda v: str(v)[:40] if isinstance(v, dict) else "")
def test_a_bad_config_is_refused_before_any_model_is_built(ckpt, tokenizer, values, reason, nothing_built, capsys):
    assert tokenizer.vocab_size == 120  # the messages above name it
    with_model(ckpt, **values)
    refused(ckpt, f"{CONFIG}: {reason}")
    cli_refuses(ckpt, capsys, f"{CONFIG}: {reason}")


@pytest.mark.parametrize("text, message", [
    ("{not json", f"{CONFIG} is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
                  "(char 1))"),
    ("[" * 100_000 + "]" * 100_000, f"{CONFIG} is not valid JSON (nested too deeply)"),
    ('{"format": 1}', f"{CONFIG} has no usable 'model' section (KeyError: 'model')"),
    ("[1, 2]", f"{CONFIG} has no usable 'model' section (TypeError: list indices must be integers or slices, "
               "not str)"),
    ('{"model": [1, 2]}', f"{CONFIG}: the model config must be a JSON object, got list"),
    (" " * 2 * MAX_CONFIG_BYTES, f"{CONFIG} has 2.0 MB, more than the limit of 1.0 MB"),
])
def test_an_unreadable_config_is_named(ckpt, text, message, nothing_built):
    (ckpt / CONFIG).write_text(text)
    refused(ckpt, message)


def test_the_config_limits_fit_real_translation_models():
    """Marian opus-mt-en-de and a transformer-big shape pass; the estimate is the built model's parameter count."""
    marian = ModelConfig(vocab_size=58101, d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6,
                         d_ff=2048, max_len=512)
    big = ModelConfig(vocab_size=32000, d_model=1024, n_heads=16, n_encoder_layers=6, n_decoder_layers=6,
                      d_ff=4096, max_len=1024, norm_first=True)
    assert marian.estimated_parameters() == 73_886_208  # opus-mt-en-de has 74M (plus its final_logits_bias)
    assert big.estimated_bytes() < MAX_MODEL_BYTES


@pytest.mark.parametrize("overrides", [{}, {"norm_first": True}, {"n_encoder_layers": 1, "n_decoder_layers": 3},
                                       {"d_model": 24, "n_heads": 3, "d_ff": 40}])
def test_expected_shapes_and_the_parameter_estimate_are_the_built_models(tokenizer, overrides):
    config = tiny_config(tokenizer.vocab_size, **overrides)
    built = Transformer(config).state_dict()
    assert expected_shapes(config) == {k: tuple(v.shape) for k, v in built.items()}
    assert all(v.is_floating_point() for v in built.values())
    assert config.estimated_parameters() == count_parameters(Transformer(config))


def test_the_position_table_rows_in_the_estimate_are_the_models():
    from model.network.config import POSITION_TABLE
    from model.network.positional import MAX_POSITIONS
    assert POSITION_TABLE == MAX_POSITIONS


# ---------------------------------------------------------------- tokenizer and missing files

def sentencepiece_says(proto: bytes) -> str:
    """sentencepiece's own words for a model it refuses, which the refusal passes on (their case differs between its
    releases: "Internal: unk is not defined." in 0.2.0, "INTERNAL: ..." later)."""
    try:
        spm.SentencePieceProcessor().LoadFromSerializedProto(proto)
    except RuntimeError as exc:
        return str(exc).strip()
    raise AssertionError("sentencepiece read an empty model")


@pytest.mark.parametrize("data, reason", [
    (b"garbage", "not a valid sentencepiece model (the file cannot be parsed as one)"),
    (b"", f"not a valid sentencepiece model ({sentencepiece_says(b'')})"),
    (None, "not a valid sentencepiece model (the file cannot be parsed as one)"),  # the real file cut in half
])
def test_a_corrupt_tokenizer_is_named(ckpt, data, reason, nothing_built, capsys):
    real = (ckpt / TOKENIZER).read_bytes()
    (ckpt / TOKENIZER).write_bytes(real[: len(real) // 2] if data is None else data)
    refused(ckpt, f"{TOKENIZER}: {reason}")
    cli_refuses(ckpt, capsys, f"{TOKENIZER}: {reason}")


def test_a_tokenizer_over_the_size_limit_is_refused_unread(ckpt, nothing_built):
    with (ckpt / TOKENIZER).open("r+b") as f:
        f.truncate(MAX_TOKENIZER_BYTES + 2**20)
    refused(ckpt, f"{TOKENIZER} has 65 MB, more than the limit of 64 MB")


def test_a_tokenizer_whose_vocabulary_disagrees_with_the_weights(ckpt, nothing_built, capsys):
    shutil.copy(ROOT / "pretrained" / "reverse" / TOKENIZER, ckpt / TOKENIZER)
    message = f"vocabulary mismatch: {TOKENIZER} has 30 pieces, {CONFIG} says vocab_size 120"
    refused(ckpt, message)
    cli_refuses(ckpt, capsys, message)


@pytest.mark.parametrize("name", [WEIGHTS, CONFIG, TOKENIZER])
def test_each_missing_file_is_named(ckpt, name, nothing_built, capsys):
    (ckpt / name).unlink()
    refused(ckpt, f"{name} is missing in {ckpt}")
    cli_refuses(ckpt, capsys, f"{name} is missing in {ckpt}")


def test_a_file_instead_of_a_directory_is_named(ckpt):
    refused(ckpt / WEIGHTS, f"{ckpt / WEIGHTS} is a file: a checkpoint is a directory with {WEIGHTS}, {CONFIG} and "
                            f"{TOKENIZER}")
