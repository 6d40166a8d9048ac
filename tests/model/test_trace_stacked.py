"""AttentionTrace.stacked (model/network/trace.py): a field's layers as one tensor, handed back without stacking again
when the trace was told they were cut from one (``holding``), and never a stale one once the layers are others."""
from __future__ import annotations

import dataclasses
import pickle

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from model.network.attention import Capture
from model.network.trace import AttentionTrace, StepTrace
from model.network.transformer import Transformer
from tests.conftest import tiny_config

FIELDS = ("dec_self", "cross", "dec_self_scores", "cross_scores")


def step_trace(layers: int, rows: int, heads: int, keys: int, seed: int) -> tuple[AttentionTrace, dict]:
    """A decoding step's trace as the static-cache step makes it: every field's layers views of one tensor."""
    generator = torch.Generator().manual_seed(seed)
    whole = {name: torch.rand(layers, rows, heads, 1, keys, generator=generator) for name in FIELDS}
    trace = AttentionTrace(enc_self=[], enc_self_scores=[], **{name: list(t.unbind(0)) for name, t in whole.items()})
    return trace.holding(**whole), whole


shapes = dict(layers=st.integers(1, 4), rows=st.integers(1, 4), heads=st.integers(1, 3), keys=st.integers(1, 6),
              seed=st.integers(0, 2**16))


@settings(max_examples=40, deadline=None)
@given(**shapes, name=st.sampled_from(FIELDS))
def test_a_held_field_comes_back_as_the_tensor_its_layers_were_cut_from(layers, rows, heads, keys, seed, name):
    trace, whole = step_trace(layers, rows, heads, keys, seed)
    assert trace.stacked(name) is whole[name]
    assert torch.equal(trace.stacked(name), torch.stack(getattr(trace, name)))
    assert torch.equal(trace.weights("cross"), whole["cross"])  # weights() stays a copy of its own
    assert trace.weights("cross") is not whole["cross"]


@settings(max_examples=40, deadline=None)
@given(**shapes, name=st.sampled_from(FIELDS), layer=st.integers(0, 3), change=st.sampled_from(["item", "list"]))
def test_once_the_layers_are_others_the_held_tensor_is_not_handed_back(layers, rows, heads, keys, seed, name, layer,
                                                                       change):
    trace, whole = step_trace(layers, rows, heads, keys, seed)
    other = torch.full_like(whole[name][0], 7.0)
    if change == "item":
        getattr(trace, name)[layer % layers] = other
    else:
        setattr(trace, name, [*getattr(trace, name)[:layers - 1], other])
    stacked = trace.stacked(name)
    assert stacked is not whole[name]
    assert torch.equal(stacked, torch.stack(getattr(trace, name)))


def test_a_replaced_trace_holds_nothing_and_a_joined_one_keeps_the_steps_fields():
    trace, whole = step_trace(2, 1, 2, 3, 0)
    encoder = AttentionTrace(enc_self=[torch.rand(1, 2, 4, 4)], dec_self=[], cross=[],
                             enc_self_scores=[torch.rand(1, 2, 4, 4)], dec_self_scores=[], cross_scores=[],
                             src_mask=torch.ones(1, 1, 1, 4, dtype=torch.bool))
    joined = trace.with_encoder(encoder)
    assert joined.enc_self is encoder.enc_self and joined.src_mask is encoder.src_mask
    assert all(joined.stacked(name) is whole[name] for name in FIELDS)
    replaced = dataclasses.replace(trace, cross=[t.clone() for t in trace.cross])
    assert replaced.stacked("cross") is not whole["cross"]
    assert torch.equal(replaced.stacked("cross"), whole["cross"])


@settings(max_examples=40, deadline=None)
@given(**shapes, name=st.sampled_from(FIELDS), keep=st.integers(1, 4))
def test_the_first_rows_of_a_trace_hold_those_rows_and_no_others(layers, rows, heads, keys, seed, name, keep):
    """A beam search's first step runs on copies of its one row and keeps the first (model.decoding.search)."""
    trace, whole = step_trace(layers, rows, heads, keys, seed)
    first = trace.first_rows(keep)
    assert [layer.size(0) for layer in getattr(first, name)] == [min(keep, rows)] * layers
    assert torch.equal(first.stacked(name), whole[name][:, :keep])
    assert torch.equal(first.stacked(name), torch.stack(getattr(first, name)))


@settings(max_examples=10, deadline=None)
@given(src=st.lists(st.integers(4, 59), min_size=1, max_size=6), tgt=st.lists(st.integers(4, 59), max_size=5),
       copies=st.integers(2, 4))
