"""The compiled decoding step built in the background (model/serving/compiled_step.py): until it is ready a visitor
decodes on the eager step, after it on the compiled one, with the same results either way; once built, nothing
compiles in a request; a model it cannot serve stays eager.

The switching is tested with a stand-in for the packages (the eager static step, counted: compiling takes 15 s a row
count); slow tests build the real packages, check that a request afterwards compiles nothing, and that a second build
loads them from disk."""
from __future__ import annotations

import copy
import re
import threading

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import model.decoding.static_cache as static_cache
from model.network.config import DecodeConfig
from model.network.transformer import Transformer
from model.serving import compiled_step, step_package
from model.serving.inference import prepare_source, stream_batch, translate
from tests.conftest import eos_leaning, tiny_config
from tests.model.test_static_cache import TOL

TEXTS = st.text(alphabet="abcdefghij klmnop.,", min_size=1, max_size=30).filter(str.strip)


class StandIn:
    """What add_packages adds, without compiling: the eager static step, its calls counted (the row count of each);
    it can be held (``gate``) so that a test sees the time before the build is done."""

    def __init__(self, step: static_cache.StaticStep, gate: threading.Event) -> None:
        self.step, self.gate, self.rows = step, gate, []

    def __call__(self, *inputs):
        self.gate.wait(10)
        self.rows.append(inputs[0].size(0))
        return self.step(*inputs)


class StartStandIn:
    """What add_packages adds for the start, without compiling: the eager StaticStart, its calls counted."""

    def __init__(self, start: static_cache.StaticStart, gate: threading.Event) -> None:
        self.start, self.gate, self.calls = start, gate, 0

    def __call__(self, src, heads):
        self.gate.wait(10)
        self.calls += 1
        return self.start(src, heads)


@pytest.fixture
def stand_in(monkeypatch):
    """add_packages replaced by StandIns, one per row count, and a StartStandIn; yields (the gate that releases the
    build, the stand-ins made, the start's stand-ins made)."""
    gate, made, starts = threading.Event(), [], []

    def fake(decoder, src, rows):
        for count in rows:
            made.append(StandIn(decoder.static_step, gate))
            with torch.no_grad():
                decoder.add_package(static_cache.signature(step_package.example_inputs(decoder, src, count)), made[-1])
        starts.append(StartStandIn(decoder.static_start, gate))
        with torch.no_grad():
            decoder.add_start_package(static_cache.start_signature(*step_package.start_inputs(decoder, src)),
                                      starts[-1])
    monkeypatch.setattr(compiled_step, "add_packages", fake)
    return gate, made, starts


def rows_run(made: list[StandIn]) -> list[int]:
    """The row count of every call the stand-ins ran."""
    return [rows for stand_in in made for rows in stand_in.rows]


@pytest.fixture
def own_checkpoint(tiny_checkpoint):
    """A checkpoint with a model of its own (the session's tiny model must stay unprepared for the other tests),
    leaning to EOS so that beams finish at different steps."""
    from model.checkpoints.files import load_checkpoint
    ckpt = load_checkpoint(tiny_checkpoint)
    ckpt.model.load_state_dict(eos_leaning(ckpt.model, ckpt.config.eos_id, strength=3.0).state_dict())
    return ckpt


def same_translation(a, b) -> None:
    """Same pieces, log-probabilities and every attention weight (1e-5)."""
    assert a.target_ids == b.target_ids
    assert [h.score for h in a.result.hypotheses] == pytest.approx([h.score for h in b.result.hypotheses], abs=TOL)
    for x, y in zip(a.trace.tensors(), b.trace.tensors(), strict=True):
        torch.testing.assert_close(x, y, atol=TOL, rtol=TOL)


def test_visitors_decode_eagerly_until_the_step_is_built_then_on_it(stand_in, own_checkpoint):
    gate, made, starts = stand_in
    model, tokenizer = own_checkpoint.model, own_checkpoint.tokenizer
    reference = copy.deepcopy(model)  # never prepared: always the eager Transformer.step
    built = compiled_step.prepare(model)
    assert compiled_step.prepare(model) is built  # one build per model
    assert compiled_step.decoder_for(model) is model  # not ready: the eager step serves
    assert compiled_step.describe(model) == "eager step (the compiled one is being built)"  # the sidebar's words
    before = translate(model, tokenizer, "the house is small.", DecodeConfig(beam_size=2, max_len=12))
    same_translation(translate(reference, tokenizer, "the house is small.", DecodeConfig(beam_size=2, max_len=12)),
                     before)
    gate.set()
    assert built.ready.wait(60) and built.error is None
    assert compiled_step.decoder_for(model) is built.decoder
    assert built.decoder is not None and built.decoder.compiled_rows == set(compiled_step.WARM_ROWS)
    assert re.fullmatch(r"compiled step \(built in \d+ s\)", compiled_step.describe(model) or "")
    assert compiled_step.describe(reference) is None  # a model nobody prepared
    calls, encoded = len(rows_run(made)), starts[0].calls
    after = translate(model, tokenizer, "the house is small.", DecodeConfig(beam_size=2, max_len=12))
    assert len(rows_run(made)) > calls and starts[0].calls == encoded + 1  # it ran on the built step and start
    same_translation(before, after)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # one model, prepared once, for every example
