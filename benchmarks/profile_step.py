"""Where a decoding step's time goes: the measured profile behind the CTranslate2 gap and the capture overhead.

    python benchmarks/profile_step.py [--tokens 30] [--rounds 5]

The model of benchmarks/decode.py (random weights of the shipped size, d_model 256, 8 heads, 3+3 layers, d_ff
1024, vocab 8000; a 20-piece source; exactly --tokens tokens generated), greedy on one intra-op thread, with
and without attention capture, under torch.profiler. Printed per generated token:
  * wall time, and the number of ATen operator calls (nested calls counted: aten::linear calls aten::addmm)
  * self CPU time of the operators by family: the linear layers (weights read from memory), the attention
    arithmetic, the KV cache's concatenations, layer norms and activations, the rest
  * the time outside any operator: Python, nn.Module calls and dispatch (wall - operators)
  * the weights a step reads (decoder layers without the cross-attention's W^K, W^V, which run once, and the
    output layer) and the rate at which the linear layers get through them
The two modes are profiled in alternation, decode by decode, so load bursts hit both. Profiling adds its own
cost per operator call, so the shares (not the absolute times) are what to read; benchmarks/decode.py gives
the unprofiled times and the ratio to CTranslate2.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.decoding.search import greedy_decode
from model.network.attention import Capture
from model.network.config import DecodeConfig, ModelConfig
from model.network.transformer import Transformer

FAMILIES = {  # ATen operator -> family (anything else is "other")
    "linear": ("aten::linear", "aten::addmm", "aten::mm"),
    "attention arithmetic": ("aten::baddbmm", "aten::bmm", "aten::matmul", "aten::softmax", "aten::_softmax",
                             "aten::masked_fill", "aten::masked_fill_", "aten::scaled_dot_product_attention",
                             "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::mul", "aten::div"),
    "KV cache concatenation": ("aten::cat",),
    "layer norm, activation, residual": ("aten::layer_norm", "aten::native_layer_norm", "aten::relu", "aten::add",
                                         "aten::gelu", "aten::silu"),
    "next token: log-softmax, top-k, argmax": ("aten::log_softmax", "aten::_log_softmax", "aten::topk",
                                               "aten::argmax"),
    "views, reshapes and copies (bookkeeping)": ("aten::expand", "aten::as_strided", "aten::view", "aten::reshape",
                                                 "aten::t", "aten::transpose", "aten::copy_", "aten::empty",
                                                 "aten::select", "aten::resolve_conj", "aten::unsqueeze",
                                                 "aten::slice", "aten::contiguous", "aten::clone",
                                                 "aten::empty_like", "aten::_unsafe_view", "aten::detach"),
}


def shipped_size_model() -> tuple[Transformer, torch.Tensor]:
    """benchmarks/decode.py's model and source (the EOS row zeroed: every run generates the same count)."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=8000, d_model=256, n_heads=8, n_encoder_layers=3,
                                    n_decoder_layers=3, d_ff=1024)).eval()
    with torch.no_grad():
        model.embed.token.weight[model.config.eos_id].zero_()
    src = torch.randint(4, 8000, (20,))
    src[-1] = model.config.eos_id
    return model, src


def step_weight_bytes(model: Transformer) -> int:
    """Bytes of weights one decoding step reads: every decoder layer except the cross-attention's W^K and W^V
    (applied once to the encoder output) plus the shared output layer."""
    decoder = sum(p.numel() * p.element_size() for name, p in model.decoder.named_parameters()
                  if ".cross_attn.w_k." not in name and ".cross_attn.w_v." not in name)
    output = model.embed.token.weight.numel() * model.embed.token.weight.element_size()
    return decoder + output