def test_a_batch_of_copies_cut_to_its_first_row_is_the_lone_rows_pass(src, tgt, copies):
    """Every weight, score, mask and internal of ``first_rows(1)`` of a batch of copies of one sentence is that
    sentence's own pass (Capture.INTERNALS: Q, K, V and the rest too)."""
    torch.manual_seed(0)
    model = Transformer(tiny_config(60)).eval()
    source, target = torch.tensor([[*src, 3]]), torch.tensor([[2, *tgt]])
    with torch.no_grad():
        _, alone = model(source, target, Capture.INTERNALS)
        _, batch = model(source.expand(copies, -1), target.expand(copies, -1), Capture.INTERNALS)
    first = batch.first_rows(1)
    for a, b in zip(first.tensors(), alone.tensors(), strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def lazy_step(layers: int, rows: int, heads: int, capacity: int, seen: int, seed: int) -> tuple[StepTrace, dict]:
    """A step's trace as the static cache hands it back: every field over the whole capacity, cut when read."""
    generator = torch.Generator().manual_seed(seed)
    whole = {name: torch.rand(layers, rows, heads, 1, capacity, generator=generator) for name in FIELDS}
    keys = {name: seen if name.startswith("dec_self") else capacity for name in FIELDS}
    return StepTrace.cut_when_read({name: (whole[name], keys[name]) for name in FIELDS}), \
        {name: whole[name][..., :keys[name]] for name in FIELDS}


lazy_shapes = dict(layers=st.integers(1, 4), rows=st.integers(1, 4), heads=st.integers(1, 3),
                   capacity=st.integers(1, 8), seen=st.integers(1, 8), seed=st.integers(0, 2**16))


@settings(max_examples=40, deadline=None)
@given(**lazy_shapes, name=st.sampled_from(FIELDS), read_first=st.booleans())
def test_a_step_trace_reads_as_the_layers_of_its_tensors_cut_to_the_keys_seen(layers, rows, heads, capacity, seen,
                                                                               seed, name, read_first):
    trace, cut = lazy_step(layers, rows, heads, capacity, min(seen, capacity), seed)
    if read_first:
        assert all(torch.equal(a, b) for a, b in zip(getattr(trace, name), cut[name].unbind(0), strict=True))
    assert torch.equal(trace.stacked(name), cut[name])
    assert torch.equal(trace.padded(name)[..., :cut[name].size(-1)], cut[name])
    assert [layer.shape for layer in getattr(trace, name)] == [cut[name][0].shape] * layers
    assert torch.equal(torch.stack(getattr(trace, name)), cut[name])
    assert torch.equal(trace.weights("cross"), cut["cross"])


@settings(max_examples=40, deadline=None)
@given(**lazy_shapes, name=st.sampled_from(FIELDS), layer=st.integers(0, 3))
def test_a_step_trace_changed_after_it_was_read_hands_back_the_change(layers, rows, heads, capacity, seen, seed, name,
                                                                      layer):
    trace, cut = lazy_step(layers, rows, heads, capacity, min(seen, capacity), seed)
    other = torch.full_like(cut[name][0], 7.0)
    getattr(trace, name)[layer % layers] = other
    expected = torch.stack(getattr(trace, name))
    assert torch.equal(trace.stacked(name), expected)
    assert torch.equal(trace.padded(name), expected)  # the whole tensor is no longer what the layers were cut from
    setattr(trace, name, [other] * layers)
    assert torch.equal(trace.stacked(name), torch.stack([other] * layers))


def test_a_step_trace_joined_copied_and_pickled_is_the_same_trace():
    """The encoder's part joins a step's rows without cutting them; a replaced or pickled trace (the app's caches keep
    Translations) holds the same weights."""
    trace, cut = lazy_step(2, 3, 2, 6, 4, 1)
    encoder = AttentionTrace(enc_self=[torch.rand(1, 2, 5, 5)], dec_self=[], cross=[],
                             enc_self_scores=[torch.rand(1, 2, 5, 5)], dec_self_scores=[], cross_scores=[],
                             src_mask=torch.ones(1, 1, 1, 5, dtype=torch.bool))
    joined = trace.with_encoder(encoder)
    assert joined.enc_self is encoder.enc_self and joined.src_mask is encoder.src_mask
    assert not any(name in vars(joined) for name in FIELDS)  # nothing cut yet
    copies = [joined, pickle.loads(pickle.dumps(joined)), dataclasses.replace(joined)]
    copies.append(copies[-1].with_encoder(encoder))
    for copy in copies:
        for name in FIELDS:
            assert torch.equal(copy.stacked(name), cut[name])
            assert torch.equal(torch.stack(getattr(copy, name)), cut[name])
        assert torch.equal(copy.enc_self[0], encoder.enc_self[0])
