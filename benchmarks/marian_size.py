"""Decoding speed of a model the size of Marian opus-mt-en-de, with every attention weight captured.

    python benchmarks/marian_size.py [--repeats 5] [--tokens 30] [--threads 1]

A randomly initialised Transformer with opus-mt-en-de's configuration (d_model 512, 8 heads, 6+6 layers, d_ff 2048,
vocabulary 58,101, swish, Marian's positions and final logits bias; speed does not depend on the weights, and the
bias makes </s> impossible so every run generates exactly --tokens tokens). Greedy and beam 4 are timed with full
attention capture (what the app runs) and without, interleaved and repeated, medians reported in ms per token.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import platform
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import medians

from model.decoding.search import beam_search, greedy_decode
from model.network.attention import Capture
from model.network.config import DecodeConfig, ModelConfig
from model.network.transformer import Transformer, count_parameters

OPUS_MT_EN_DE = dict(vocab_size=58101, d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048,
                     max_len=512, pad_id=58100, unk_id=1, bos_id=58100, eos_id=0, activation="swish",
                     positional_layout="halves", final_logits_bias=True, tokenizer="marian")



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Transformer(ModelConfig(**OPUS_MT_EN_DE)).eval()
    with torch.no_grad():
        model.final_logits_bias[model.config.eos_id] = -1e4  # never </s>: exactly --tokens tokens every run
    src = torch.randint(2, 58100, (20,))
    src[-1] = model.config.eos_id
    n = args.tokens
    greedy, beam = DecodeConfig(beam_size=1, max_len=n), DecodeConfig(beam_size=4, max_len=n, length_penalty=0.0)
    assert len(greedy_decode(model, src, greedy, capture=Capture.NONE).best.tokens) == n
    cases = {
        "greedy, every attention": lambda: greedy_decode(model, src, greedy, capture=Capture.WEIGHTS),
        "greedy, no capture": lambda: greedy_decode(model, src, greedy, capture=Capture.NONE),
        "beam 4, every attention": lambda: beam_search(model, src, beam, capture=Capture.WEIGHTS),
        "beam 4, no capture": lambda: beam_search(model, src, beam, capture=Capture.NONE),
    }
    med = medians(cases, args.repeats)
    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}, {args.threads} intra-op thread(s)")
    print(f"model: opus-mt-en-de's size ({count_parameters(model):,} parameters), random weights; source 20 tokens, "
          f"{n} tokens generated; median of {args.repeats}, cases interleaved")
    for name, value in med.items():
        print(f"  {name:26s} {value * 1000:8.1f} ms  {value * 1000 / n:6.2f} ms/token")
    for search in ("greedy", "beam 4"):
        overhead = med[f"{search}, every attention"] / med[f"{search}, no capture"]
        print(f"  attention capture overhead, {search}: {overhead:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
