"""Ship a training run: its best checkpoint (or another of its checkpoint directories, such as an average
made by training.average) in fp16 weights by default, sharded as training shards (no file over 16 MiB, so a
checkpoint stays light in git and passes a lent machine's transfers), plus the training logs.

    python -m training.export --run runs/en-de --out pretrained/en-de [--which best|last|avg|...] [--fp32]

Or ship one epoch of a run as a snapshot of an earlier stage of training beside a model (the Heads page's
"Watch attention learn" sets them beside it): weights, config and tokenizer only, its validation loss from the
run's epochs.csv and one line saying what it is in the config's meta.

    python -m training.export --run runs/en-de --which epochs/1 --out pretrained/en-de/snapshots/epoch-01 \
        --snapshot "Epoch 1 of the shipped recipe rerun from scratch"
"""
from __future__ import annotations

import argparse
import csv
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from model.checkpoints.files import load_checkpoint, save_checkpoint
from model.checkpoints.header import CheckpointError
from model.checkpoints.meta import MAX_META_TEXT
from model.checkpoints.shards import SHARD_BYTES

LOGS = ("log.csv", "epochs.csv")


def export_run(run: Path, out: Path, dtype: torch.dtype = torch.float16, which: str = "best",
               snapshot: str | None = None) -> Path:
    """Write ``run``/``which`` to ``out``; with ``snapshot`` (a one-line description) as a snapshot, without logs."""
    ckpt = load_checkpoint(run / which)
    meta = dict(ckpt.meta)
    if snapshot is not None:
        meta["snapshot"] = snapshot
        loss = epoch_valid_loss(run, meta.get("epochs"))
        if loss is not None:
            meta["valid_loss"] = loss
    out.mkdir(parents=True, exist_ok=True)
    save_checkpoint(ckpt.model, ckpt.tokenizer, out, dtype=dtype, meta=meta, max_shard_bytes=SHARD_BYTES)
    for name in LOGS if snapshot is None else ():
        if (run / name).exists():
            shutil.copyfile(run / name, out / name)
    return out


def epoch_valid_loss(run: Path, epoch: int | None) -> float | None:
    """The validation loss the run's epochs.csv records for ``epoch`` (None without one)."""
    path = run / "epochs.csv"
    if epoch is None or not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if row.get("epoch") == str(epoch)]
    return float(rows[-1]["valid_loss"]) if rows else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--which", default="best",
                        help="checkpoint directory inside the run: best (default), last, "
                             "or e.g. avg from training.average")
    parser.add_argument("--fp32", action="store_true", help="keep float32 weights (default: float16)")
    parser.add_argument("--snapshot", help="ship as a snapshot of an earlier stage of training, with this one-line "
                                           "description (at most 100 characters); no logs")
    args = parser.parse_args(argv)
    if args.snapshot is not None and not 0 < len(args.snapshot) <= MAX_META_TEXT:
        parser.error(f"--snapshot: one line of 1 to {MAX_META_TEXT} characters")
    try:
        export_run(Path(args.run), Path(args.out), torch.float32 if args.fp32 else torch.float16, args.which,
                   args.snapshot)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"exported {args.run}/{args.which} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
