"""The decoding step and the encoding as AOTInductor packages: compiled once per machine and model, loaded in
milliseconds.

``torch.compile`` keeps a compiled step behind Dynamo, which checks its guards and wraps the graph on every call:
about 0.25 ms of a 1.5 ms step for en-de. ``torch.export`` and AOTInductor compile the same static-cache step
(model.decoding.static_cache.StaticStep, weights frozen into the package) to a shared library that is called with no
guards: measured 1.49 -> 1.19 ms a greedy step, 1.90 -> 1.67 ms at beam 4 (benchmarks/results/2026-11-29-app-path.md),
and 70 us less again since it is called through its loader (``direct``). A step's package serves one row count and
every cache capacity and source length from 2 pieces up. The start (``StaticStart``: the encoder with its attention
captured, and each decoder layer's cross-attention keys and values) is one package for any number of sources of 2
pieces or more: 2.87 -> 2.06 ms for an everyday sentence whose weights are no longer in cache. Any other call runs
eagerly, with the same results.

Packages are kept in ``ATTENTION_EXPLORER_STEP_CACHE`` (default ``~/.cache/attention-explorer/compiled-steps``), each
named by a key of everything it depends on (the torch version, this machine's CPU, the model's configuration, weights
and their layout, the row count, and the code compiled and how), written atomically, about 29 MB each for en-de. A
server started again on the same machine loads them instead of compiling (10-15 s each): no key, no reuse. The
folder is held under CACHE_BYTES, the least recently loaded packages deleted first (``prune``).
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import platform
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from torch._inductor.package.package import load_package
from torch.export import Dim
from torch.export.pt2_archive._package import AOTICompiledModel
from torch.utils import _pytree as pytree

from model.decoding.static_cache import StaticCacheDecoder, signature, start_signature, step_tensors
from model.network.attention import Capture

CACHE_ENV = "ATTENTION_EXPLORER_STEP_CACHE"
INDUCTOR = {"freezing": True}  # the weights are constants of the package, packed for its row count
CACHE_BYTES = 2 * 2**30  # the folder's cap: the least recently used packages beyond it are deleted (``prune``)
RUNNERS = 2  # calls a package can run at once: a server's two decoding slots (app.serving.scheduler) share the weights
SOURCES = ("model/network", "model/decoding/static_cache.py", "model/serving/step_package.py")  # the code a package
# compiles, and how: a change rebuilds it
ROOT = Path(__file__).resolve().parent.parent.parent

STEP_OUTPUTS = 5  # log-probs, then the self- and cross-attention's weights and scores
START_OUTPUTS = 7  # lists: the cross-attention's keys and values, the encoder's outputs, keys, values, weights, scores
Runner = Callable[..., tuple[torch.Tensor, ...]]
StartRunner = Callable[..., tuple[list[torch.Tensor], ...]]


def cache_dir() -> Path:
    """Where packages are kept (created on first use)."""
    chosen = os.environ.get(CACHE_ENV)
    return Path(chosen) if chosen else Path.home() / ".cache" / "attention-explorer" / "compiled-steps"


def _machine(device: torch.device) -> str:
    """What a package's compiled code depends on where it runs: this machine's CPU (``_cpu``) and, for a model on a
    GPU, that GPU's name and compute capability and the CUDA version (a package compiled for one device serves no
    other: the same weights on the CPU and on CUDA get packages of their own)."""
    if device.type != "cuda":
        return _cpu()
    return (f"{_cpu()} {device.type} {torch.cuda.get_device_name(device)} {torch.cuda.get_device_capability(device)} "
            f"{torch.version.cuda}")


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
    version, the device it runs on (``_machine``), the model's configuration, weights and their layout, and the
    code compiled."""
    digest = hashlib.sha256()
    device = next(decoder.model.parameters()).device
    for part in (torch.__version__, _machine(device), repr(decoder.config), repr(INDUCTOR)):
        digest.update(part.encode())
    for name, tensor in decoder.model.state_dict().items():  # values and layout (column-major weights pack otherwise)
        digest.update(f"{name}{tuple(tensor.shape)}{tensor.stride()}{tensor.dtype}".encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    for source in SOURCES:
        path = ROOT / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.read_bytes())
    return digest.hexdigest()


