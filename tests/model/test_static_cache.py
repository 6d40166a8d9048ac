"""The static-cache step (model/decoding/static_cache.py) decodes exactly as the eager Transformer.step: the same
pieces, scores and log-probabilities, and every attention weight and score of every step, for every kind of model it
accepts.

The eager version of the step runs the properties (fast); one slow test checks that the compiled step (AOTInductor,
frozen weights) gives the same results, which is what benchmarks/decode.py times.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.decoding.search import DecodeResult, beam_search, greedy_decode
from model.decoding.static_cache import StaticCacheDecoder, signature, start_signature
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import HeadMask
from model.network.transformer import Transformer
from model.serving.step_package import example_inputs
from tests.conftest import eos_leaning, tiny_config

EOS, FIRST_ID, VOCAB = 3, 4, 60
TOL = 1e-5
VARIANTS = {  # what the step must follow: the paper's post-norm, pre-norm, BART-style learned positions
    "paper": {},
    "pre-norm": {"norm_first": True},
    "learned positions": {"positional_layout": "learned", "position_offset": 2, "layernorm_embedding": True,
                          "scale_embedding": False, "norm_first": True, "activation": "gelu"},
}


@pytest.fixture(scope="module")
def models():
    built = {}
    for name, options in VARIANTS.items():
        torch.manual_seed(0)
        model = Transformer(tiny_config(VOCAB, **options)).eval()
        built[name] = eos_leaning(model, EOS)  # outputs of different lengths: rows leave the beam, EOS ends early
    return built


def sources():
    return (st.lists(st.integers(FIRST_ID, VOCAB - 1), min_size=0, max_size=11)
            .map(lambda ids: torch.tensor([*ids, EOS])))


def assert_same_decode(expected: DecodeResult, got: DecodeResult) -> None:
    """Same hypotheses and, step by step, the same top pieces, probabilities and attention rows."""
    assert [h.tokens for h in got.hypotheses] == [h.tokens for h in expected.hypotheses]
    assert [h.score for h in got.hypotheses] == pytest.approx([h.score for h in expected.hypotheses], abs=TOL)
    assert len(got.steps) == len(expected.steps)
    for mine, theirs in zip(got.steps, expected.steps, strict=True):
        assert torch.equal(mine.topk_ids, theirs.topk_ids)
        torch.testing.assert_close(mine.topk_probs, theirs.topk_probs, atol=TOL, rtol=0)
        for field in ("enc_self", "dec_self", "cross", "enc_self_scores", "dec_self_scores", "cross_scores"):
            for a, b in zip(getattr(mine.attention, field), getattr(theirs.attention, field), strict=True):
                assert a.shape == b.shape, field
                torch.testing.assert_close(a, b, atol=TOL, rtol=TOL)
    if expected.steps[0].attention is not None:  # each hypothesis' maps, read from the rows the steps hold stacked
        for mine, theirs in zip(got.hypotheses, expected.hypotheses, strict=True):
            a, b = got.attention_for(mine), expected.attention_for(theirs)
            for field in ("dec_self", "cross", "dec_self_scores", "cross_scores"):
                for x, y in zip(getattr(a, field), getattr(b, field), strict=True):
                    torch.testing.assert_close(x, y, atol=TOL, rtol=TOL)


@given(variant=st.sampled_from(sorted(VARIANTS)), src=sources(), beam=st.integers(1, 4), max_len=st.integers(1, 12),
       heads_off=st.lists(st.integers(0, 3), max_size=2), started=st.booleans(), widened=st.booleans(),
       forced_first=st.booleans())
def test_the_static_cache_decodes_exactly_as_the_eager_step(models, variant, src, beam, max_len, heads_off, started,
                                                            widened, forced_first):
    """Greedy and beam search, with heads switched off or not, and a cache of 4 rows that doubles while it runs;
    ``started``: the source encoded by the StaticStart a package compiles (here eagerly, in its place); ``widened``:
    a step served for the beam's width (here the eager StaticStep in a package's place), so that a beam search takes
    its first step on copies of its one row and hands back that row; ``forced_first``: a forced first piece, so that
    one hypothesis is left of those copies after the first step."""
    model = models[variant]
    off = [(kind, index % 2, index // 2) for index in heads_off for kind in ("enc_self", "dec_self", "cross")]
    mask = HeadMask.switched_off(off, {"enc_self": 2, "dec_self": 2, "cross": 2}, n_heads=2)  # (layer, head) off
    config = DecodeConfig(beam_size=beam, max_len=max_len, forced_bos=FIRST_ID if forced_first else None)
    decode = greedy_decode if beam == 1 else beam_search
    expected = decode(model, src, config, capture=Capture.WEIGHTS, head_mask=mask)
    decoder = StaticCacheDecoder(model, first_capacity=4)
    if started:
        with torch.no_grad():  # as decoding calls it
            decoder.add_start_package(start_signature(src[None], mask.enc_self), counted(decoder.static_start))
    if widened:
        inputs = example_inputs(decoder, src if src.numel() > 1 else src.repeat(2), beam)
        with torch.no_grad():  # as decoding calls it
            decoder.add_package(signature(inputs), counted(decoder.static_step))
        assert decoder.first_step_rows(beam) == beam
    got = decode(decoder, src, config, capture=Capture.WEIGHTS, head_mask=mask)
    assert_same_decode(expected, got)
    if started and src.numel() > 1:  # a one-piece source is encoded eagerly
        assert calls[decoder.static_start] == 1
    if widened and beam > 1 and src.numel() > 1:  # every step on the beam's width, the first one included
        assert calls[decoder.static_step] == sum(step.prefixes.size(0) == beam for step in got.steps) + 1


calls: dict[object, int] = {}


def counted(start):
    """``start`` with its calls counted in ``calls``."""
    calls[start] = 0

    def run(*inputs):
        calls[start] += 1
        return start(*inputs)
    return run


def test_without_capture_the_same_pieces_come_out(models):
    model, src = models["paper"], torch.tensor([5, 9, 22, EOS])
    config = DecodeConfig(beam_size=3, max_len=20)
    got = beam_search(StaticCacheDecoder(model), src, config, capture=Capture.NONE)
    assert got.best.tokens == beam_search(model, src, config, capture=Capture.NONE).best.tokens
    assert got.steps[0].attention is None


def test_a_decode_past_the_position_limit_is_refused_as_the_eager_step_refuses_it():
    torch.manual_seed(0)  # a learned table of max_len rows (sinusoids run on to 1,024); no EOS-leaning: no early end
    model = Transformer(tiny_config(VOCAB, **VARIANTS["learned positions"])).eval()
    limit = model.embed.limit
    with pytest.raises(ValueError, match=f"limit of {limit} positions"):
        greedy_decode(model, torch.tensor([5, EOS]), DecodeConfig(max_len=limit + 1))
    with pytest.raises(ValueError, match=f"limit of {limit} positions"):
        greedy_decode(StaticCacheDecoder(model), torch.tensor([5, EOS]), DecodeConfig(max_len=limit + 1))


def test_relative_positions_keep_the_eager_step():
    model = Transformer(tiny_config(VOCAB, positional_layout="relative", norm="rms", linear_bias=False,
                                    attention_scale=False, norm_first=True))
    with pytest.raises(ValueError, match="relative positions"):
        StaticCacheDecoder(model)


@pytest.mark.slow
def test_the_compiled_step_decodes_as_the_eager_step(models, tmp_path, monkeypatch):
    """The step compiled ahead of time (model.serving.step_package: AOTInductor, frozen weights; about 10 s a row count
    here) for one row and for three, and the start: greedy and beam 3 on two source lengths, the beam's last rows
    (fewer than three) eagerly, all as the eager step; a head mask through the same start."""
    from torch.export.pt2_archive._package import AOTICompiledModel

    from model.serving import step_package

    monkeypatch.setenv(step_package.CACHE_ENV, str(tmp_path))
    model = models["pre-norm"]
    compiled = StaticCacheDecoder(model)
    step_package.add_packages(compiled, torch.tensor([4, 5, 6, EOS]), (1, 3))
    (key, start), = compiled.packaged_starts.items()
    runners = [start, *compiled.packaged.values()]  # each called through its loader, without the pytree wrapper
    assert not any(isinstance(runner, AOTICompiledModel) for runner in runners)
    compiled.add_start_package(key, counted(start))
    for src in (torch.tensor([7, 8, 9, 10, EOS]), torch.tensor([11, 12, EOS])):  # any source length: one package
        for config in (DecodeConfig(max_len=12), DecodeConfig(beam_size=3, max_len=12)):
            decode = greedy_decode if config.beam_size == 1 else beam_search
            assert_same_decode(decode(model, src, config), decode(compiled, src, config))
    assert calls[start] == 4  # every source encoded by the compiled start
    src, layers = torch.tensor([7, 8, 9, 10, EOS]), {"enc_self": 2, "dec_self": 2, "cross": 2}
    for off in ([("enc_self", 0, 1)], [("dec_self", 1, 0)], [("cross", 1, 0)]):  # each mask an input of its own
        mask = HeadMask.switched_off(off, layers, n_heads=2)
        for config in (DecodeConfig(max_len=12), DecodeConfig(beam_size=3, max_len=12)):
            decode = greedy_decode if config.beam_size == 1 else beam_search
            assert_same_decode(decode(model, src, config, head_mask=mask), decode(compiled, src, config,
                                                                                  head_mask=mask))
    assert calls[start] == 10  # heads switched off: the same compiled start
