"""Weights sharded in Hugging Face's layout (model-NNNNN-of-NNNNN.safetensors + model.safetensors.index.json):
saved in files no larger than asked, loaded to exactly the same model, and an index from anyone read as untrusted."""
from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.checkpoints.files import load_checkpoint, peek_checkpoint, save_checkpoint
from model.checkpoints.header import CheckpointError
from model.checkpoints.shards import INDEX, SINGLE, plan_shards


@given(sizes=st.lists(st.integers(0, 5000), max_size=40), max_bytes=st.integers(1, 6000))
def test_shards_keep_every_tensor_once_in_order_and_within_the_size(sizes, max_bytes):
    named = {f"t{i}": size for i, size in enumerate(sizes)}
    groups = plan_shards(named, max_bytes)
    assert [name for group in groups for name in group] == list(named)
    for group in groups:
        assert len(group) == 1 or sum(named[n] for n in group) <= max_bytes  # only a lone tensor may be larger


def test_a_sharded_checkpoint_loads_to_the_same_weights_and_a_resave_leaves_one_layout(tmp_path, tiny_model, tokenizer):
    limit = 12 * 1024  # above the largest tensor (the 120 x 16 embedding), below the whole model
    path = save_checkpoint(tiny_model, tokenizer, tmp_path / "sharded", max_shard_bytes=limit)
    shards = sorted(path.glob("model-*-of-*.safetensors"))
    assert len(shards) > 2 and not (path / SINGLE).exists() and (path / INDEX).is_file()
    assert all(p.stat().st_size <= limit for p in shards)  # the whole file, its JSON header included
    loaded = load_checkpoint(path)
    for name, tensor in tiny_model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name
    assert peek_checkpoint(path) is not None
    save_checkpoint(tiny_model, tokenizer, path)  # one file now: the shards and their index are gone
    assert sorted(p.name for p in path.glob("model*")) == [SINGLE]


@pytest.mark.parametrize(("change", "message"), [
    (lambda index, path: index["weight_map"].update({next(iter(index["weight_map"])): "../model.safetensors"}),
     "not a shard file name"),
    (lambda index, path: next(iter(sorted(path.glob("model-*")))).unlink(), "missing in"),
    (lambda index, path: index["weight_map"].pop(next(iter(index["weight_map"]))), "does not match the config"),
    (lambda index, path: index.update(weight_map=[]), "has no weight_map"),
])
def test_a_bad_index_is_refused_in_one_line(tmp_path, tiny_model, tokenizer, change, message):
    path = save_checkpoint(tiny_model, tokenizer, tmp_path / "bad", max_shard_bytes=4096)
    index = json.loads((path / INDEX).read_text())
    change(index, path)
    (path / INDEX).write_text(json.dumps(index))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_shard_that_lacks_what_the_index_places_in_it_is_refused(tmp_path, tiny_model, tokenizer):
    path = save_checkpoint(tiny_model, tokenizer, tmp_path / "swap", max_shard_bytes=4096)
    first, second = sorted(path.glob("model-*"))[:2]
    first.write_bytes(second.read_bytes())
    with pytest.raises(CheckpointError, match=r"does not match the config|changed while"):
        load_checkpoint(path)