def package_path(digest: str, part: str) -> Path:
    """Where the package of ``part`` ("step 4": the step at 4 rows; "start": the encoding) of the model ``digest``
    names (``model_digest``) is kept."""
    kind = part.split()[0]
    return cache_dir() / f"{kind}-{hashlib.sha256(f'{digest} {part}'.encode()).hexdigest()[:32]}.pt2"


def example_inputs(decoder: StaticCacheDecoder, src: torch.Tensor, rows: int) -> tuple:
    """The first step's inputs for ``src`` [S] repeated on ``rows`` rows (no head mask), made outside inference mode:
    export traces with them. Every input is a tensor of its own here: export takes inputs that share memory for one
    (a decode's caches are views of one buffer; with no head mask, one tensor of ones serves as both masks), and a
    package built so would read one of them for both: the decoder's head masks were mixed up so."""
    with torch.no_grad():
        state, _ = decoder.start(src.expand(rows, -1), Capture.NONE)  # [rows, S]
    tokens = torch.full((rows, 1), decoder.config.bos_id, device=src.device)  # [rows, 1]
    cache = [(k.clone(), v.clone()) for k, v in state.cache]
    heads = [mask.clone() for mask in state.heads]  # [L, 1, H] each
    return (tokens, torch.tensor([0], device=src.device), cache, state.memory, state.cross_mask, *heads)


def start_inputs(decoder: StaticCacheDecoder, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The compiled start's inputs for ``src`` [S]: two rows of it [2, S] (export takes a dimension of 1 for a
    constant) and the encoder's head mask, all on, one for every row [L, 1, H]."""
    config = decoder.config
    return (src[None].expand(2, -1).contiguous(),
            decoder.model.embed.token.weight.new_ones(config.n_encoder_layers, 1, config.n_heads))


def step_shapes(inputs: tuple) -> tuple[object, ...]:
    """What varies between a step's calls: the cache's capacity and the source's length (2 pieces or more)."""
    capacity, source = Dim("capacity", min=2), Dim("source", min=2)
    layers = len(inputs[2])
    return ({}, {}, [({2: capacity}, {2: capacity}) for _ in range(layers)],
            [({2: source}, {2: source}) for _ in range(layers)], {3: source}, {}, {})


def start_shapes(decoder: StaticCacheDecoder) -> tuple[object, ...]:
    """What varies between a start's calls: the number of sources (one sentence, or a room's batch) and their length,
    from 2 pieces to the model's position limit."""
    return {0: Dim("sources", min=1), 1: Dim("source", min=2, max=decoder.model.embed.limit)}, {}


def build(module: torch.nn.Module, inputs: tuple, shapes: tuple[object, ...], path: Path) -> None:
    """Export ``module`` for ``inputs`` (what may vary: ``shapes``) and compile it to ``path``, written atomically (a
    half-written package is never loaded). The compiler is imported here, so that a server whose packages are on disk
    never loads it."""
    from torch._inductor import aoti_compile_and_package

    with torch.no_grad():
        program = torch.export.export(module, inputs, dynamic_shapes=shapes)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        written = aoti_compile_and_package(program, package_path=str(Path(scratch) / path.name),
                                           inductor_configs=dict(INDUCTOR))  # it adds its own keys
        os.replace(written, path)


def loaded(module: torch.nn.Module, inputs: tuple, shapes: tuple[object, ...], path: Path) -> AOTICompiledModel:
    """The package at ``path``, built first when there is none; a damaged file is built again once."""
    if not path.exists():
        build(module, inputs, shapes, path)
    try:
        package = load_package(str(path), num_runners=RUNNERS)
    except Exception:  # a damaged file: built again once
        path.unlink(missing_ok=True)
        build(module, inputs, shapes, path)
        package = load_package(str(path), num_runners=RUNNERS)
    with contextlib.suppress(OSError):  # a folder this user may read but not write: nothing to mark
        os.utime(path)  # used now: ``prune`` deletes the least recently used first
    return package


