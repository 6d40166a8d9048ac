"""Checkpoint averaging (paper section 6.1: the base models are "a single model obtained by averaging the
last 5 checkpoints"). The mean of a few late checkpoints sits nearer the centre of the region the
optimiser is wandering around than any one of them, which usually lowers the validation loss for free.

    python -m training.average runs/en-de/epochs/20 runs/en-de/epochs/21 runs/en-de/epochs/22 --out runs/en-de/avg \
        [--corpus data/en-de.tsv.gz]
    python -m training.export --run runs/en-de --which avg --out pretrained/en-de

With --corpus, the validation loss of every input and of the average is printed and the average's is kept in
its meta, so whether averaging helped is measured, not assumed (never on the test split).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from model.checkpoints.files import Checkpoint, load_checkpoint, save_checkpoint
from model.checkpoints.header import CheckpointError

from .data import encode_pairs, load_corpus
from .loss import validation_loss
from .presets import PRESETS


def average_checkpoints(checkpoints: Sequence[Checkpoint]) -> Checkpoint:
    """The element-wise mean of the weights of checkpoints that share one configuration and tokenizer.

    The newest checkpoint (most steps) becomes the average, in place: it keeps its tokenizer and meta (its
    step, epochs and logs describe where training stood) and records the inputs under meta["averaged"], each with
    equal weight.
    """
    if not checkpoints:
        raise CheckpointError("nothing to average: give at least one checkpoint")
    newest = max(checkpoints, key=lambda c: (c.meta.get("steps", 0), str(c.path)))
    for ckpt in checkpoints:
        if ckpt.config != newest.config:
            raise CheckpointError(f"{ckpt.path} has another configuration than {newest.path}: cannot average them")
        if ckpt.tokenizer.files() != newest.tokenizer.files():  # the project's: {tokenizer.model: its proto}
            raise CheckpointError(f"{ckpt.path} has another tokenizer than {newest.path}: cannot average them")
    states = [c.model.state_dict() for c in checkpoints]
    mean = {name: torch.stack([s[name].float() for s in states]).mean(dim=0) for name in states[0]}  # per tensor
    newest.model.load_state_dict(mean)
    # An input that is itself an average (a shipped model averaged with the epochs that continued it) keeps its own
    # inputs, so the card can say what the mean is of.
    newest.meta = {**newest.meta, "averaged": [
        {"epochs": c.meta.get("epochs"), "steps": c.meta.get("steps"),
         **({"averaged": c.meta["averaged"]} if c.meta.get("averaged") else {})} for c in checkpoints]}
    return newest


def validation_losses(checkpoints: Sequence[Checkpoint], corpus: str | Path, max_tokens: int = 4096) -> list[float]:
    """Per-token validation loss (no smoothing) of each checkpoint (one shared tokenizer) on the valid split."""
    frame = load_corpus(corpus)
    valid = frame[frame["split"] == "valid"]
    pairs = encode_pairs(checkpoints[0].tokenizer, valid["en"].tolist(), valid["de"].tolist(),
                         int(PRESETS["en-de"]["train_max_len"]))  # the pairs training validated on
    return [round(validation_loss(ckpt.model, pairs, max_tokens), 4) for ckpt in checkpoints]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.average", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", help="checkpoint directories (same configuration and tokenizer)")
    parser.add_argument("--out", required=True, help="directory for the averaged checkpoint (float32)")
    parser.add_argument("--corpus", help="TSV corpus: report validation losses of the inputs and the average")
    args = parser.parse_args(argv)
    try:
        inputs = [load_checkpoint(d) for d in args.checkpoints]
        losses = validation_losses(inputs, args.corpus) if args.corpus else []  # before averaging overwrites one
        ckpt = average_checkpoints(inputs)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for directory, loss in zip(args.checkpoints, losses, strict=False):  # no losses without --corpus
        print(f"{directory}: validation loss {loss}")
    if args.corpus:
        ckpt.meta["valid_loss"] = validation_losses([ckpt], args.corpus)[0]
        print(f"average: validation loss {ckpt.meta['valid_loss']}")
    save_checkpoint(ckpt.model, ckpt.tokenizer, args.out, meta=ckpt.meta)
    print(f"averaged {len(args.checkpoints)} checkpoints -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
