"""A safetensors file checked before a byte of tensor data is read: its length field, JSON header, every
tensor's dtype, shape and byte span against the config, and the file's size. CheckpointError is the one-line
refusal every checkpoint check raises.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, BinaryIO

from model.checkpoints.shards import SINGLE
from model.network.config import format_bytes

# The largest weights file read (the shipped en-de checkpoint: 15 MB; Marian opus-mt: 300 MB of float32 weights;
# converted NLLB-200-600M and mBART-large-50: about 2.4 GB). An upload is held to 50 MB before this.
MAX_WEIGHTS_BYTES = 3 * 2**30
# A safetensors header is ~100 bytes of JSON per tensor plus free-form metadata: allow far more, never unbounded.
HEADER_BASE_BYTES, HEADER_BYTES_PER_TENSOR = 64 * 2**10, 1024
# Bytes per element of safetensors' dtypes; weights must be one of FLOAT_DTYPES.
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FLOAT_DTYPES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}
DTYPE_WORDS = {"BOOL": "bool", "U8": "integer", "I8": "integer", "I16": "integer", "U16": "integer", "I32": "integer",
               "U32": "integer", "I64": "integer", "U64": "integer", "F64": "float64", "F8_E4M3": "float8",
               "F8_E5M2": "float8"}
MAGIC = {b"PK\x03\x04": "a zip archive (PyTorch's torch.save format is one: a pickle inside)",
         b"\x1f\x8b": "a gzip archive", b"BZh": "a bzip2 archive", b"\xfd7zXZ": "an xz archive",
         b"7z\xbc\xaf": "a 7-zip archive", b"Rar!": "a RAR archive"}


def _sniff(head: bytes) -> str | None:
    """What a file that is not safetensors looks like, from its first bytes (for the message only)."""
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a Python pickle (PyTorch's .bin/.pt format), which can run code and is never loaded"
    return next((what for magic, what in MAGIC.items() if head.startswith(magic)), None)


def shown_name(name: Any) -> str:
    """A name read from a file, for a message: quoted, escaped, cut to 60 characters."""
    text = str(name)
    return repr(text if len(text) <= 60 else text[:57] + "...")


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message (always one line) names the file and what is wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


@dataclass(frozen=True)
class TensorEntry:
    """One tensor as a safetensors header describes it; offsets are relative to the end of the header."""
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(name: str, info: Any) -> TensorEntry:
    where = f"{SINGLE}: the header entry of {shown_name(name)}"
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise CheckpointError(f"{where} is malformed (it needs dtype, shape and data_offsets)")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise CheckpointError(f"{where} has an unknown dtype {shown_name(dtype)}")
    if not isinstance(shape, list) or len(shape) > 8 or not all(_is_count(n) for n in shape):
        raise CheckpointError(f"{where} has an invalid shape (a list of sizes >= 0 is needed)")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(n) for n in offsets) \
            or offsets[0] > offsets[1]:
        raise CheckpointError(f"{where} has invalid data_offsets (a pair [begin, end], 0 <= begin <= end, is needed)")
    return TensorEntry(dtype, tuple(shape), offsets[0], offsets[1])


def check_header(f: BinaryIO, size: int, expected: dict[str, tuple[int, ...]],
                 dtypes: dict[str, str] | None = None) -> dict[str, TensorEntry]:
    """Read and check the header of the safetensors file ``f`` (``size`` bytes) without reading any tensor data.

    The 8-byte length field and the JSON are bounded by the file size and by the expected tensors; every tensor
    ``expected`` names (name -> shape) must be there with that shape, a float dtype (float16, bfloat16 or float32;
    ``dtypes`` names the exceptions, e.g. an integer buffer: name -> safetensors dtype) and offsets that match its
    size, and all of them must tile the data exactly up to the end of the file (so the file is as large as the
    tensors imply, no larger). Only then may safetensors read it."""
    dtypes = dtypes or {}
    header_limit = HEADER_BASE_BYTES + HEADER_BYTES_PER_TENSOR * len(expected)
    _check_file_size(size, expected, dtypes, header_limit)
    entries, length = _read_header(f, size, header_limit)
    _check_entries(entries, expected, dtypes, size, data_size=size - 8 - length)
    return entries


def _check_file_size(size: int, expected: dict[str, tuple[int, ...]], dtypes: dict[str, str], header_limit: int
                     ) -> None:
    """Refuse a file that is larger than any checkpoint of this config could be, before reading a byte of it."""
    n_values = sum(math.prod(shape) for shape in expected.values())
    most = sum(math.prod(shape) * DTYPE_BYTES.get(dtypes.get(name, "F32"), 8) for name, shape in expected.items())
    if size > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"{SINGLE} has {format_bytes(size)}, more than the limit of "
                              f"{format_bytes(MAX_WEIGHTS_BYTES)}")
    if size > 8 + header_limit + most:
        raise CheckpointError(f"{SINGLE} has {format_bytes(size)}, far more than the config implies "
                              f"({n_values:,} parameters take at most {format_bytes(most)}, as float32)")


def _read_header(f: BinaryIO, size: int, header_limit: int) -> tuple[dict[str, TensorEntry], int]:
    """The header's tensor entries and its length, after checking the length field against the file and the limit."""
    head = f.read(8)
    if len(head) < 8:
        raise CheckpointError(f"{SINGLE} is not a valid safetensors file (truncated or corrupt): it has only "
                              f"{format_bytes(size)}")
    length = int.from_bytes(head, "little")
    if length > size - 8:
        kind = _sniff(head)
        raise CheckpointError(f"{SINGLE} is not a valid safetensors file: it is {kind}" if kind else
                              f"{SINGLE} is not a valid safetensors file (truncated or corrupt): its header "
                              f"length field claims {format_bytes(length)} but the file has {format_bytes(size)}")
    if length > header_limit:
        raise CheckpointError(f"{SINGLE}: its header claims {format_bytes(length)}, more than the "
                              f"{format_bytes(header_limit)} a checkpoint of this config needs")
    try:
        header = json.loads(f.read(length).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise CheckpointError(f"{SINGLE} is not a valid safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{SINGLE} is not a valid safetensors file: its header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise CheckpointError(f"{SINGLE} is not a valid safetensors file: __metadata__ must map names to strings")
    return {name: _entry(name, info) for name, info in header.items()}, length


def _check_entries(entries: dict[str, TensorEntry], expected: dict[str, tuple[int, ...]], dtypes: dict[str, str],
                   size: int, data_size: int) -> None:
    """Every expected tensor there with its shape, dtype and byte span, and together tiling the data exactly."""
    claimed = max((e.end for e in entries.values()), default=0)
    if claimed > data_size:
        raise CheckpointError(f"{SINGLE}: header claims {format_bytes(claimed)} of tensor data but the file has "
                              f"only {format_bytes(data_size)} after its header (truncated or corrupt)")
    missing = sorted(set(expected) - set(entries))
    unexpected = sorted(set(entries) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{SINGLE} does not match the config: missing {missing[:5]}"
                              f"{'...' if len(missing) > 5 else ''}, unexpected "
                              f"[{', '.join(shown_name(n) for n in unexpected[:5])}]"
                              f"{'...' if len(unexpected) > 5 else ''}")
    for name in expected:  # in the model's order: embeddings first
        _check_entry(name, entries[name], expected[name], dtypes.get(name))
    position = 0
    for entry in sorted(entries.values(), key=lambda e: (e.begin, e.end)):
        if entry.begin != position:
            raise CheckpointError(f"{SINGLE}: tensors overlap or leave a gap at byte {min(entry.begin, position)} "
                                  "of the data")
        position = entry.end
    if position != data_size:
        raise CheckpointError(f"{SINGLE} has {format_bytes(data_size - position)} of unexplained data after its "
                              f"tensors (the file has {format_bytes(size)}, the config's tensors take "
                              f"{format_bytes(position)})")


def _check_entry(name: str, entry: TensorEntry, shape: tuple[int, ...], exact: str | None) -> None:
    if entry.shape != shape:
        raise CheckpointError(f"{SINGLE}: {name} has shape {entry.shape}, the config needs {shape}")
    if exact is not None and entry.dtype != exact:
        raise CheckpointError(f"{SINGLE}: {name} is {entry.dtype}, expected {exact}")
    if exact is None and entry.dtype not in FLOAT_DTYPES:
        raise CheckpointError(f"{SINGLE}: {name} is {entry.dtype} ({DTYPE_WORDS[entry.dtype]}), expected "
                              "floating point: float16, bfloat16 or float32")
    needed = math.prod(entry.shape) * DTYPE_BYTES[entry.dtype]
    if entry.end - entry.begin != needed:
        raise CheckpointError(f"{SINGLE}: {name}'s data_offsets span {format_bytes(entry.end - entry.begin)}, "
                              f"its shape {entry.shape} as {entry.dtype} takes {format_bytes(needed)}")
