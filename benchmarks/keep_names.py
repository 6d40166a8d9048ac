"""Cost of keeping names and numbers, as a ratio to plain beam search on the same sentences.

    python benchmarks/keep_names.py [--repeats 5] [--threads 1] [--beam 4]

On the shipped en-de model (pretrained/en-de, CPU) and the names-and-numbers sentences (data/names_numbers.tsv), every
attention captured as the app does. Measured, interleaved and repeated, medians reported:
  * beam search: model.serving.inference.translate with the model's α (the unit)
  * keeping names and numbers: the same with keep_words (model.decoding.constrained_beam.keep_steps: beam search, and
  the keep
    search where beam search's output drops or garbles a name or number); target <= 3x on this set, where most
    sentences need the second search
  * the keep search alone where it runs: only the sentences whose beam search output misses a kept phrase
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import platform
import sys
from pathlib import Path

import pandas as pd
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import medians

from model.checkpoints.files import load_checkpoint
from model.decoding.constrained_beam import keep_states
from model.network.config import DecodeConfig
from model.serving.inference import translate

TARGET = 3.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--beam", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ckpt = load_checkpoint(ROOT / "pretrained" / "en-de")
    texts = pd.read_csv(ROOT / "data" / "names_numbers.tsv", sep="\t", keep_default_na=False)["en"].tolist()
    plain = DecodeConfig(beam_size=args.beam, max_len=100, length_penalty=ckpt.length_penalty)
    keep = DecodeConfig(beam_size=args.beam, max_len=100, length_penalty=ckpt.length_penalty, keep_words=True)

    def run(config: DecodeConfig, sentences: list[str]):
        return lambda: [translate(ckpt.model, ckpt.tokenizer, t, config, lexicon=ckpt.copy_lexicon) for t in sentences]

    missed = []
    for text in texts:
        result = translate(ckpt.model, ckpt.tokenizer, text, keep, lexicon=ckpt.copy_lexicon)
        plain_tokens = translate(ckpt.model, ckpt.tokenizer, text, plain).target_ids
        keeps = result.source.keeps
        if keeps is not None and not keep_states(plain_tokens, keeps, ckpt.config.eos_id)[-1].done(keeps):
            missed.append(text)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{args.threads} thread(s), OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; {len(texts)} sentences, "
          f"{len(missed)} of them need the keep search; beam {args.beam}; median of {args.repeats}, interleaved")
    med = medians({"beam": run(plain, texts), "keep": run(keep, texts), "beam, missed only": run(plain, missed),
                   "keep, missed only": run(keep, missed)}, args.repeats)
    ratio = med["keep"] / med["beam"]
    print(f"beam search:                 {1000 * med['beam'] / len(texts):7.1f} ms per sentence")
    print(f"keeping names and numbers:   {1000 * med['keep'] / len(texts):7.1f} ms per sentence   "
          f"{ratio:.2f}x   target <= {TARGET:g}x: {'met' if ratio <= TARGET else 'missed'}")
    if missed:
        print(f"where the keep search runs:  {med['keep, missed only'] / med['beam, missed only']:.2f}x beam search "
              f"({1000 * med['keep, missed only'] / len(missed):.1f} ms per sentence)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
