"""The decoding step as an AOTInductor package: compiled once per machine, model and row count, loaded in milliseconds.

``torch.compile`` keeps a compiled step behind Dynamo, which checks its guards and wraps the graph on every call:
about 0.25 ms of a 1.5 ms step for en-de. ``torch.export`` and AOTInductor compile the same static-cache step
(model.decoding.static_cache.StaticStep, weights frozen into the package) to a shared library that is called with no
guards: measured 1.49 -> 1.19 ms a greedy step, 1.90 -> 1.67 ms at beam 4 (benchmarks/results/2026-11-29-app-path.md).
A package serves one row count and every cache capacity and source length from 2 pieces up (a one-piece source, or
any other call, runs the eager static step).

Packages are kept in ``ATTENTION_EXPLORER_STEP_CACHE`` (default ``~/.cache/attention-explorer/compiled-steps``), each
named by a key of everything it depends on (the torch version, this machine's CPU, the model's configuration, weights
and their layout, the row count and the step's source code), written atomically, about 29 MB each for en-de. A server
started again on the same machine loads them instead of compiling (15 s a row count): no key, no reuse.
"""
from __future__ import annotations

import hashlib
import os
import platform
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from torch._inductor.package.package import load_package
from torch.export import Dim

from model.decoding.static_cache import StaticCacheDecoder, signature
from model.network.attention import Capture

CACHE_ENV = "ATTENTION_EXPLORER_STEP_CACHE"
INDUCTOR = {"freezing": True}  # the weights are constants of the package, packed for its row count
RUNNERS = 2  # calls a package can run at once: a server's two decoding slots (app.serving.scheduler) share the weights
SOURCES = ("model/network", "model/decoding/static_cache.py")  # the code a package compiles: a change rebuilds it
ROOT = Path(__file__).resolve().parent.parent.parent

Runner = Callable[..., tuple[torch.Tensor, ...]]


def cache_dir() -> Path:
    """Where packages are kept (created on first use)."""
    chosen = os.environ.get(CACHE_ENV)
    return Path(chosen) if chosen else Path.home() / ".cache" / "attention-explorer" / "compiled-steps"


def _cpu() -> str:
    """This machine's CPU as a package's compiled code depends on it: its instruction-set flags, not only its name
    (a home directory shared by machines of two kinds must not load the other's packages)."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "model name", "Features")):
                flags += line
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()} {torch.backends.cpu.get_cpu_capability()} {flags}"


def model_digest(decoder: StaticCacheDecoder) -> str:
    """What every package of ``decoder``'s step depends on but its row count, hashed once for all of them: the torch
    version, this machine's CPU, the model's configuration, weights and their layout, and the step's source code."""
    digest = hashlib.sha256()
    for part in (torch.__version__, _cpu(), repr(decoder.config), repr(INDUCTOR)):
        digest.update(part.encode())
    for name, tensor in decoder.model.state_dict().items():  # values and layout (column-major weights pack otherwise)
        digest.update(f"{name}{tuple(tensor.shape)}{tensor.stride()}{tensor.dtype}".encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    for source in SOURCES:
        path = ROOT / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.read_bytes())
    return digest.hexdigest()


def package_path(digest: str, rows: int) -> Path:
    """Where the package of the step ``digest`` names (``model_digest``) at ``rows`` rows is kept."""
    return cache_dir() / f"step-{hashlib.sha256(f'{digest} {rows}'.encode()).hexdigest()[:32]}.pt2"


def example_inputs(decoder: StaticCacheDecoder, src: torch.Tensor, rows: int) -> tuple:
    """The first step's inputs for ``src`` [S] repeated on ``rows`` rows (no head mask), made outside inference mode:
    export traces with them."""
    with torch.no_grad():
        state, _ = decoder.start(src.expand(rows, -1), Capture.NONE)  # [rows, S]
    tokens = torch.full((rows, 1), decoder.config.bos_id, device=src.device)  # [rows, 1]
    return (tokens, torch.tensor([0], device=src.device), state.cache, state.memory, state.cross_mask, *state.heads)


def build(decoder: StaticCacheDecoder, inputs: tuple, path: Path) -> None:
    """Export the step for ``inputs``' row count (any cache capacity and source length of 2 or more) and compile it to
    ``path``, written atomically (a half-written package is never loaded). The compiler is imported here, so that a
    server whose packages are on disk never loads it."""
    from torch._inductor import aoti_compile_and_package

    capacity, source = Dim("capacity", min=2), Dim("source", min=2)
    layers = len(inputs[2])
    shapes: tuple[object, ...] = ({}, {}, [({2: capacity}, {2: capacity}) for _ in range(layers)],
                                  [({2: source}, {2: source}) for _ in range(layers)], {3: source}, {}, {})
    with torch.no_grad():
        program = torch.export.export(decoder.static_step, inputs, dynamic_shapes=shapes)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        written = aoti_compile_and_package(program, package_path=str(Path(scratch) / path.name),
                                           inductor_configs=dict(INDUCTOR))  # it adds its own keys
        os.replace(written, path)


def add_packages(decoder: StaticCacheDecoder, src: torch.Tensor, rows: Iterable[int]) -> None:
    """Give ``decoder`` a package of its step for each row count of ``rows`` (``add_package``), each loaded from
    this machine's cache or built first; ``src`` [S] (2 pieces or more) is the made-up source they are traced with."""
    digest = model_digest(decoder)
    for count in rows:
        inputs = example_inputs(decoder, src, count)
        path = package_path(digest, count)
        if not path.exists():
            build(decoder, inputs, path)
        try:
            runner = load_package(str(path), num_runners=RUNNERS)
        except Exception:  # a damaged file: built again once
            path.unlink(missing_ok=True)
            build(decoder, inputs, path)
            runner = load_package(str(path), num_runners=RUNNERS)
        with torch.no_grad():
            decoder.add_package(signature(inputs), runner)


__all__ = ["CACHE_ENV", "add_packages", "cache_dir", "model_digest", "package_path"]
