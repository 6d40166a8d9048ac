"""Payload and build time of the attention figures, from synthetic attention at 20, 200 and 500 tokens.

    python benchmarks/figures.py [--tokens 20 200 500] [--repeats 3]

Synthetic attention of the shipped model's shape (3 layers x 8 heads): every row is a softmax of random
logits (float32, rows sum to 1, peaky like trained heads: a few keys take most of the weight); the
decoder self-attention is causal (masked weights exactly 0). Pieces are SentencePiece-like, with
repeats and special tokens. Figures, built the way the pages build them:
  * heatmap: decoder self-attention of one head with the causal mask and "this row predicts" (the
    heaviest heatmap the explorer draws)
  * head view: all 8 heads of one layer (the explorer's default "mean" choice) at the default threshold
  * head view, dense: the same with every query spread evenly over 49 keys (weight 1/49 each), about the
    most lines the default threshold 0.02 lets through (50 per query and head); no target, a bound
  * model view: every layer and head
  * attention row (Decoding page) and masked weights (Masks page), no targets
Size = len(fig.to_json()) (deterministic), MB = 10^6 characters; build s = median wall time of --repeats
builds (without the JSON), measured within this run on whatever else the machine is doing, and cpu s =
the median CPU time of the same builds (what the build costs, whatever the load).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.charts.attention import head_view_figure, heatmap_figure, model_view_figure
from app.charts.decoding import attention_row_figure
from app.charts.masks import masked_weights

N_LAYERS, N_HEADS = 3, 8
MB = 1e6
TIME_TARGET_S, TIME_TARGET_TOKENS = 0.2, 200
SIZE_TARGETS_MB = {  # (figure, tokens) -> max fig.to_json() size in MB
    ("heatmap", 200): 0.3,
    ("head view", 200): 1.5,
    ("model view", 200): 3.0,
    ("model view", 500): 8.0,
}
WORDS = ["▁the", "▁a", "▁l", "▁of", "▁and", "▁to", "▁in", "s", "▁is", "ing", "▁house", "▁Haus", "▁die", "▁der",
         "en", "▁und", "er", "▁attention", "▁weight", "▁model", ",", ".", "▁über", "n", "▁ist", "t", "▁Kat", "ze"]


def pieces(n: int, seed: int) -> list[str]:
    """n pieces: random SentencePiece-like words (with repeats) ending in </s>."""
    rng = np.random.default_rng(seed)
    return [str(p) for p in rng.choice(WORDS, size=n - 1)] + ["</s>"]


def attention(shape: tuple[int, ...], seed: int, causal: bool = False) -> np.ndarray:
    """Rows of softmax(random logits) as float32, like the model returns; causal: key > query gets exactly 0."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(shape) * 3.0
    if causal:
        n_q, n_k = shape[-2:]
        logits = np.where(np.tril(np.ones((n_q, n_k), dtype=bool)), logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


def builders(n: int) -> dict[str, object]:
    """figure name -> a function building that figure at n tokens."""
    src = pieces(n, seed=1)
    tgt = pieces(n, seed=2)
    dec_in = ["<s>", *tgt[:-1]]
    causal = np.tril(np.ones((n, n), dtype=bool))
    dec_self = attention((N_LAYERS, N_HEADS, n, n), seed=3, causal=True)
    cross = attention((N_LAYERS, N_HEADS, n, n), seed=4)
    title = "Decoder self-attention · layer 1 · head 1"
    dense = np.zeros((N_HEADS, n, n), dtype=np.float32)
    rng = np.random.default_rng(5)
    for h in range(N_HEADS):
        for i in range(n):
            keys = rng.choice(n, size=min(n, 49), replace=False)
            dense[h, i, keys] = 1.0 / len(keys)
    return {
        "heatmap": lambda: heatmap_figure(dec_self[0, 0], dec_in, dec_in, title=title, predicts=tgt, mask=causal,
                                          query_title="decoder input", key_title="decoder input piece (key)"),
        "head view": lambda: head_view_figure(cross[0], list(range(N_HEADS)), dec_in, src, title="all heads"),
        "head view dense": lambda: head_view_figure(dense, list(range(N_HEADS)), dec_in, src, title="all heads"),
        "model view": lambda: model_view_figure(cross, dec_in, src, title="every layer and head", selected=(1, 2)),
        "attention row": lambda: attention_row_figure(cross[0, 0, n // 2], src, title="row", key_title="key",
                                                      query_label=dec_in[n // 2]),
        "masked weights": lambda: masked_weights(dec_self[0, 0], causal, dec_in, dec_in, "3 · Softmax"),
    }


def measure(build, repeats: int) -> tuple[int, float, float]:
    """(len(fig.to_json()), median wall seconds, median CPU seconds) of building the figure."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fig = build()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return len(fig.to_json()), statistics.median(wall), statistics.median(cpu)


def verdict(name: str, tokens: int, size: int, seconds: float) -> tuple[str, str]:
    """(target text, OK / OVER / "") of one measurement."""
    parts, ok = [], True
    if (name, tokens) in SIZE_TARGETS_MB:
        limit = SIZE_TARGETS_MB[name, tokens]
        parts.append(f"<= {limit:g} MB")
        ok &= size <= limit * MB
    if tokens == TIME_TARGET_TOKENS and any(key[0] == name for key in SIZE_TARGETS_MB):
        parts.append(f"<= {TIME_TARGET_S:g} s")
        ok &= seconds <= TIME_TARGET_S
    return (", ".join(parts), ("OK" if ok else "OVER")) if parts else ("-", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[20, 200, 500])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="figure names to build (default: all)")
    args = parser.parse_args()
    import plotly

    print(f"machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}, "
          f"plotly {plotly.__version__}; synthetic attention {N_LAYERS} layers x {N_HEADS} heads, "
          f"median of {args.repeats} builds")
    print(f"{'figure':16s} {'tokens':>6s} {'JSON MB':>9s} {'build s':>8s} {'cpu s':>6s}  target")
    over = 0
    for n in args.tokens:
        for name, build in builders(n).items():
            if args.only and name not in args.only:
                continue
            size, seconds, cpu = measure(build, args.repeats)
            target, status = verdict(name, n, size, seconds)
            over += status == "OVER"
            print(f"{name:16s} {n:6d} {size / MB:9.3f} {seconds:8.3f} {cpu:6.3f}  {target} {status}".rstrip(),
                  flush=True)
    print(f"{over} measurement(s) over target" if over else "every target met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
