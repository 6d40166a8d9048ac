"""A request's cost is known before it starts, bounds what it really holds, and is reduced to the budget."""
from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.network.config import DecodeConfig, ModelConfig
from model.network.positional import MAX_POSITIONS
from model.serving.budget import Budget, BudgetError, decode_cost, output_bound, plan_decode
from model.serving.inference import Cancelled, planned, translate
from model.serving.serialize import translation_to_dict

WORDS = ["house", "small", "tea", "the", "station", "book", "!", "?", "12", "café"]


@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=30), beam=st.integers(1, 4),
       max_len=st.integers(1, 40))
def test_the_estimate_bounds_what_a_decode_holds_and_writes(tiny_model, tokenizer, words, beam, max_len):
    """Memory and --json size are upper bounds of the real thing, and tight (within 1.5x) when the decode runs
    to its length limit, which is what a hostile request does."""
    text = " ".join(words)
    decode = DecodeConfig(beam_size=beam, max_len=max_len)
    _, plan = planned(tiny_model, tokenizer, text, decode)
    result = translate(tiny_model, tokenizer, text, decode)
    held = result.nbytes
    written = len(json.dumps(translation_to_dict(result, tokenizer, checkpoint="tiny"), ensure_ascii=False).encode())
    assert held <= plan.cost.bytes and written <= plan.cost.json_bytes
    if len(result.result.steps) == plan.decode.max_len and beam == 1:
        assert plan.cost.bytes <= 1.5 * held + 65536


configs = st.builds(lambda d, h, le, ld, ff, v: ModelConfig(vocab_size=v, d_model=d * h, n_heads=h,
                                                           n_encoder_layers=le, n_decoder_layers=ld, d_ff=ff),
                    st.sampled_from([8, 32, 64]), st.sampled_from([1, 4, 8, 16]), st.integers(1, 12),
                    st.integers(1, 12), st.sampled_from([64, 2048]), st.sampled_from([100, 8000, 60000]))
budgets = st.builds(Budget, max_bytes=st.integers(2**20, 2**30), max_seconds=st.floats(0.5, 60),
                    max_json_bytes=st.just(2**26))


@given(model=configs, source_len=st.integers(1, MAX_POSITIONS), beam=st.integers(1, 16),
       max_len=st.integers(1, MAX_POSITIONS - 1), budget=budgets, keep=st.booleans())
def test_a_plan_fits_its_budget_and_only_ever_reduces(model, source_len, beam, max_len, budget, keep):
    asked = DecodeConfig(beam_size=beam, max_len=max_len, keep_words=keep and beam > 1)
    try:
        plan = plan_decode(model, source_len, asked, budget)
    except BudgetError as exc:  # only a model whose one-piece greedy decode is over the budget is refused outright
        assert decode_cost(model, 1, DecodeConfig(max_len=output_bound(1))).over(budget), exc
        return
    assert not plan.cost.over(budget) and plan.cost == decode_cost(model, plan.source_len, plan.decode)
    assert plan.decode.beam_size <= beam and plan.decode.max_len <= max_len and plan.source_len <= source_len
    assert plan.decode.max_len <= output_bound(plan.source_len)
    changed = (plan.decode.beam_size, plan.decode.max_len, plan.source_len) != (beam, max_len, source_len)
    assert bool(plan.notes or plan.bound_note) == changed
    if not decode_cost(model, source_len, dataclasses.replace(asked, max_len=min(max_len, output_bound(source_len)))
                       ).over(budget):
        assert plan.decode.beam_size == beam and plan.source_len == source_len  # nothing but the loop bound cut


def test_the_lecture_hall_link_is_cut_to_a_bounded_decode():
    """The link that took the server to 16 GB: beam 8, length 1023, 168 punctuation characters (170 positions)."""
    en_de = ModelConfig(vocab_size=8000, d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024)
    asked = DecodeConfig(beam_size=8, max_len=1023)
    assert decode_cost(en_de, 170, asked).bytes > 2**30  # what its decode alone would have held
    plan = plan_decode(en_de, 170, asked)
    assert plan.decode.max_len <= 350 and plan.cost.bytes <= Budget().max_bytes
    assert plan.bound_note.startswith("Length limit 1023 → 350")
    assert plan.notes_for(350)[0] == plan.bound_note and plan.bound_note not in plan.notes_for(12)  # said if reached


def test_an_abandoned_decode_stops_within_one_step(tiny_model, tokenizer):
    calls = []

    def stop_after_three() -> bool:
        calls.append(1)
        return len(calls) >= 3

    with pytest.raises(Cancelled):
        translate(tiny_model, tokenizer, "The house is small.", DecodeConfig(max_len=40, beam_size=2),
                  should_stop=stop_after_three)
    assert len(calls) == 3  # asked once per step: it stopped right after the third


def test_keeping_names_is_priced_as_a_beam_per_bank():
    """The keep search holds up to MAX_BANKS beams (model.decoding.constrained_beam): the budget prices that many
    rows."""
    from model.decoding.constrained_beam import MAX_BANKS
    model = ModelConfig(vocab_size=8000, d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024)
    plain = decode_cost(model, 30, DecodeConfig(beam_size=2 * MAX_BANKS, max_len=70))
    assert decode_cost(model, 30, DecodeConfig(beam_size=2, max_len=70, keep_words=True)) == plain
