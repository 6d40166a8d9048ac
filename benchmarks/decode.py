"""Decoding speed, as ratios measured within one run (the machine is shared and noisy).

    python benchmarks/decode.py [--repeats 5] [--tokens 30] [--threads 1 2] [--no-engines]
    python benchmarks/decode.py --sessions [--repeats 5]

A model of the shipped size (d_model 256, 8 heads, 3+3 layers, d_ff 1024, vocab 8000), randomly
initialised (speed does not depend on the weights; the EOS row is zeroed so every run generates
exactly --tokens tokens). Measured, interleaved and repeated, medians reported, for each thread count:
  * attention capture: greedy and beam 4 with capture=Capture.WEIGHTS vs False (target <= 1.05x)
  * other engines on a model of the same size, when installed (pip install -r requirements-bench.txt):
    CTranslate2 float32 and int8 (no attention; it returns one averaged cross-attention at most) and
    Hugging Face Marian with output_attentions (eager attention); target: our greedy and beam 4 with every
    attention captured <= CTranslate2 float32 without attention
  * the compiled static-cache step (model/serving/step_package.py): the same decodes with the step compiled ahead of
  time (AOTInductor, frozen weights), against the eager step and CTranslate2
  * throughput for a room: N = 1, 4, 16 sentences decoded one at a time, as one batch (model/decoding/batch_decoding.py,
    eager and compiled) and by CTranslate2's translate_batch, in sentences per second (target >= 0.8x at N = 16)
  * N concurrent sessions through the app's scheduler (--sessions: only this row): N = 1, 4, 16 threads, each a
    session translating its own sentence greedily with the shipped model (pretrained/en-de, 1 intra-op thread),
    through the app's two decoding slots (app.serving.scheduler.DecodeSlots): one at a time per slot vs batched by
    model.serving.batch_queue (what the app does for greedy requests), in sentences per second
  * KV cache: greedy with the cache vs re-running the whole model on (source, prefix) every step, the
    simplest decoder (target >= 3x); also vs a decoder-only re-run that keeps the encoder output, and at
    120 tokens, where the prefix work dominates
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import itertools
import platform
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines import ct2_batch, engine_cases
from timing import medians

from app.serving.scheduler import MAX_CONCURRENT_TRANSLATIONS, DecodeSlots
from model.checkpoints.files import load_checkpoint
from model.decoding.batch_decoding import greedy_batch
from model.decoding.search import beam_search, greedy_decode
from model.decoding.static_cache import StaticCacheDecoder
from model.network.attention import Capture
from model.network.config import DecodeConfig, ModelConfig
from model.network.masks import decoder_self_mask
from model.network.transformer import Transformer
from model.network.weight_layout import lay_out_for_decoding
from model.serving.batch_queue import BatchQueue
from model.serving.inference import decode_rules, planned, translate
from model.serving.step_package import add_packages


@torch.inference_mode()
def greedy_full_forward(model: Transformer, src: torch.Tensor, n_tokens: int) -> list[int]:
    """The simplest decoder anyone writes: run the whole model on (source, prefix) every step and keep the
    last position's logits (re-encodes the source, recomputes every key and value)."""
    prefix = torch.tensor([[model.config.bos_id]])
    for _ in range(n_tokens):
        token = model(src[None], prefix)[:, -1].argmax(-1, keepdim=True)  # [1, 1]
        prefix = torch.cat([prefix, token], dim=1)
    return prefix[0, 1:].tolist()


@torch.inference_mode()
def greedy_without_cache(model: Transformer, src: torch.Tensor, n_tokens: int) -> list[int]:
    """A careful decoder without a cache: encoder and its cross-attention keys/values once, but every step
    re-runs all decoder layers over the whole prefix."""
    memory, src_mask, _ = model.encode(src[None])
    memory_kv = model.memory_key_values(memory)
    prefix = torch.tensor([[model.config.bos_id]])
    for _ in range(n_tokens):
        hidden, _, _ = model.decoder(model.embed(prefix, side="decoder"), memory_kv,
                                     decoder_self_mask(prefix, model.config.pad_id), src_mask)
        token = model.logits(hidden[:, -1]).argmax(-1, keepdim=True)  # [1, 1]
        prefix = torch.cat([prefix, token], dim=1)
    return prefix[0, 1:].tolist()




