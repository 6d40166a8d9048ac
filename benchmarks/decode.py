"""Decoding speed, as ratios measured within one run (the machine is shared and noisy).

    python benchmarks/decode.py [--repeats 5] [--tokens 30] [--threads N]

A model of the shipped size (d_model 256, 8 heads, 3+3 layers, d_ff 1024, vocab 8000), randomly
initialised (speed does not depend on the weights; the EOS row is zeroed so every run generates
exactly --tokens tokens). Measured, interleaved and repeated, medians reported:
  * attention capture: greedy and beam 4 with return_attention=True vs False (target <= 1.15x)
  * KV cache: greedy with the cache vs re-running the whole model on (source, prefix) every step, the
    simplest decoder (target >= 3x); also vs a decoder-only re-run that keeps the encoder output, and at
    120 tokens, where the prefix work dominates
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.config import DecodeConfig, ModelConfig
from model.decoding import beam_search, greedy_decode
from model.masks import decoder_self_mask
from model.transformer import Transformer


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
        hidden, _, _ = model.decoder(model.embed(prefix), memory_kv, decoder_self_mask(prefix, model.config.pad_id),
                                     src_mask)
        token = model.logits(hidden[:, -1]).argmax(-1, keepdim=True)  # [1, 1]
        prefix = torch.cat([prefix, token], dim=1)
    return prefix[0, 1:].tolist()


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--long-tokens", type=int, default=120, help="a second KV-cache comparison at this length")
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=8000, d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3,
                                    d_ff=1024)).eval()
    with torch.no_grad():
        model.embed.token.weight[model.config.eos_id].zero_()
    src = torch.randint(4, 8000, (20,))
    src[-1] = model.config.eos_id
    n = args.tokens
    greedy, beam = DecodeConfig(beam_size=1, max_len=n), DecodeConfig(beam_size=4, max_len=n)
    cases = {
        "greedy, capture": lambda: greedy_decode(model, src, greedy, return_attention=True),
        "greedy, no capture": lambda: greedy_decode(model, src, greedy, return_attention=False),
        "beam 4, capture": lambda: beam_search(model, src, beam, return_attention=True),
        "beam 4, no capture": lambda: beam_search(model, src, beam, return_attention=False),
        "greedy, full forward": lambda: greedy_full_forward(model, src, n),
        "greedy, no KV cache": lambda: greedy_without_cache(model, src, n),
        f"greedy {args.long_tokens} tokens": lambda: greedy_decode(
            model, src, DecodeConfig(max_len=args.long_tokens), return_attention=False),
        f"greedy {args.long_tokens}, no cache": lambda: greedy_without_cache(model, src, args.long_tokens),
    }
    produced = len(greedy_decode(model, src, greedy, return_attention=False).best.tokens)
    cached = greedy_decode(model, src, greedy, False).best.tokens
    assert cached == tuple(greedy_without_cache(model, src, n)) == tuple(greedy_full_forward(model, src, n)), \
        "cached and uncached greedy disagree"
    for fn in cases.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    med = {name: statistics.median(values) for name, values in times.items()}
    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(f"model: d_model 256, 8 heads, 3+3 layers, d_ff 1024, vocab 8000; source 20 tokens; "
          f"{produced} tokens generated; median of {args.repeats}")
    for name, value in med.items():
        count = args.long_tokens if str(args.long_tokens) in name else produced
        print(f"  {name:24s} {value * 1000:8.1f} ms  {value * 1000 / count:6.2f} ms/token")
    capture_greedy = med["greedy, capture"] / med["greedy, no capture"]
    capture_beam = med["beam 4, capture"] / med["beam 4, no capture"]
    full = med["greedy, full forward"] / med["greedy, no capture"]
    cache = med["greedy, no KV cache"] / med["greedy, no capture"]
    print(f"attention capture overhead, greedy: {capture_greedy:.2f}x (target <= 1.15x) "
          f"{'OK' if capture_greedy <= 1.15 else 'MISSED'}")
    print(f"attention capture overhead, beam 4: {capture_beam:.2f}x (target <= 1.15x) "
          f"{'OK' if capture_beam <= 1.15 else 'MISSED'}")
    long = med[f"greedy {args.long_tokens}, no cache"] / med[f"greedy {args.long_tokens} tokens"]
    print(f"KV cache speed-up, greedy {n} tokens, vs re-running the whole model on the prefix: {full:.2f}x "
          f"(target >= 3x) {'OK' if full >= 3 else 'MISSED'}")
    print(f"KV cache speed-up, greedy {n} tokens, vs re-running only the decoder on the prefix: {cache:.2f}x")
    print(f"KV cache speed-up, greedy {args.long_tokens} tokens: {long:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