def direct(package: AOTICompiledModel, inputs: tuple) -> Runner:
    """The step's package called through its loader with the step's tensors in order (``step_tensors``).
    ``AOTICompiledModel.__call__`` parses its call spec from JSON and flattens the inputs with pytree on every call:
    70 us of a 1.2 ms step. The step's inputs have one structure, checked here once against the package's own spec;
    a package of any other structure is called as it is."""
    in_spec, out_spec = (pytree.treespec_loads(spec) for spec in package.loader.get_call_spec())
    leaves, spec = pytree.tree_flatten((inputs, {}))
    ours = step_tensors(inputs)
    if spec != in_spec or len(leaves) != len(ours) or any(a is not b for a, b in zip(leaves, ours, strict=False)) \
            or out_spec != pytree.tree_flatten(tuple(range(STEP_OUTPUTS)))[1]:
        return package
    run = package.loader.boxed_run
    return lambda *args: tuple(run(step_tensors(args)))  # boxed_run takes the list over: a new one each call


def direct_start(package: AOTICompiledModel, inputs: tuple[torch.Tensor, torch.Tensor]) -> StartRunner:
    """The start's package called through its loader, as ``direct`` calls the step's: its output lists (``StaticStart``)
    cut from the flat outputs at lengths read once from the package's own spec. ``AOTICompiledModel.__call__``'s pytree
    work took 94 us of a 1.9 ms start (1,949 -> 1,855 us, medians of 300 calls, the outputs equal). A package of any
    other structure is called as it is."""
    in_spec, out_spec = (pytree.treespec_loads(spec) for spec in package.loader.get_call_spec())
    lists = out_spec.children()
    if in_spec != pytree.tree_flatten((inputs, {}))[1] or out_spec.type is not tuple \
            or len(lists) != START_OUTPUTS or any(part.type is not list for part in lists):
        return package
    ends = list(itertools.accumulate(part.num_leaves for part in lists))
    run = package.loader.boxed_run

    def start(src: torch.Tensor, heads: torch.Tensor) -> tuple[list[torch.Tensor], ...]:
        flat = run([src, heads])  # boxed_run takes the list over
        return tuple(flat[begin:end] for begin, end in zip([0, *ends[:-1]], ends, strict=True))
    return start


def prune(kept: Iterable[Path], cap: int = CACHE_BYTES) -> list[Path]:
    """Delete the packages least recently loaded until the folder holds at most ``cap`` bytes, never one of ``kept``
    (those this process just loaded: each load marks its file as used). Packages of older weights, code or torch
    versions are never loaded again; without this they would pile up (29 MB each for en-de, several hundred for a
    large converted model). -> the files deleted."""
    kept = {path.resolve() for path in kept}
    deleted, held = [], 0
    for path in sorted(cache_dir().glob("*.pt2"), key=_last_used, reverse=True):  # the most recently used first
        try:
            size = path.stat().st_size
            if path.resolve() in kept or held + size <= cap:
                held += size
                continue
            path.unlink()
        except OSError:  # gone already: another server pruned it too
            continue
        deleted.append(path)
    return deleted


def _last_used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def add_packages(decoder: StaticCacheDecoder, src: torch.Tensor, rows: Iterable[int]) -> None:
    """Give ``decoder`` a package of its step for each row count of ``rows`` (``add_package``) and one of its start
    for any number of sources (``add_start_package``), each loaded from this machine's cache or built first; ``src``
    [S] (2 pieces or more) is the made-up source they are traced with."""
    digest = model_digest(decoder)
    paths = []
    for count in rows:
        inputs = example_inputs(decoder, src, count)
        paths.append(package_path(digest, f"step {count}"))
        package = loaded(decoder.static_step, inputs, step_shapes(inputs), paths[-1])
        with torch.no_grad():
            decoder.add_package(signature(inputs), direct(package, inputs))
    first = start_inputs(decoder, src)
    paths.append(package_path(digest, "start"))
    package = loaded(decoder.static_start, first, start_shapes(decoder), paths[-1])
    with torch.no_grad():
        decoder.add_start_package(start_signature(*first), direct_start(package, first))
    prune(paths)


__all__ = ["CACHE_BYTES", "CACHE_ENV", "add_packages", "cache_dir", "model_digest", "package_path", "prune"]