def room_throughput(model: Transformer, compiled: StaticCacheDecoder, config: DecodeConfig, args: argparse.Namespace,
                    threads: int, dims: dict[str, int]) -> None:
    """Sentences per second when N requests arrive together: one at a time (the eager step, as the app decodes
    today), as one batch (eager and compiled), and CTranslate2's translate_batch on the same sentences (target:
    ours >= 0.8x of it at N = 16). Every sentence keeps its own attention (tests/model/test_batch_decoding.py)."""
    torch.set_num_threads(threads)
    generator = torch.Generator().manual_seed(1)
    print(f"\nThroughput, {threads} thread{'s' if threads > 1 else ''}: N sentences of 10-30 pieces, greedy, "
          f"{config.max_len} tokens each, every attention captured (CTranslate2: none); sentences per second")
    for n in args.batches:
        sources = [torch.randint(4, 8000, (int(torch.randint(10, 31, (1,), generator=generator)),),
                                 generator=generator) for _ in range(n)]
        for src in sources:
            src[-1] = model.config.eos_id
        cases = {
            "one at a time": lambda: [greedy_decode(model, src, config) for src in sources],  # noqa: B023
            "one batch": lambda: greedy_batch(model, sources, config),  # noqa: B023
            "one batch, compiled": lambda: greedy_batch(compiled, sources, config),  # noqa: B023
        }
        if not args.no_engines and (ct2 := ct2_batch([s.tolist() for s in sources], config.max_len, threads, **dims)):
            cases["CTranslate2 float32 translate_batch"] = ct2
        med = medians(cases, args.repeats)
        rates = {name: n / value for name, value in med.items()}
        print(f"  N = {n:2d}: " + ", ".join(f"{name} {rate:6.1f}/s" for name, rate in rates.items()))
        ct2_rate = rates.get("CTranslate2 float32 translate_batch")
        if ct2_rate:
            best = max(rates["one batch"], rates["one batch, compiled"])
            print(f"         ours best / CTranslate2: {best / ct2_rate:.2f}x (target >= 0.8x at N = 16) "
                  f"{verdict(best / ct2_rate, 0.8, larger_is_better=True)}")


ROOM = ["Yesterday I bought a new car.", "I have never seen this film.", "I don't know where my keys are.",
        "We have not seen the new film yet.", "My sister lives in a small house in the village.",
        "The train to Berlin leaves at eight o'clock.", "Can you tell me the way to the station?",
        "The children are playing in the garden.", "She has read the book that you gave her yesterday.",
        "My brother has bought a new house in the city.", "It is raining, so we stay at home today.",
        "The weather is nice today.", "He works in a hospital near the river.", "I would like a cup of tea.",
        "Our teacher explained the lesson again.", "The shop opens at nine in the morning."]  # 16 sessions' own


