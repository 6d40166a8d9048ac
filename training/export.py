"""Ship a training run: its best checkpoint (or another of its checkpoint directories, such as an average
made by training.average) in fp16 weights by default, plus the training logs.

    python -m training.export --run runs/en-de --out pretrained/en-de [--which best|last|avg|...] [--fp32]
"""
from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

LOGS = ("log.csv", "epochs.csv")


def export_run(run: Path, out: Path, dtype: torch.dtype = torch.float16, which: str = "best") -> Path:
    ckpt = load_checkpoint(run / which)
    out.mkdir(parents=True, exist_ok=True)
    save_checkpoint(ckpt.model, ckpt.tokenizer, out, dtype=dtype, meta=ckpt.meta)
    for name in LOGS:
        if (run / name).exists():
            shutil.copyfile(run / name, out / name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--which", default="best",
                        help="checkpoint directory inside the run: best (default), last, or e.g. avg from training.average")
    parser.add_argument("--fp32", action="store_true", help="keep float32 weights (default: float16)")
    args = parser.parse_args(argv)
    try:
        export_run(Path(args.run), Path(args.out), torch.float32 if args.fp32 else torch.float16, args.which)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"exported {args.run}/{args.which} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
