"""One story per curve: recompute an epochs.csv's validation BLEU and chrF on the same sentences for every epoch
whose weights were kept.

A model continued across machines logged its per-epoch scores with each launch's --valid-bleu (a lent GPU's
recipe scores 100 sentences to save its minutes, a CPU run 400), so its curve jumps where only the sample changed.
Every kept epoch (``<run>/epochs/N``) whose step matches the row of that epoch is decoded again greedy, as training
does, on the first ``sentences`` of the corpus's valid split; the rows of epochs whose weights are gone stay as they
were, and the command says how many those are.

    python -m training.rescore runs/en-de-m3/epochs.csv --kept runs/en-de-gc/epochs runs/en-de-c3/epochs \\
        runs/en-de-m3/epochs --corpus data/en-de-plus2-words.tsv.gz --sentences 100
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from model.checkpoints.files import load_checkpoint, read_config

from .evaluate import corpus_scores, load_inputs, split_rows, translate_many


def kept_epochs(epochs: pd.DataFrame, folders: Sequence[Path]) -> dict[int, Path]:
    """epoch -> the kept checkpoint of that epoch of this run: its meta's epoch and step both match the row (a
    side run's epoch 47 is not the shipped run's epoch 47)."""
    steps = dict(zip(epochs["epoch"].astype(int), epochs["step"].astype(int), strict=True))
    found = {}
    for folder in folders:
        for path in sorted(p for p in Path(folder).glob("*") if p.name.isdigit()):
            _, meta = read_config(path)
            epoch = meta.get("epochs")
            if isinstance(epoch, int) and steps.get(epoch) == meta.get("steps"):
                found[epoch] = path
    return found


def rescore(epochs: pd.DataFrame, kept: dict[int, Path], english: Sequence[str], german: Sequence[str]
            ) -> pd.DataFrame:
    """``epochs`` with valid_bleu and valid_chrf of every kept epoch recomputed on these sentences (greedy)."""
    out = epochs.copy()
    for epoch, path in sorted(kept.items()):
        ckpt = load_checkpoint(path)
        scores = corpus_scores(translate_many(ckpt.model.eval(), ckpt.tokenizer, english, beam_size=1), german)
        at = out["epoch"] == epoch
        out.loc[at, "valid_bleu"], out.loc[at, "valid_chrf"] = scores["bleu"], scores["chrf"]
        print(f"epoch {epoch} ({path}): BLEU {scores['bleu']}, chrF {scores['chrf']}", flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.rescore", description=__doc__.splitlines()[0])
    parser.add_argument("epochs", type=Path, help="the epochs.csv to rewrite")
    parser.add_argument("--kept", type=Path, nargs="+", required=True, help="folders of kept epochs (<run>/epochs)")
    parser.add_argument("--corpus", required=True, help="the corpus whose valid split training scored")
    parser.add_argument("--sentences", type=int, required=True, help="the first N valid sentences")
    args = parser.parse_args(argv)
    epochs = pd.read_csv(args.epochs)
    kept = kept_epochs(epochs, args.kept)
    inputs = load_inputs(str(next(iter(kept.values()))), args.corpus) if kept else None
    if inputs is None:
        print("error: no kept epoch matches a row of this epochs.csv", file=sys.stderr)
        return 2
    valid = split_rows(inputs[1], "valid", args.sentences)
    with torch.no_grad():  # not set globally: main also runs inside tests
        rescore(epochs, kept, valid["en"].tolist(), valid["de"].tolist()).to_csv(args.epochs, index=False)
    print(f"{len(kept)} epochs rescored on {len(valid)} sentences; the {len(epochs) - len(kept)} rows of epochs whose "
          "weights are gone keep their scores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