def in_threads(work: Callable[[str], object], texts: list[str]) -> None:
    """work(text) in one thread per text, all started at once (a room pressing Translate), until all are done."""
    threads = [threading.Thread(target=work, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def app_sessions(args: argparse.Namespace) -> None:
    """Sentences per second when N sessions ask for N different greedy translations at once, on the shipped model
    through the app's two decoding slots: each decoding alone in a slot (the app's path before issue 34, and still
    beam search's), or through model.serving.batch_queue as the app now does (the leader holds one slot, every request
    queued by then decodes in its batch). Every translation keeps all its attention, each exactly its own."""
    torch.set_num_threads(1)
    ckpt = load_checkpoint(ROOT / "pretrained" / "en-de")
    model, tokenizer = ckpt.model, ckpt.tokenizer
    config = DecodeConfig(max_len=60, **decode_rules(tokenizer, ckpt.meta))  # the Translate page's default request
    slots = DecodeSlots(MAX_CONCURRENT_TRANSLATIONS)
    sizes: list[tuple[int, ...]] = []  # the batches each room was decoded in

    def alone(text: str) -> None:
        with slots.slot():
            translate(model, tokenizer, text, config)

    def batched(queue: BatchQueue) -> Callable[[str], object]:
        return lambda text: queue.translate(model, tokenizer, *planned(model, tokenizer, text, config), slots.slot)

    def room(texts: list[str]) -> None:
        queue = BatchQueue()
        in_threads(batched(queue), texts)
        sizes.append(tuple(queue.batch_sizes))

    print(f"\nN concurrent sessions through the app's scheduler: pretrained/en-de, greedy, max_len 60, 1 intra-op "
          f"thread, {slots.limit} decoding slots, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; sentences/s")
    for n in args.batches:
        texts = ROOM[:n]
        sizes.clear()
        med = medians({"one at a time (2 slots)": lambda: in_threads(alone, texts),  # noqa: B023
                       "batched (scheduler)": lambda: room(texts)}, args.repeats)  # noqa: B023
        rates = {name: n / value for name, value in med.items()}
        print(f"  N = {n:2d}: " + ", ".join(f"{name} {rate:6.1f}/s" for name, rate in rates.items())
              + f"; batched / one at a time {rates['batched (scheduler)'] / rates['one at a time (2 slots)']:.2f}x"
              + f"; batch sizes {sorted(set(sizes))}")


def verdict(value: float, target: float, larger_is_better: bool = False) -> str:
    return "OK" if (value >= target if larger_is_better else value <= target) else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--long-tokens", type=int, default=120, help="a second KV-cache comparison at this length")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="intra-op thread counts to compare")
    parser.add_argument("--no-engines", action="store_true", help="skip CTranslate2 and Hugging Face")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16],
                        help="concurrent sentences decoded as one batch (throughput for a room)")
    parser.add_argument("--sessions", action="store_true",
                        help="only the row of N concurrent sessions through the app's scheduler")
    args = parser.parse_args()
    if args.sessions:
        app_sessions(args)
        return 0
    torch.manual_seed(0)
    dims = dict(d_model=256, heads=8, layers=3, d_ff=1024)
    model = Transformer(ModelConfig(vocab_size=8000, d_model=dims["d_model"], n_heads=dims["heads"],
                                    n_encoder_layers=dims["layers"], n_decoder_layers=dims["layers"],
                                    d_ff=dims["d_ff"])).eval()
    lay_out_for_decoding(model)  # as load_checkpoint lays out every model it loads for the CPU
    with torch.no_grad():
        model.embed.token.weight[model.config.eos_id].zero_()
    src = torch.randint(4, 8000, (20,))
    src[-1] = model.config.eos_id
    n = args.tokens
    greedy, beam = DecodeConfig(beam_size=1, max_len=n), DecodeConfig(beam_size=4, max_len=n)
    produced = len(greedy_decode(model, src, greedy, capture=Capture.NONE).best.tokens)
    compiled = StaticCacheDecoder(model)
    warm_up = time.perf_counter()
    rows = sorted({1, 4, *args.batches})  # greedy, beam 4 and each room's batch: a package per row count
    add_packages(compiled, src, rows)
    for config in (greedy, beam):
        assert beam_search(compiled, src, config).best.tokens == beam_search(model, src, config).best.tokens, \
            "the compiled static-cache step and the eager step disagree"
    print(f"compiled static-cache step (model/serving/step_package.py): rows {rows} built or loaded in "
          f"{time.perf_counter() - warm_up:.0f} s")
    cached = greedy_decode(model, src, greedy, False).best.tokens
    assert cached == tuple(greedy_without_cache(model, src, n)) == tuple(greedy_full_forward(model, src, n)), \
        "cached and uncached greedy disagree"
    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(f"model: d_model 256, 8 heads, 3+3 layers, d_ff 1024, vocab 8000; source 20 tokens; "
          f"{produced} tokens generated; median of {args.repeats}, cases interleaved")
    per_thread = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        cases = {
            "ours greedy, capture": lambda: greedy_decode(model, src, greedy, capture=Capture.WEIGHTS),
            "ours greedy, no capture": lambda: greedy_decode(model, src, greedy, capture=Capture.NONE),
            "ours beam 4, capture": lambda: beam_search(model, src, beam, capture=Capture.WEIGHTS),
            "ours beam 4, no capture": lambda: beam_search(model, src, beam, capture=Capture.NONE),
            "compiled greedy, capture": lambda: greedy_decode(compiled, src, greedy, capture=Capture.WEIGHTS),
            "compiled greedy, no capture": lambda: greedy_decode(compiled, src, greedy, capture=Capture.NONE),
            "compiled beam 4, capture": lambda: beam_search(compiled, src, beam, capture=Capture.WEIGHTS),
            "compiled beam 4, no capture": lambda: beam_search(compiled, src, beam, capture=Capture.NONE),
        }
        if not args.no_engines:
            cases |= engine_cases(src.tolist(), produced, threads, **dims)
        med = per_thread[threads] = medians(cases, args.repeats)
        print(f"\n{threads} intra-op thread{'s' if threads > 1 else ''}:")
        for name, value in med.items():
            print(f"  {name:32s} {value * 1000:8.1f} ms  {value * 1000 / produced:6.2f} ms/token")
        for engine, search in itertools.product(("ours", "compiled"), ("greedy", "beam 4")):
            overhead = med[f"{engine} {search}, capture"] / med[f"{engine} {search}, no capture"]
            print(f"  attention capture overhead, {engine} {search}: {overhead:.2f}x (target <= 1.05x) "
                  f"{verdict(overhead, 1.05)}")
            ct2 = med.get(f"CTranslate2 float32, {search}")
            if ct2:
                ratio = med[f"{engine} {search}, capture"] / ct2
                print(f"  {engine} {search} with every attention / CTranslate2 float32 without: {ratio:.2f}x "
                      f"(target <= 1.0x) {verdict(ratio, 1.0)}")
        for search in ("greedy", "beam 4"):
            speedup = med[f"ours {search}, capture"] / med[f"compiled {search}, capture"]
            print(f"  compiled static-cache step vs the eager step, {search} with capture: {speedup:.2f}x faster")
    for threads in args.threads:
        room_throughput(model, compiled, greedy, args, threads, dims)
    app_sessions(args)
    if len(per_thread) > 1:
        first, *rest = args.threads
        for other in rest:
            for name in ("ours greedy, capture", "ours beam 4, capture", "compiled greedy, capture",
                         "compiled beam 4, capture"):
                ratio = per_thread[other][name] / per_thread[first][name]
                print(f"{name}: {other} threads / {first} thread(s) = {ratio:.2f}x")
    torch.set_num_threads(args.threads[0])
    cache_cases = {
        "greedy, no capture": lambda: greedy_decode(model, src, greedy, capture=Capture.NONE),
        "greedy, full forward": lambda: greedy_full_forward(model, src, n),
        "greedy, no KV cache": lambda: greedy_without_cache(model, src, n),
        f"greedy {args.long_tokens} tokens": lambda: greedy_decode(
            model, src, DecodeConfig(max_len=args.long_tokens), capture=Capture.NONE),
        f"greedy {args.long_tokens}, no cache": lambda: greedy_without_cache(model, src, args.long_tokens),
    }
    med = medians(cache_cases, args.repeats)
    full = med["greedy, full forward"] / med["greedy, no capture"]
    cache = med["greedy, no KV cache"] / med["greedy, no capture"]
    long = med[f"greedy {args.long_tokens}, no cache"] / med[f"greedy {args.long_tokens} tokens"]
    print(f"\nKV cache speed-up ({args.threads[0]} thread(s)), greedy {n} tokens, vs re-running the whole model on the "
          f"prefix: {full:.2f}x (target >= 3x) {verdict(full, 3.0, larger_is_better=True)}")
    print(f"KV cache speed-up, greedy {n} tokens, vs re-running only the decoder on the prefix: {cache:.2f}x")
    print(f"KV cache speed-up, greedy {args.long_tokens} tokens: {long:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
