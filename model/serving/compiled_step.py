"""The compiled decoding step, built before anyone needs it, so that no visitor waits for a compile.

Compiling the static-cache step (model.decoding.static_cache) takes about 15 s per row count on a 2-core CPU, which no
visitor should wait for. ``prepare(model)`` starts a background thread that gets the step for the row counts of
WARM_ROWS (1: greedy, and a room's batch of one; 4: beam search's full width, the Decoding page's default) as
AOTInductor packages (model.serving.step_package: compiled once per machine and model and kept on disk, loaded in
milliseconds on every later start) and checks that the packaged decode equals the eager one; meanwhile, and for every
other call (a beam of 2 or 3, the last steps of beam 4 once some hypotheses have finished, a one-piece source, a head
mask with a row per source), decoding stays on the eager step. The start (encoding) is packaged too, once for any number
of sources. Each package holds the weights packed for it: about 29 MB each for en-de. ``decoder_for(model)`` is what
``model.serving.inference.stream`` decodes with: the packaged decoder once it is ready, else the model itself. The
results are the same either way (every attention weight and log-probability to 1e-5: tests/model/test_static_cache.py,
tests/model/test_compiled_step.py); only the time differs.

A package is called without a compiler in between: nothing compiles in a visitor's request, and no guard is checked
(a package serves exactly the call signature it was built for, ``model.decoding.static_cache.signature``; any other
call runs eagerly).
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import cast

import torch

from model.decoding.search import decode_steps
from model.decoding.static_cache import StaticCacheDecoder, unsupported
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import KINDS, HeadMask, layer_counts
from model.network.transformer import Transformer
from model.serving.step_package import add_packages

log = logging.getLogger(__name__)
WARM_ROWS = (1, 4)  # the row counts compiled: greedy and beam 4 at full width (each costs the weights' size again)
WARM_SOURCE = 6  # pieces of the made-up source the warm-up decodes (any length >= 2 serves every length after it)
WARM_TOKENS = 8  # steps each warm-up decode takes


@dataclass
class CompiledStep:
    """One model's compiled step and how its building went: ``ready`` is set when ``decoder`` may be used (or when
    building ended without it: ``error`` says why); ``seconds`` is how long building took."""

    model: Transformer
    decoder: StaticCacheDecoder | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    seconds: float | None = None

    def build(self) -> None:
        """Load (or compile, then load) the step's packages for the row counts of WARM_ROWS and check the packaged
        decode against the eager one; on any failure the model stays on the eager step (logged once), as it would
        without this."""
        start = time.perf_counter()
        try:
            reason = unsupported(self.model.config)
            if reason is not None:
                raise ValueError(reason)
            decoder = StaticCacheDecoder(self.model)
            src = warm_source(self.model)
            add_packages(decoder, src, WARM_ROWS)
            for beam in range(1, max(WARM_ROWS) + 1):  # the other widths step eagerly: the same results
                for mask in (None, one_head_off(self.model)):
                    config = DecodeConfig(beam_size=beam, max_len=WARM_TOKENS)
                    if not same_decode(decoder, self.model, src, config, mask):
                        raise RuntimeError(f"the compiled step disagreed with the eager step at beam {beam}"
                                           f"{'' if mask is None else ' with heads switched off'}")
            self.decoder = decoder
        except Exception as error:  # the eager step serves on: slower, never wrong
            self.error = f"{type(error).__name__}: {error}"
            log.warning("the compiled decoding step was not built, decoding stays eager: %s", self.error)
        finally:
            self.seconds = time.perf_counter() - start
            self.ready.set()


def warm_source(model: Transformer) -> torch.Tensor:
    """A made-up source of WARM_SOURCE ordinary pieces ending in EOS: [S]."""
    config = model.config
    ids = [i for i in range(config.vocab_size) if i not in (config.pad_id, config.bos_id, config.eos_id)]
    return torch.tensor([*ids[:WARM_SOURCE - 1], config.eos_id], device=next(model.parameters()).device)  # [S]


def one_head_off(model: Transformer) -> HeadMask:
    """The first head of the last layer of every kind switched off: what the Heads page does, which a package must
    follow (its masks are inputs like any other)."""
    layers = layer_counts(model.config)
    return HeadMask.switched_off([(kind, layers[kind] - 1, 0) for kind in KINDS], layers, model.config.n_heads)


def same_decode(decoder: StaticCacheDecoder, model: Transformer, src: torch.Tensor, config: DecodeConfig,
                head_mask: HeadMask | None = None) -> bool:
    """Whether ``decoder`` and the eager ``model`` decode ``src`` (with ``head_mask``'s heads off) to the same steps:
    pieces, and log-probabilities and attention weights to 1e-5."""
    ours = list(decode_steps(as_model(decoder), src, config, Capture.WEIGHTS, head_mask))
    eager = list(decode_steps(model, src, config, Capture.WEIGHTS, head_mask))
    if len(ours) != len(eager):
        return False
    for a, b in zip(ours, eager, strict=True):
        if not torch.equal(a.beams, b.beams) or not torch.allclose(a.beam_scores, b.beam_scores, atol=1e-5):
            return False
        assert a.attention is not None and b.attention is not None
        if any(not torch.allclose(x, y, atol=1e-5) for x, y in zip(a.attention.tensors(), b.attention.tensors(),
                                                                    strict=True)):
            return False
    return True


_STEPS: weakref.WeakKeyDictionary[Transformer, CompiledStep] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()  # one build per model; builds run one at a time (each takes the CPU for a while)
_BUILDING = threading.Lock()


def prepare(model: Transformer, wait: bool = False) -> CompiledStep:
    """Start building ``model``'s compiled step on a background thread (once per model; later calls return the same
    CompiledStep); with ``wait``, return only once it is built or failed."""
    with _LOCK:
        step = _STEPS.get(model)
        if step is None:
            step = _STEPS[model] = CompiledStep(model)

            def run() -> None:
                with _BUILDING:
                    step.build()
            threading.Thread(target=run, name="compile-decoding-step", daemon=True).start()
    if wait:
        step.ready.wait()
    return step


def describe(model: Transformer) -> str | None:
    """Which step ``model`` decodes on, in a few words for the app's sidebar; None when nothing was prepared for it."""
    step = _STEPS.get(model)
    if step is None:
        return None
    if not step.ready.is_set():
        return "eager step (the compiled one is being built)"
    if step.decoder is None:
        return "eager step"
    return f"compiled step (built in {step.seconds:.0f} s)"


def decoder_for(model: Transformer, capture: Capture = Capture.WEIGHTS) -> Transformer:
    """What to decode ``model`` with now: its compiled decoder once ``prepare`` built it, else ``model`` itself (as
    for a capture of the internals, which only the eager step records)."""
    step = _STEPS.get(model)
    if step is None or step.decoder is None or capture is Capture.INTERNALS:
        return model
    return as_model(step.decoder)


def as_model(decoder: StaticCacheDecoder) -> Transformer:
    """The decoder as model.decoding.search's decoders take it: it has a Transformer's ``config``, ``start``,
    ``first_step_rows`` and ``step`` (and its parameters), which is all they use."""
    return cast(Transformer, decoder)


__all__ = ["CompiledStep", "decoder_for", "describe", "prepare"]
