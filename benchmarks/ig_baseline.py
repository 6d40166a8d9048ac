"""Completeness gap of integrated gradients (explain.integrated_gradients) by baseline and number of steps.

    python benchmarks/ig_baseline.py

For each model, the gap (sum of attributions - (f(x) - f(x'))) of the contrastive f = log p(piece) -
log p(alternative) at 8, 32, 64 and 256 Gauss-Legendre steps, from the family's baseline (``baseline_vectors``, what
the app uses) and from zero token vectors (the baseline every family had before), in float64 so that quadrature,
not rounding, is measured; and the seconds per run from the family's baseline at one thread, in float32 as the app
runs it. Models: two tiny random T5s (relative positions, RMSNorm, no biases), built as tests/explain and
tests.bart_helpers.t5_checkpoint build them (the second starts its decoder with <pad>, a zero row), and the shipped
pretrained/en-de on its default sentence at the step that writes "gekauft" (▁gek) against its runner-up and at step 1
(▁Mein against ▁Ein, the first hypothesis beam 3 prunes).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import copy
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch

from explain.integrated_gradients import baseline_name, input_vectors, integrated_gradients
from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig, ModelConfig
from model.network.transformer import Transformer
from model.serving.inference import translate

STEPS = (8, 32, 64, 256)
SENTENCE = "My brother has bought a new house in the city."  # the app's default (app.state.DEFAULTS)


def tiny_t5s() -> list[tuple[str, Transformer, list[tuple[list[int], list[int], int, int]]]]:
    """The two tiny random T5s and the (source ids, prefix ids, piece, alternative) asked of each."""
    tiny = dict(vocab_size=120, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2, d_ff=32, dropout=0.1,
                max_len=64)  # tests.conftest.tiny_config
    t5 = dict(positional_layout="relative", norm="rms", norm_first=True, linear_bias=False, attention_scale=False)
    torch.manual_seed(0)  # tests/explain/test_integrated_gradients.py builds two other models first
    Transformer(ModelConfig(**tiny))
    Transformer(ModelConfig(**tiny, positional_layout="learned", layernorm_embedding=True, scale_embedding=False,
                            activation="gelu"))
    like = Transformer(ModelConfig(**tiny, **t5)).eval()
    torch.manual_seed(0)
    converted = Transformer(ModelConfig(
        vocab_size=121, d_model=32, n_heads=3, head_dim=16, n_encoder_layers=2, n_decoder_layers=2, d_ff=64, pad_id=0,
        unk_id=2, bos_id=0, eos_id=1, tokenizer="hf", activation="gelu_tanh", scale_embedding=False, norm_eps=1e-6,
        ffn_gated=True, tie_output=False, relative_buckets=8, relative_max_distance=16, max_len=64, **t5)).eval()
    return [("tiny T5 (tests/explain, start piece id 2)", copy.deepcopy(like).double(),
             [([3], [2], 4, 5), ([10, 20, 30, 3], [2, 7, 8], 12, 30)]),
            ("tiny converted T5 (start piece <pad>, a zero row)", copy.deepcopy(converted).double(),
             [([10, 20, 30, 1], [0, 7, 8], 12, 30), ([15, 25, 40, 50, 60, 1], [0, 9], 40, 41)])]


def en_de() -> tuple[Transformer, list[tuple[list[int], list[int], int, int, str]]]:
    ckpt = load_checkpoint(ROOT / "pretrained" / "en-de", "cpu")
    t = translate(ckpt.model, ckpt.tokenizer, SENTENCE, DecodeConfig(max_len=60))
    pieces, asked = list(t.target_pieces), []
    for index, alternative in ((pieces.index("▁gek"), None), (0, "▁Ein")):
        step = t.result.steps[index]
        ids, chosen = step.topk_ids[0].tolist(), t.result.best.tokens[index]
        names = ckpt.tokenizer.pieces(ids)
        other = ids[names.index(alternative)] if alternative else next(i for i in ids if i != chosen)
        asked.append((list(t.source.ids), step.prefixes[0].tolist(), chosen, other,
                      f"step {index + 1}: {pieces[index]} vs {ckpt.tokenizer.id_to_piece(other)}"))
    return ckpt.model, asked


def gaps(model: Transformer, source: list[int], prefix: list[int], piece: int, alternative: int) -> None:
    zeros = tuple(torch.zeros_like(x) for x in input_vectors(model, source, prefix))
    for name, baseline in (("the family's", None), ("zero token vectors", zeros)):
        runs = [integrated_gradients(model, source, prefix, piece, alternative, steps=n, baseline=baseline)
                for n in STEPS]
        print(f"| {name} | {runs[0].value - runs[0].baseline_value:.3f} | "
              + " | ".join(f"{r.gap:+.3f}" for r in runs) + " |", flush=True)


def main() -> None:
    torch.set_num_threads(1)
    print(f"{platform.machine()} {platform.system()}, torch {torch.__version__}, 1 thread\n")
    header = "| baseline | f(x) - f(x') | " + " | ".join(f"gap at {n}" for n in STEPS) + " |"
    for title, model, asked in tiny_t5s():
        for source, prefix, piece, alternative in asked:
            print(f"{title}: source {source}, prefix {prefix}, {piece} vs {alternative}; the family's baseline: "
                  f"{baseline_name(model)}\n{header}\n"
                  + "|---" * (2 + len(STEPS)) + "|")
            gaps(model, source, prefix, piece, alternative)
            print()
    model, asked = en_de()
    for source, prefix, piece, alternative, title in asked:
        print(f"en-de, default sentence, {title}; the family's baseline: {baseline_name(model)}\n{header}\n"
              + "|---" * (2 + len(STEPS)) + "|")
        gaps(copy.deepcopy(model).double(), source, prefix, piece, alternative)
        seconds = []
        for n in STEPS:
            start = time.perf_counter()
            integrated_gradients(model, source, prefix, piece, alternative, steps=n)
            seconds.append(time.perf_counter() - start)
        print("float32 seconds: " + ", ".join(f"{n} steps {s:.2f} s" for n, s in zip(STEPS, seconds, strict=True))
              + "\n", flush=True)


if __name__ == "__main__":
    main()
