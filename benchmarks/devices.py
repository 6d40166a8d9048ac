"""The same decodes on CUDA and on the CPU: the same pieces, the same attention, and the speed ratio.

    python benchmarks/devices.py [--limit 0] [--json FILE]        # on a machine with CUDA (a lent GPU)
    python benchmarks/devices.py --device cpu                      # the script itself, CPU against CPU

On the shipped en-de model (pretrained/en-de) and our own sentences (data/everyday.tsv, data/names_numbers.tsv), each
decoded as the app decodes it (model.serving.inference.translate, every attention captured), once on the CPU and once on
the other device: greedy, beam 4, beam 4 keeping names and numbers (the checkpoint's copy lexicon), and sampling with
a seed; and the evaluation's batched greedy (training.evaluate.translate_many, no attention). Per mode: how many
sentences get the same pieces on both, the largest difference between their attention weights where they do
(post-softmax, every layer, head and kind), the seconds each device took and their ratio.

Sums are ordered differently on the two devices, so a near-tie can go to another piece; agreement is reported, not
asserted. A seeded sample is compared on the device with itself (CUDA and the CPU draw from different generators):
the same seed must give the same pieces there. A mode that raises on the device fails the script (exit 1).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig, Sampling
from model.serving.device import resolve_device
from model.serving.inference import Translation, translate
from training.evaluate import translate_many


def sentences(limit: int) -> list[str]:
    texts = [*pd.read_csv(ROOT / "data" / "everyday.tsv", sep="\t", keep_default_na=False)["en"],
             *pd.read_csv(ROOT / "data" / "names_numbers.tsv", sep="\t", keep_default_na=False)["en"]]
    return texts[:limit] if limit else texts


def attention_gap(a: Translation, b: Translation) -> float:
    """The largest |difference| between two translations' attention weights (same pieces, so same shapes)."""
    gap = 0.0
    for kind in ("enc_self", "dec_self", "cross"):
        for x, y in zip(getattr(a.trace, kind), getattr(b.trace, kind), strict=True):
            gap = max(gap, float((x.cpu() - y.cpu()).abs().max()))
    return gap


def timed(run):
    start = time.perf_counter()
    out = run()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="the device compared with the CPU (cuda, cuda:N or cpu)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N sentences (0 = all 126)")
    parser.add_argument("--threads", type=int, default=4, help="the CPU side's threads")
    parser.add_argument("--json", help="write the table here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    cpu, other = (load_checkpoint(ROOT / "pretrained" / "en-de", d) for d in ("cpu", device))
    texts = sentences(args.limit)
    alpha = cpu.length_penalty
    modes = {"greedy": DecodeConfig(max_len=100),
             "beam 4": DecodeConfig(beam_size=4, max_len=100, length_penalty=alpha),
             "beam 4, keeping names": DecodeConfig(beam_size=4, max_len=100, length_penalty=alpha, keep_words=True)}
    rows, failed = [], False
    for mode, config in modes.items():
        def run(ckpt, config=config):
            return [translate(ckpt.model, ckpt.tokenizer, t, config, lexicon=ckpt.copy_lexicon) for t in texts]
        ours, cpu_s = timed(lambda: run(cpu))
        try:
            theirs, dev_s = timed(lambda: run(other))
        except Exception as exc:  # the point of the script: say which mode breaks on the device, and go on
            rows.append({"mode": mode, "error": f"{type(exc).__name__}: {exc}"[:300]})
            failed = True
            continue
        same = [(a, b) for a, b in zip(ours, theirs, strict=True) if a.target_ids == b.target_ids]
        rows.append({"mode": mode, "same pieces": f"{len(same)}/{len(texts)}",
                     "max attention gap": max((attention_gap(a, b) for a, b in same), default=0.0),
                     "cpu s": round(cpu_s, 2), "device s": round(dev_s, 2), "ratio": round(dev_s / cpu_s, 3)})
    sample = DecodeConfig(max_len=100, sampling=Sampling(temperature=0.8, top_p=0.9, seed=7))
    try:
        first, dev_s = timed(lambda: [translate(other.model, other.tokenizer, t, sample).target_ids for t in texts])
        again = [translate(other.model, other.tokenizer, t, sample).target_ids for t in texts]
        rows.append({"mode": "sampling, seed 7, twice on the device",
                     "same pieces": f"{sum(a == b for a, b in zip(first, again, strict=True))}/{len(texts)}",
                     "device s": round(dev_s, 2)})
        failed |= first != again
    except Exception as exc:
        rows.append({"mode": "sampling", "error": f"{type(exc).__name__}: {exc}"[:300]})
        failed = True
    ours, cpu_s = timed(lambda: translate_many(cpu.model, cpu.tokenizer, texts))
    try:
        theirs, dev_s = timed(lambda: translate_many(other.model, other.tokenizer, texts))
        rows.append({"mode": "batched greedy (translate_many)", "same pieces":
                     f"{sum(a == b for a, b in zip(ours, theirs, strict=True))}/{len(texts)}",
                     "cpu s": round(cpu_s, 2), "device s": round(dev_s, 2), "ratio": round(dev_s / cpu_s, 3)})
    except Exception as exc:
        rows.append({"mode": "batched greedy", "error": f"{type(exc).__name__}: {exc}"[:300]})
        failed = True
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "the CPU"
    print(f"{len(texts)} sentences; the CPU ({args.threads} threads) against {device} ({name}); "
          f"torch {torch.__version__}")
    print(pd.DataFrame(rows).astype(object).fillna("").to_string(index=False))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": name, "torch": torch.__version__, "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
