"""The app's own translate path against CTranslate2, as ratios measured within one run (issue 60).

    python benchmarks/app_path.py [--repeats 7] [--threads 1 2] [--profile] [--device cpu|cuda]

What a visitor's Translate press runs, through the public API as the app calls it: ``model.serving.inference.
translate`` on the shipped pretrained/en-de (tokenizing, pricing, the decode with every attention captured, the
trace a page draws and the Translation), for 12 everyday sentences, greedy and beam 4 (max_len 60, the model's own
decoding rules). Two copies of the model: one on the eager step, one on the compiled static-cache step and start that
the server builds in the background (model.serving.compiled_step; built here before timing, and how long that took is
printed). Against them, CTranslate2 float32 (no attention) on a random model of the same dimensions
(benchmarks/engines.py), each sentence with the same source length and made to write the same number of pieces as
ours did. Every case at each thread count, rounds interleaved, medians; ratios at each one's best thread count.
Targets: ours / CTranslate2 <= 1.2x greedy and beam 4; ours at 2 threads no slower than at 1 (<= 1.0x).

``--device cuda``: the same on a GPU (the packages compiled for it: model.serving.step_package keys them by device),
CTranslate2 on the GPU too where it loads there (its 4.8.5 wheels need CUDA 12's cuBLAS; where it does not load, the
reason is printed and its rows are left out); the floor is the CPU's and is not printed.

``--profile``: where the path's time goes (cProfile over one round of the 12 sentences at 1 thread): tokenizing and
pricing, encoding, the decoding steps' arithmetic, the search's own bookkeeping, assembling the Translation, and
the first map the page draws from it (one cross-attention heatmap and its JSON); and the floor a float32 step cannot
go under on this machine (``step_floor``: the bytes of weights a step reads over the memory bandwidth measured on the
spot), times the steps each search took, beside what each engine spends per sentence; and ``gap``, without a
profiler: our path split into its packages' calls and everything else, beside CTranslate2's first piece and each
further one.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import cProfile
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines import converted, installed, pieces_of
from timing import medians, timed

from model.checkpoints.files import Checkpoint, load_checkpoint
from model.network.config import DecodeConfig
from model.serving import compiled_step
from model.serving.inference import decode_rules, translate

SENTENCES = ["Yesterday I bought a new car.", "I have never seen this film.", "I don't know where my keys are.",
             "We have not seen the new film yet.", "My sister lives in a small house in the village.",
             "The train to Berlin leaves at eight o'clock.", "Can you tell me the way to the station?",
             "The children are playing in the garden.", "She has read the book that you gave her yesterday.",
             "My brother has bought a new house in the city.", "It is raining, so we stay at home today.",
             "The weather is nice today."]
TARGET = 1.2


def configs(ckpt: Checkpoint) -> dict[str, DecodeConfig]:
    rules = decode_rules(ckpt.tokenizer, ckpt.meta)
    return {"greedy": DecodeConfig(beam_size=1, max_len=60, **rules),
            "beam 4": DecodeConfig(beam_size=4, max_len=60, **rules)}


def app_path(ckpt: Checkpoint, config: DecodeConfig) -> Callable[[], object]:
    """The 12 sentences through ``translate`` as the app calls it (every attention captured)."""
    return lambda: [translate(ckpt.model, ckpt.tokenizer, text, config) for text in SENTENCES]


def dims(ckpt: Checkpoint) -> dict[str, int]:
    """The model's dimensions, for a random CTranslate2 model of the same size (its vocabulary is the shipped one's)."""
    shape = ckpt.model.config
    assert shape.n_encoder_layers == shape.n_decoder_layers and shape.vocab_size == 8000
    return dict(d_model=shape.d_model, heads=shape.n_heads, layers=shape.n_encoder_layers, d_ff=shape.d_ff)


def ct2_path(ckpt: Checkpoint, config: DecodeConfig, threads: int, device: str = "cpu") -> Callable[[], object]:
    """CTranslate2 float32 on a same-size random model: each sentence a source of its length in pieces, written to
    exactly as many pieces as ours wrote for it."""
    import ctranslate2

    translator = ctranslate2.Translator(str(converted(**dims(ckpt))[1]), device=device, compute_type="float32",
                                        inter_threads=1, intra_threads=threads)
    jobs = []
    for text in SENTENCES:
        ours = translate(ckpt.model, ckpt.tokenizer, text, config)
        jobs.append((pieces_of(list(ours.source.ids)), len(ours.target_ids)))
    return lambda: [translator.translate_batch([src], beam_size=config.beam_size, max_decoding_length=n,
                                               min_decoding_length=n) for src, n in jobs]


def profile(ckpt: Checkpoint, config: DecodeConfig) -> dict[str, float]:
    """Seconds per part of one round of the 12 sentences (cProfile's cumulative times of the functions that bound each
    part; the search's bookkeeping is what the steps loop spends besides the model's steps), then the first map."""
    from app.charts.attention import heatmap_figure  # plotly: only where a profile is asked for, imported untimed

    app_path(ckpt, config)()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(app_path(ckpt, config))
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]

    def cumulative(file: str, function: str) -> float:
        return sum(value[3] for (path, _, name), value in stats.items() if path.endswith(file) and name == function)
    started = cumulative("static_cache.py", "start")  # the compiled decoder's start (its package, or the model's)
    parts = {"tokenizing and pricing (planned)": cumulative("inference.py", "planned"),
             "encoding (start)": started or cumulative("transformer.py", "start"),
             "the decoding steps (model step)": cumulative("transformer.py", "step")
             + cumulative("static_cache.py", "step"),
             "assembling the Translation (finish)": cumulative("inference.py", "finish")}
    steps_loop = cumulative("search.py", "_one_path") + cumulative("search.py", "beam_steps")
    parts["the search's bookkeeping"] = (steps_loop - parts["encoding (start)"]
                                         - parts["the decoding steps (model step)"])
    parts["the rest"] = total - sum(parts.values())
    translations = app_path(ckpt, config)()
    start = time.perf_counter()
    for translation in translations:  # the Translate page's first map: one cross-attention head, as Streamlit sends it
        weights = translation.trace.cross[-1][0, 0].cpu().numpy()  # [T, S]
        heatmap_figure(weights, translation.target_pieces, translation.source.pieces, title="cross-attention",
                       query_title="output", key_title="source").to_json()
    parts["the first map (figure and its JSON)"] = time.perf_counter() - start
    return parts | {"total": total + parts["the first map (figure and its JSON)"]}


def gap(ckpt: Checkpoint, config: DecodeConfig, engine: bool, rounds: int = 7) -> str:
    """Where the app's compiled path and CTranslate2 part ways, without a profiler (1 thread, medians of ``rounds``):
    ours split into its packages' calls (the start's, the step's) and everything else the path runs in Python
    around them; CTranslate2's as its first piece (the encoding and one step) and each further piece (the same
    sentences written to 1 and to 16 pieces)."""
    decoder = compiled_step.prepare(ckpt.model, wait=True).decoder
    assert decoder is not None
    spent = {"start": [0.0, 0], "step": [0.0, 0]}

    def timed_runner(kind: str, runner: Callable[..., object]) -> Callable[..., object]:
        def run(*args: object) -> object:
            began = time.perf_counter()
            out = runner(*args)
            spent[kind][0] += time.perf_counter() - began
            spent[kind][1] += 1
            return out
        return run
    starts, steps = dict(decoder.packaged_starts), dict(decoder.packaged)
    decoder.packaged_starts.update({key: timed_runner("start", run) for key, run in starts.items()})
    decoder.packaged.update({key: timed_runner("step", run) for key, run in steps.items()})
    splits = []
    try:
        for _ in range(rounds):
            for part in spent.values():
                part[:] = [0.0, 0]
            total = timed(app_path(ckpt, config))
            splits.append((total, spent["start"][0], spent["step"][0], spent["step"][1]))
    finally:
        decoder.packaged_starts.update(starts)
        decoder.packaged.update(steps)
    n = len(SENTENCES)
    total, start, step, calls = sorted(splits)[len(splits) // 2]
    rest = total - start - step
    line = (f"ours: the start's package {start * 1000 / n:.2f} ms, {calls / n:.1f} steps' packages "
            f"{step * 1e6 / calls:.0f} us each, everything else {rest * 1000 / n:.2f} ms a sentence "
            f"({rest * 1e6 / calls:.0f} us a step)")
    if engine:
        import ctranslate2

        translator = ctranslate2.Translator(str(converted(**dims(ckpt))[1]), device="cpu", compute_type="float32",
                                            inter_threads=1, intra_threads=1)
        sources = [pieces_of(list(translate(ckpt.model, ckpt.tokenizer, text, config).source.ids))
                   for text in SENTENCES]

        def written(pieces: int) -> float:
            return statistics.median(timed(lambda: [translator.translate_batch(
                [src], beam_size=config.beam_size, max_decoding_length=pieces, min_decoding_length=pieces)
                for src in sources]) for _ in range(rounds)) / n
        first, sixteen = written(1), written(16)
        line += (f"; CTranslate2: the first piece (encoding and one step) {first * 1000:.2f} ms, each further piece "
                 f"{(sixteen - first) * 1e6 / 15:.0f} us")
    return line


def step_floor(ckpt: Checkpoint, rounds: int = 20) -> tuple[float, float, float]:
    """What one decoding step cannot go under in float32 here, whatever the engine: it reads every weight it applies
    (the decoder's layers but the cross-attention's key and value maps, applied once per source, and the output
    layer) from memory, 4 rows as 1 (a beam of 4 costs a greedy step). -> (megabytes read, the best of ``rounds``
    sums over a buffer that size in GB/s, the step's floor in ms)."""
    model = ckpt.model
    once = {id(p) for layer in model.decoder.layers for linear in (layer.cross_attn.w_k, layer.cross_attn.w_v)
            for p in linear.parameters()}
    output = model.embed.token.weight if model.output is None else model.output.weight  # [V, D]
    read = {id(p): p for p in (*model.decoder.parameters(), output) if id(p) not in once}
    nbytes = sum(p.numel() * p.element_size() for p in read.values())
    buffer = torch.ones(nbytes // 4)  # float32
    buffer.sum()
    best = min(timed(buffer.sum) for _ in range(rounds))
    return nbytes / 1e6, nbytes / best / 1e9, best * 1000


def floor_report(ckpt: Checkpoint, config: DecodeConfig, ours: float, ct2: float | None) -> str:
    """One search's floor per sentence (``step_floor`` times the steps it took over the 12 sentences) against the
    app's path (``ours``) and CTranslate2 (``ct2``), seconds for the 12."""
    megabytes, bandwidth, floor_ms = step_floor(ckpt)
    steps = sum(len(translate(ckpt.model, ckpt.tokenizer, text, config).result.steps) for text in SENTENCES)
    floor = floor_ms * steps / len(SENTENCES)
    line = (f"a step reads {megabytes:.1f} MB of weights; at {bandwidth:.1f} GB/s (measured) at least "
            f"{floor_ms:.2f} ms: {steps / len(SENTENCES):.1f} steps a sentence make {floor:.1f} ms; the app's path "
            f"{ours * 1000 / len(SENTENCES):.1f} ms ({ours * 1000 / len(SENTENCES) / floor:.2f}x the floor)")
    if ct2 is not None:
        line += f", CTranslate2 {ct2 * 1000 / len(SENTENCES):.1f} ms ({ct2 * 1000 / len(SENTENCES) / floor:.2f}x)"
    return line


def ct2_loads(ckpt: Checkpoint, device: str) -> bool:
    """Whether CTranslate2 runs on ``device`` here (on a GPU its wheel needs the CUDA libraries it was built with);
    if not, why is printed."""
    try:
        ct2_path(ckpt, DecodeConfig(max_len=2), 1, device)()  # a GPU's libraries load at the first product
    except (RuntimeError, OSError, ValueError) as error:
        print(f"CTranslate2 on {device}: not measured ({type(error).__name__}: {error})")
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--profile", action="store_true", help="also where the time goes, eager and compiled")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    eager = load_checkpoint(ROOT / "pretrained" / "en-de", args.device)
    fast = load_checkpoint(ROOT / "pretrained" / "en-de", args.device)
    built = compiled_step.prepare(fast.model, wait=True)
    if built.decoder is None:
        print(f"the compiled step was not built: {built.error}")
        return 1
    gpu = f", {torch.cuda.get_device_name()}" if args.device == "cuda" else ""
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus{gpu}, torch {torch.__version__}; compiled step built "
          f"in {built.seconds:.0f} s (rows {compiled_step.WARM_ROWS}); median of {args.repeats}, cases interleaved")
    engine = installed() and ct2_loads(eager, args.device)
    kinds = configs(eager)
    best: dict[str, dict[str, float]] = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        cases: dict[str, Callable[[], object]] = {}
        for search, config in kinds.items():
            cases[f"app path, eager step, {search}"] = app_path(eager, config)
            cases[f"app path, compiled step, {search}"] = app_path(fast, config)
            if engine:
                cases[f"CTranslate2 float32, {search}"] = ct2_path(eager, config, threads, args.device)
        med = medians(cases, args.repeats)
        print(f"\n{threads} intra-op thread{'s' if threads > 1 else ''}: 12 sentences, ms per sentence")
        for name, value in med.items():
            print(f"  {name:38s} {value * 1000 / len(SENTENCES):7.1f}")
            best.setdefault(name, {})[str(threads)] = value
        cases.clear()  # CTranslate2's translators (and their threads) go now, not with the profile below running
    print()
    first, *rest = (str(t) for t in args.threads)
    for search in kinds:
        for step in ("eager", "compiled"):
            name = f"app path, {step} step, {search}"
            for other in rest:
                ratio = best[name][other] / best[name][first]
                verdict = "OK" if ratio <= 1.0 else "MISSED"
                print(f"{name}: {other} threads / {first} = {ratio:.2f}x (target <= 1.0x) {verdict}")
            ct2 = best.get(f"CTranslate2 float32, {search}")
            if ct2:
                ratio = min(best[name].values()) / min(ct2.values())
                print(f"{name} / CTranslate2 float32, each at its best thread count: {ratio:.2f}x "
                      f"(target <= {TARGET}x) {'OK' if ratio <= TARGET else 'MISSED'}")
    if args.profile:
        torch.set_num_threads(1)
        for search, config in kinds.items():
            for step, ckpt in (("eager", eager), ("compiled", fast)):
                parts = profile(ckpt, config)
                total = parts.pop("total")
                print(f"\nwhere the time goes, {step} step, {search} (1 thread, {total * 1000:.0f} ms for 12):")
                for part, seconds in parts.items():
                    print(f"  {part:38s} {seconds * 1000:7.1f} ms  {seconds / total:6.1%}")
            ct2 = best.get(f"CTranslate2 float32, {search}", {}).get("1")
            if args.device == "cpu":  # on a GPU a package's call returns before its kernels end: not timed so
                print(f"\nthe gap, {search} (1 thread): " + gap(fast, config, engine))
                print(f"\nthe floor, {search} (1 thread): " + floor_report(
                    fast, config, best[f"app path, compiled step, {search}"].get("1", float("nan")), ct2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