def profiled(model: Transformer, src: torch.Tensor, config: DecodeConfig, rounds: int
             ) -> dict[bool, tuple[float, dict[str, float], int]]:
    """Per capture mode (False, True): the median wall seconds of a decode, the self CPU seconds per operator
    family and the ATen calls (both per decode), from ``rounds`` decodes of each, profiled in alternation."""
    family_of = {op: family for family, ops in FAMILIES.items() for op in ops}
    walls: dict[bool, list[float]] = {False: [], True: []}
    families: dict[bool, dict[str, float]] = {False: defaultdict(float), True: defaultdict(float)}
    calls = {False: 0, True: 0}
    for capture in (False, True):
        greedy_decode(model, src, config, capture=Capture.WEIGHTS if capture else Capture.NONE)  # warm-up
    for _ in range(rounds):
        for capture in (False, True):
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                start = time.perf_counter()
                greedy_decode(model, src, config, capture=Capture.WEIGHTS if capture else Capture.NONE)
                walls[capture].append(time.perf_counter() - start)
            for event in prof.key_averages():
                if event.key.startswith("aten::"):
                    families[capture][family_of.get(event.key, "other operators")] += \
                        event.self_cpu_time_total / 1e6 / rounds
                    calls[capture] += event.count
    return {capture: (statistics.median(walls[capture]), dict(families[capture]), calls[capture] // rounds)
            for capture in (False, True)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, src = shipped_size_model()
    config = DecodeConfig(beam_size=1, max_len=args.tokens)
    n = len(greedy_decode(model, src, config, capture=Capture.NONE).best.tokens)
    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
          f"torch {torch.__version__}, 1 intra-op thread, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(f"greedy, {n} tokens from a 20-piece source, model of the shipped size; median of {args.rounds} profiled "
          "decodes; per generated token (the encoder's one pass included, spread over the tokens):")
    rows = profiled(model, src, config, args.rounds)
    for capture, (wall, families, calls) in rows.items():
        label = "with every attention captured" if capture else "without capture"
        operators = sum(families.values())
        print(f"\n  {label}: {wall / n * 1000:.2f} ms per token (profiled), {calls / n:.0f} ATen calls per token")
        for family, seconds in sorted(families.items(), key=lambda item: -item[1]):
            print(f"    {family:42s} {seconds / n * 1000:6.3f} ms  {seconds / wall:5.1%}")
        outside = max(wall - operators, 0.0)
        print(f"    {'outside operators (Python, modules)':42s} {outside / n * 1000:6.3f} ms  {outside / wall:5.1%}")
    weights = step_weight_bytes(model)
    (wall_off, fam_off, calls_off), (wall_on, fam_on, calls_on) = rows[False], rows[True]
    linear = fam_off.get("linear", 0.0) / n
    bookkeeping = "views, reshapes and copies (bookkeeping)"
    dispatch = (wall_off - sum(fam_off.values()) + fam_off.get(bookkeeping, 0.0)) / n
    print(f"\n  without capture: Python, dispatch and tensor bookkeeping (outside operators + views and copies) "
          f"{dispatch * 1000:.2f} ms per token ({dispatch * n / wall_off:.0%}), the linear layers "
          f"{linear * 1000:.2f} ms ({linear * n / wall_off:.0%}); a C++ engine such as CTranslate2 pays no per-call "
          "Python or dispatch cost")
    print(f"  weights read per step: {weights / 1e6:.1f} MB, which the linear layers get through at "
          f"{weights / linear / 1e9:.1f} GB/s ({linear * 1000:.2f} ms per token)")
    print(f"  capture adds {(calls_on - calls_off) / n:.0f} ATen calls and "
          f"{(wall_on - wall_off) / n * 1000:+.2f} ms per token (profiled): attention arithmetic "
          f"{(fam_on.get('attention arithmetic', 0) - fam_off.get('attention arithmetic', 0)) / n * 1000:+.3f} ms, "
          "other operators "
          f"{(fam_on.get('other operators', 0) - fam_off.get('other operators', 0)) / n * 1000:+.3f} ms, "
          "outside operators "
          f"{((wall_on - sum(fam_on.values())) - (wall_off - sum(fam_off.values()))) / n * 1000:+.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
