"""Cost of the Heads and attribution page's numbers, as ratios to one teacher-forced forward of the same sentence.

    python benchmarks/heads.py [--repeats 7] [--threads 1]

On the shipped en-de model (pretrained/en-de, CPU) and a sentence of 20 source pieces whose greedy translation
is 20 pieces (</s> counted in both). Measured, interleaved and repeated, medians reported:
  * forward: Transformer.forward(src, decoder input) without capture, no gradient (the unit)
  * head importance: explain.heads.head_importance, every head of the model switched off alone, exact: 72 rows
    that join one batched teacher-forced pass at their own layer's attention, from the unmasked pass (a
    staircase), the output layer in chunks of 2^20 logits; timed on one worker thread (like for like with the
    forward) and as the app runs it, on a worker per usable core (the encoder's rows beside the decoder's); target
    <= 10x
  * head importance, one head at a time: 73 separate teacher-forced passes (the loop the batch replaces)
  * output layer alone, 72 rows: the shared output layer and log-softmax over the vocabulary for the 72 rows'
    decoder states, precomputed, in the same chunks: the part of the table no reuse of layers can shrink
  * attribution: explain.attribution.attribute (one forward at the "internals" level for rollout and norms, one
    batched forward and backward for gradient x input), the Attribution section's whole cost
The app runs each session's model calls on one intra-op thread (streamlit_app.py), so 1 thread is the default;
with --threads 2 both the forward and the table use two intra-op threads (like for like again).
Also printed: the arithmetic of the table against one forward's (torch's FlopCounterMode) and what one core's
fp32 matmul peak (a 2048^3 sgemm) would make of it: exact drops cannot cost less than that many forwards' work.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import platform
import sys
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import medians

from explain.ablation import switched_off
from explain.attribution import attribute
from explain.heads import all_heads, head_importance, n_layers_of, piece_log_probs, sequence_log_probs, usable_cores
from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig
from model.serving.inference import translate

SENTENCE = "We went home early because it was raining and the streets were wet and cold."  # 20 + 20 pieces
TARGET = 10.0




def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ckpt = load_checkpoint(ROOT / "pretrained" / "en-de", torch.device("cpu"))
    model = ckpt.model
    translation = translate(model, ckpt.tokenizer, SENTENCE, DecodeConfig())
    source, output = translation.source.ids, translation.target_ids
    src = torch.tensor([source])  # [1, S]
    tgt = torch.tensor([[model.config.bos_id, *output[:-1]]])  # [1, T]
    layers, n_heads = n_layers_of(model), model.config.n_heads
    heads = all_heads(layers, n_heads)
    masks = [switched_off(model, [head]) for head in heads]

    @torch.no_grad()
    def forward() -> None:
        model(src, tgt)

    with torch.no_grad():
        hidden = model.decoder(model.embed(tgt, side="decoder"), model.memory_key_values(model.encode(src)[0]),
                               None, None)[0]
    rows = hidden.expand(len(heads), -1, -1).contiguous()  # [72, T, D]
    target = torch.tensor(list(output)).expand(rows.size(0), -1)  # [72, T]

    @torch.no_grad()
    def output_layer() -> None:
        piece_log_probs(model, rows.flatten(0, 1), target.flatten())

    def one_at_a_time() -> None:
        sequence_log_probs(model, source, output)
        for mask in masks:
            sequence_log_probs(model, source, output, mask)

    cores = usable_cores()
    cases = {
        "forward": forward,
        "head importance (batched, 1 worker)": lambda: head_importance(model, source, output, workers=1),
        f"head importance (batched, {cores} workers, as the app)": lambda: head_importance(model, source, output),
        "head importance, one head at a time": one_at_a_time,
        "output layer alone, 72 rows": output_layer,
        "attribution (rollout, norms, gradient x input)": lambda: attribute(model, source, output),
    }
    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}, "
          f"{args.threads} intra-op thread(s), OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(f"model: pretrained/en-de ({len(heads)} heads); sentence: {len(source)} source pieces, {len(output)} output "
          f"pieces (</s> included); median of {args.repeats}, cases interleaved")
    med = medians(cases, args.repeats)
    unit = med["forward"]
    for name, value in med.items():
        print(f"  {name:48s} {value * 1000:9.1f} ms  {value / unit:7.1f}x forward")
    with FlopCounterMode(display=False) as one, torch.no_grad():
        model(src, tgt)
    with FlopCounterMode(display=False) as table:
        head_importance(model, source, output, workers=1)
    square = torch.randn(2048, 2048)
    peak = 2 * 2048 ** 3 / medians({"sgemm": lambda: square @ square}, args.repeats)["sgemm"]  # FLOP/s
    serial = med["head importance (batched, 1 worker)"]
    work = table.get_total_flops() / one.get_total_flops()
    print(f"arithmetic: the table {table.get_total_flops() / 1e9:.2f} GFLOP = {work:.1f}x one forward's "
          f"({one.get_total_flops() / 1e9:.2f} GFLOP); the forward runs at {one.get_total_flops() / unit / 1e9:.0f} "
          f"GFLOP/s, the table at {table.get_total_flops() / serial / 1e9:.0f}, "
          f"a 2048^3 sgemm at {peak / 1e9:.0f}: at that peak the table would take "
          f"{table.get_total_flops() / peak / unit:.1f}x one forward")
    for label, seconds in (("on 1 worker, like for like", serial),
                           (f"on {cores} workers, as the app runs it", med[f"head importance (batched, {cores} "
                                                                          f"workers, as the app)"])):
        ratio = seconds / unit
        print(f"head importance / one forward, {label}: {ratio:.1f}x (target <= {TARGET:.0f}x) "
              f"{'OK' if ratio <= TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
