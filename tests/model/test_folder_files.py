"""A folder to convert is read only inside itself (a snapshot of Hugging Face's cache: inside its model's folder there):
a file that is a link out of it, or a device, is refused in one line naming the file before anything is read; and
the messages about a folder's files name the file and the value truly at fault."""
import json
import os
import re
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.__main__ import main as cli_main
from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.huggingface.convert import convert
from model.huggingface.folder import model_type_of, shown_value
from tests.bart_helpers import bart_checkpoint, bart_folder

OUTSIDE = ["/etc/passwd", "/proc/self/environ", "/dev/zero"]
FILES = ["config.json", "tokenizer.json", "model.safetensors", "generation_config.json"]


def refused(folder: Path, out: Path, message: str, capsys) -> None:
    """convert's one-line CheckpointError, equal to ``message``, the CLI's same `error:` line, nothing written."""
    with pytest.raises(CheckpointError) as info:
        convert(folder, out)
    assert str(info.value) == message
    assert cli_main(["convert", str(folder), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    assert not out.exists()


@pytest.mark.parametrize("target", OUTSIDE)
@pytest.mark.parametrize("name", FILES)
def test_a_file_linking_out_of_the_folder_is_refused_naming_it(tmp_path, name, target, capsys):
    folder = bart_folder(tmp_path / "folder")
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(target)
    refused(folder, tmp_path / "out", f"{name} is a link to a file outside the folder: refused (copy the file into it)",
            capsys)


def test_a_link_in_a_subfolder_pointing_out_is_refused_too(tmp_path, capsys):
    folder = bart_folder(tmp_path / "folder")
    (folder / "extra").mkdir()
    (folder / "extra" / "notes.txt").symlink_to("/etc/passwd")
    refused(folder, tmp_path / "out", "extra/notes.txt is a link to a file outside the folder: refused (copy the file "
                                      "into it)", capsys)


def test_a_pipe_in_the_folder_is_refused(tmp_path, capsys):
    folder = bart_folder(tmp_path / "folder")
    os.mkfifo(folder / "generation_config.json")
    refused(folder, tmp_path / "out", "generation_config.json is not a regular file (a device, pipe or socket): "
                                      "refused", capsys)


def test_links_that_stay_inside_the_folder_are_read(tmp_path):
    folder = bart_folder(tmp_path / "folder")
    (folder / "files").mkdir()
    (folder / "tokenizer.json").rename(folder / "files" / "tokenizer.json")
    (folder / "tokenizer.json").symlink_to("files/tokenizer.json")
    assert convert(folder, tmp_path / "out").family == "bart"


def cached_with_links(cache: Path, source: Path) -> Path:
    """``source`` as Hugging Face's cache holds it: blobs/ with the bytes, snapshots/<commit>/ with links to them."""
    repo = cache / "models--owner--tiny-bart"
    snapshot = repo / "snapshots" / "0123abcd"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for i, file in enumerate(sorted(source.iterdir())):
        (repo / "blobs" / f"blob{i}").write_bytes(file.read_bytes())
        (snapshot / file.name).symlink_to(f"../../blobs/blob{i}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    return snapshot


def test_a_cached_snapshot_reads_its_blobs_but_nothing_past_its_model(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    snapshot = cached_with_links(tmp_path / "cache", bart_folder(tmp_path / "source"))
    assert convert("owner/tiny-bart", tmp_path / "out").family == "bart"
    (tmp_path / "cache" / "secret.json").write_text(json.dumps({"model_type": "bart"}))
    (snapshot / "generation_config.json").symlink_to("../../../secret.json")  # out of models--owner--tiny-bart
    refused(snapshot, tmp_path / "out2", "generation_config.json is a link to a file outside the folder: refused "
                                         "(copy the file into it)", capsys)


def test_the_listing_does_not_read_a_config_json_outside_the_folder(tmp_path):
    folder = bart_folder(tmp_path / "folder")
    (tmp_path / "elsewhere.json").write_text((folder / "config.json").read_text())
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to(tmp_path / "elsewhere.json")
    assert model_type_of(folder) is None


# ---------------------------------------------------------------- messages that name what is truly at fault

def test_a_forced_eos_from_generation_config_json_is_blamed_on_that_file_and_shown_sanely(tmp_path, capsys):
    folder = bart_folder(tmp_path / "folder")
    (folder / "generation_config.json").write_text(json.dumps({"forced_eos_token_id": 10**30}))
    refused(folder, tmp_path / "out", "generation_config.json: unsupported, forced_eos_token_id 1.00e+30 is not the "
                                      "eos_token_id 2 of config.json", capsys)


def test_a_forced_eos_in_config_json_is_still_blamed_on_config_json(tmp_path, capsys):
    folder = bart_folder(tmp_path / "folder")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "forced_eos_token_id": 7}))
    refused(folder, tmp_path / "out", "config.json: unsupported, forced_eos_token_id 7 is not the eos_token_id 2 of "
                                      "config.json", capsys)


@given(st.integers(min_value=-(10**400), max_value=10**400))
def test_a_number_is_shown_whole_or_as_its_magnitude_never_cut(value):
    shown = shown_value(value)
    if abs(value) < 10**12:
        assert shown == str(value)
    else:  # three significant digits and the true exponent: within 0.5% of the value
        assert re.fullmatch(r"-?\d\.\d\de\+\d+", shown)
        assert abs(Decimal(shown) - value) <= abs(Decimal(value)) * Decimal("0.005")


@pytest.mark.parametrize("target", ["/dev/zero", "missing-file"])
def test_weights_that_are_no_file_are_not_called_missing(tmp_path, target, capsys):
    ckpt = bart_checkpoint(tmp_path / "ckpt")
    (ckpt / "model.safetensors").unlink()
    (ckpt / "model.safetensors").symlink_to(target)
    expected = "is not a regular file (a device, pipe or folder)" if target == "/dev/zero" else "is a link to nothing"
    with pytest.raises(CheckpointError, match=rf"^model\.safetensors {re.escape(expected)} in "):
        load_checkpoint(ckpt)
    folder = bart_folder(tmp_path / "folder")
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(target if target.startswith("/") else folder / target)
    with pytest.raises(CheckpointError) as info:
        convert(folder, tmp_path / "out")
    assert "missing" not in str(info.value) and str(info.value).startswith("model.safetensors ")