@given(text=TEXTS, beam=st.integers(1, 6))
def test_the_built_step_translates_exactly_as_the_eager_step(stand_in, own_checkpoint, text, beam):
    """Every request after the build, beam widths the build did not compile (2, 3, 5, 6) included: those run
    eagerly. Every source is encoded by the built start (one of more than one piece)."""
    gate, made, starts = stand_in
    gate.set()
    model = own_checkpoint.model
    built = compiled_step.prepare(model, wait=True)
    assert built.decoder is not None
    reference = copy.deepcopy(model)
    config = DecodeConfig(beam_size=beam, max_len=10)
    compiled_rows = set(built.decoder.compiled_rows)
    same_translation(translate(reference, own_checkpoint.tokenizer, text, config),
                     translate(model, own_checkpoint.tokenizer, text, config))
    assert built.decoder.compiled_rows == compiled_rows == set(compiled_step.WARM_ROWS)  # nothing new after the build
    assert set(rows_run(made)) <= set(compiled_step.WARM_ROWS)  # the other widths ran eagerly
    assert starts[0].calls > 0


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=6))
def test_a_room_batch_on_the_built_step_is_each_sentence_exactly_its_own(stand_in, own_checkpoint, texts):
    """The app's batched greedy path (model.serving.inference.stream_batch): a batch of 1 or 4 rows on the built
    step, the others eagerly, every sentence's steps the eager step's."""
    stand_in[0].set()
    model, tokenizer = own_checkpoint.model, own_checkpoint.tokenizer
    assert compiled_step.prepare(model, wait=True).decoder is not None
    reference = copy.deepcopy(model)
    config = DecodeConfig(max_len=10)
    sources = [prepare_source(tokenizer, text) for text in texts]
    ours, theirs = list(stream_batch(model, sources, [config] * len(texts))), \
        list(stream_batch(reference, sources, [config] * len(texts)))
    assert [sorted(step) for step in ours] == [sorted(step) for step in theirs]
    for mine, expected in zip(ours, theirs, strict=True):
        for i, step in mine.items():
            assert torch.equal(step.beams, expected[i].beams)
            for x, y in zip(step.attention.tensors(), expected[i].attention.tensors(), strict=True):
                torch.testing.assert_close(x, y, atol=TOL, rtol=TOL)


def test_a_model_the_step_cannot_serve_stays_eager_with_the_reason():
    model = Transformer(tiny_config(60, positional_layout="relative", norm="rms", linear_bias=False,
                                    attention_scale=False, norm_first=True)).eval()
    built = compiled_step.prepare(model, wait=True)
    assert built.decoder is None and "relative positions" in (built.error or "")
    assert compiled_step.decoder_for(model) is model
    assert compiled_step.describe(model) == "eager step"


@pytest.mark.slow
def test_once_built_a_request_compiles_nothing_and_a_restart_loads_the_packages(own_checkpoint, tmp_path,
                                                                                monkeypatch):
    """The real build (AOTInductor, about 10 s a row count here): afterwards requests of every kind, a one-piece source
    and a beam wider than the build's included, compile no new graph and give the eager step's results. The same
    model loaded again (a server restarted) loads the packages from disk without compiling, and a damaged package is
    built again."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv(step_package.CACHE_ENV, str(tmp_path))
    model, tokenizer = own_checkpoint.model, own_checkpoint.tokenizer
    reference, restarted, damaged = (copy.deepcopy(model) for _ in range(3))
    built = compiled_step.prepare(model, wait=True)
    assert built.decoder is not None, built.error
    assert len(list(tmp_path.glob("step-*.pt2"))) == len(compiled_step.WARM_ROWS)
    assert len(list(tmp_path.glob("start-*.pt2"))) == 1
    graphs = counters["stats"]["unique_graphs"]
    for text, beam in (("the house is small.", 1), ("where is the station?", 4), ("a", 3), ("the tea.", 6)):
        config = DecodeConfig(beam_size=beam, max_len=12)
        same_translation(translate(reference, tokenizer, text, config), translate(model, tokenizer, text, config))
    assert counters["stats"]["unique_graphs"] == graphs

    builds: list[object] = []
    compile_package = step_package.build
    monkeypatch.setattr(step_package, "build", lambda *args: builds.append(args) or compile_package(*args))
    again = compiled_step.prepare(restarted, wait=True)
    assert again.decoder is not None and builds == []  # loaded, not compiled
    config = DecodeConfig(beam_size=4, max_len=12)
    same_translation(translate(reference, tokenizer, "where is the station?", config),
                     translate(restarted, tokenizer, "where is the station?", config))
    sorted(tmp_path.glob("step-*.pt2"))[0].write_bytes(b"half a package")
    assert compiled_step.prepare(damaged, wait=True).decoder is not None and len(builds) == 1


def test_the_command_line_compiles_first_on_request_and_says_so(stand_in, tiny_checkpoint, capsys):
    """`python -m model translate … --compiled-step`: the step is built before decoding, with a note on stderr, and
    the translation is the eager one."""
    from model.__main__ import main

    stand_in[0].set()
    args = ["translate", "The house is small.", "--checkpoint", str(tiny_checkpoint), "--beam", "4", "--max-len", "8"]
    assert main(args) == 0
    eager = capsys.readouterr()
    assert main([*args, "--compiled-step"]) == 0
    compiled = capsys.readouterr()
    assert compiled.out == eager.out
    assert re.search(r"^note: the decoding step was compiled in \d+ s$", compiled.err, re.M), compiled.err
    assert set(rows_run(stand_in[1])) == set(compiled_step.WARM_ROWS)  # it ran on the built step
