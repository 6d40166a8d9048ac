"""Reordering a decoder's state by beam search's back-pointers (``DecoderState.reorder``, ``StaticState.reorder``)
keeps exactly the rows asked for. Two shortcuts must not change that: one source's memory rows are kept without a
gather (they are alike), and a static cache with as many rows as before is gathered in place over its written rows.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.decoding.search import beam_search
from model.decoding.static_cache import StaticCacheDecoder, StaticState
from model.network.config import DecodeConfig
from model.network.transformer import DecoderState, Transformer, keep_rows
from tests.conftest import eos_leaning, tiny_config

EOS, FIRST_ID, VOCAB = 3, 4, 60
H, S, D_K, CAPACITY = 2, 5, 4, 8


def back_pointers(rows: int) -> st.SearchStrategy[list[int]]:
    """An index as beam search makes one: any rows, repeated or dropped; as many as before (a full beam, gathered in
    place) or fewer or more (hypotheses finished, the first step's row becoming the beam)."""
    row = st.integers(0, rows - 1)
    return st.one_of(st.lists(row, min_size=rows, max_size=rows), st.lists(row, min_size=1, max_size=rows + 3))


@given(st.integers(1, 4).flatmap(lambda rows: st.tuples(st.just(rows), back_pointers(rows))))
def test_alike_rows_are_kept_as_a_gather_would_keep_them(case: tuple[int, list[int]]) -> None:
    rows, index = case
    memory = torch.randn(1, H, S, D_K).expand(rows, -1, -1, -1).contiguous()  # one source's rows: [B, H, S, d_k]
    picked = torch.tensor(index)
    kept = keep_rows(memory, picked, alike=True)
    assert torch.equal(kept, memory.index_select(0, picked))
    if len(index) <= rows:  # no copy: the same storage
        assert kept.data_ptr() == memory.data_ptr()
    distinct = torch.randn(rows, H, S, D_K)  # rows of different sources are always gathered
    assert torch.equal(keep_rows(distinct, picked, alike=False), distinct.index_select(0, picked))


def static_state(rows: int, length: int, one_source: bool, layers: int = 2) -> StaticState:
    """A static state with ``length`` of CAPACITY cache rows written in every layer (the rest zeros, as a decode
    leaves them)."""
    buffer = torch.zeros(layers, 2, rows, H, CAPACITY, D_K)  # [L, 2, B, H, C, d_k]
    buffer[:, :, :, :, :length] = torch.randn(layers, 2, rows, H, length, D_K)
    memory = torch.randn(1 if one_source else rows, H, S, D_K).expand(rows, -1, -1, -1).contiguous()
    return StaticState.build(memory=[(memory, memory.clone())] * layers,
                             cross_mask=torch.ones(rows, 1, 1, S, dtype=torch.bool), buffer=buffer,
                             heads=(torch.ones(layers, 1, H), torch.ones(layers, 1, H)), length=length,
                             one_source=one_source)


@given(st.integers(1, 4).flatmap(lambda rows: st.tuples(st.just(rows), back_pointers(rows))),
       st.integers(0, CAPACITY), st.booleans())
def test_a_static_state_keeps_exactly_the_rows_asked_for(case: tuple[int, list[int]], length: int,
                                                          one_source: bool) -> None:
    rows, index = case
    state = static_state(rows, length, one_source)
    picked = torch.tensor(index)
    expected = {"memory": [t.index_select(0, picked) for kv in state.memory for t in kv],
                "cache": [t.index_select(0, picked) for kv in state.cache for t in kv],
                "cross_mask": state.cross_mask.index_select(0, picked)}
    reordered = state.reorder(picked)  # uses the state up (in place when the rows stay as many)
    got = [t for kv in reordered.memory for t in kv], [t for kv in reordered.cache for t in kv]
    for have, want in zip([*got[0], *got[1]], [*expected["memory"], *expected["cache"]], strict=True):
        assert torch.equal(have, want)  # the unwritten rows stay zeros either way
    for layer, (keys, values) in enumerate(reordered.cache):  # the views the next step writes are the buffer's
        assert keys.data_ptr() == reordered.buffer[layer, 0].data_ptr() and keys.is_contiguous()
        assert values.data_ptr() == reordered.buffer[layer, 1].data_ptr() and values.is_contiguous()
    assert torch.equal(reordered.cross_mask, expected["cross_mask"])
    assert reordered.length == length and reordered.one_source == one_source


@pytest.fixture(scope="module")
def model() -> Transformer:
    torch.manual_seed(0)
    return eos_leaning(Transformer(tiny_config(VOCAB)).eval(), EOS)  # hypotheses end early: the beam shrinks


class Gathering(torch.nn.Module):
    """The decoder without the shortcut for one source: every reorder gathers its memory rows."""

    def __init__(self, decoder: Transformer | StaticCacheDecoder) -> None:
        super().__init__()
        self.decoder, self.config = decoder, decoder.config

    def start(self, *args, **kwargs):
        state, encoder = self.decoder.start(*args, **kwargs)
        return dataclasses.replace(state, one_source=False), encoder

    def first_step_rows(self, beam_size):
        return self.decoder.first_step_rows(beam_size)

    def step(self, *args, **kwargs):
        return self.decoder.step(*args, **kwargs)


@given(st.lists(st.integers(FIRST_ID, VOCAB - 1), max_size=9), st.integers(2, 5), st.booleans())
def test_beam_search_is_the_same_with_and_without_the_shortcuts(model: Transformer, ids: list[int], beam: int,
                                                                static: bool) -> None:
    src = torch.tensor([*ids, EOS])
    decoder = StaticCacheDecoder(model) if static else model
    config = DecodeConfig(beam_size=beam, max_len=12)
    fast, gathered = beam_search(decoder, src, config), beam_search(Gathering(decoder), src, config)
    assert [(h.tokens, h.score) for h in fast.hypotheses] == [(h.tokens, h.score) for h in gathered.hypotheses]
    for a, b in zip(fast.steps, gathered.steps, strict=True):
        assert torch.equal(a.topk_probs, b.topk_probs)
        assert all(torch.equal(x, y) for x, y in zip(a.attention.tensors(), b.attention.tensors(), strict=True))


def test_one_source_is_what_start_records(model: Transformer) -> None:
    one = torch.tensor([[FIRST_ID, EOS]])
    assert model.start(one)[0].one_source and StaticCacheDecoder(model).start(one)[0].one_source
    assert not model.start(one.expand(2, -1))[0].one_source  # a batch: rows of different sources
    assert isinstance(model.start(one)[0], DecoderState)
